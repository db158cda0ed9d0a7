"""The bundled problem sets, and the tools that extract, characterise and sample problems from real models.

Two sets ship inside the package: `problems/` (13 hand-written problems: the default of every
command, quick enough for a CPU) and `models/` (the set made from real models by `solbench dataset
extract`, see its MANIFEST.md). A command names a set as `solbench:NAME` wherever it takes a path."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

BUNDLED_SETS = {"problems": "problems", "models": "models"}
SET_PREFIX = "solbench:"


def bundled_problems_path() -> Path:
    """Folder of the default problems shipped inside the package."""
    return Path(str(files("solbench.dataset") / "problems"))


def bundled_set_path(name: str) -> Path:
    """The folder of a bundled set by name (see BUNDLED_SETS)."""
    from solbench.data.errors import SpecError

    if name not in BUNDLED_SETS:
        raise SpecError(f"no bundled set named {name!r}; the sets are {', '.join(SET_PREFIX + n for n in BUNDLED_SETS)}", field="PATH")
    return Path(str(files("solbench.dataset") / BUNDLED_SETS[name]))


def is_bundled(path: Path) -> bool:
    """Whether `path` lies inside the installed package's data (a bundled set or one of its problems):
    tools read it but write nothing there (an index, a figure) unless told where."""
    package = Path(str(files("solbench.dataset"))).resolve()
    resolved = path.resolve()
    return resolved == package or package in resolved.parents


def resolve_set_paths(paths: list[Path]) -> list[Path]:
    """Paths as given, with each `solbench:NAME` replaced by that bundled set's folder."""
    return [bundled_set_path(str(p)[len(SET_PREFIX):]) if str(p).startswith(SET_PREFIX) else p for p in paths]
