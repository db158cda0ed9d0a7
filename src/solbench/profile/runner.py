"""`solbench profile`: one solution on one workload, in the evaluator's own worker set-up.

1. The solution is evaluated on the workload as `solbench eval` does it (static analysis, sandbox,
   build, correctness trials, timing): its status and T, the median latency.
2. In the same (warm) solution worker, a few more calls are made exactly as timed calls are (fresh
   inputs, L2 flushed, launch gate, CUPTI), each answering its device activities: the timeline of the
   median call gives the busy time and the gaps between kernels.
3. A fresh solution worker starts with Nsight Compute as its launcher (solbench.profile.metrics),
   in the same sandbox, and makes one warm-up call and one call inside the NVTX range that ncu
   profiles; the worker then exits, so ncu writes its page; the page is parsed per kernel.
4. The workload's SOL analysis on the hardware spec, and the join (solbench.profile.join).
Nothing of this is a verdict: the profile never changes a trace or a score.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status
from solbench.data.workload import Workload
from solbench.profile import metrics
from solbench.profile.join import build_report, sol_side
from solbench.profile.launched import first_line, launched_under, read_log
from solbench.profile.model import ProfileReport
from solbench.profile.ncu_csv import NcuOutputError, parse_raw_page
from solbench.profile.timeline import representative

TIMELINE_CALLS = 9  # calls whose activities make the timeline (the median one is kept)
TIMELINE_TRIAL = 1_000_000  # trial numbers of those calls (fresh inputs, no trial of the evaluation's)
PROFILED_TRIAL = 2_000_000
FINISH_TIMEOUT_S = 300.0  # for the profiled worker to exit and ncu to write its page
PERMISSION = "ERR_NVGPUCTRPERM"


class ProfileError(RuntimeError):
    """The profile could not be made (one line: why)."""


def _call(pair: Any, problem: Problem, solution: Solution, workload: Workload, seed: int, trial: int, deadline: float, **fields: Any) -> Any:
    """One call of the solution in the pair's solution worker (its outputs are not handed back)."""
    from solbench.bench.messages import RunAnswer, RunRequest
    from solbench.bench.orchestrator import output_specs

    group = pair.group()
    request = RunRequest(workload=workload, seed=seed, trial=trial, outputs=output_specs(problem, workload),
                         dps=solution.spec.destination_passing_style, paths={}, group=group, **fields)
    try:
        return pair.ask_solution(request, deadline, RunAnswer)
    finally:
        pair.release_later("solution", group)



def profile_solution(problem: Problem, solution: Solution, workload: Workload, options: Any, *, spec: Any, ncu: Path,
                     workers: Any = None, timeline_calls: int = TIMELINE_CALLS) -> ProfileReport:
    """The profile document of `solution` on `workload` (see the module docstring). `workers`: a
    WorkerPair to use (its reference worker is kept; the caller closes it), else one of its own.
    ProfileError (one line) where the solution cannot be built or run, or ncu gives no page."""
    from solbench.bench.orchestrator import EvaluationRun, resolve_device
    from solbench.bench.workers import WorkerPair

    device = resolve_device(options.device)
    if not device.startswith("cuda"):
        raise ProfileError(f"profiling needs a CUDA device (Nsight Compute measures GPU kernels); the device here is {device}")
    options = dataclasses.replace(options, hidden=0, memcheck=False)
    pair = workers if workers is not None else WorkerPair.for_options(device, options)
    seconds: dict[str, float] = {}
    notes: list[str] = []
    try:
        started = time.monotonic()
        run = EvaluationRun(problem, solution, options, pair)
        try:
            run.start(first=workload)
            if run.build_failure is not None:
                status, message = run.build_failure
                raise ProfileError(f"the solution did not build or start ({status.value}): {first_line(message)}")
            trace = run.evaluate_workload(workload)
            seconds["evaluation"] = round(time.monotonic() - started, 3)
            started = time.monotonic()
            calls = _timeline(pair, problem, solution, workload, run.seed, options, timeline_calls, notes)
            seconds["timeline"] = round(time.monotonic() - started, 3)
        finally:
            run.close()
        started = time.monotonic()
        records, tool = _under_ncu(pair, problem, solution, workload, run.seed, options, ncu)
        seconds["ncu"] = round(time.monotonic() - started, 3)
    finally:
        if workers is None:
            pair.close()
            pair.session.close()
    evaluation = trace.evaluation
    performance = evaluation.performance
    timeline = representative(calls)
    latency, source = None, None
    if evaluation.status == Status.PASSED and performance is not None and performance.latency_ms:
        latency, source = performance.latency_ms, "evaluation"
    elif timeline is not None and timeline.span_ms > 0:
        latency, source = timeline.span_ms, "timeline"
        notes.append("T is the timeline's median call: the evaluation did not time the solution")
    if evaluation.status != Status.PASSED:
        notes.append(f"the solution did not pass on this workload ({evaluation.status.value}): this is a profile of incorrect code")
    sol = _sol(problem, workload, spec, options, notes)
    return build_report(problem=problem.name, solution=solution.name, workload=workload.uuid, status=evaluation.status.value,
                        status_message=first_line(evaluation.log) if evaluation.status != Status.PASSED else "",
                        device=(evaluation.environment or {}).get("device"), latency_ms=latency, latency_source=source, sol=sol,
                        records=records, timeline=timeline, calls=len(calls), notes=notes, seconds=seconds, tool=tool)


