"""One entry point for every layout: `scan(path)` finds and loads what a path holds.

A path may be a problem folder, a dataset folder (problem folders and KernelBench-style files,
optionally in subset folders), a FlashInfer-Trace folder, a KernelBench-style .py file, a
definition/workload file, a solution .json or a trace .jsonl.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from solbench.data.errors import Issue, SpecError
from solbench.data.files import parse_model, read_json, read_jsonl
from solbench.data.loaders.flashinfer import flashinfer_files, is_flashinfer_root, load_flashinfer_definition
from solbench.data.loaders.kernelbench import load_kernelbench_file, looks_like_kernelbench
from solbench.data.loaders.loaded import Loaded
from solbench.data.loaders.problem_folder import DEFINITION_FILE, WORKLOAD_FILE, load_problem_folder, write_problem_folder
from solbench.data.loaders.source_files import read_source_files
from solbench.data.loaders.solutions import definition_issue, entry_issues, solutions_beside
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace

__all__ = ["Loaded", "flag_duplicate_names", "scan", "load_problems", "load_solution", "load_traces", "write_problem_folder"]

SKIPPED_FOLDERS = {"__pycache__", "node_modules"}


def scan(path: Path | str, *, synthesize_missing_blobs: bool = False) -> list[Loaded]:
    """Everything under path, each loaded or with the issues that stopped it. Never raises SpecError.
    With synthesize_missing_blobs, a safetensors input whose file is absent is a warning (the input
    is drawn from the definition), not an error."""
    synthesize = synthesize_missing_blobs
    path = Path(path)
    if not path.exists():
        return [Loaded(path, "unknown", issues=[Issue("does not exist", path)])]
    if path.is_file():
        return [_load_file(path, synthesize)]
    if (path / DEFINITION_FILE).is_file():
        problem = load_problem_folder(path, synthesize_missing_blobs=synthesize)
        return [problem, *_solutions_beside(problem)]
    if is_flashinfer_root(path):
        return [_load_flashinfer_file(path, f, synthesize) for f in flashinfer_files(path)] or [
            Loaded(path, "flashinfer", issues=[Issue("FlashInfer-Trace folder holds no definition", path)])
        ]
    found = list(_scan_dataset(path, path, synthesize))
    if not found:
        return [Loaded(path, "unknown", issues=[Issue("holds no problem folder, KernelBench-style file, solution or trace", path)])]
    flag_duplicate_names(found)
    return found


def load_problems(paths: Iterable[Path | str], *, synthesize_missing_blobs: bool = False) -> list[Problem]:
    """Every problem under the paths; raises SpecError listing every error if any is invalid."""
    results = [(Path(path), loaded) for path in paths for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs)]
    flag_duplicate_names([loaded for _, loaded in results])
    problems: list[Problem] = []
    issues: list[Issue] = []
    for given, loaded in results:
        named = loaded.path == given  # named by the user, not found in a folder
        if loaded.kind not in {"solution", "traces"} or named:  # a solution kept beside a problem does not stop its problem
            issues += loaded.errors
        if loaded.problem is not None:
            problems.append(loaded.problem)
        elif loaded.ok and loaded.kind in {"solution", "traces"} and named:
            issues.append(Issue(f"is a {loaded.kind} file, not a problem", loaded.path))
    if issues:
        raise SpecError(issues)
    return problems


def load_solution(path: Path | str) -> Solution:
    path = Path(path)
    data = read_json(path)
    missing = read_source_files(data, path)
    if missing:
        raise SpecError(missing)
    solution, issues = parse_model(Solution, data, path=path)
    if solution is None:
        raise SpecError(issues)
    return solution


def load_traces(path: Path | str) -> list[Trace]:
    loaded = _load_traces(Path(path))
    if not loaded.ok:
        raise SpecError(loaded.errors)
    return loaded.traces or []


def _scan_dataset(root: Path, folder: Path, synthesize: bool) -> Iterable[Loaded]:
    for child in sorted(folder.iterdir()):
        if child.name.startswith(".") or child.name in SKIPPED_FOLDERS:
            continue
        if child.is_dir():
            if (child / DEFINITION_FILE).is_file():
                loaded = load_problem_folder(child, subset=_subset(root, child.parent), synthesize_missing_blobs=synthesize)
                loaded.subset = _subset(root, child.parent)
                yield loaded
                for solution in _solutions_beside(loaded):
                    solution.subset = loaded.subset
                    yield solution
            elif is_flashinfer_root(child):
                for loaded in scan(child, synthesize_missing_blobs=synthesize):
                    loaded.subset = _subset(root, child)
                    if loaded.problem is not None:
                        loaded.problem.subset = loaded.subset
                    yield loaded
            else:
                yield from _scan_dataset(root, child, synthesize)
        elif child.suffix == ".py" and _is_kernelbench(child):
            loaded = load_kernelbench_file(child)
            loaded.subset = _subset(root, child.parent)
            if loaded.problem is not None:
                loaded.problem.subset = loaded.subset
            yield loaded
        elif child.suffix in {".json", ".jsonl"}:
            if _is_catalog_index(child):
                continue  # `solbench dataset characterise` keeps its index beside the problems: no problem of its own
            loaded = _load_file(child, synthesize)
            loaded.subset = _subset(root, child.parent)
            yield loaded


CATALOG_INDEX_MARK = b'"format": "solbench-catalog-index"'


def _is_catalog_index(path: Path) -> bool:
    """The index file of `solbench dataset characterise` (it names its format in its first line)."""
    try:
        with open(path, "rb") as handle:
            return CATALOG_INDEX_MARK in handle.read(512)
    except OSError:
        return False


def _subset(root: Path, folder: Path) -> str | None:
    relative = folder.relative_to(root)
    return relative.as_posix() if relative.parts else None


def _is_kernelbench(path: Path) -> bool:
    try:
        return looks_like_kernelbench(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def _load_file(path: Path, synthesize: bool = False) -> Loaded:
    if path.suffix == ".py":
        if not _is_kernelbench(path):
            return Loaded(path, "unknown", issues=[Issue("not a KernelBench-style file: it needs class Model(...) and def get_inputs()", path)])
        return load_kernelbench_file(path)
    if path.suffix == ".jsonl":
        if path.name == WORKLOAD_FILE and (path.parent / DEFINITION_FILE).is_file():
            return load_problem_folder(path.parent, synthesize_missing_blobs=synthesize)
        return _load_traces(path)
    if path.suffix == ".json":
        if path.name == DEFINITION_FILE:
            return load_problem_folder(path.parent, synthesize_missing_blobs=synthesize)
        try:
            data = read_json(path)
        except SpecError as exc:
            return Loaded(path, "unknown", issues=exc.issues)
        if isinstance(data, dict) and ("spec" in data or "sources" in data):
            if missing := read_source_files(data, path):
                return Loaded(path, "solution", name=data.get("name") if isinstance(data.get("name"), str) else None, issues=missing)
            solution, issues = parse_model(Solution, data, path=path)
            name = solution.name if solution else None
            if solution is not None and (missing := entry_issues(solution, path)):
                solution, issues = None, issues + missing  # as for a problem: nothing is handed on that cannot load
            return Loaded(path, "solution", name=name, solution=solution, issues=issues)
        if isinstance(data, dict) and {"axes", "inputs", "outputs", "reference"} & data.keys():
            flashinfer_root = _flashinfer_root_of(path)
            if flashinfer_root is not None:
                return load_flashinfer_definition(flashinfer_root, path, synthesize_missing_blobs=synthesize)
            return Loaded(path, "problem", issues=[Issue(f"a definition outside a problem folder: name it {DEFINITION_FILE} and put {WORKLOAD_FILE} beside it", path)])
        return Loaded(path, "unknown", issues=[Issue("neither a definition (axes, inputs, outputs, reference) nor a solution (spec, sources)", path)])
    return Loaded(path, "unknown", issues=[Issue("unsupported file type: expected a problem folder, .py, .json or .jsonl", path)])


def _solutions_beside(problem: Loaded) -> list[Loaded]:
    """The solution files kept in a problem's folder, each checked against that problem's name."""
    found = []
    for path in solutions_beside(problem.path if problem.path.is_dir() else problem.path.parent):
        loaded = _load_file(path)
        issue = definition_issue(loaded.solution, path, problem.name) if loaded.solution is not None and problem.name else None
        if issue is not None:
            loaded.solution = None
            loaded.issues.append(issue)
        found.append(loaded)
    return found


def _load_flashinfer_file(root: Path, path: Path, synthesize: bool) -> Loaded:
    if path.is_relative_to(root / "definitions"):
        return load_flashinfer_definition(root, path, synthesize_missing_blobs=synthesize)
    return _load_file(path, synthesize)


def _flashinfer_root_of(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name == "definitions" and is_flashinfer_root(parent.parent):
            return parent.parent
    return None


def _load_traces(path: Path) -> Loaded:
    loaded = Loaded(path, "traces", traces=[])
    try:
        rows = list(read_jsonl(path))
    except SpecError as exc:
        loaded.issues = exc.issues
        return loaded
    for number, row in rows:
        if isinstance(row, SpecError):
            loaded.issues += row.issues
            continue
        trace, issues = parse_model(Trace, row, path=path, line=number)
        loaded.issues += issues
        if trace is not None:
            loaded.traces.append(trace)
    if not rows:
        loaded.issues.append(Issue("holds no trace", path, severity="warning"))
    return loaded


def flag_duplicate_names(found: list[Loaded]) -> None:
    """A second problem of the same name is an error (the same problem given twice is dropped)."""
    first: dict[str, Path] = {}
    for loaded in found:
        if loaded.problem is None:
            continue
        name = loaded.problem.name
        if name not in first:
            first[name] = loaded.path
        elif first[name].resolve() == loaded.path.resolve():
            loaded.problem = None
            loaded.issues.append(Issue("given twice; loaded once", loaded.path, severity="warning"))
        else:
            loaded.issues.append(Issue(f"problem name {name!r} is taken already by {first[name]}", loaded.path, field="name"))
            loaded.problem = None
