"""Degenerate problems: outputs that depend on no tensor input, so that any solution could precompute them.

The reference runs on one draw of the inputs, then once per tensor input with only that input
drawn afresh (another trial of the same seed), until every output has changed at least once (most
problems: after the first input, so two runs, not one per input). An output that is bit-for-bit the
same in every run depends on none of them. An input whose fresh draw equals the first (a constant or
a file) cannot be perturbed and is listed as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solbench.bench.bits import same_bits
from solbench.data.inputs import generate_inputs
from solbench.data.problem import Problem
from solbench.data.reference import reference_module
from solbench.data.workload import Workload


@dataclass
class Degeneracy:
    workload: str
    constant_outputs: list[str] = field(default_factory=list)  # outputs no perturbed input changed
    perturbed_inputs: list[str] = field(default_factory=list)  # drawn afresh, in order, until every output had changed
    fixed_inputs: list[str] = field(default_factory=list)  # tensor inputs (of those reached) whose second draw equals the first

    @property
    def degenerate(self) -> bool:
        return bool(self.constant_outputs)

    def message(self) -> str:
        if not self.degenerate:
            return ""
        tried = ", ".join(self.perturbed_inputs) or "none (no tensor input can be drawn afresh)"
        return (f"output(s) {', '.join(self.constant_outputs)} of workload {self.workload} do not change when any tensor input is drawn "
                f"afresh (perturbed: {tried}): a solution can precompute them")


def find_constant_outputs(problem: Problem, workload: Workload | None = None, *, seed: int = 0, device: str = "cpu") -> Degeneracy:
    """Which outputs of `workload` (default: the problem's smallest) never change when one tensor input at a time is drawn afresh."""
    import torch

    workload = workload or _smallest(problem)
    function = reference_module(problem.definition).run
    first = generate_inputs(problem, workload, seed=seed, trial=0, device=device)
    second = generate_inputs(problem, workload, seed=seed, trial=1, device=device)
    base = _outputs(problem, function, first)
    constant = {name for name, value in base.items() if isinstance(value, torch.Tensor) or _is_number(value)}
    report = Degeneracy(workload.uuid)
    for name, value in first.items():
        if not isinstance(value, torch.Tensor):
            continue
        if _same(value, second[name]):
            report.fixed_inputs.append(name)
            continue
        report.perturbed_inputs.append(name)
        changed = _outputs(problem, function, {**_copies(first), name: second[name].clone()})
        constant = {output for output in constant if _same(base[output], changed[output])}
        if not constant:  # every output has changed: no further draw can make one constant
            break
    report.constant_outputs = [name for name in base if name in constant]
    return report


def _outputs(problem: Problem, function: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    import torch

    with torch.enable_grad():  # backward problems differentiate inside run
        result = function(*_copies(inputs).values())
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    return dict(zip(problem.definition.outputs, values))


def _copies(inputs: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {name: value.clone() if isinstance(value, torch.Tensor) else value for name, value in inputs.items()}


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equal (NaN equal to NaN): a changed output differs somewhere."""
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_bits(a, b)
    return a == b or (a != a and b != b)


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _smallest(problem: Problem) -> Workload:
    if not problem.workloads:
        raise ValueError(f"problem {problem.name!r} has no workload to run the reference on")
    return min(problem.workloads, key=lambda workload: sum(problem.axes(workload).values()))
