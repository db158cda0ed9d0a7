"""Shared helpers of the speed-of-light tests: problems built in code, analysed on real hardware specs.

Test modules import these helpers as `sol_testkit`: another folder's conftest.py (tests/spec/) can take
the plain module name `conftest` first when both folders are collected in one run.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

from solbench.sol.analysis import SolResult, analyze
from solbench.sol.hardware import get_hardware
from solbench.data import Definition, Problem, Workload
from solbench.data.files import parse_model

InputSpecs = dict[str, tuple]  # name -> (shape list | None, dtype) or (None, dtype, scalar value)


def make_problem(
    reference: str,
    inputs: InputSpecs,
    outputs: dict[str, tuple],
    axes: dict[str, int] | None = None,
    *,
    name: str = "sol_test",
    kind: str = "problem",
    workload_uuid: str = "wl-0001",
    **definition_extra: Any,
) -> Problem:
    """A Problem from a reference source, {name: (shape, dtype)} inputs/outputs and const axes.

    Shapes are lists of integer literals or axis names; `axes` (name -> value) become const axes.
    An input whose shape is None is a Python scalar: give its value as a third element (default 1).
    The one workload draws every tensor at random and passes scalars by value.
    """
    reference = textwrap.dedent(reference).strip() + "\n"
    definition_data: dict[str, Any] = {
        "name": name,
        "axes": {axis: {"type": "const", "value": value} for axis, value in (axes or {}).items()},
        "inputs": {n: {"shape": None if s[0] is None else list(s[0]), "dtype": s[1]} for n, s in inputs.items()},
        "outputs": {n: {"shape": None if s[0] is None else list(s[0]), "dtype": s[1]} for n, s in outputs.items()},
        "reference": reference,
        **definition_extra,
    }
    definition, issues = parse_model(Definition, definition_data)
    assert definition is not None, [str(i) for i in issues]
    workload_inputs: dict[str, Any] = {}
    for input_name, spec in inputs.items():
        if spec[0] is None:
            workload_inputs[input_name] = {"type": "scalar", "value": spec[2] if len(spec) > 2 else 1}
        else:
            workload_inputs[input_name] = {"type": "random"}
    workload, issues = parse_model(Workload, {"uuid": workload_uuid, "axes": {}, "inputs": workload_inputs})
    assert workload is not None, [str(i) for i in issues]
    return Problem(definition, [workload], kind=kind)


def sol(reference: str, inputs: InputSpecs, outputs: dict[str, tuple], axes: dict[str, int] | None = None,
        hardware: str = "H200", policy: str = "strict", **kwargs: Any) -> SolResult:
    """make_problem, then analyze its one workload on `hardware` under `policy`."""
    problem = make_problem(reference, inputs, outputs, axes, **kwargs)
    return analyze(problem, problem.workloads[0], get_hardware(hardware), policy)  # type: ignore[arg-type]


def tensor_flops(result: SolResult) -> float:
    return sum(value for unit, value in result.flops_by_unit.items() if unit.startswith("tensor_"))


def nonzero_units(result: SolResult) -> dict[str, float]:
    return {unit: value for unit, value in result.flops_by_unit.items() if value}


def ops(result: SolResult) -> list[str]:
    """The recorded aten ops that cost anything (views and free ops left out)."""
    return [r.node.op for r in result.nodes if r.cost is None or r.cost.flops or r.cost.reads or r.cost.writes]


def real_inputs(problem: Problem) -> dict[str, Any]:
    """The workload's own inputs, generated for real on the CPU (small shapes only)."""
    from solbench.data.inputs import generate_inputs

    return generate_inputs(problem, problem.workloads[0], seed=0, device="cpu")


def run_reference(problem: Problem, inputs: dict[str, Any]) -> Any:
    from solbench.data.reference import reference_module

    return reference_module(problem.definition).run(*inputs.values())


def problem_with_inferred_outputs(reference: str, inputs: InputSpecs, **kwargs: Any) -> Problem:
    """make_problem whose outputs are what the reference returns on real CPU inputs (small shapes)."""
    import torch

    from solbench.data.dtypes import DType

    draft = make_problem(reference, inputs, {"draft_output": ([], "float32")}, **kwargs)
    result = run_reference(draft, real_inputs(draft))
    results = result if isinstance(result, (tuple, list)) else (result,)
    assert all(isinstance(r, torch.Tensor) for r in results)
    outputs = {f"out{i}": (list(r.shape), DType.from_torch(r.dtype).value) for i, r in enumerate(results)}
    return make_problem(reference, inputs, outputs, **kwargs)


sys.modules["sol_testkit"] = sys.modules[__name__]
