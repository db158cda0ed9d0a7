"""Every evaluation of a run goes through `evaluate_jobs`, which hands the jobs to an executor of
solbench.exec (serial, a pool of lanes on this host, or Ray) and gathers each job's traces; a job's
traces never depend on where it ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from solbench.bench.orchestrator import EvalOptions
from solbench.data.trace import Trace
from solbench.exec import LANE_DIED_FLAG, STOPPED_FLAG, Job
from solbench.exec import evaluate_jobs as execute

__all__ = ["Execution", "Job", "JobResult", "evaluate_jobs"]


@dataclass(frozen=True)
class Execution:
    """Where jobs run: executor serial, pool or ray; lanes for a pool ("all", N or GPU indices; N CPU lanes
    without a GPU); address of a Ray cluster (None: a local Ray)."""

    executor: str = "serial"
    lanes: int | str | list[str] | None = None
    address: str | None = None
    concurrent: int = 1  # serial executor: evaluations in flight at once on its device (timing still alone)


@dataclass
class JobResult:
    job: Job
    traces: list[Trace] = field(default_factory=list)
    error: str | None = None  # why the job stopped, if it did (its workloads left are RUNTIME_ERROR traces; the other jobs go on)


def evaluate_jobs(jobs: Iterable[Job], options: EvalOptions, on_trace: Callable[[Job, Trace], None] | None = None,
                  on_error: Callable[[Job, str], None] | None = None, execution: Execution = Execution(),
                  on_job_done: Callable[[JobResult], None] | None = None, before_job: Callable[[Job], None] | None = None) -> list[JobResult]:
    """Evaluate each job through the hardened evaluator, traces handed to on_trace in job order as they
    are known; a job that the harness stopped is reported once through on_error and the others go on.

    on_job_done gets each job's result once, in job order, as soon as the executor has finished the
    job and all its traces (and every earlier job's) were handed on; before_job gets each job just
    before it is evaluated (the serial executor)."""
    jobs = list(jobs)
    results = [JobResult(job) for job in jobs]

    def arrived(index: int, trace: Trace) -> None:
        result = results[index]
        result.traces.append(trace)
        flags = (trace.evaluation.flags or []) if trace.evaluation is not None else []
        if result.error is None and (STOPPED_FLAG in flags or LANE_DIED_FLAG in flags):
            job = result.job
            result.error = f"{job.problem.source or job.problem.name}: evaluation of {job.solution.name} stopped: {trace.evaluation.log}"
            if on_error is not None:
                on_error(job, result.error)
        if on_trace is not None:
            on_trace(result.job, trace)

    def finished(index: int) -> None:
        if on_job_done is not None:
            on_job_done(results[index])

    execute(jobs, options, executor=execution.executor, lanes=execution.lanes, address=execution.address, concurrent=execution.concurrent, ordered=True, on_job_trace=arrived,
            on_job_finished=finished, before_job=(lambda index: before_job(jobs[index])) if before_job is not None else None)
    return results
