"""Copying chosen problems out of a pool into a new dataset folder.

A problem folder (or a single-file problem such as a KernelBench .py) is copied as it is, to the same
path relative to the new folder. A problem of a FlashInfer-Trace folder is written as a problem folder
(`<subset>/<name>`), with the safetensors files its workloads read copied beside it at the same
relative paths, so that it loads on its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from solbench.data.errors import SpecError
from solbench.data.loaders import write_problem_folder
from solbench.data.problem import Problem
from solbench.data.workload import SafetensorsInput

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


def check_output(output: Path) -> None:
    """Refuse an output that exists and is not an empty folder (nothing of the user's is ever replaced)."""
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        what = "is not a folder" if not output.is_dir() else "exists and is not empty"
        raise SpecError(f"{what}; refusing to write the sample there (choose a new folder)", path=output)


def copy_problems(pool: Path, chosen: list[tuple[str, Problem]], output: Path) -> list[str]:
    """Copy each (path in the pool, problem) into output; returns where each went, relative to output."""
    check_output(output)
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for relative, problem in chosen:
        source = pool / relative
        if relative in {"", "."} or not source.resolve().is_relative_to(pool.resolve()):
            raise SpecError(f"problem path {relative!r} is not inside the pool; cannot copy it", path=pool)
        if source.is_dir() or source.suffix == ".py":
            target = relative
            (output / target).parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, output / target, ignore=IGNORED)
            else:
                shutil.copy2(source, output / target)
        else:
            target = f"{problem.subset}/{problem.name}" if problem.subset else problem.name
            _write_folder(problem, output / target)
        written.append(target)
    return written


def _write_folder(problem: Problem, folder: Path) -> None:
    if folder.exists():
        raise SpecError(f"two chosen problems would both be written to {folder}", path=folder)
    write_problem_folder(problem, folder)
    for workload in problem.workloads:
        for spec in workload.inputs.values():
            if isinstance(spec, SafetensorsInput) and problem.root is not None:
                blob = problem.root / spec.path
                if blob.is_file() and not (folder / spec.path).exists():
                    (folder / spec.path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(blob, folder / spec.path)
