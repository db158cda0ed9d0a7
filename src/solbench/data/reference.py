"""Turn a definition's reference source into a module (once per distinct source)."""

from __future__ import annotations

import hashlib
import linecache
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
        module = types.ModuleType(f"solbench_reference_{digest}")
        module.__file__ = filename
        exec(compile(definition.reference, filename, "exec"), module.__dict__)
        _MODULES[key] = module
    return module
