"""Checks of a solution file that validate makes beyond its schema: the entry symbol exists in a
Python entry file, and a solution found beside a problem names that problem."""

from __future__ import annotations

import ast
from pathlib import Path

from solbench.data.errors import Issue
from solbench.data.solution import Solution

SOLUTION_FILES = ("solution.json",)  # beside a problem's definition.json
SOLUTION_FOLDER = "solutions"  # or any *.json in this subfolder of a problem folder


def entry_issues(solution: Solution, path: Path) -> list[Issue]:
    """A Python entry file that binds no top-level name for the entry symbol (a def, a class, an
    assignment or an import): eval would fail to load it. Files that bind names dynamically
    (module __getattr__, globals(), exec) are not judged; one that does not parse is the build's to report."""
    if not solution.spec.entry_file.endswith(".py"):
        return []
    source = next((s.content for s in solution.sources if s.path == solution.spec.entry_file), None)
    if source is None:
        return []  # the schema reports a missing entry file
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        else:
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    dynamic = "__getattr__" in bound or "*" in bound or any(
        isinstance(n, ast.Name) and n.id in ("globals", "exec", "setattr") for n in ast.walk(tree))
    symbol = solution.spec.entry_symbol
    if symbol in bound or dynamic:
        return []
    return [Issue(f"the entry file {solution.spec.entry_file!r} defines no top-level {symbol!r}", path, field="spec.entry_point")]


def solutions_beside(folder: Path) -> list[Path]:
    """Solution files kept in a problem folder: solution.json, and *.json under solutions/."""
    found = [folder / name for name in SOLUTION_FILES if (folder / name).is_file()]
    if (folder / SOLUTION_FOLDER).is_dir():
        found += sorted(p for p in (folder / SOLUTION_FOLDER).rglob("*.json") if p.is_file())
    return found


def definition_issue(solution: Solution, path: Path, problem_name: str) -> Issue | None:
    if solution.definition == problem_name:
        return None
    return Issue(f"names the definition {solution.definition!r}, but it lies in the folder of problem {problem_name!r}", path, field="definition")
