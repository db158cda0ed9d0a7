"""A problem folder: definition.json, workload.jsonl and optionally reference.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from solbench.spec.definition import Definition
from solbench.spec.errors import Issue, SpecError
from solbench.spec.files import dump_json, dump_jsonl, parse_model, read_json, read_jsonl, write_text_safely
from solbench.spec.loaders.loaded import Loaded
from solbench.spec.problem import Problem, check_problem
from solbench.spec.workload import Workload

DEFINITION_FILE = "definition.json"
WORKLOAD_FILE = "workload.jsonl"
REFERENCE_FILE = "reference.py"


def load_definition(path: Path, data: Any | None = None, reference_file: Path | None = None) -> tuple[Definition | None, list[Issue], bool]:
    """Parse a definition file; a missing `reference` is read from reference_file when given.

    Returns the definition (None if invalid), the issues, and whether the reference came from the file.
    """
    try:
        data = read_json(path) if data is None else data
    except SpecError as exc:
        return None, exc.issues, False
    issues: list[Issue] = []
    from_file = False
    if isinstance(data, dict) and reference_file is not None and reference_file.is_file():
        try:
            file_reference = reference_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return None, [Issue(f"cannot read: {exc}", reference_file)], False
        if "reference" not in data:
            data, from_file = {**data, "reference": file_reference}, True
        elif data["reference"] != file_reference:
            issues.append(Issue(f"differs from {reference_file.name} beside it; keep one of the two", path, field="reference"))
    definition, found = parse_model(Definition, data, path=path)
    return (definition if not issues else None), issues + found, from_file


def load_workloads(path: Path, definition: Definition | None = None) -> tuple[list[Workload], list[int], list[Issue]]:
    """Parse a workload JSONL file. Lines may also be trace-shaped ({"workload": {...}, ...})."""
    workloads: list[Workload] = []
    lines: list[int] = []
    issues: list[Issue] = []
    try:
        rows = list(read_jsonl(path))
    except SpecError as exc:
        return [], [], exc.issues
    for number, row in rows:
        if isinstance(row, SpecError):
            issues += row.issues
            continue
        prefix = None
        if isinstance(row, dict) and "workload" in row and "uuid" not in row:
            row, prefix = row["workload"], "workload"
        workload, found = parse_model(Workload, row, path=path, line=number, prefix=prefix)
        issues += found
        if workload is not None:
            workloads.append(workload)
            lines.append(number)
    return workloads, lines, issues


def load_problem_folder(folder: Path, subset: str | None = None) -> Loaded:
    definition_path = folder / DEFINITION_FILE
    workload_path = folder / WORKLOAD_FILE
    reference_path = folder / REFERENCE_FILE
    loaded = Loaded(folder, "problem")
    definition, loaded.issues, reference_from_file = load_definition(definition_path, reference_file=reference_path)
    if definition is not None:
        loaded.name = definition.name
    if not workload_path.is_file():
        loaded.issues.append(Issue(f"missing {WORKLOAD_FILE}: a problem needs at least one workload", folder))
        return loaded
    workloads, lines, issues = load_workloads(workload_path)
    loaded.issues += issues
    if not workloads and not issues:
        loaded.issues.append(Issue("holds no workload", workload_path))
    if definition is None:
        return loaded
    reference_file = reference_path if reference_from_file else None
    problem = Problem(definition, workloads, folder, folder, "problem", lines, reference_file, subset)
    loaded.issues += [i.located(path=workload_path) for i in check_problem(problem)]
    if loaded.ok:
        loaded.problem = problem
    return loaded


def write_problem_folder(problem: Problem, folder: Path, *, overwrite: bool = False) -> None:
    """Write definition.json and workload.jsonl (and reference.py if that is where it came from)."""
    definition = problem.definition.to_json_dict()
    targets = [folder / DEFINITION_FILE, folder / WORKLOAD_FILE]
    if problem.reference_file is not None:
        targets.append(folder / REFERENCE_FILE)
    if not overwrite:
        existing = [str(p) for p in targets if p.exists()]
        if existing:
            raise SpecError(f"refusing to overwrite {', '.join(existing)} (pass overwrite to replace)", path=folder)
    if problem.reference_file is not None:
        write_text_safely(folder / REFERENCE_FILE, definition.pop("reference"), overwrite=overwrite)
    write_text_safely(folder / DEFINITION_FILE, dump_json(definition), overwrite=overwrite)
    write_text_safely(folder / WORKLOAD_FILE, dump_jsonl(w.to_json_dict() for w in problem.workloads), overwrite=overwrite)
