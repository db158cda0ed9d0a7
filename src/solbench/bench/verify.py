"""A validity check of the speed-of-light bounds: real implementations timed through the evaluator,
and every workload where one of them runs faster than T_SOL listed (a violation is a bug in the
analyser, never a tolerance to widen).

For each problem the candidates are the eager reference, the reference under `torch.compile` (each
mode asked for) and any solutions given for it. Each is evaluated with timing (correctness trials
first, so a wrong candidate cannot count); per workload the fastest correct time is compared with
T_SOL of the same hardware spec and policy.

The reference and its compiled form are trusted code, so `time_trusted` times them in this process
with the evaluator's own timer, L2 flush and launch gate (fresh inputs before every call, as in the
worker): no worker processes to start per problem, which makes a whole dataset affordable. It also
checks each reference against itself (two calls on the same inputs, the workload's tolerance) and
the compiled form against the eager one. Solutions always go through the hardened evaluator.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from solbench.data.workload import Workload

from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution
from solbench.sol.analysis import problem_captures
from solbench.sol.calibrate import spec_for_run
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status, Trace

FASTER_THAN_SOL = "faster-than-sol"


@dataclass
class WorkloadCheck:
    problem: str
    op_type: str
    workload: str
    sol_ms: float | None
    times_ms: dict[str, float] = field(default_factory=dict)  # candidate -> median latency (correct runs only)
    failures: dict[str, str] = field(default_factory=dict)  # candidate -> status and first log line
    self_check: str | None = None  # the reference against itself: PASSED, or why not (None: not checked)

    @property
    def fastest(self) -> tuple[str, float] | None:
        return min(self.times_ms.items(), key=lambda item: item[1]) if self.times_ms else None

    @property
    def ratio(self) -> float | None:
        fastest = self.fastest
        return fastest[1] / self.sol_ms if fastest and self.sol_ms else None

    @property
    def violated(self) -> bool:
        return self.ratio is not None and self.ratio < 1.0

    def to_json(self) -> dict[str, Any]:
        fastest = self.fastest
        return {"problem": self.problem, "op_type": self.op_type, "workload": self.workload, "sol_ms": self.sol_ms, "times_ms": self.times_ms,
                "fastest": fastest[0] if fastest else None, "ratio": self.ratio, "violated": self.violated, "failures": self.failures,
                "self_check": self.self_check}


def compiled_reference(problem: Problem, mode: str) -> Solution:
    """The reference under torch.compile in this mode, as a solution of one file: the reference's own
    source followed by the compile lines (solbench.bench.compile_limits: an entry function of its own
    module, dynamo's recompile limits raised). Its functions then belong to the solution's entry module,
    which stays importable by name in the worker, so torch.compile resolves every global it inlines
    (`@torch.no_grad()` wrappers, module-level helpers, constants, classes, partials); a sibling
    `reference` module would be taken out of sys.modules after the build and fail to import."""
    from solbench.bench.compile_limits import compiled_source

    main = compiled_source(problem.definition.reference, mode)
    return Solution.model_validate({
        "name": f"{problem.name}-compile-{mode}", "definition": problem.name, "author": "torch.compile",
        "description": f"the reference under torch.compile(mode={mode!r})",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": main}],
    })


def check_problem(problem: Problem, options: EvalOptions, solutions: Iterable[Solution] = (), compile_modes: Iterable[str] = ("default",),
                  workloads: list[Any] | None = None, on_trace: Callable[[Trace], None] | None = None, in_process: bool = True,
                  compile_workloads: set[str] | None = None) -> list[WorkloadCheck]:
    """Time every candidate on the problem's workloads and compare the fastest with T_SOL. With
    in_process the reference and its compiled forms are timed here (time_trusted), else through the
    evaluator like the solutions; `compile_workloads` limits where compiled forms are timed."""
    chosen = workloads if workloads is not None else problem.workloads
    candidates: list[tuple[Solution, bool, bool]] = []  # (solution, untrusted, a compiled form of the reference)
    if in_process:
        captures = problem_captures(problem)
        spec = spec_for_run(options.hardware, options.device, options.clock_mhz)

        def sol_ms(workload: Workload) -> float | None:
            from solbench.sol.api import sol_time_ms

            return sol_time_ms(problem, workload, spec, options.policy, captures, floor=options.sol_floor) if spec is not None else None

        checks = {check.workload: check for check in time_trusted(problem, options, compile_modes, chosen, compile_workloads, sol_ms)}
    else:
        checks = {w.uuid: WorkloadCheck(problem.name, problem.definition.op_type or "", w.uuid, None) for w in chosen}
        candidates += [(reference_solution(problem), False, False)]
        candidates += [(compiled_reference(problem, mode), False, True) for mode in compile_modes]
    candidates += [(solution, True, False) for solution in solutions]
    for solution, untrusted, compiled in candidates:
        run_options = dataclasses.replace(options, static_analysis=untrusted and options.static_analysis, hidden=0)
        timed = [w for w in chosen if not compiled or compile_workloads is None or w.uuid in compile_workloads]
        if not timed:
            continue
        for trace in evaluate(problem, solution, run_options, workloads=timed, on_trace=on_trace):
            check = checks[trace.workload.uuid]
            evaluation = trace.evaluation
            performance = evaluation.performance
            if performance is not None and performance.sol_ms is not None:
                check.sol_ms = performance.sol_ms
            faster = evaluation.status == Status.REWARD_HACK and FASTER_THAN_SOL in (evaluation.log or "")
            if (evaluation.status == Status.PASSED or faster) and performance is not None and performance.latency_ms is not None:
                check.times_ms[solution.name] = performance.latency_ms
            else:
                first = next((line for line in (evaluation.log or "").splitlines() if line.strip()), "")
                check.failures[solution.name] = f"{evaluation.status.value}: {first[:200]}"
    return list(checks.values())


def time_trusted(problem: Problem, options: EvalOptions, compile_modes: Iterable[str] = ("default",), workloads: list[Workload] | None = None,
                 compile_workloads: set[str] | None = None, sol_ms: Callable[[Workload], float | None] | None = None,
                 self_check_trials: int = 2) -> list[WorkloadCheck]:
    """The eager reference and torch.compile of it, timed in this process (see the module docstring).
    `compile_workloads`: uuids where the compiled forms are timed too (None: all); `sol_ms` gives T_SOL;
    the self-check compares two calls on the same inputs for `self_check_trials` input draws."""
    import torch

    from solbench.bench.compile_limits import compiled_run
    from solbench.bench.correctness import compare_outputs
    from solbench.bench.timing import CacheFlusher, make_gate, make_timer, measure
    from solbench.data.inputs import generate_inputs
    from solbench.data.reference import reference_module

    device = options.device
    timer, _ = make_timer(device, options.timer)
    flush = CacheFlusher(device)
    gate = make_gate(device)[0] if options.launch_gate and device.startswith("cuda") else None
    eager = reference_module(problem.definition).run
    compiled = {f"compile-{mode}": compiled_run(problem.definition, mode) for mode in compile_modes}  # as the candidate's worker compiles it
    names = list(problem.definition.outputs)
    seed = options.seed if options.seed is not None else 0
    checks = []

    def outputs_of(result: Any) -> dict[str, Any]:
        values = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(values) != len(names):
            raise ValueError(f"run() returned {len(values)} value(s); the definition declares {len(names)} output(s)")
        return dict(zip(names, values))

    def inputs(workload: Workload, trial: int) -> list[Any]:
        return list(generate_inputs(problem, workload, seed=seed, trial=trial, device=device, profile=options.input_profile).values())

    for workload in workloads if workloads is not None else problem.workloads:
        check = WorkloadCheck(problem.name, problem.definition.op_type or "", workload.uuid, sol_ms(workload) if sol_ms else None)
        tolerance = workload.effective_tolerance
        try:
            expected = outputs_of(eager(*inputs(workload, 0)))  # what the compiled forms are checked against
            for trial in range(self_check_trials):  # the reference twice on the same inputs, for each of several draws
                first = expected if trial == 0 else outputs_of(eager(*inputs(workload, trial)))
                again = compare_outputs(outputs_of(eager(*inputs(workload, trial))), first, problem.definition.outputs, tolerance)
                check.self_check = "PASSED" if again.passed else f"{again.status.value} (draw {trial + 1}): {again.message[:200]}"
                if not again.passed:
                    break
        except Exception as exc:  # noqa: BLE001 - a reference that cannot run is this workload's finding, not the run's end
            check.failures["reference"] = f"RUNTIME_ERROR: {type(exc).__name__}: {str(exc)[:200]}"
            checks.append(check)
            continue
        candidates = {"reference": eager}
        if compile_workloads is None or workload.uuid in compile_workloads:
            candidates.update(compiled)
        for name, function in candidates.items():
            try:
                if function is not eager:
                    got = compare_outputs(outputs_of(function(*inputs(workload, 0))), expected, problem.definition.outputs, tolerance)
                    if not got.passed:
                        check.failures[name] = f"{got.status.value}: {got.message[:200]}"
                        continue
                calls = itertools.count(1)  # trial numbers of the timed calls' fresh inputs

                def prepare(function: Callable[..., Any] = function) -> Callable[[], Any]:
                    arguments = inputs(workload, next(calls))
                    return lambda: function(*arguments)

                if gate is not None:
                    gate.prime()
                samples = measure(prepare, timer, flush, warmup=options.warmup, min_iterations=options.min_iterations,
                                  max_iterations=options.max_iterations, budget_s=options.budget_s, target_rse=options.target_rse, gate=gate)
                check.times_ms[name] = samples.median_ms
            except Exception as exc:  # noqa: BLE001 - one candidate failing must not stop the others
                check.failures[name] = f"RUNTIME_ERROR: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        del expected
        checks.append(check)
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    torch._dynamo.reset()
    return checks


def ratio_summary(checks: list[WorkloadCheck]) -> dict[str, dict[str, float]]:
    """Per op class (op_type): the median and the least fastest/T_SOL ratio, and the workload count."""
    groups: dict[str, list[float]] = {}
    for check in checks:
        if check.ratio is not None:
            groups.setdefault(check.op_type or "(none)", []).append(check.ratio)
    return {op: {"workloads": len(values), "median": statistics.median(values), "least": min(values)} for op, values in sorted(groups.items())}
