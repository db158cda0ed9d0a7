"""What a proposer is told about a problem: the reference, the signature, the published workloads, the
SOL breakdown of each on the hardware spec, and the hardware. Held-out workloads are drawn by the
evaluator at evaluation time and are in no brief."""

from __future__ import annotations

import math

from solbench.data.definition import ConstAxis, ExprAxis
from solbench.data.problem import Problem
from solbench.data.workload import ScalarInput
from solbench.optimize.messages import HardwareBrief, ProblemBrief, SolBrief, TensorBrief, WorkloadBrief
from solbench.sol.hardware import HardwareSpec


def problem_brief(problem: Problem, spec: HardwareSpec | None, device: str, policy: str, floor: bool = True) -> ProblemBrief:
    """The brief of `problem` with T_SOL priced on `spec` (None: no SOL breakdown, a CPU without a spec)."""
    definition = problem.definition
    workloads = [WorkloadBrief(uuid=w.uuid, axes=problem.axes(w), tolerance=w.effective_tolerance.model_dump(exclude={"max_error_cap"}),
                               scalars={name: value.value for name, value in w.inputs.items() if isinstance(value, ScalarInput)})
                 for w in problem.workloads]
    sol, issues = _sol_breakdown(problem, spec, policy, floor) if spec is not None else ([], ["no hardware spec: no T_SOL"])
    return ProblemBrief(
        name=problem.name, description=definition.description, reference=definition.reference,
        inputs={name: TensorBrief(shape=t.shape, dtype=t.dtype.value) for name, t in definition.inputs.items()},
        outputs={name: TensorBrief(shape=t.shape, dtype=t.dtype.value) for name, t in definition.outputs.items()},
        axes={name: _axis_text(axis) for name, axis in definition.axes.items()}, constraints=list(definition.constraints),
        workloads=workloads, sol=sol, sol_issues=issues, hardware=_hardware_brief(spec, device), policy=policy,
    )


def _axis_text(axis: object) -> str:
    if isinstance(axis, ConstAxis):
        return f"const {axis.value}"
    if isinstance(axis, ExprAxis):
        return f"expr {axis.expression}"
    return "var"


def _sol_breakdown(problem: Problem, spec: HardwareSpec, policy: str, floor: bool) -> tuple[list[SolBrief], list[str]]:
    from solbench.sol.analysis import analyze, shared_captures
    from solbench.sol.api import policy_for

    captures = shared_captures(problem)
    found, issues = [], []
    for workload in problem.workloads:
        try:
            result = analyze(problem, workload, spec, policy_for(problem, policy), captures, floor)
        except Exception as exc:  # noqa: BLE001 - a workload without a bound still gets attempts
            issues.append(f"{workload.uuid}: T_SOL not available: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        intensity = result.arithmetic_intensity
        found.append(SolBrief(workload=workload.uuid, t_sol_ms=result.t_sol_s * 1e3, t_roofline_ms=result.t_roofline_s * 1e3,
                              t_floor_ms=result.t_floor_s * 1e3, bottleneck=result.bottleneck,
                              flops_by_unit={u: f for u, f in result.flops_by_unit.items() if f}, bytes_compulsory=result.bytes_cache_aware,
                              arithmetic_intensity=intensity if math.isfinite(intensity) else None))
    return found, issues


def _hardware_brief(spec: HardwareSpec | None, device: str) -> HardwareBrief:
    if spec is None:
        return HardwareBrief(name="none", device=device, dram_bandwidth_tbps=0.0, peak_tflops={}, sm_count=1, on_chip_bytes=0)
    return HardwareBrief(name=spec.name, device=device, dram_bandwidth_tbps=spec.dram.bandwidth_tbps, peak_tflops=dict(spec.peak_tflops),
                         sm_count=spec.sm_count, on_chip_bytes=spec.on_chip_bytes)
