"""A FlashInfer-Trace folder: definitions/<op_type>/<name>.json, workloads/<op_type>/<name>.jsonl,
blob/... (safetensors that workloads name, by paths relative to the folder), solutions/, traces/."""

from __future__ import annotations

from pathlib import Path

from solbench.data.errors import Issue
from solbench.data.loaders.loaded import Loaded
from solbench.data.loaders.problem_folder import load_definition, load_workloads, locate_workload_issues
from solbench.data.problem import Problem, check_problem


def is_flashinfer_root(folder: Path) -> bool:
    return (folder / "definitions").is_dir()


def load_flashinfer_definition(root: Path, definition_path: Path, *, synthesize_missing_blobs: bool = False) -> Loaded:
    loaded = Loaded(definition_path, "flashinfer", name=definition_path.stem)
    definition, loaded.issues, _ = load_definition(definition_path)
    if definition is None:
        return loaded
    loaded.name = definition.name
    relative = definition_path.relative_to(root / "definitions").with_suffix(".jsonl")
    candidates = [root / "workloads" / relative, *sorted((root / "workloads").rglob(f"{definition.name}.jsonl"))]
    workload_path = next((c for c in candidates if c.is_file()), None)
    workloads, lines, trace_shaped = [], [], set()
    if workload_path is None:
        loaded.issues.append(Issue(f"no workloads/<op_type>/{definition.name}.jsonl: the problem has no workload", definition_path, severity="warning"))
    else:
        workloads, lines, issues, trace_shaped = load_workloads(workload_path, definition.name)
        loaded.issues += issues
    problem = Problem(definition, workloads, root, definition_path, "flashinfer", lines, synthesize_missing_blobs=synthesize_missing_blobs)
    loaded.issues += locate_workload_issues(check_problem(problem), workload_path, trace_shaped)
    if loaded.ok:
        loaded.problem = problem
    return loaded


def flashinfer_files(root: Path) -> list[Path]:
    """Definition files first, then solution and trace files, each group sorted."""
    definitions = sorted((root / "definitions").rglob("*.json"))
    solutions = sorted((root / "solutions").rglob("*.json")) if (root / "solutions").is_dir() else []
    traces = sorted((root / "traces").rglob("*.jsonl")) if (root / "traces").is_dir() else []
    return definitions + solutions + traces
