"""Projection of measured times to another hardware spec by efficiency against the bottleneck.

A trace measured T on one spec, whose speed of light there is T_SOL(measured); the kernel's efficiency
is T_SOL(measured) / T. Assuming the same efficiency on the target, its time there is

    T_proj = T_SOL(target) / (T_SOL(measured) / T) = T * T_SOL(target) / T_SOL(measured)

with T_SOL(target) priced by the SOL analysis of the problem's reference on the target spec (the
trace's precision policy and latency-floor setting). T_SOL(measured) is the trace's own (what its score
used), or priced on the spec named by `source` where given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from solbench.data.errors import Issue, SpecError
from solbench.data.hidden import is_held_out
from solbench.data.problem import Problem
from solbench.data.trace import Status, Trace
from solbench.sol.hardware import HardwareSpec, get_hardware

ASSUMPTION = ("the kernel reaches the same fraction of the speed of light on the target as where it was measured: "
              "T_proj = T_SOL(target) / (T_SOL(measured) / T). This holds while it stays bound by the same resource with a portable "
              "efficiency; it ignores fixed launch overheads, cache-size, occupancy and clock effects, and features one chip lacks")


@dataclass
class Projection:
    problem: str
    solution: str | None
    workload: str
    measured_hardware: str | None
    latency_ms: float
    sol_ms: float  # T_SOL on the measured spec
    target: str
    target_sol_ms: float
    target_bottleneck: str
    notes: list[str] = field(default_factory=list)

    @property
    def efficiency(self) -> float:
        return self.sol_ms / self.latency_ms

    @property
    def projected_ms(self) -> float:
        return self.target_sol_ms / self.efficiency

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "solution": self.solution, "workload": self.workload, "measured_hardware": self.measured_hardware,
                "latency_ms": self.latency_ms, "sol_ms": self.sol_ms, "efficiency": self.efficiency, "target": self.target,
                "target_sol_ms": self.target_sol_ms, "target_bottleneck": self.target_bottleneck, "projected_ms": self.projected_ms,
                "notes": self.notes, "assumption": ASSUMPTION}


def load_trace_files(path: Path) -> list[Trace]:
    """The traces of a JSONL file, or of every traces.jsonl under a run folder."""
    from solbench.data.loaders import load_traces

    if not path.exists():
        raise SpecError("does not exist", path=path, field="--project")
    files = [path] if path.is_file() else sorted(path.rglob("traces.jsonl"))
    if not files:
        raise SpecError("holds no traces.jsonl: expected a traces JSONL file or a run folder", path=path, field="--project")
    traces = [trace for file in files for trace in load_traces(file)]
    if not traces:
        raise SpecError("holds no trace", path=path, field="--project")
    return traces


def project(traces: Iterable[Trace], problems: dict[str, Problem], target: HardwareSpec, source: HardwareSpec | None = None
            ) -> Iterator[Projection | Issue]:
    """Each timed, correct trace projected to `target`; an Issue for a trace that cannot be (its problem
    is not among `problems`: an error; no latency or no T_SOL: a warning naming the trace)."""
    from solbench.sol.analysis import analyze, shared_captures
    from solbench.sol.api import policy_for

    captures: dict[str, Any] = {}
    for trace in traces:
        evaluation = trace.evaluation
        where = f"{trace.definition} / {trace.solution or '-'} / {trace.workload.uuid}"
        performance = evaluation.performance if evaluation is not None else None
        if evaluation is None or evaluation.status != Status.PASSED or is_held_out(trace.workload.uuid) or performance is None or not performance.latency_ms:
            continue  # nothing measured to project (failed, held out, or timing off): counted by the caller
        problem = problems.get(trace.definition)
        if problem is None:
            yield Issue(f"{where}: problem {trace.definition!r} is not among the problems given; name the dataset that holds it "
                        "(solbench sol PATH --project ...)", field="--project")
            continue
        environment = evaluation.environment or {}
        policy = policy_for(problem, str(environment.get("precision_policy", "auto")))
        floor = performance.sol_floor_applied is not False
        if problem.name not in captures:
            captures[problem.name] = shared_captures(problem)
        try:
            if source is not None:
                sol_ms, measured = analyze(problem, trace.workload, source, policy, captures[problem.name], floor).t_sol_s * 1e3, source.name
            elif performance.sol_ms:
                sol_ms, measured = performance.sol_ms, environment.get("hardware")
            else:
                yield Issue(f"{where}: the trace has no T_SOL (measured without a hardware spec): name the spec it ran on with --from",
                            field="--project", severity="warning")
                continue
            result = analyze(problem, trace.workload, target, policy, captures[problem.name], floor)
        except Exception as exc:  # noqa: BLE001 - one workload the analysis cannot price must not stop the others
            yield Issue(f"{where}: cannot price T_SOL: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", field="--project")
            continue
        notes = _notes(problem, trace, measured, result.bottleneck, captures[problem.name], policy, floor)
        yield Projection(problem.name, trace.solution, trace.workload.uuid, measured, performance.latency_ms, sol_ms, target.name,
                         result.t_sol_s * 1e3, result.bottleneck, notes)


def _notes(problem: Problem, trace: Trace, measured: str | None, target_bottleneck: str, captures: Any, policy: str, floor: bool) -> list[str]:
    """Where the assumption is weakest: the bottleneck differs between the specs (when the measured spec is known here)."""
    from solbench.sol.analysis import analyze

    if not measured:
        return []
    try:
        spec = get_hardware(measured)
        bottleneck = analyze(problem, trace.workload, spec, policy, captures, floor).bottleneck  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a spec not known here only loses the note
        return []
    if bottleneck != target_bottleneck:
        return [f"bottleneck {bottleneck} on {measured}, {target_bottleneck} on the target: the efficiency may not carry over"]
    return []


def problems_by_name(paths: Iterable[Path]) -> dict[str, Problem]:
    from solbench.data.loaders import load_problems

    return {problem.name: problem for problem in load_problems(list(paths))}
