"""Path reasoning for the file rules: whether an expression is a path, whether it stays inside the solution's folder."""

from __future__ import annotations

import ast
import posixpath

from solbench.bench.guards._model import path_escape_reason


class _PathReasoning:
    """Mixin of _Analyzer: what a path expression can reach."""

    def path_info(self, node: ast.AST | None, depth: int = 0) -> tuple[bool, bool, int, str | None]:
        """(is a path, derives from the solution's own location, parent steps taken from __file__, escape reason)."""
        nothing = (False, False, 0, None)
        if node is None or depth > 30:
            return nothing
        kind = type(node)
        if kind in (ast.Call, ast.BinOp, ast.Attribute, ast.JoinedStr):
            folded = self.fold(node)
            if folded is not None:  # a path assembled from constants at run time ("/".join, os.sep, chr, ...)
                node, kind = ast.Constant(folded), ast.Constant
        if kind is ast.Constant:
            if not isinstance(node.value, (str, bytes)):
                return nothing
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            reason = path_escape_reason(text)
            own = reason is None and (text in self.own_paths or posixpath.normpath(posixpath.join(posixpath.dirname(self.path), text)) in self.own_paths)
            return (True, own, 0, reason)
        if kind is ast.Name:
            if node.id == "__file__":
                return (True, True, 0, None)
            value = self.value_of(node)
            return self.path_info(value, depth + 1) if value is not None else nothing
        if kind is ast.Attribute:
            if node.attr == "parent":
                is_path, own, ups, reason = self.path_info(node.value, depth + 1)
                return self._ups(is_path, own, ups + 1, reason)
            if node.attr in ("name", "stem", "suffix", "parts", "anchor", "root"):
                return nothing
            dotted = self.qualname(node)
            if dotted is not None:
                return nothing
            return self.path_info(node.value, depth + 1)
        if kind is ast.BoolOp:  # `os.environ.get("X") or "/usr/local/cuda"`: any operand can be the path
            infos = [self.path_info(value, depth + 1) for value in node.values]
            reason = next((info[3] for info in infos if info[3]), None)
            return (any(info[0] for info in infos), all(info[1] for info in infos) and not reason, 0, reason)
        if kind is ast.IfExp:
            infos = [self.path_info(node.body, depth + 1), self.path_info(node.orelse, depth + 1)]
            reason = next((info[3] for info in infos if info[3]), None)
            return (any(info[0] for info in infos), all(info[1] for info in infos) and not reason, 0, reason)
        if kind is ast.Subscript:
            if self.qualname(node.value) == "os.environ":
                return (True, False, 0, "a path from an environment variable (outside the solution)")
            if type(node.value) is ast.Attribute and node.value.attr == "parents":
                is_path, own, ups, reason = self.path_info(node.value.value, depth + 1)
                step = node.slice.value if type(node.slice) is ast.Constant and isinstance(node.slice.value, int) else 99
                return self._ups(is_path, own, ups + step + 1, reason)
            return nothing
        if kind is ast.BinOp:
            left = self.path_info(node.left, depth + 1)
            right = self.path_info(node.right, depth + 1)
            if isinstance(node.op, ast.Div):
                reason = left[3] or right[3]
                return (left[0] or right[0], left[1] and not reason, left[2], reason)
            if isinstance(node.op, (ast.Add, ast.Mod)):
                right_reason = right[3] if right[3] and "'..'" in right[3] else None
                reason = left[3] or right_reason
                return (left[0] or right[0], (left[1] or right[1]) and not reason, left[2], reason)
            return nothing
        if kind is ast.JoinedStr:
            own, reason, first = False, None, True
            for value in node.values:
                if type(value) is ast.Constant:
                    text = str(value.value)
                    part_reason = path_escape_reason(text)
                    if part_reason and (first or "'..'" in part_reason):
                        reason = reason or part_reason
                else:
                    info = self.path_info(value.value, depth + 1)
                    own = own or info[1]
                    reason = reason or info[3]
                first = False
            return (True, own and not reason, 0, reason)
        if kind is ast.Call:
            func = self.qualname(node.func)
            args = node.args
            if func in ("os.path.expanduser", "pathlib.Path.home", "os.path.expandvars"):
                return (True, False, 0, "the home folder or environment variables")
            if func in ("os.getenv", "os.environ.get", "os.environ.setdefault", "os.environ.pop"):
                return (True, False, 0, "a path from an environment variable (outside the solution, whatever its default)")
            if func in ("os.getcwd", "pathlib.Path.cwd", "os.getcwdb"):
                return (True, False, 0, None)
            if func == "os.path.dirname" and args:
                is_path, own, ups, reason = self.path_info(args[0], depth + 1)
                return self._ups(is_path, own, ups + 1, reason)
            if func in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "builtins.str", "os.fsencode",
                        "os.fsdecode") and args:
                return self.path_info(args[0], depth + 1)
            if func in ("os.path.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath",
                        "pathlib.WindowsPath", "pathlib.PureWindowsPath"):
                return self._join([*args], depth)
            if type(node.func) is ast.Attribute:
                method = node.func.attr
                receiver = self.path_info(node.func.value, depth + 1)
                if method in ("joinpath", "with_name", "with_suffix", "with_stem", "__truediv__") and receiver[0]:
                    return self._join([node.func.value, *args], depth)
                if method in ("resolve", "absolute", "as_posix", "__fspath__") and receiver[0]:
                    return receiver
                if method == "expanduser" and receiver[0]:
                    return receiver if receiver[1] else (True, False, 0, receiver[3] or "the home folder")
                if method == "format" and type(node.func.value) is ast.Constant:
                    infos = [self.path_info(arg, depth + 1) for arg in args]
                    head = self.path_info(node.func.value, depth + 1)
                    reason = head[3] or next((i[3] for i in infos if i[3]), None)
                    return (True, any(i[1] for i in infos) and not reason, 0, reason)
            return nothing
        return nothing

    def is_path_object(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether the expression is a pathlib path (so that .replace()/.open()/... are file operations)."""
        if node is None or depth > 30:
            return False
        kind = type(node)
        if kind is ast.Call:
            func = self.qualname(node.func)
            if func is not None:
                return func.startswith("pathlib.") and func.rsplit(".", 1)[-1] in (
                    "Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath", "home", "cwd")
            if type(node.func) is ast.Attribute and node.func.attr in ("joinpath", "with_name", "with_suffix", "with_stem", "resolve",
                                                                        "absolute", "expanduser", "relative_to"):
                return self.is_path_object(node.func.value, depth + 1)
            return False
        if kind is ast.Attribute and node.attr == "parent":
            return self.is_path_object(node.value, depth + 1)
        if kind is ast.Subscript and type(node.value) is ast.Attribute and node.value.attr == "parents":
            return self.is_path_object(node.value.value, depth + 1)
        if kind is ast.BinOp and isinstance(node.op, ast.Div):
            return self.is_path_object(node.left, depth + 1) or self.is_path_object(node.right, depth + 1)
        if kind is ast.Name:
            value = self.value_of(node)
            return value is not None and self.is_path_object(value, depth + 1)
        return False

    def _ups(self, is_path: bool, own: bool, ups: int, reason: str | None) -> tuple[bool, bool, int, str | None]:
        if own and ups > self.depth_in_solution + 1:
            return (True, False, ups, reason or "a folder above the solution's own")
        return (is_path, own, ups, reason)

    def _join(self, parts: list[ast.AST], depth: int) -> tuple[bool, bool, int, str | None]:
        if not parts:
            return (True, False, 0, None)
        first = self.path_info(parts[0], depth + 1)
        reason = first[3]
        for part in parts[1:]:
            info = self.path_info(part, depth + 1)
            reason = reason or info[3]
        return (True, first[1] and not reason, first[2], reason)
