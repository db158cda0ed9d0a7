"""A problem folder: definition.json, workload.jsonl and optionally reference.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from solbench.data.definition import Definition
from solbench.data.errors import Issue, SpecError
from solbench.data.files import dump_json, dump_jsonl, parse_model, read_json, read_jsonl, write_text_safely
from solbench.data.loaders.loaded import Loaded
from solbench.data.problem import Problem, check_problem, once_per_file
from solbench.data.workload import Workload

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
    return (definition if not issues else None), issues + [_place_reference_issue(i, reference_file if from_file else None) for i in found], from_file


def _place_reference_issue(issue: Issue, reference_file: Path | None) -> Issue:
    """An issue inside the reference source points at reference.py and its line when the source
    came from there; inside definition.json the line is the reference's own, so it goes in the text."""
    if issue.field != "reference" or issue.line is None:
        return issue
    if reference_file is not None:
        return Issue(issue.message, reference_file, issue.line, None, issue.severity)
    return Issue(f"{issue.message} (reference line {issue.line})", issue.path, None, issue.field, issue.severity)


def load_workloads(path: Path, definition_name: str | None = None) -> tuple[list[Workload], list[int], list[Issue], set[int]]:
    """Parse a workload JSONL file. Lines may also be trace-shaped ({"definition": ..., "workload": {...}});
    such a line must name this definition, and its fields are reported under `workload.`."""
    workloads: list[Workload] = []
    lines: list[int] = []
    issues: list[Issue] = []
    trace_shaped: set[int] = set()
    try:
        rows = list(read_jsonl(path))
    except SpecError as exc:
        return [], [], exc.issues, set()
    for number, row in rows:
        if isinstance(row, SpecError):
            issues += row.issues
            continue
        prefix = None
        if isinstance(row, dict) and "workload" in row and "uuid" not in row:
            named = row.get("definition")
            if definition_name is not None and named is not None and named != definition_name:
                issues.append(Issue(f"names definition {named!r}, but this file holds workloads of {definition_name!r}", path, number, "definition"))
                continue
            row, prefix = row["workload"], "workload"
            trace_shaped.add(number)
        workload, found = parse_model(Workload, row, path=path, line=number, prefix=prefix)
        issues += found
        if workload is not None:
            workloads.append(workload)
            lines.append(number)
    return workloads, lines, once_per_file(issues), trace_shaped


def locate_workload_issues(issues: list[Issue], path: Path | None, trace_shaped: set[int]) -> list[Issue]:
    """Issues found by check_problem, placed in the workload file (under `workload.` on trace-shaped lines)."""
    return [i.located(path=path, prefix="workload" if i.line in trace_shaped else None) for i in issues]


def load_problem_folder(folder: Path, subset: str | None = None, *, synthesize_missing_blobs: bool = False) -> Loaded:
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
    workloads, lines, issues, trace_shaped = load_workloads(workload_path, definition.name if definition else None)
    loaded.issues += issues
    if not workloads and not issues:
        loaded.issues.append(Issue("holds no workload", workload_path))
    if definition is None:
        return loaded
    reference_file = reference_path if reference_from_file else None
    problem = Problem(definition, workloads, folder, folder, "problem", lines, reference_file, subset,
                      synthesize_missing_blobs=synthesize_missing_blobs)
    loaded.issues += locate_workload_issues(check_problem(problem), workload_path, trace_shaped)
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
    elif overwrite and (folder / REFERENCE_FILE).is_file():
        (folder / REFERENCE_FILE).unlink()  # the reference now lives inline; a stale file would contradict it
    write_text_safely(folder / DEFINITION_FILE, dump_json(definition), overwrite=overwrite)
    write_text_safely(folder / WORKLOAD_FILE, dump_jsonl(w.to_json_dict() for w in problem.workloads), overwrite=overwrite)
