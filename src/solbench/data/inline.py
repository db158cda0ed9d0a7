"""Problems and solutions written in code rather than in files (benchmarks, tests, notebooks)."""

from __future__ import annotations

from typing import Any

from solbench.data.definition import Definition
from solbench.data.problem import Problem, require_valid
from solbench.data.solution import Solution
from solbench.data.workload import Workload

Shape = list[int | str] | None


def inline_problem(name: str, reference: str, inputs: dict[str, tuple[Shape, str]], outputs: dict[str, tuple[Shape, str]], *,
                   scalars: dict[str, Any] | None = None, axes: dict[str, Any] | None = None, workload_axes: list[dict[str, int]] | None = None,
                   tolerance: dict[str, Any] | None = None) -> Problem:
    """A validated problem: inputs/outputs as name -> (shape, dtype); Python-scalar inputs (shape
    None) take their value from `scalars`; one workload per entry of workload_axes (default: one)."""
    scalars = scalars or {}
    definition = Definition.model_validate({
        "name": name,
        "axes": axes or {},
        "inputs": {n: {"shape": s, "dtype": d} for n, (s, d) in inputs.items()},
        "outputs": {n: {"shape": s, "dtype": d} for n, (s, d) in outputs.items()},
        "reference": reference,
    })
    workloads = []
    for index, values in enumerate(workload_axes or [{}]):
        described = {n: ({"type": "scalar", "value": scalars[n]} if n in scalars else {"type": "random"}) for n in inputs}
        data: dict[str, Any] = {"uuid": f"{name}-{index}", "axes": values, "inputs": described}
        if tolerance is not None:
            data["tolerance"] = tolerance
        workloads.append(Workload.model_validate(data))
    return require_valid(Problem(definition, workloads, workload_lines=list(range(1, len(workloads) + 1))))


def inline_solution(name: str, definition: str, language: str, entry_point: str, sources: dict[str, str], *, dps: bool = True,
                    compile_options: dict[str, Any] | None = None) -> Solution:
    spec: dict[str, Any] = {"languages": [language], "entry_point": entry_point, "destination_passing_style": dps}
    if compile_options:
        spec["compile_options"] = compile_options
    return Solution.model_validate({
        "name": name, "definition": definition, "author": "inline", "spec": spec,
        "sources": [{"path": path, "content": content} for path, content in sources.items()],
    })
