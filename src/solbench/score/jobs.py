"""Every evaluation of a run goes through `evaluate_jobs`: one (problem, solution, workloads) job at a
time for now. It is the one place where an executor (a GPU pool, Ray: `solbench.exec`) plugs in; a
job's traces never depend on where it ran."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.data.workload import Workload


@dataclass
class Job:
    """One solution on chosen workloads of one problem. `trusted` code (references and torch.compile of
    them) skips static analysis; `tag` says what the job is for (e.g. a baseline candidate's name)."""

    problem: Problem
    solution: Solution
    workloads: list[Workload]
    skip: set[str] = field(default_factory=set)
    trusted: bool = False
    tag: str = ""

    @property
    def pending(self) -> int:
        return sum(1 for w in self.workloads if w.uuid not in self.skip)


@dataclass
class JobResult:
    job: Job
    traces: list[Trace] = field(default_factory=list)
    error: str | None = None  # why the job stopped, if it did (its problem's other jobs go on)


def evaluate_jobs(jobs: Iterable[Job], options: EvalOptions, on_trace: Callable[[Job, Trace], None] | None = None,
                  on_error: Callable[[Job, str], None] | None = None) -> list[JobResult]:
    """Evaluate each job through the hardened evaluator; a job that breaks is recorded and the others go on."""
    results = []
    for job in jobs:
        result = JobResult(job)
        run_options = dataclasses.replace(options, static_analysis=options.static_analysis and not job.trusted)
        try:
            result.traces = evaluate(job.problem, job.solution, run_options, workloads=job.workloads, skip=job.skip,
                                     on_trace=(lambda trace, job=job: on_trace(job, trace)) if on_trace else None)
        except Exception as exc:  # noqa: BLE001 - one job's failure must not stop the others
            text = str(exc).strip()
            result.error = f"{job.problem.source or job.problem.name}: evaluation of {job.solution.name} stopped: {type(exc).__name__}" + (
                f": {text.splitlines()[0]}" if text else "")
            if on_error is not None:
                on_error(job, result.error)
        results.append(result)
    return results
