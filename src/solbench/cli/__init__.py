"""The solbench command line: one typer app over every stage, a module per command group (each module
of this package registers its commands on import)."""

import importlib
import pkgutil

from .app import app, main

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in {"app", "__main__"}:
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["app", "main"]