def _timeline(pair: Any, problem: Problem, solution: Solution, workload: Workload, seed: int, options: Any, count: int,
              notes: list[str]) -> list[list[tuple[float, float]]]:
    """The device activities of `count` calls made as timed calls are (after one warm-up call)."""
    from solbench.bench.verdicts import Outcome

    deadline = time.monotonic() + options.timeout_s
    fields = {"timer": options.timer, "launch_gate": options.launch_gate}
    calls = []
    try:
        _call(pair, problem, solution, workload, seed, TIMELINE_TRIAL, deadline, **fields)
        for index in range(count):
            answer = _call(pair, problem, solution, workload, seed, TIMELINE_TRIAL + 1 + index, deadline, timeline=True, **fields)
            calls.append(list(answer.spans_ms))
    except Outcome as outcome:
        notes.append(f"no timeline: a call failed ({outcome.status.value}: {first_line(outcome.message)})")
        return []
    if not any(calls):
        notes.append("no timeline: the calls reported no device activity (timed without CUPTI, or the call launches nothing)")
    return calls


def _under_ncu(pair: Any, problem: Problem, solution: Solution, workload: Workload, seed: int, options: Any,
               ncu: Path) -> tuple[list[Any], dict[str, Any]]:
    """The kernels of one call, profiled by ncu as the launcher of a fresh solution worker."""
    import torch

    from solbench.bench.processes import Launcher
    from solbench.bench.verdicts import Outcome

    log_file = pair.folder_for(solution) / f"ncu-{time.monotonic_ns()}.csv"  # ncu runs in the solution's sandbox: its folder
    log_file.parent.mkdir(parents=True, exist_ok=True)
    asked = metrics.metrics_for(torch.cuda.get_device_capability(torch.device(pair.device)))
    deadline = time.monotonic() + options.timeout_s
    fields = {"timer": "events", "launch_gate": False}  # ncu owns the profiling interfaces in that process: no CUPTI timer beside it
    failure = None
    with launched_under(pair, solution, Launcher(tuple(metrics.ncu_argv(ncu, log_file, asked)), {}), FINISH_TIMEOUT_S, pair.detach) as found:
        not_started = pair.attach(solution)
        if not_started is not None:
            failure = f"under ncu, the solution worker did not start ({not_started[0].value}): {first_line(not_started[1])}"
        else:
            try:
                _call(pair, problem, solution, workload, seed, PROFILED_TRIAL, deadline, **fields)
                _call(pair, problem, solution, workload, seed, PROFILED_TRIAL + 1, deadline, nvtx=metrics.RANGE, **fields)
            except Outcome as outcome:
                failure = f"under ncu, the call failed ({outcome.status.value}): {first_line(outcome.message)}"
    launched, codes = found.processes, found.codes
    page = read_log(log_file)
    logs = "\n".join(read_log(process.log_path) for process in launched)
    if PERMISSION in page or PERMISSION in logs:
        raise ProfileError(f"ncu may not read the GPU's performance counters here ({PERMISSION}): profiling is restricted to administrators "
                           "and the sandbox drops every capability; allow profiling for all users (NVreg_RestrictProfilingToAdminUsers=0) "
                           "or, for code you trust, use --sandbox none")
    if failure is not None:
        raise ProfileError(failure)
    try:
        records = parse_raw_page(page if '"ID",' in page else logs, asked)
    except NcuOutputError as exc:
        tail = [line.strip() for line in (page or logs).splitlines() if line.startswith("==")][-2:]
        raise ProfileError(f"{exc} (ncu exit code {codes[-1] if codes else 'unknown'}{'; ' + ' | '.join(tail) if tail else ''})") from None
    return records, {"ncu": str(ncu), "metrics": list(asked), "exit_code": codes[-1] if codes else None}


def _sol(problem: Problem, workload: Workload, spec: Any, options: Any, notes: list[str]) -> Any:
    if spec is None:
        notes.append("no hardware spec: no SOL side")
        return None
    try:
        from solbench.sol.analysis import analyze, shared_captures
        from solbench.sol.api import policy_for

        result = analyze(problem, workload, spec, policy_for(problem, options.policy), shared_captures(problem), floor=options.sol_floor)
    except Exception as exc:  # noqa: BLE001 - the measurements stand without the bound
        notes.append(f"SOL analysis failed: {type(exc).__name__}: {first_line(str(exc))}")
        return None
    if result.partial:
        notes.append(f"the SOL analysis is partial (ops without a cost rule: {', '.join(result.uncovered_ops[:5])})")
    return sol_side(result, spec)

