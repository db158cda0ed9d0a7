"""Which workloads of a problem a run takes: all, the smallest N, or N spread from smallest to largest."""

from __future__ import annotations

from math import prod

from .problem import Problem
from .workload import Workload

SELECTION_HELP = "all, smallest:N or spread:N (N >= 1)"


def input_elements(problem: Problem, workload: Workload) -> int:
    """Elements of all tensor inputs of a workload: the size by which workloads are ordered."""
    axes = problem.axes(workload)
    return sum(prod(spec.resolve_shape(axes)) for spec in problem.definition.inputs.values() if spec.shape is not None)


def choose_workloads(problem: Problem, which: str) -> list[Workload]:
    """all; smallest:N (the N with the fewest input elements); spread:N (smallest, largest and evenly
    between). Raises ValueError for anything else."""
    kind, _, count_text = which.partition(":")
    if which == "all":
        return list(problem.workloads)
    if kind in {"smallest", "spread"} and count_text.isdigit() and int(count_text) > 0:
        count = int(count_text)
        ordered = sorted(problem.workloads, key=lambda w: input_elements(problem, w))
        if kind == "smallest" or count >= len(ordered):
            return ordered[:count]
        if count == 1:
            return [ordered[-1]]
        picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
        return [ordered[i] for i in picks]
    raise ValueError(f"expected {SELECTION_HELP}, got {which!r}")
