"""Python rules, on the AST.

Names are resolved the way Python binds them: a first pass builds the scopes (module, functions,
lambdas, classes, comprehensions) and records every binding of every name (imports, assignments,
parameters, definitions); a name then resolves to the dotted name of what it was bound to
(``import torch as t`` -> ``t`` is ``torch``; ``from os import system as s`` -> ``s`` is
``os.system``; ``m = importlib.import_module("socket")`` -> ``m`` is ``socket``). Calls of
``getattr(x, "c")``, ``__import__("c")``, ``importlib.import_module("c")``, ``vars(x)["c"]`` and
``x.__dict__["c"]`` with constant (or constant-folded) names resolve too, and so do modules held in
containers (``[time][0]``, ``{"t": time}["t"]``), class attributes (``class H: m = time`` ->
``H.m``) and parameter defaults (``def f(m=time)``). Builtins resolve to ``builtins.<name>``
unless the solution binds the name itself. A name bound to several things resolves to the first
that resolves (so re-binding cannot hide an alias).

The second pass walks every node with the rules below. Each finding is reported once per (rule, line).

Layout: _bans (the ban table), _names (scopes, name resolution), _paths (path reasoning), and here the
rules visitor (_Analyzer) with the module's entry points.
"""

from __future__ import annotations

import ast
import posixpath
import re

from solbench.bench.guards._cpp import _analyze_cpp, refused_names
from solbench.bench.guards._model import (
    Collector, Finding, SYSTEM_PATH, byte_sequence_kind, binary_kind, bytes_opaque, scrambled_kind,
    text_blob, text_opaque,
)
from solbench.bench.guards._bans import (
    FRAME_ATTRS,
    REACH_NAMES,
    _CACHE_DECORATORS, _CONFIG_OK, _CONTAINER_CALLS, _DOWNCAST_DTYPES, _DYNAMIC_IMPORTS, _ENV_TUNING, _ENV_TUNING_PREFIXES, _KNOWN_LIBRARIES, _L2_NAME,
    _LIBRARY_NAMES, _PATH_WRITE_FUNCS, _PRECISION_DEFAULT_TRUE, _PRECISION_FLAGS, _PROFILER_NAMES, _READ_FUNCS, _SENSITIVE,
    _STDLIB, _TEMPFILE_DIR_ARG, _WRITERS, _YAML_LOADS, _YAML_SAFE_LOADERS, _match, _normalise,
)
from solbench.bench.guards._paths import _PathReasoning
from solbench.bench.guards._names import _Resolver, _Scope

# tensor methods whose result holds (or copies) the values of the tensor they are called on
_VIEWS_AND_COPIES = {"clone", "detach", "expand", "expand_as", "view", "view_as", "reshape", "reshape_as", "contiguous", "to",
                     "float", "half", "bfloat16", "type_as", "squeeze", "unsqueeze", "flatten", "permute", "transpose", "t",
                     "narrow", "repeat", "copy", "cpu", "cuda"}


# attribute stores that change what an object is or how a function behaves, whatever the object
_IDENTITY_ATTRS = {"__class__", "__code__", "__globals__", "__bases__", "__defaults__", "__kwdefaults__", "__dict__", "__call__"}

_PRECISION_CALL = re.compile(r"^torch\._C\._set_\w*(?:tf32|precision|reduced|accumulation)\w*$")

_ENV_WRITE_METHODS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "__ior__", "__init__"}

_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "append", "extend", "insert",
             "remove", "add", "discard", "__setattr__", "__delattr__", "__ior__", "__iadd__"}

_TENSOR_ATTRS = {"data_ptr", "contiguous", "is_contiguous", "is_cuda", "device", "dtype", "numel", "stride", "view", "reshape",
                 "cuda", "float", "half", "bfloat16", "to", "clone", "copy_", "zero_", "fill_", "element_size", "storage_offset",
                 "untyped_storage", "unsqueeze", "squeeze", "transpose", "permute", "T", "mT", "matmul", "nelement",
                 "is_floating_point", "requires_grad", "grad", "shape", "size", "ndim", "dim", "item", "tolist", "detach",
                 "expand", "flatten", "sum", "mean", "narrow", "new_empty", "new_zeros"}

_IDENTITY_METHODS = {"data_ptr", "untyped_storage", "storage", "_cdata", "_typed_storage"}

_CPP_HINT = re.compile(r"#\s*include\b|__global__|__device__|PYBIND11_MODULE|\btorch::|\bat::Tensor|\bextern\s+\"C\"|"
                       r"\basm\s+(?:volatile\s*)?\(|\bcuda[A-Z]\w*\s*\(|\bcu[A-Z]\w+\s*\(|\bstd::\w+")

_BUILD_FLAG_KEYWORDS = ("extra_cflags", "extra_cuda_cflags", "extra_ldflags")
# flags (gcc, clang, nvcc, the linker) that bring code, files or tools into a build beyond its sources
_RISKY_FLAG = re.compile(r"(?:^|[\s,=])(?:-include|-imacros|-x(?=$|[\s=])|-B|-ccbin|--compiler-bindir|-fplugin|-specs|--specs|-wrapper|"
                         r"-Xlinker|-Wl,|--linker-options|-Xclang|--wrap|--defsym|-load|--pre-include|-fuse-ld|-nostdlib|-T(?=$|[\s=]))")

# lookups by name: passed as values (not called where they stand), what they look up cannot be followed
_LOOKUPS = {"builtins.__import__", "importlib.import_module", "importlib.__import__", "builtins.getattr",
            "builtins.object.__getattribute__", "builtins.type.__getattribute__", "operator.attrgetter", "operator.methodcaller"}

_WEAK_CALLS = {"weakref.WeakKeyDictionary", "weakref.WeakValueDictionary", "weakref.WeakSet"}


def analyze_python(source: str, path: str) -> list[Finding]:
    """Findings of one Python source (rules PY-*, and CPP-* for C++ held in its strings)."""
    return _analyze_python(source, path, frozenset())


MAX_SOURCE_CHARS = 2_000_000


def _analyze_python(source: str, path: str, own_paths: frozenset[str], import_roots: tuple[str, ...] = ("",), entry: str = "run") -> list[Finding]:
    """import_roots: the solution's folders that are on sys.path while it is imported (its root, and the entry
    point's folder when that is a subfolder), relative to its root; entry: the entry function's name in this file."""
    findings = _analyze_source(source, path, own_paths, entry)
    shadowed = next((found for root in import_roots if (found := _shadowed_library(posixpath.relpath(path, root or "."))) is not None), None)
    if shadowed is None:
        return findings
    module, library = shadowed
    out = Collector(path)
    out.extend(findings)
    out.add("PY-SHADOW", 1, f"the solution's file is importable as {module!r}, named like the library module {library!r}: while "
                            f"the solution is imported it can stand in for {library!r} in any module imported then, and elsewhere "
                            f"`import {library}` is the library (its calls are judged as the library's); rename the file")
    return out.sorted()


