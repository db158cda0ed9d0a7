"""Scopes and name resolution for the Python rules: how a name, an attribute chain or a constant
expression resolves to a dotted name (see _python's docstring for the binding rules)."""

from __future__ import annotations

import ast

from solbench.bench.guards._bans import (
    _BUILTIN_NAMES, _DYNAMIC_IMPORTS, _LIBRARY_NAMES, _PATH_CONSTANTS, _SCOPED, _STAR_NAMES, _match, _normalise,
)

_LOCAL = ("local",)


class _Scope:
    __slots__ = ("kind", "parent", "bindings", "globals", "nonlocals", "stars", "node")

    def __init__(self, kind: str, parent: _Scope | None, node: ast.AST):
        self.kind = kind
        self.parent = parent
        self.node = node
        self.bindings: dict[str, list[tuple]] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.stars: list[str] = []

    def bind(self, name: str, binding: tuple) -> None:
        self.bindings.setdefault(name, []).append(binding)


class _Unanalyzable(Exception):
    pass


class _Resolver:
    """Mixin of _Analyzer: the first pass (bindings) and the resolution of names and constants."""

    def _bind_all(self) -> None:
        stack: list[tuple[ast.AST, _Scope, ast.AST | None]] = [(self.tree, self.module, None)]
        functions: list[_Scope] = []
        order = self.order = []  # every node, in source order (earlier aliases resolve first and are cached)
        push = stack.append
        record = order.append
        AST = ast.AST
        while stack:
            node, scope, parent = stack.pop()
            node._sbp = parent  # type: ignore[attr-defined]
            node._sbs = scope  # type: ignore[attr-defined]
            record(node)
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, ast.Store):
                    scope.bind(node.id, _LOCAL)
                continue
            if kind in _SCOPED:
                # these push their children themselves (in their own scopes); popped in source order
                mark = len(stack)
                self._bind_scoped(node, kind, scope, functions, push)
                stack[mark:] = stack[mark:][::-1]
                continue
            if kind is ast.Import:
                for alias in node.names:
                    full = _normalise(alias.name)
                    if alias.asname:
                        scope.bind(alias.asname, self._import_binding(full))
                    else:
                        head = alias.name.split(".")[0]
                        scope.bind(head, self._import_binding(_normalise(head)))
            elif kind is ast.ImportFrom:
                for alias in node.names:
                    if node.level or not node.module:
                        if alias.name != "*":
                            scope.bind(alias.asname or alias.name, _LOCAL)
                        continue
                    if alias.name == "*":
                        scope.stars.append(_normalise(node.module))
                    else:
                        scope.bind(alias.asname or alias.name, self._import_binding(_normalise(node.module + "." + alias.name)))
            elif kind is ast.Assign:
                for target in node.targets:
                    self._bind_target(target, node.value, scope)
            elif kind is ast.AnnAssign:
                if node.value is not None and type(node.target) is ast.Name:
                    scope.bind(node.target.id, ("expr", node.value, scope))
            elif kind is ast.NamedExpr:
                home = scope
                while home.kind == "comp" and home.parent is not None:
                    home = home.parent
                if type(node.target) is ast.Name:
                    home.bind(node.target.id, ("expr", node.value, scope))
                push((node.value, scope, node))
                node.target._sbp, node.target._sbs = node, home  # type: ignore[attr-defined]
                continue
            elif kind is ast.Global:
                scope.globals.update(node.names)
            elif kind is ast.Nonlocal:
                scope.nonlocals.update(node.names)
            elif kind is ast.ExceptHandler:
                if node.name:
                    scope.bind(node.name, _LOCAL)
            elif kind in (ast.MatchAs, ast.MatchStar):
                if node.name:
                    scope.bind(node.name, _LOCAL)
            elif kind is ast.MatchMapping:
                if node.rest:
                    scope.bind(node.rest, _LOCAL)
            children = []
            for field in node._fields:
                if field == "ctx":
                    continue
                value = getattr(node, field, None)
                if value.__class__ is list:
                    for item in value:
                        if isinstance(item, AST):
                            children.append((item, scope, node))
                elif isinstance(value, AST):
                    children.append((value, scope, node))
            children.reverse()
            stack.extend(children)
        # `global x` / `nonlocal x` move the function's bindings of x to where x lives
        for scope in functions:
            for name in scope.globals:
                for binding in scope.bindings.pop(name, []):
                    self.module.bind(name, binding)
            for name in scope.nonlocals:
                target = scope.parent
                while target is not None and (target.kind == "class" or name not in target.bindings) and target.parent is not None:
                    target = target.parent
                for binding in scope.bindings.pop(name, []):
                    (target or self.module).bind(name, binding)

    def _bind_scoped(self, node, kind, scope: _Scope, functions: list[_Scope], push) -> None:
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            if kind is not ast.Lambda:
                scope.bind(node.name, _LOCAL)
                for item in node.decorator_list:
                    push((item, scope, node))
                if node.returns is not None:
                    push((node.returns, scope, node))
            inner = _Scope("function", scope, node)
            functions.append(inner)
            node._sb_inner = inner  # type: ignore[attr-defined]
            args = node.args
            args._sbp, args._sbs = node, inner  # type: ignore[attr-defined]
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is None:
                    continue
                arg._sbp, arg._sbs = args, inner  # type: ignore[attr-defined]
                inner.bind(arg.arg, _LOCAL)
                if arg.annotation is not None:
                    push((arg.annotation, scope, arg))
            for default in (*args.defaults, *args.kw_defaults):
                if default is not None:
                    push((default, scope, args))
            # a parameter with a default may be that default (`def f(m=time): m.perf_counter = ...`)
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
                inner.bind(arg.arg, ("expr", default, scope))
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if default is not None:
                    inner.bind(arg.arg, ("expr", default, scope))
            body = node.body if kind is not ast.Lambda else [node.body]
            for item in body:
                push((item, inner, node))
            return
        if kind is ast.ClassDef:
            scope.bind(node.name, ("class", node))
            for item in (*node.decorator_list, *node.bases, *node.keywords):
                push((item, scope, node))
            inner = _Scope("class", scope, node)
            node._sb_inner = inner  # type: ignore[attr-defined]
            for item in node.body:
                push((item, inner, node))
            return
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            inner = _Scope("comp", scope, node)
            for index, gen in enumerate(node.generators):
                gen._sbp, gen._sbs = node, inner  # type: ignore[attr-defined]
                push((gen.target, inner, gen))
                push((gen.iter, scope if index == 0 else inner, gen))
                for cond in gen.ifs:
                    push((cond, inner, gen))
            for field in ("elt", "key", "value"):
                child = getattr(node, field, None)
                if child is not None:
                    push((child, inner, node))
            return

    def _import_binding(self, dotted: str) -> tuple:
        top = dotted.split(".")[0]
        # A solution's own file named like a library (os.py, subprocess.py, ctypes/__init__.py, yaml.py, torch/...) does not
        # make the import local: builtin and frozen modules (os, sys, time, io, ...) always win over it, and an import that
        # runs inside a call, after the build folder has left sys.path, gets the library again. Whichever it is at run
        # time, its calls are judged as the library's; the file itself gets PY-SHADOW.
        if top in self.own_modules and top not in _LIBRARY_NAMES and not _match(dotted):
            return _LOCAL
        return ("import", dotted)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, scope: _Scope) -> None:
        kind = type(target)
        if kind is ast.Name:
            scope.bind(target.id, ("expr", value, scope) if value is not None else _LOCAL)
        elif kind in (ast.Tuple, ast.List):
            values = value.elts if type(value) in (ast.Tuple, ast.List) and len(value.elts) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                self._bind_target(element, values[index] if values else None, scope)
        elif kind is ast.Starred:
            self._bind_target(target.value, None, scope)

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > 150:
            raise _Unanalyzable("names are aliased or nested too deeply")

    def lookup(self, name: str, scope: _Scope) -> tuple[_Scope, list[tuple]] | None:
        """The scope that binds `name` as seen from `scope`, and its bindings; None when unbound."""
        current: _Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals:
                current = self.module
            if current.kind == "class" and not first:
                current = current.parent
                continue
            bindings = current.bindings.get(name)
            if bindings:
                return current, bindings
            first = False
            current = current.parent
        return None

    def resolve_name(self, name: str, scope: _Scope) -> str | None:
        key = (name, id(scope))
        cached = self._ncache.get(key, _LOCAL)
        if cached is not _LOCAL:
            return cached  # type: ignore[return-value]
        self._ncache[key] = None  # cycles resolve to nothing
        found = self.lookup(name, scope)
        result: str | None = None
        if found is None:
            if name in _BUILTIN_NAMES:
                result = "builtins." + name
            elif name == "__builtins__":
                result = "builtins"
            else:
                for module in self.module.stars:
                    candidate = module + "." + name
                    if _match(candidate) or candidate in _STAR_NAMES:
                        result = candidate
                        break
        else:
            for binding in found[1]:
                if binding[0] == "import":
                    result = binding[1]
                    break
                if binding[0] == "expr":
                    self._enter()
                    try:
                        result = self.qualname(binding[1])
                    finally:
                        self._depth -= 1
                    if result is not None:
                        break
        self._ncache[key] = result
        return result

    def value_of(self, node: ast.AST) -> ast.AST | None:
        """The expression a Name was assigned (first assignment), or None."""
        if type(node) is not ast.Name:
            return None
        found = self.lookup(node.id, node._sbs)  # type: ignore[attr-defined]
        if not found:
            return None
        for binding in found[1]:
            if binding[0] == "expr":
                return binding[1]
        return None

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name of what `node` denotes, when it denotes a module, a module's member or a builtin."""
        cache = self._qcache
        key = id(node)
        if key in cache:
            return cache[key]
        chain: list[ast.Attribute] = []
        current = node
        while type(current) is ast.Attribute:
            if id(current) in cache:
                break
            chain.append(current)
            current = current.value
        if type(current) is ast.Attribute:
            base = cache[id(current)]
        else:
            base = self._qbase(current)
            cache[id(current)] = base
        chain.reverse()
        if base is None and chain and type(current) is ast.Name:
            # `Holder.mod` where `class Holder: mod = time`: the class attribute's value
            base = self._class_attribute(current, chain[0].attr)
            cache[id(chain[0])] = base
            chain = chain[1:]
        for attribute in chain:
            base = None if base is None else base + "." + attribute.attr
            cache[id(attribute)] = base
        return cache[key]

    def _class_attribute(self, name: ast.Name, attr: str) -> str | None:
        found = self.lookup(name.id, name._sbs)  # type: ignore[attr-defined]
        if not found:
            return None
        for binding in found[1]:
            if binding[0] == "class":
                inner = binding[1]._sb_inner
                for value in inner.bindings.get(attr, ()):
                    if value[0] == "expr":
                        self._enter()
                        try:
                            result = self.qualname(value[1])
                        finally:
                            self._depth -= 1
                        if result is not None:
                            return result
        return None

    def _qbase(self, node: ast.AST) -> str | None:
        kind = type(node)
        if kind is ast.Name:
            return self.resolve_name(node.id, node._sbs)  # type: ignore[attr-defined]
        if kind is ast.Call:
            if type(node.func) is ast.Call and node.args and len(node.func.args) == 1:
                maker = self.qualname(node.func.func)
                if maker == "operator.attrgetter":
                    base = self.qualname(node.args[0])
                    attr = self.fold(node.func.args[0])
                    return None if base is None or attr is None else base + "." + attr
            func = self.qualname(node.func)
            if func in _DYNAMIC_IMPORTS and node.args:
                name = self.fold(node.args[0])
                if name is None or name.startswith("."):
                    return None
                has_fromlist = len(node.args) >= 4 or any(k.arg == "fromlist" for k in node.keywords)
                if func == "builtins.__import__" and not has_fromlist:
                    name = name.split(".")[0]
                return _normalise(name)
            if func == "builtins.getattr" and len(node.args) >= 2:
                base = self.qualname(node.args[0])
                attr = self.fold(node.args[1])
                if base is not None and attr is not None:
                    return base + "." + attr
                return None
            if func == "builtins.vars" and len(node.args) == 1:
                base = self.qualname(node.args[0])
                return None if base is None else base + ".__dict__"
            if func in ("builtins.globals", "builtins.locals"):
                return "<globals>"
            if func == "builtins.type" and len(node.args) == 1:
                return None
            return None
        if kind is ast.Subscript:
            element = self._element(node)
            if element is not None:
                self._enter()
                try:
                    return self.qualname(element)
                finally:
                    self._depth -= 1
            base = self.qualname(node.value)
            if base is None:
                return None
            key = self.fold(node.slice)
            if key is None:
                return None
            if base.endswith(".__dict__"):
                return base[: -len(".__dict__")] + "." + key
            if base == "__dict__":
                return key
            if base == "sys.modules":
                return _normalise(key)
            if base == "builtins" or base == "builtins.__dict__":
                return "builtins." + key
            if base == "<globals>":
                return self.resolve_name(key, self.module)
            return None
        if kind is ast.Attribute:  # pragma: no cover - handled by qualname
            return self.qualname(node)
        return None

    def _element(self, node: ast.Subscript) -> ast.AST | None:
        """The element a constant subscript picks from a list/tuple/dict literal (directly or through a name)."""
        container = node.value
        if type(container) is ast.Name:
            container = self.value_of(container)
        if type(node.slice) is not ast.Constant:
            return None
        key = node.slice.value
        if type(container) in (ast.List, ast.Tuple) and isinstance(key, int) and not isinstance(key, bool):
            if -len(container.elts) <= key < len(container.elts) and type(container.elts[key]) is not ast.Starred:
                return container.elts[key]
        elif type(container) is ast.Dict:
            for dict_key, value in zip(container.keys, container.values):
                if type(dict_key) is ast.Constant and dict_key.value == key:
                    return value
        return None

    def fold(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The constant string an expression evaluates to, when it is built from constants."""
        if node is None or depth > 40:
            return None
        kind = type(node)
        if kind is ast.Constant:
            value = node.value
            if isinstance(value, str):
                return value
            if isinstance(value, bytes):
                try:
                    return value.decode("latin-1")
                except Exception:  # pragma: no cover
                    return None
            return None
        if kind is ast.BinOp and isinstance(node.op, ast.Add):
            left = self.fold(node.left, depth + 1)
            right = self.fold(node.right, depth + 1) if left is not None else None
            return left + right if right is not None else None
        if kind is ast.BinOp and isinstance(node.op, ast.Mult):
            text = self.fold(node.left, depth + 1)
            if text is not None and type(node.right) is ast.Constant and isinstance(node.right.value, int) and 0 <= node.right.value < 64:
                return text * node.right.value
            return None
        if kind is ast.JoinedStr:
            parts = []
            for value in node.values:
                if type(value) is ast.Constant:
                    parts.append(str(value.value))
                elif type(value) is ast.FormattedValue and value.format_spec is None and value.conversion in (-1, 115):
                    folded = self.fold(value.value, depth + 1)
                    if folded is None:
                        return None
                    parts.append(folded)
                else:
                    return None
            return "".join(parts)
        if kind is ast.Name:
            value = self.value_of(node)
            return self.fold(value, depth + 1) if value is not None else None
        if kind is ast.Attribute:
            return _PATH_CONSTANTS.get(self.qualname(node) or "")
        if kind is ast.Subscript and type(node.slice) is ast.Slice:
            text = self.fold(node.value, depth + 1)
            if text is None:
                return None
            bounds = []
            for part in (node.slice.lower, node.slice.upper, node.slice.step):
                if part is None:
                    bounds.append(None)
                elif type(part) is ast.Constant and isinstance(part.value, int):
                    bounds.append(part.value)
                elif type(part) is ast.UnaryOp and isinstance(part.op, ast.USub) and type(part.operand) is ast.Constant and isinstance(part.operand.value, int):
                    bounds.append(-part.operand.value)
                else:
                    return None
            try:
                return text[slice(*bounds)]
            except ValueError:
                return None
        if kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute:
                if func.attr == "join" and len(node.args) == 1 and not node.keywords:
                    sep = self.fold(func.value, depth + 1)
                    seq = node.args[0]
                    if sep is not None and type(seq) in (ast.List, ast.Tuple):
                        items = [self.fold(item, depth + 1) for item in seq.elts]
                        if all(item is not None for item in items):
                            return sep.join(items)  # type: ignore[arg-type]
                    if sep is not None and type(seq) is ast.Call and self.qualname(seq.func) == "builtins.reversed" and seq.args:
                        inner = self.fold(seq.args[0], depth + 1)
                        return None if inner is None else sep.join(reversed(inner))
                    return None
                if func.attr in ("lower", "upper", "strip", "lstrip", "rstrip", "decode", "encode", "swapcase", "title", "capitalize") and not node.args:
                    text = self.fold(func.value, depth + 1)
                    return None if text is None else (text if func.attr in ("decode", "encode") else getattr(text, func.attr)())
                if func.attr == "replace" and len(node.args) == 2:
                    text, old, new = (self.fold(x, depth + 1) for x in (func.value, *node.args))
                    if None not in (text, old, new):
                        return text.replace(old, new)  # type: ignore[union-attr,arg-type]
                    return None
                if func.attr == "format" and not node.keywords:
                    text = self.fold(func.value, depth + 1)
                    items = [self.fold(item, depth + 1) for item in node.args]
                    if text is not None and all(item is not None for item in items):
                        try:
                            return text.format(*items)
                        except (IndexError, KeyError, ValueError):
                            return None
                    return None
            name = self.qualname(func)
            if name in ("builtins.bytes", "builtins.bytearray") and len(node.args) == 1 and type(node.args[0]) in (ast.List, ast.Tuple):
                values = [item.value for item in node.args[0].elts if type(item) is ast.Constant and isinstance(item.value, int)]
                if len(values) == len(node.args[0].elts) and all(0 <= v < 256 for v in values):
                    return bytes(values).decode("latin-1")
                return None
            if name in ("builtins.str", "builtins.bytes") and len(node.args) == 1:
                return self.fold(node.args[0], depth + 1)
            if name == "builtins.chr" and len(node.args) == 1 and type(node.args[0]) is ast.Constant and isinstance(node.args[0].value, int):
                try:
                    return chr(node.args[0].value)
                except (ValueError, OverflowError):
                    return None
            if name in ("builtins.bytes", "builtins.bytearray") and len(node.args) == 1 and type(node.args[0]) in (ast.List, ast.Tuple):
                values = [item.value for item in node.args[0].elts if type(item) is ast.Constant and isinstance(item.value, int)]
                if len(values) == len(node.args[0].elts) and all(0 <= v < 256 for v in values):
                    return bytes(values).decode("latin-1")
            return None
        return None
