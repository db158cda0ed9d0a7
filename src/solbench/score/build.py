"""Building the baseline entries a run needs: the candidates of every (problem, workload) that has no
current entry are evaluated (one evaluate_jobs call), and each workload's fastest correct candidate
becomes its T_b. A problem's entries are saved as soon as all its candidates have finished, while the
later problems are still being evaluated, so that a run stopped midway keeps them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from solbench.bench.orchestrator import EvalOptions
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.data.workload import Workload
from solbench.score.baselines import (EAGER, BaselineFile, CandidateResult, candidate_result, candidate_solutions, compile_modes_for,
                                      definition_hash, make_entry, record_traces, save_baselines)
from solbench.score.jobs import Execution, Job, JobResult, evaluate_jobs


@dataclass
class BuildOutcome:
    built: int = 0  # entries made now
    reused: int = 0  # entries that were current already
    eager_traces: dict[tuple[str, str], Trace] = field(default_factory=dict)  # (problem, workload) -> the eager reference's trace made now
    errors: list[str] = field(default_factory=list)


def missing_workloads(store: BaselineFile, problem: Problem, workloads: Iterable[Workload], rebuild: bool = False,
                      candidates: Iterable[str] = (), energy: bool = False) -> list[Workload]:
    """The workloads whose entry is absent, made for another version of the problem's definition, made
    without one of the candidates asked for now, or (`energy`: a run with --energy) made without energy."""
    current = definition_hash(problem)
    wanted = set(candidates)
    missing = []
    for workload in workloads:
        entry = store.entry(problem.name, workload.uuid)
        if (rebuild or entry is None or entry.definition_hash != current or not wanted <= {c.name for c in entry.candidates}
                or (energy and not entry.energy_asked)):
            missing.append(workload)
    return missing


def baseline_jobs(selection: list[tuple[Problem, list[Workload]]], store: BaselineFile, device: str, registered: Iterable[Solution] = (),
                  rebuild: bool = False, compile_modes: Iterable[str] | None = None, energy: bool = False) -> list[Job]:
    registered = list(registered)
    jobs = []
    for problem, workloads in selection:
        candidates = candidate_solutions(problem, device, registered, compile_modes)
        missing = missing_workloads(store, problem, workloads, rebuild, [name for name, _, _ in candidates], energy)
        if missing:
            jobs += [Job(problem, solution, missing, trusted=trusted, tag=name) for name, solution, trusted in candidates]
    return jobs


def build_baselines(selection: list[tuple[Problem, list[Workload]]], store: BaselineFile, store_path: Path, options: EvalOptions,
                    registered: Iterable[Solution] = (), rebuild: bool = False, compile_modes: Iterable[str] | None = None,
                    on_trace: Callable[[Job, Trace], None] | None = None, on_error: Callable[[Job, str], None] | None = None,
                    execution: Execution = Execution()) -> BuildOutcome:
    """Make the missing entries of `store` (saved to store_path, its traces beside it) for the selection."""
    from solbench.bench.orchestrator import resolve_device

    device = resolve_device(options.device)
    modes = compile_modes_for(device) if compile_modes is None else tuple(compile_modes)
    jobs = baseline_jobs(selection, store, device, registered, rebuild, modes, options.energy)
    outcome = BuildOutcome(reused=sum(len(w) for _, w in selection) - len({(j.problem.name, w.uuid) for j in jobs for w in j.workloads}))
    if not jobs:
        return outcome
    store.candidates = list(dict.fromkeys([*store.candidates, EAGER, *(f"compile-{mode}" for mode in modes)]))
    left = Counter(job.problem.name for job in jobs)  # problem -> its candidate jobs not yet finished
    finished: dict[str, list[JobResult]] = {}

    def job_done(result: JobResult) -> None:
        """Once every candidate of a problem has finished, its entries are put and saved (and its traces
        recorded) at once, so that a run stopped later keeps them."""
        name = result.job.problem.name
        finished.setdefault(name, []).append(result)
        left[name] -= 1
        if left[name] == 0:
            outcome.built += put_entries(store, store_path, finished.pop(name), outcome)
            save_baselines(store_path, store)

    evaluate_jobs(jobs, dataclasses.replace(options, hidden=0), on_trace, on_error, execution, on_job_done=job_done)
    return outcome


def put_entries(store: BaselineFile, store_path: Path, results: list[JobResult], outcome: BuildOutcome) -> int:
    """The entries of one problem from the results of all its candidate jobs (its traces recorded beside
    the store, its errors and eager traces added to outcome); how many entries were put."""
    by_workload: dict[tuple[str, str], list[CandidateResult]] = {}
    sol: dict[tuple[str, str], tuple[float, float | None, float | None]] = {}  # T_SOL, its roofline and floor
    problems = {result.job.problem.name: result.job.problem for result in results}
    for result in results:
        job = result.job
        if result.error is not None:
            outcome.errors.append(result.error)
        record_traces(store_path, result.traces)
        done = {trace.workload.uuid for trace in result.traces}
        for trace in result.traces:
            key = (job.problem.name, trace.workload.uuid)
            by_workload.setdefault(key, []).append(candidate_result(job.tag, trace))
            performance = trace.evaluation.performance
            if performance is not None and performance.sol_ms is not None:
                sol.setdefault(key, (performance.sol_ms, performance.sol_roofline_ms, performance.sol_floor_ms))
            if job.tag == EAGER:
                outcome.eager_traces[key] = trace
        for workload in job.workloads:
            if workload.uuid not in done:
                by_workload.setdefault((job.problem.name, workload.uuid), []).append(
                    CandidateResult(name=job.tag, solution=job.solution.name, status="NOT_RUN", detail=result.error or "no trace"))
    for (problem, workload), candidates in by_workload.items():
        sol_ms, roofline_ms, floor_ms = sol.get((problem, workload), (None, None, None))
        store.put(make_entry(problems[problem], workload, candidates, sol_ms, roofline_ms=roofline_ms, floor_ms=floor_ms))
    return len(by_workload)