def _shadowed_library(path: str) -> tuple[str, str] | None:
    """(module name, library) when the Python file `path` (relative to the solution's folder, which is on sys.path while
    the solution is imported) is importable under the top-level name of a library module (os.py, ctypes/__init__.py,
    urllib/request.py, torch/x.py), else None."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or parts[0] not in _LIBRARY_NAMES:
        return None
    return ".".join(parts), parts[0]


def _analyze_source(source: str, path: str, own_paths: frozenset[str], entry: str = "run") -> list[Finding]:
    if len(source) > MAX_SOURCE_CHARS:
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, f"{len(source)} characters: too large to analyse (limit {MAX_SOURCE_CHARS})")
        return out.sorted()
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return []  # the build reports it
    except (RecursionError, MemoryError):
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, "the file is nested too deeply to parse")
        return out.sorted()
    try:
        return _Analyzer(tree, path, own_paths, entry).run()
    except Exception as error:  # fail closed: a file the analyser cannot read is not waved through
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, f"could not be analysed ({type(error).__name__}: {str(error)[:80]})")
        return out.sorted()


class _Analyzer(_PathReasoning, _Resolver):
    def __init__(self, tree: ast.Module, path: str, own_paths: frozenset[str], entry: str = "run"):
        self.tree = tree
        self.entry = entry  # the entry point's function in this file (its returns are the outputs)
        self.path = path
        self.own_paths = own_paths
        self.depth_in_solution = path.count("/")
        # modules that are files of the solution: imports of them are local (unless the name is a library's or banned:
        # a solution's own `ctypes.py` or `os.py` may lose to the real one, see _import_binding)
        self.own_modules: set[str] = set()
        for own in own_paths:
            if own.endswith(".py"):
                parts = own[:-3].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                for end in range(1, len(parts) + 1):
                    self.own_modules.add(".".join(parts[:end]))
        self.out = Collector(path)
        self.module = _Scope("module", None, tree)
        self._qcache: dict[int, str | None] = {}
        self._ncache: dict[tuple[str, int], object] = {}
        self._depth = 0
        self._bind_all()


    # ---- pass 2: rules -------------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        self.module_containers = self._module_containers()
        handlers = {
            ast.Import: self._on_import, ast.ImportFrom: self._on_import, ast.Name: self._on_name,
            ast.Attribute: self._on_attribute, ast.Call: self._on_call, ast.Subscript: self._on_subscript,
            ast.Assign: self._on_assign, ast.AugAssign: self._on_assign, ast.AnnAssign: self._on_assign,
            ast.Delete: self._on_assign, ast.Raise: self._on_raise, ast.Constant: self._on_constant,
            ast.JoinedStr: self._on_constant, ast.List: self._on_sequence, ast.Tuple: self._on_sequence,
            ast.Set: self._on_sequence, ast.FunctionDef: self._on_function, ast.AsyncFunctionDef: self._on_function,
            ast.Compare: self._on_compare, ast.BinOp: self._on_binop, ast.Return: self._on_return,
        }
        for node in self.order:
            handler = handlers.get(type(node))
            if handler is not None:
                handler(node)
        return self.out.sorted()

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.out.add(rule, getattr(node, "lineno", 1), message)

    def _ban_check(self, dotted: str | None, node: ast.AST, how: str) -> None:
        if not dotted or self._judged_tempfile(dotted, node, how):
            return
        hit = _match(dotted)
        if hit:
            self.add(hit[0], node, f"{how} {dotted}: {hit[1]}")

    def _judged_tempfile(self, dotted: str, node: ast.AST, how: str) -> bool:
        """The tempfile module and its functions that make a file or folder are judged where they are called
        (by their dir=), not banned by name: imported, or called directly, they are not a finding here."""
        if dotted == "tempfile":
            return True
        if dotted not in _TEMPFILE_DIR_ARG and dotted != "tempfile.gettempdir":
            return False
        if how == "imports":
            return True
        parent = getattr(node, "_sbp", None)
        return type(parent) is ast.Call and parent.func is node

    # imports

    def _on_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if type(node) is ast.Import:
            for alias in node.names:
                self._ban_check(_normalise(alias.name), node, "imports")
            return
        if node.level or not node.module:
            return
        module = _normalise(node.module)
        for alias in node.names:  # `from m import x` is judged by m.x (m.cpu_count may be fine where m is not)
            self._ban_check(module if alias.name == "*" else module + "." + alias.name, node, "imports")

    # names and attributes

    def _on_name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        dotted = self.qualname(node)
        if dotted is None:
            return
        if dotted == "sys.modules" and self._registers_own_module(node):
            return
        self._ban_check(dotted, node, "uses")
        self._special_objects(dotted, node)
        self._handed_as_value(dotted, node)

    def _handed_as_value(self, dotted: str, node: ast.AST) -> None:
        """setattr/operator.setitem, __import__/getattr/attrgetter handed to functools.partial, map, a __reduce__
        tuple, ...: a write or a lookup by name that these checks cannot follow."""
        if dotted not in _WRITERS and dotted not in _LOOKUPS:
            return
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) is ast.Call and parent.func is node:
            return
        if type(parent) is ast.Attribute:  # object.__setattr__ is judged on the Attribute node
            return
        if dotted in _WRITERS:
            self.add("PY-PATCH", node, f"{dotted} passed as a value (functools.partial, map, ...): an attribute or item write that cannot be followed")
        else:
            self.add("PY-DYNAMIC", node, f"{dotted} passed as a value (map, functools.partial, a __reduce__ tuple, ...): a lookup by name that cannot be followed")

    def _named_lookups(self, node: ast.Call, func: str) -> None:
        """operator.attrgetter('a.b', ...) and methodcaller('name'): attribute names given as strings."""
        names = node.args if func == "operator.attrgetter" else node.args[:1]
        for argument in names:
            name = self.fold(argument)
            if name is None:
                self.add("PY-DYNAMIC", node, f"{func}() with a computed name: defeats the static checks")
            elif any(part in REACH_NAMES for part in name.split(".")):
                self.add("PY-INTROSPECT", node, f"{func}({name!r}): reaches frames, globals or the objects of the harness")

    def _on_attribute(self, node: ast.Attribute) -> None:
        if node.attr in FRAME_ATTRS and isinstance(node.ctx, ast.Load):
            self.add("PY-INTROSPECT", node, f"reads .{node.attr}: reaches frames, globals or code of the harness")
        dotted = self.qualname(node)
        if dotted is None:
            if _L2_NAME.search(node.attr):
                self.add("PY-L2", node, f".{node.attr}: L2 persistence keeps data in L2 across the harness's flush")
            elif node.attr in _PROFILER_NAMES:
                self.add("PY-PROFILER", node, f".{node.attr}: controls the profiler the timing relies on")
            return
        if dotted == "sys.modules" and self._registers_own_module(node):
            return
        self._ban_check(dotted, node, "uses")
        self._special_objects(dotted, node)
        self._handed_as_value(dotted, node)

    def _special_objects(self, dotted: str, node: ast.AST) -> None:
        """os.environ and sys.path: what is done with them decides the rule."""
        if dotted not in ("os.environ", "sys.path"):
            return
        parent = node._sbp  # type: ignore[attr-defined]
        writes = False
        if type(parent) is ast.Attribute and parent.value is node:
            writes = parent.attr in (_ENV_WRITE_METHODS if dotted == "os.environ" else _MUTATORS)
        elif type(parent) is ast.Subscript and parent.value is node:
            writes = not isinstance(parent.ctx, ast.Load)
        if dotted == "os.environ":
            if writes:
                self._env_write(node, self._environ_keys(parent), "writes os.environ")
            else:
                self.add("PY-ENV-READ", node, "reads os.environ")
        elif writes:
            self.add("PY-SYSPATH", node, "changes sys.path")

    def _environ_keys(self, parent: ast.AST) -> list[str] | None:
        """The variable names that a write to os.environ sets (None: not all known)."""
        if type(parent) is ast.Subscript:
            key = self.fold(parent.slice)
            return [key] if key is not None and not isinstance(parent.ctx, ast.Del) else None
        call = getattr(parent, "_sbp", None)
        if type(parent) is not ast.Attribute or type(call) is not ast.Call or call.func is not parent:
            return None
        if parent.attr in ("setdefault", "__setitem__") and call.args:
            key = self.fold(call.args[0])
            return [key] if key is not None else None
        if parent.attr == "update":
            keys = [keyword.arg for keyword in call.keywords]
            for arg in call.args:
                value = self.value_of(arg) or arg
                if type(value) is not ast.Dict or None in value.keys:
                    return None
                keys += [self.fold(k) for k in value.keys]
            return keys if keys and None not in keys else None
        return None

    def _env_write(self, node: ast.AST, keys: list[str] | None, what: str) -> None:
        if keys and all(key in _ENV_TUNING or key.startswith(_ENV_TUNING_PREFIXES) for key in keys):
            self.add("PY-ENV-TUNING", node, f"{what}: sets the library tuning variable(s) {', '.join(sorted(set(keys)))}")
        else:
            self.add("PY-ENV", node, f"{what}: changes the environment of the worker")

    def _on_subscript(self, node: ast.Subscript) -> None:
        dotted = self.qualname(node)
        if dotted is not None:
            self._ban_check(dotted, node, "uses")
            self._special_objects(dotted, node)
        self._identity_key(node.slice, node, "a subscript key")

    # calls

    def _folded_path(self, node: ast.AST) -> None:
        """A system path assembled at run time ("/".join, os.sep.join, "/" + "proc", chr(...))."""
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) in (ast.BinOp, ast.JoinedStr):
            return  # judged on the outermost expression
        text = self.fold(node)
        if text is not None and SYSTEM_PATH.fullmatch(text):
            self.add("PY-PATH-ESCAPE", node, f"builds the system path {text[:60]!r}: outside the solution")

    def _on_binop(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Add):
            self._folded_path(node)

    def _on_call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Attribute and node.func.attr in ("join", "format", "replace", "decode"):
            self._folded_path(node)
        func = self.qualname(node.func)
        resolved = self.qualname(node)
        if resolved is not None and resolved != func:
            self._ban_check(resolved, node, "reaches")
        if func in _DYNAMIC_IMPORTS:
            name = self.fold(node.args[0]) if node.args else None
            if name is None:
                self.add("PY-DYNAMIC", node, f"{func}() with a computed module name: defeats the static checks")
            elif not name.startswith("."):
                self._ban_check(_normalise(name), node, "imports")
        elif func in ("operator.attrgetter", "operator.methodcaller"):
            self._named_lookups(node, func)
        elif func in ("builtins.getattr", "builtins.hasattr", "builtins.setattr", "builtins.delattr",
                      "builtins.object.__setattr__", "builtins.type.__setattr__", "builtins.object.__delattr__",
                      "builtins.object.__getattribute__", "builtins.type.__getattribute__"):
            self._on_attr_call(node, func)
        elif type(node.func) is ast.Attribute and node.func.attr in ("__setattr__", "__delattr__", "__getattribute__") and node.args:
            base = self.qualname(node.func.value)
            if base is not None:
                name = self.fold(node.args[0])
                if node.func.attr == "__getattribute__":
                    if name is None:
                        self._computed_getattr(base, node)
                else:
                    value = node.args[1] if len(node.args) > 1 else None
                    self._store(f"{base}.{name if name is not None else '<computed>'}", node, value, "sets")
        if type(node.func) is ast.Call and node.args and self.qualname(node.func.func) in _CACHE_DECORATORS:
            self._cached_by_call(node, node.args[0])
        if func is not None:
            self._call_rules(node, func)
        if func == "torch.cuda.cudart":
            self.add("PY-CUDART", node, "torch.cuda.cudart(): the CUDA runtime's Python bindings (reviewed by hand)")
        if type(node.func) is ast.Attribute:
            self._method_rules(node, node.func)

    def _computed_getattr(self, base: str, node: ast.AST) -> None:
        top = base.split(".")[0]
        if top in _SENSITIVE or base in _SENSITIVE or base.startswith("torch._C"):
            self.add("PY-DYNAMIC", node, f"attribute of {base} looked up with a computed name: defeats the static checks")
        else:
            self.add("PY-GETATTR", node, f"attribute of {base} looked up with a computed name")

    def _on_attr_call(self, node: ast.Call, func: str) -> None:
        if len(node.args) < 2:
            return
        target = node.args[0]
        base = self.qualname(target)
        name = self.fold(node.args[1])
        short = func.rsplit(".", 1)[-1]
        if name is not None and name in FRAME_ATTRS:
            self.add("PY-INTROSPECT", node, f"{short}(..., {name!r}): reaches frames, globals or code of the harness")
        if short in ("getattr", "hasattr", "__getattribute__"):
            if base is not None and name is None:
                self._computed_getattr(base, node)
            return
        if base is None:
            if name is not None and name in _IDENTITY_ATTRS and short in ("setattr", "__setattr__"):
                self.add("PY-PATCH", node, f"{short}(..., {name!r}, ...): changes what an object is")
            elif self._reaches_class(target):
                self.add("PY-PATCH", node, f"{short}(<class of an object>, ...): patches a class it did not define")
            return
        value = node.args[2] if len(node.args) > 2 else None
        self._store(f"{base}.{name if name is not None else '<computed>'}", node, value, "deletes" if "del" in short else "sets")

    def _call_rules(self, node: ast.Call, func: str) -> None:
        args = node.args
        if func in ("builtins.open", "io.open", "io.FileIO", "os.fdopen", "codecs.open", "gzip.open", "bz2.open", "lzma.open"):
            path = self._arg(node, 0, "file")
            mode = self._arg(node, 1, "mode")
            mode_text = "r" if mode is None else self.fold(mode)
            self._file_access(node, path, write=mode_text is None or any(c in mode_text for c in "wax+"), what=f"open(mode={mode_text!r})")
        elif func == "os.open":
            flags = self._arg(node, 1, "flags")
            names = {n.attr for n in ast.walk(flags) if type(n) is ast.Attribute} | {n.id for n in ast.walk(flags) if type(n) is ast.Name} if flags is not None else set()
            write = bool(names & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"})
            self._file_access(node, self._arg(node, 0, "path"), write=write, what="os.open")
        elif func in _READ_FUNCS:
            index, keyword = _READ_FUNCS[func]
            self._file_access(node, self._arg(node, index, keyword), write=False, what=func)
            unpickle = {"torch.load": "weights_only", "numpy.load": "allow_pickle"}.get(func)
            if unpickle is not None:
                flag = next((k.value for k in node.keywords if k.arg == unpickle), None)
                if flag is not None and (unpickle == "weights_only") == _is_false(flag):
                    self.add("PY-DECODE", node, f"{func}({unpickle}={ast.unparse(flag)}): unpickles arbitrary objects, which runs code")
        elif func in _YAML_LOADS:
            self._yaml_load(node, func)
        elif func in ("ruamel.yaml.YAML", "ruamel.yaml.main.YAML"):
            typ = next((k.value for k in node.keywords if k.arg == "typ"), None)
            value = "rt" if typ is None else self.fold(typ)
            if value not in ("rt", "safe", "base") or any(item.arg is None for item in node.keywords):
                shown = "**kwargs" if value == "rt" and typ is None else value if value is not None else " ".join(ast.unparse(typ).split())[:60]
                self.add("PY-DECODE", node, f"{func}(typ={shown!r}): only typ 'rt', 'safe' or 'base' are certainly safe; 'unsafe' "
                                            "and 'full' build Python objects from python/* tags, which runs code")
        elif func in ("ctypes.CDLL", "ctypes.PyDLL", "ctypes.cdll.LoadLibrary", "ctypes.pydll.LoadLibrary", "ctypes.util.find_library"):
            path = self._arg(node, 0, "name")
            if path is not None:
                self._escape_only(node, path, func)
        elif func in _PATH_WRITE_FUNCS:
            index, keyword = _PATH_WRITE_FUNCS[func]
            path = self._arg(node, index, keyword)
            if path is not None:
                self._escape_only(node, path, func)
        elif func == "torch.set_float32_matmul_precision":
            argument = self._arg(node, 0, "precision")
            value = self.fold(argument)
            if value != "highest" and not self._restores("torch.get_float32_matmul_precision", argument):
                self.add("PY-PRECISION", node, f"torch.set_float32_matmul_precision({value!r}): fp32 matmuls in lower precision for everyone in the process")
        elif _PRECISION_CALL.match(func):
            arg = self._arg(node, 0, None)
            if not _is_false(arg):
                self.add("PY-PRECISION", node, f"{func}: flips a global precision flag")
        elif func.endswith(".inline_asm_elementwise") and func.startswith("triton"):
            text = self.fold(self._arg(node, 0, "asm")) or ""
            summary = " ".join(text.split())[:60]
            self.add("PY-ASM", node, f"inline PTX through {func}: {summary!r}; reviewed by hand")
        elif func in ("torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel"):
            for keyword in node.keywords:
                if keyword.arg == "allow_tf32" and not _is_false(keyword.value):
                    self.add("PY-PRECISION", node, f"{func}(allow_tf32=...): TF32 for everyone in the process")
        elif func in ("torch.library.Library", "torch.library.impl", "torch.library.register_kernel", "torch.library.register_fake",
                      "torch.library.register_autograd", "torch.library.register_torch_dispatch", "torch.library.custom_op",
                      "torch.library.define", "torch.library._impl", "torch.library.impl_abstract"):
            target = self.fold(args[0]) if args else None
            if target is not None and re.match(r"^(?:aten|prims|prim|_c10d_functional|c10d|cuda)(?:$|::|\.)", target):
                self.add("PY-PATCH", node, f"{func}({target!r}): overrides a built-in torch operator")
        elif func in ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"):
            build_dir = self._arg(node, 99, "build_directory")
            if build_dir is not None:
                info = self.path_info(build_dir)
                if info[3] and not info[1]:
                    self.add("PY-PATH-ESCAPE", node, f"{func}(build_directory=...) with {info[3]}")
            for keyword in node.keywords:
                if keyword.arg in _BUILD_FLAG_KEYWORDS:
                    self._build_flags(node, keyword.arg, keyword.value)
        elif func in _CACHE_DECORATORS and args:
            self._cached_by_call(node, args[0])
        elif func in ("operator.setitem", "operator.delitem", "operator.__setitem__", "operator.__delitem__") and len(args) >= 2:
            base = self.qualname(args[0])
            if base is not None:
                key = self.fold(args[1])
                value = args[2] if len(args) > 2 else None
                verb = "deletes" if "del" in func else "sets"
                if base.endswith(".__dict__"):
                    self._store(base[: -len(".__dict__")] + "." + (key or "<computed>"), node, value, verb)
                elif base != "<globals>":
                    self._store(base + "[" + (repr(key) if key is not None else "...") + "]", node, value, verb)
        elif func in _TEMPFILE_DIR_ARG:
            where = self._arg(node, _TEMPFILE_DIR_ARG[func], "dir")
            if where is None or _is_none(where):
                self.add("PY-FILE-WRITE-OWN", node, f"{func}(): writes in the worker's TMPDIR (private to the sandbox)")
            else:
                self._file_access(node, where, write=True, what=f"{func}(dir=...)")
        elif func == "numpy.memmap":
            mode = self._arg(node, 2, "mode")
            mode_text = "r+" if mode is None else self.fold(mode)  # numpy's default mode is r+ (read-write)
            write = mode_text not in ("r", "readonly", "c", "copyonwrite")
            self._file_access(node, self._arg(node, 0, "filename"), write=write, what=f"numpy.memmap(mode={mode_text!r})")

    def _build_flags(self, node: ast.Call, keyword: str, value: ast.AST) -> None:
        """Compiler and linker flags of load/load_inline: what they put into the build beyond the sources is out of
        the C++ analysis's sight (a -D macro's body, a file forced in with -include, another compiler with -ccbin,
        a symbol wrapped at link time), so such flags are refused and -D bodies are read as C++."""
        flags = self.value_of(value) if type(value) is ast.Name else value
        if type(flags) not in (ast.List, ast.Tuple):
            self.add("PY-BUILD-FLAGS", node, f"{keyword}= is not a list of literal flags: flags computed at run time cannot be read")
            return
        texts = [self._flag_text(element) for element in flags.elts]
        for index, text in enumerate(texts):
            if text is None:
                self.add("PY-BUILD-FLAGS", node, f"{keyword}: a flag computed at run time cannot be read")
                continue
            risky = _RISKY_FLAG.search(text)
            if risky:
                self.add("PY-BUILD-FLAGS", node, f"{keyword}: {text!r} ({risky.group().strip(' ,=')}) changes what is compiled or linked beyond the sources")
            definition = text[2:] if text.startswith("-D") else None
            if text.strip() == "-D" and index + 1 < len(texts):  # -D NAME=BODY in two elements
                definition = texts[index + 1] or ""
            body = definition.partition("=")[2] if definition else ""
            refused = refused_names(body) + sorted({f.rule for f in _analyze_cpp(body + "\n", "-D", 0) if f.severity == "reject"})
            if refused:
                self.add("PY-BUILD-FLAGS", node, f"{keyword}: the macro body {body[:60]!r} holds what is refused: {', '.join(refused)}")

    def _flag_text(self, node: ast.AST) -> str | None:
        """A flag's text: folded, or an f-string of literals and numeric or string constants (-DTILE={TILE})."""
        text = self.fold(node)
        if text is not None or type(node) is not ast.JoinedStr:
            return text
        parts = []
        for value in node.values:
            inner = value.value if type(value) is ast.FormattedValue else value
            inner = self.value_of(inner) if type(inner) is ast.Name else inner
            if type(inner) is not ast.Constant or not isinstance(inner.value, (str, int, float)) or isinstance(inner.value, bool):
                return None
            parts.append(str(inner.value))
        return "".join(parts)

    def _yaml_load(self, node: ast.Call, func: str) -> None:
        """yaml.load / yaml.load_all: code-running deserialisation unless the Loader is certainly a safe one."""
        loader = self._arg(node, 1, "Loader")
        if loader is None:
            if any(type(arg) is ast.Starred for arg in node.args) or any(item.arg is None for item in node.keywords):
                self.add("PY-DECODE", node, f"{func}() with its Loader passed through *args/**kwargs: may build arbitrary Python "
                                            "objects from python/* tags, which runs code")
            else:
                self.add("PY-DECODE", node, f"{func}() without a Loader (FullLoader before PyYAML 6): builds Python objects from "
                                            "python/* tags; use yaml.safe_load")
            return
        if not self._safe_yaml_loader(loader):
            shown = " ".join(ast.unparse(loader).split())[:60]
            self.add("PY-DECODE", node, f"{func}(Loader={shown}): not one of yaml's safe loaders (SafeLoader, CSafeLoader, "
                                        "BaseLoader); python/* tags build arbitrary objects, which runs code")

    def _safe_yaml_loader(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether a Loader is certainly one of yaml's safe loaders, or a class of the solution derived only from them. A
        name must be so in every binding (a parameter or anything unresolved is not); a conditional in both branches."""
        if node is None or depth > 20:
            return False
        kind = type(node)
        if kind is ast.IfExp:
            return self._safe_yaml_loader(node.body, depth + 1) and self._safe_yaml_loader(node.orelse, depth + 1)
        if kind is ast.Call and len(node.args) == 3 and not node.keywords and self.qualname(node.func) == "builtins.getattr":
            # getattr(yaml, "CSafeLoader", yaml.SafeLoader): the attribute (resolved below) and the default
            if not self._safe_yaml_loader(node.args[2], depth + 1):
                return False
        elif kind is ast.Name:
            found = self.lookup(node.id, node._sbs)  # type: ignore[attr-defined]
            if found is not None:
                # an assignment binds its value and, through its target, an unknown ("local") value: each assignment
                # accounts for one of those; any other (a parameter, a loop or `with` target, ...) is not known
                unknown = 0
                for binding in found[1]:
                    if binding[0] == "import":
                        safe = binding[1] in _YAML_SAFE_LOADERS
                    elif binding[0] == "expr":
                        safe = self._safe_yaml_loader(binding[1], depth + 1)
                        unknown -= _assigned(binding[1])
                    elif binding[0] == "class":
                        bases = binding[1].bases
                        safe = bool(bases) and not binding[1].keywords and all(self._safe_yaml_loader(b, depth + 1) for b in bases)
                    else:
                        safe = True
                        unknown += 1
                    if not safe:
                        return False
                return unknown <= 0
        return self.qualname(node) in _YAML_SAFE_LOADERS

    def _cached_by_call(self, node: ast.Call, wrapped: ast.AST) -> None:
        """functools.cache(fn) / functools.lru_cache(maxsize=None)(fn): the call form of the decorator."""
        if type(wrapped) is not ast.Name:
            return
        found = self.lookup(wrapped.id, node._sbs)  # type: ignore[attr-defined]
        if not found:
            return
        for definition in ast.walk(found[0].node):
            if type(definition) in (ast.FunctionDef, ast.AsyncFunctionDef) and definition.name == wrapped.id:
                self._check_cached_function(definition, node)
                return

    def _method_rules(self, node: ast.Call, func: ast.Attribute) -> None:
        name = func.attr
        if name in ("half", "bfloat16") and not node.args:
            self.add("PY-DOWNCAST", node, f".{name}(): computes below fp32")
        elif name in ("to", "type") and any(self.qualname(arg) in _DOWNCAST_DTYPES for arg in [*node.args, *(k.value for k in node.keywords)]):
            self.add("PY-DOWNCAST", node, f".{name}(<a dtype below fp32>): computes below fp32")
        if name in ("run_in_executor", "set_default_executor"):
            self.add("PY-THREAD", node, f".{name}(): runs work on an executor's threads, which can outlive the call")
        if name in ("read_text", "read_bytes"):
            self._file_access(node, func.value, write=False, what=f".{name}()")
        elif name in ("write_text", "write_bytes", "symlink_to", "hardlink_to", "tofile"):
            self._file_access(node, func.value, write=True, what=f".{name}()")
        elif name in ("unlink", "rmdir", "touch", "mkdir", "rename", "replace", "chmod", "lchmod", "open", "iterdir", "glob", "rglob", "walk"):
            if not self.is_path_object(func.value):
                return
            if name == "open":
                mode = self._arg(node, 0, "mode")
                mode_text = "r" if mode is None else self.fold(mode)
                self._file_access(node, func.value, write=mode_text is None or any(c in mode_text for c in "wax+"), what=f".open({mode_text!r})")
            elif name in ("iterdir", "glob", "rglob", "walk"):
                self._file_access(node, func.value, write=False, what=f".{name}()")
            else:
                self._file_access(node, func.value, write=True, what=f".{name}()")
        elif name in _MUTATORS and name not in ("__setattr__", "__delattr__"):
            base = self.qualname(func.value)
            if base is not None and base.endswith(".__dict__"):
                self._store(base[: -len(".__dict__")] + ".<computed>", node, None, f"mutates ({name})")
        self._identity_call(node, func)

    def _arg(self, node: ast.Call, index: int, keyword: str | None) -> ast.AST | None:
        if keyword is not None:
            for item in node.keywords:
                if item.arg == keyword:
                    return item.value
        if index < len(node.args) and type(node.args[index]) is not ast.Starred:
            return node.args[index]
        return None

    # files

    def _file_access(self, node: ast.AST, path: ast.AST | None, *, write: bool, what: str) -> None:
        is_path, own, _, reason = self.path_info(path)
        if reason:
            self.add("PY-PATH-ESCAPE", node, f"{what} on {reason}: outside the solution")
        if write and own and not reason:
            self.add("PY-FILE-WRITE-OWN", node, f"{what}: writes inside the solution's own folder")
        elif write:
            self.add("PY-FILE-WRITE", node, f"{what}: writes files")
        elif not own and not reason:
            self.add("PY-FILE-READ", node, f"{what}: reads something other than the solution's own sources")

    def _escape_only(self, node: ast.AST, path: ast.AST, what: str) -> None:
        reason = self.path_info(path)[3]
        if reason:
            self.add("PY-PATH-ESCAPE", node, f"{what} on {reason}: outside the solution")

    # stores

    def _on_assign(self, node: ast.AST) -> None:
        kind = type(node)
        if kind is ast.Delete:
            targets, value = node.targets, None
        elif kind is ast.Assign:
            targets, value = node.targets, node.value
        elif kind is ast.AugAssign:
            targets, value = [node.target], None
        else:
            if node.value is None:
                return
            targets, value = [node.target], node.value
        verb = "deletes" if kind is ast.Delete else "assigns"
        stack = list(targets)
        while stack:
            target = stack.pop()
            target_kind = type(target)
            if target_kind in (ast.Tuple, ast.List):
                stack.extend(target.elts)
                value = None
            elif target_kind is ast.Starred:
                stack.append(target.value)
            elif target_kind is ast.Attribute:
                self._attribute_store(target, value, verb)
            elif target_kind is ast.Subscript:
                base = self.qualname(target.value)
                if base is not None:
                    key = self.fold(target.slice)
                    if base.endswith(".__dict__"):
                        self._store(base[: -len(".__dict__")] + "." + (key or "<computed>"), target, value, verb)
                    elif base == "<globals>":
                        continue
                    else:
                        self._store(base + "[" + (repr(key) if key is not None else "...") + "]", target, value, verb)
                self._cache_store(target)

    def _attribute_store(self, target: ast.Attribute, value: ast.AST | None, verb: str) -> None:
        base = self.qualname(target.value)
        if base is not None:
            self._store(base + "." + target.attr, target, value, verb)
            return
        if target.attr in _IDENTITY_ATTRS and not (target.attr == "__dict__" and type(target.value) is ast.Name and target.value.id == "self"):
            self.add("PY-PATCH", target, f"{verb} .{target.attr}: changes what an object is or how a function behaves")
        elif self._reaches_class(target.value):
            self.add("PY-PATCH", target, f"{verb} .{target.attr} on the class of an object (type(x), x.__class__): patches a class it did not define")

    def _reaches_class(self, node: ast.AST) -> bool:
        """Whether the expression goes through type(x), x.__class__, __base__/__bases__/__mro__ (a class not defined here)."""
        current = node
        for _ in range(64):
            kind = type(current)
            if kind is ast.Attribute:
                if current.attr in ("__class__", "__base__", "__bases__", "__mro__"):
                    return True
                current = current.value
            elif kind is ast.Subscript:
                current = current.value
            elif kind is ast.Call:
                return self.qualname(current.func) == "builtins.type" and len(current.args) == 1
            else:
                return False
        return False

    def _restores(self, source: str, value: ast.AST | None) -> bool:
        """The value is the setting read back earlier (`saved = flag ... flag = saved`): a restore, no change."""
        held = self.value_of(value) if type(value) is ast.Name else None
        if held is None:
            return False
        if type(held) is ast.Call and not held.args:
            held = held.func
        return self.qualname(held) == source

    def _registers_own_module(self, node: ast.AST) -> bool:
        """`node` (sys.modules) is the target of sys.modules[name] = <a module of the solution's own file>."""
        target = getattr(node, "_sbp", None)
        assign = getattr(target, "_sbp", None)
        return (type(target) is ast.Subscript and target.value is node and isinstance(target.ctx, ast.Store)
                and type(assign) is ast.Assign and self._own_module_registered(assign.value, self.fold(target.slice)))

    def _own_module_registered(self, value: ast.AST | None, name: str | None) -> bool:
        """sys.modules[name] = importlib.util.module_from_spec(spec_from_file_location(name, <a file of the solution>)),
        under a name that is no library's (else it would stand in for that library)."""
        if not name or name.split(".")[0] in _LIBRARY_NAMES:
            return False
        module = self.value_of(value) if type(value) is ast.Name else value
        if type(module) is not ast.Call or self.qualname(module.func) != "importlib.util.module_from_spec" or not module.args:
            return False
        spec = self.value_of(module.args[0]) if type(module.args[0]) is ast.Name else module.args[0]
        if type(spec) is not ast.Call or self.qualname(spec.func) != "importlib.util.spec_from_file_location":
            return False
        location = self._arg(spec, 1, "location")
        _, own, _, reason = self.path_info(self.value_of(location) if type(location) is ast.Name else location)
        return own and reason is None

    def _store(self, dotted: str, node: ast.AST, value: ast.AST | None, verb: str) -> None:
        """A write to `dotted`, an attribute (or item) of a module, class or builtin that the solution did not define."""
        bare = dotted.split("[", 1)[0]
        if bare in _PRECISION_FLAGS or (bare.startswith("torch.backends.") and bare.endswith(".fp32_precision")):
            benign = (_is_false(value) or (type(value) is ast.Constant and value.value == "ieee")
                      or (bare in _PRECISION_DEFAULT_TRUE and type(value) is ast.Constant and value.value is True)
                      or self._restores(bare, value))
            if verb == "deletes" or not benign:
                self.add("PY-PRECISION", node, f"{verb} {bare}: lower precision for every matmul/conv in the process")
            return
        if bare == "os.environ" or bare.startswith("os.environ."):
            key = _subscript_key(dotted) if bare == "os.environ" else None
            self._env_write(node, [key] if key is not None and verb != "deletes" else None, f"{verb} {dotted}")
            return
        if bare == "sys.path" or bare.startswith("sys.path."):
            self.add("PY-SYSPATH", node, f"{verb} {dotted}")
            return
        hit = _match(bare)
        if hit and hit[0] == "PY-SYSMODULES" and bare == "sys.modules" and verb == "assigns" and self._own_module_registered(value, _subscript_key(dotted)):
            return  # the importlib recipe for a module of the solution's own
        if hit and hit[0] in ("PY-SYSMODULES", "PY-HARNESS", "PY-INTROSPECT"):
            self.add(hit[0], node, f"{verb} {dotted}: {hit[1]}")
            return
        if bare.startswith(_CONFIG_OK):
            return
        top = bare.split(".")[0]
        if not self.own_paths and top not in _STDLIB and top not in _KNOWN_LIBRARIES:
            return  # analysed alone: most likely a sibling module of the solution
        if bare.startswith("triton.knobs.") or bare.startswith("triton.config."):
            self.add("PY-CONFIG", node, f"{verb} {dotted}: changes Triton's global configuration")
            return
        self.add("PY-PATCH", node, f"{verb} {dotted}: patches a module, class or builtin the solution did not define")

    # raise

    def _on_raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        target = exc.func if type(exc) is ast.Call else exc
        if self.qualname(target) in ("builtins.SystemExit", "builtins.KeyboardInterrupt"):
            self.add("PY-EXIT", node, "raises SystemExit/KeyboardInterrupt: ends the worker")

    # literals

    def _on_constant(self, node: ast.AST) -> None:
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) is ast.JoinedStr or type(parent) is ast.FormattedValue:
            return
        if type(node) is ast.JoinedStr:
            text = "".join(str(v.value) if type(v) is ast.Constant else "0" for v in node.values)
        else:
            value = node.value
            if isinstance(value, bytes):
                kind = binary_kind(value)
                if kind:
                    self.add("PY-BLOB", node, f"a bytes literal holds {kind}: foreign code")
                    return
                text = value.decode("latin-1")
                if len(value) >= 16:
                    kind = text_blob(text) or scrambled_kind(value)
                    if kind:
                        self.add("PY-BLOB", node, f"a bytes literal holds {kind}: foreign code")
                        return
                opaque = bytes_opaque(value)
                if opaque:
                    self.add("PY-OPAQUE", node, f"a bytes literal of {opaque}")
                return
            if isinstance(value, int) and not isinstance(value, bool):
                kind = byte_sequence_kind([value]) if value > 255 else None
                if kind:
                    self.add("PY-BLOB", node, f"the constant {value:#x} is {kind}: part of a binary image")
                return
            if not isinstance(value, str):
                return
            text = value
        if len(text) < 4:
            return
        kind = text_blob(text) or (scrambled_kind(text.encode("latin-1", "ignore")) if len(text) >= 256 else None)
        if kind:
            self.add("PY-BLOB", node, f"a string literal holds {kind}: foreign code")
            return
        opaque = text_opaque(text)
        if opaque:
            self.add("PY-OPAQUE", node, f"a string literal of {opaque}")
        docstring = type(parent) is ast.Expr
        if docstring:
            return
        if SYSTEM_PATH.fullmatch(text):
            self.add("PY-PATH-ESCAPE", node, f"names the system path {text[:60]!r}: outside the solution")
        if len(text) >= 40 and _CPP_HINT.search(text):
            self.out.extend(_analyze_cpp(text, self.path, node.lineno - 1))
        elif _L2_NAME.search(text) and re.search(r"(?i)\b\w*(?:accesspolicywindow|persistingl2\w*|streamsetattribute)\b", text):
            self.add("PY-L2", node, "a string names an L2-persistence API (accessPolicyWindow / PersistingL2 / StreamSetAttribute)")

    def _on_sequence(self, node: ast.AST) -> None:
        elements = node.elts  # type: ignore[attr-defined]
        if len(elements) < 4:
            return
        values = []
        for element in elements:
            if type(element) is ast.Constant and isinstance(element.value, int) and not isinstance(element.value, bool):
                values.append(element.value)
            else:
                return
        kind = byte_sequence_kind(values)
        if kind:
            self.add("PY-BLOB", node, f"a list of {len(values)} integers holds {kind}: foreign code")
        elif len(values) >= 1024 and all(0 <= v <= 255 for v in values):
            self.add("PY-OPAQUE", node, f"a list of {len(values)} byte values: opaque data")

    # caching

    def _module_containers(self) -> dict[str, bool]:
        """Module-level names bound to containers: name -> is a weak-keyed container."""
        containers: dict[str, bool] = {}
        for name, bindings in self.module.bindings.items():
            for binding in bindings:
                if binding[0] != "expr":
                    continue
                value = binding[1]
                if type(value) in (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp):
                    containers[name] = containers.get(name, False)
                elif type(value) is ast.Call:
                    func = self.qualname(value.func)
                    if func in _CONTAINER_CALLS:
                        containers[name] = containers.get(name, False) or func in _WEAK_CALLS
        return containers

    def _module_container(self, node: ast.AST) -> str | None:
        """The name of the module-level container `node` refers to, from inside a function."""
        if type(node) is not ast.Name or node.id not in self.module_containers:
            return None
        scope = node._sbs  # type: ignore[attr-defined]
        if scope.kind == "module":
            return None
        found = self.lookup(node.id, scope)
        if found is None or found[0] is not self.module:
            return None
        return node.id

    def _identity_keyed(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether the expression involves data_ptr()/id()/hash()/storage of an object (the identity of the inputs)."""
        if node is None or depth > 3:
            return False
        for sub in ast.walk(node):
            kind = type(sub)
            if kind is ast.Call:
                func = sub.func
                if type(func) is ast.Attribute and func.attr in _IDENTITY_METHODS:
                    return True
                name = self.qualname(func)
                if name == "builtins.id":
                    return True
                if name == "builtins.hash" and sub.args and type(sub.args[0]) is not ast.Tuple:
                    return True
            elif kind is ast.Attribute and sub.attr in ("_cdata",):
                return True
            elif kind is ast.Name and isinstance(sub.ctx, ast.Load):
                found = self.lookup(sub.id, sub._sbs)  # type: ignore[attr-defined]
                if found and found[0] is not self.module:
                    for binding in found[1]:
                        if binding[0] == "expr" and self._identity_keyed(binding[1], depth + 1):
                            return True
        return False

    def _cache_store(self, target: ast.Subscript) -> None:
        name = self._module_container(target.value)
        if name is None:
            return
        if self.module_containers[name]:
            self.add("PY-CACHE", target, f"stores into the module-level weak-keyed {name!r} from a function: results cached on the identity of objects")
        elif self._identity_keyed(target.slice):
            self.add("PY-CACHE", target, f"stores into the module-level {name!r} keyed on data_ptr()/id()/hash(): results reused across calls")

    def _identity_call(self, node: ast.Call, func: ast.Attribute) -> None:
        if func.attr in ("setdefault", "get", "pop", "__setitem__", "__getitem__", "__contains__", "append", "add", "update"):
            name = self._module_container(func.value)
            if name is not None and any(self._identity_keyed(arg) for arg in node.args):
                self.add("PY-CACHE", node, f"uses the module-level {name!r} with a data_ptr()/id()/hash() key: results reused across calls")
        if func.attr == "data_ptr":
            self._data_ptr_use(node)

    def _identity_key(self, key: ast.AST, node: ast.Subscript, what: str) -> None:
        if isinstance(node.ctx, ast.Load):
            name = self._module_container(node.value)
            if name is not None and self._identity_keyed(key):
                self.add("PY-CACHE", node, f"looks up the module-level {name!r} by data_ptr()/id()/hash(): results reused across calls")

    def _data_ptr_use(self, call: ast.Call) -> None:
        """data_ptr() reaching a comparison, a subscript key, a dict key or a set/dict method; not a kernel argument."""
        current: ast.AST = call
        parent = call._sbp  # type: ignore[attr-defined]
        while parent is not None:
            kind = type(parent)
            if kind is ast.Compare:
                others = [n for n in (parent.left, *parent.comparators) if n is not current]
                if all(type(n) is ast.Constant for n in others):
                    return
                self.add("PY-PTR-KEY", call, "data_ptr() in a comparison: behaviour keyed on the identity of the inputs")
                return
            if kind is ast.Subscript:
                if parent.slice is current:
                    self.add("PY-PTR-KEY", call, "data_ptr() used as a key: results keyed on the identity of the inputs")
                return
            if kind is ast.Dict:
                if any(key is current for key in parent.keys):
                    self.add("PY-PTR-KEY", call, "data_ptr() used as a dict key: results keyed on the identity of the inputs")
                return
            if kind is ast.Call:
                func = parent.func
                if type(func) is ast.Attribute and func.attr in ("get", "setdefault", "pop", "add", "discard", "__contains__",
                                                                 "__getitem__", "__setitem__", "count", "index", "remove") and current in parent.args:
                    self.add("PY-PTR-KEY", call, f"data_ptr() passed to .{func.attr}(): results keyed on the identity of the inputs")
                    return
                name = self.qualname(func)
                if name in ("builtins.int", "builtins.hex", "builtins.tuple", "builtins.frozenset", "builtins.str") and current in parent.args:
                    current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                    continue
                if name == "builtins.hash":
                    self.add("PY-PTR-KEY", call, "hash of data_ptr(): results keyed on the identity of the inputs")
                return
            if kind in (ast.Tuple, ast.List, ast.Set, ast.keyword):
                if kind is ast.Set:
                    self.add("PY-PTR-KEY", call, "data_ptr() in a set: remembers the identity of the inputs")
                    return
                current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                continue
            if kind is ast.BinOp and isinstance(parent.op, (ast.Add, ast.Sub)):
                current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                continue
            return

    def _on_return(self, node: ast.Return) -> None:
        """The entry function returns a value kept in a module-level container (possibly cloned,
        expanded or viewed): outputs memoised across calls, e.g. on a scalar input or the shapes."""
        scope = node._sbs  # type: ignore[attr-defined]
        function = scope.node if scope.kind == "function" else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name != self.entry or scope.parent is not self.module:
            return
        values = node.value.elts if type(node.value) in (ast.Tuple, ast.List) else [node.value]
        for value in values:
            name = self._memoised(value, 0)
            if name is not None and _written_in(function, value):
                self.add("PY-STATIC-OUTPUT", node, f"{self.entry}() returns a buffer kept in the module-level {name!r} that it writes "
                                                   "(out= or an in-place method): judged at run time, where an output not written by the call fails")
                return
            if name is not None:
                self.add("PY-MEMO", node, f"{self.entry}() returns a value kept in the module-level {name!r}: outputs memoised across calls")
                return

    def _memoised(self, node: ast.AST | None, depth: int) -> str | None:
        """The module-level container whose element `node` is, through views, copies and local names."""
        if node is None or depth > 4:
            return None
        kind = type(node)
        if kind is ast.Subscript:
            return self._module_container(node.value)
        if kind is ast.Call and type(node.func) is ast.Attribute:
            method = node.func.attr
            if method in ("get", "setdefault", "pop", "__getitem__"):
                return self._module_container(node.func.value)
            if method in _VIEWS_AND_COPIES:
                return self._memoised(node.func.value, depth + 1)
            return None
        if kind is ast.Name:
            found = self.lookup(node.id, node._sbs)  # type: ignore[attr-defined]
            if found is None or found[0] is self.module:
                return None
            for binding in found[1]:
                if binding[0] == "expr":
                    name = self._memoised(binding[1], depth + 1)
                    if name is not None:
                        return name
        return None

    def _on_compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators):
            if type(op) in (ast.In, ast.NotIn):
                name = self._module_container(right)
                if name is not None and self._identity_keyed(node.left):
                    self.add("PY-CACHE", node, f"checks the module-level {name!r} for a data_ptr()/id()/hash() key: results reused across calls")

    def _on_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if type(decorator) is ast.Call else decorator
            if self.qualname(target) in ("functools.lru_cache", "functools.cache", "functools.cached_property"):
                self._check_cached_function(node, decorator)

    def _check_cached_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, where: ast.AST) -> None:
        args = function.args
        params = [a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None]
        names = {a.arg for a in params} - {"self", "cls"}
        tensorish: set[str] = set()
        for param in params:
            if param.annotation is not None and any(
                (type(n) is ast.Name and n.id == "Tensor") or (type(n) is ast.Attribute and n.attr == "Tensor")
                or (type(n) is ast.Constant and isinstance(n.value, str) and "Tensor" in n.value)
                for n in ast.walk(param.annotation)
            ):
                tensorish.add(param.arg)
        for sub in ast.walk(function):
            if type(sub) is ast.Attribute and type(sub.value) is ast.Name and sub.value.id in names and sub.attr in _TENSOR_ATTRS:
                tensorish.add(sub.value.id)
        if tensorish:
            listed = ", ".join(sorted(tensorish))
            self.add("PY-CACHE", where, f"lru_cache/cache on {function.name}() which takes tensors ({listed}): results cached across calls")


def _assigned(value: ast.AST) -> bool:
    """Whether `value` is the value of an assignment statement (`x = value`, `a, x = b, value`)."""
    parent = value._sbp  # type: ignore[attr-defined]
    while type(parent) in (ast.Tuple, ast.List):
        parent = parent._sbp
    return type(parent) in (ast.Assign, ast.AnnAssign)


def _subscript_key(dotted: str) -> str | None:
    """'KEY' of a dotted name written as base['KEY'] (None when the key is not a constant string)."""
    if not dotted.endswith("]") or "[" not in dotted:
        return None
    text = dotted[dotted.index("[") + 1:-1]
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return key if isinstance(key, str) else None


def _is_none(node: ast.AST) -> bool:
    return type(node) is ast.Constant and node.value is None


def _is_false(node: ast.AST | None) -> bool:
    return type(node) is ast.Constant and node.value in (False, 0, None, "highest", "ieee") and node.value is not True


def _written_in(function: ast.AST, value: ast.AST) -> bool:
    """Whether `function` writes `value` (the same expression) through a call: as its out= argument or as
    the receiver of an in-place method (`.copy_()`, `.mul_()`, ...)."""
    wanted = ast.dump(value)
    for node in ast.walk(function):
        if type(node) is not ast.Call:
            continue
        if any(keyword.arg == "out" and ast.dump(keyword.value) == wanted for keyword in node.keywords):
            return True
        func = node.func
        if type(func) is ast.Attribute and func.attr.endswith("_") and not func.attr.startswith("_") and ast.dump(func.value) == wanted:
            return True
    return False
