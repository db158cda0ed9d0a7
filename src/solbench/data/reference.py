"""Turn a definition's reference source into a module (once per distinct source).

The module is registered in sys.modules under a name unique to the problem and its source
(`solbench_reference_<name hash>_<source hash>`): torch.compile resolves the globals of functions it
inlines (a `@torch.no_grad()` wrapper's wrapped function, module-level helpers) by importing their
`__module__`, which must therefore be importable by name. Two problems never share a module."""

from __future__ import annotations

import hashlib
import linecache
import sys
import types

from solbench.data.definition import Definition

_MODULES: dict[str, types.ModuleType] = {}


def reference_module(definition: Definition) -> types.ModuleType:
    """The executed reference; tracebacks through it show its lines."""
    digest = hashlib.sha256(definition.reference.encode()).hexdigest()[:16]
    key = f"{definition.name}:{digest}"
    module = _MODULES.get(key)
    if module is None:
        filename = f"<reference {definition.name} {digest}>"
        linecache.cache[filename] = (len(definition.reference), None, definition.reference.splitlines(True), filename)
        module = types.ModuleType(reference_module_name(definition))
        module.__file__ = filename
        sys.modules[module.__name__] = module  # before it runs, as an import would: its functions name it as their module
        try:
            exec(compile(definition.reference, filename, "exec"), module.__dict__)
        except BaseException:
            sys.modules.pop(module.__name__, None)
            raise
        _MODULES[key] = module
    return module


def reference_module_name(definition: Definition) -> str:
    """The module name of a problem's reference: unique to the problem's name and its source."""
    name = hashlib.sha256(definition.name.encode()).hexdigest()[:8]
    return f"solbench_reference_{name}_{hashlib.sha256(definition.reference.encode()).hexdigest()[:16]}"
