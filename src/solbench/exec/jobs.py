"""A job: one solution evaluated on one problem; the one function every executor runs for it."""

from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass, field
import contextlib
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Evaluation, Status, Trace
from solbench.data.workload import Workload

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions
    from solbench.exec.collect import Collector
    from solbench.bench.workers import WorkerPair

STOPPED_FLAG = "evaluation-stopped"  # the evaluation raised: the harness, not the solution, stopped it
LANE_DIED_FLAG = "lane-died"  # the process evaluating the job died twice


@dataclass(frozen=True, eq=False)
class Job:
    """Evaluate `solution` on `problem`: the given workloads (None: all of them, plus hidden ones),
    less those whose uuid is in `skip` (a resumed run). `trusted` code (references and torch.compile
    of them) skips the static analysis; `tag` says what the job is for (a baseline candidate's name,
    a solution set). `held_out` draws the hidden workloads even where the workloads are given: a
    solution specialised to the published shapes is found in a run of a few of them too."""

    problem: Problem
    solution: Solution
    workloads: list[Workload] | None = None
    skip: frozenset[str] = field(default_factory=frozenset)
    trusted: bool = False
    tag: str = ""
    held_out: bool = False  # with workloads given: the evaluator's hidden and unaligned workloads after them too

    @property
    def pending(self) -> int:
        """Published workloads still to evaluate."""
        return len(self.remaining(()))

    def remaining(self, done: Iterable[str]) -> list[Workload]:
        """The published workloads not yet evaluated (hidden ones are drawn in the evaluation and unknown here)."""
        excluded = set(self.skip) | set(done)
        chosen = self.workloads if self.workloads is not None else self.problem.workloads
        return [workload for workload in chosen if workload.uuid not in excluded]


@contextlib.contextmanager
def kept_workers(options: EvalOptions) -> Iterator[WorkerPair | None]:
    """One worker pair for a sequence of jobs: its trusted reference worker stays alive from problem to
    problem (start-up paid once); every submitted solution gets a fresh solution worker of its own (trusted
    code may reuse the worker of the trusted code before it: WorkerPair.detach)."""
    from solbench.bench.orchestrator import resolve_device
    from solbench.bench.workers import WorkerPair

    try:
        device = resolve_device(options.device)
    except RuntimeError:  # no such device here: each job's own evaluation says so in its traces
        yield None
        return
    with WorkerPair.for_options(device, options) as pair:
        yield pair


def evaluate_in_turn(jobs: list[Job], indices: list[int], options: EvalOptions, workers: WorkerPair | None,
                     add: Callable[[int, Trace], None], finish: Callable[[int], None],
                     before_job: Callable[[int], None] | None = None, stopped: Callable[[], bool] = lambda: False) -> None:
    """The jobs at `indices`, one after another in one worker pair: trusted code is known as such before
    any worker is started ahead, the next jobs' solution workers start while one is evaluated; each trace
    goes to add(index, trace), then finish(index) once the job is done. Once stopped() is true (checked
    before each job and after before_job) no other job starts."""
    if workers is not None:
        for index in indices:
            if jobs[index].trusted:
                workers.trust(jobs[index].solution)
    for position, index in enumerate(indices):
        if workers is not None:
            workers.plan_next([jobs[later].solution for later in indices[position + 1:position + 1 + workers.spares_ahead]])
        if before_job is not None and not stopped():
            before_job(index)
        if stopped():
            return
        evaluate_job(jobs[index], options, lambda trace, index=index: add(index, trace), workers=workers)
        finish(index)


def evaluate_job(job: Job, options: EvalOptions, emit: Callable[[Trace], None], done: frozenset[str] = frozenset(),
                 workers: WorkerPair | None = None) -> None:
    """Evaluate one job, handing each trace to emit as it is known; `done`: workloads already
    evaluated by an earlier attempt; `workers`: a pair kept across jobs (kept_workers), else the
    evaluation starts its own. An exception becomes a failed trace for each workload left, so that
    one job's failure never stops the others, wherever the job runs."""
    import dataclasses

    from solbench.bench.orchestrator import evaluate

    if job.trusted and options.static_analysis:
        options = dataclasses.replace(options, static_analysis=False)
    if job.trusted and workers is not None:
        workers.trust(job.solution)
    seen = set(done)
    if job.workloads is not None and not job.remaining(seen):
        return  # nothing left (a resumed run): no workers to start

    def on_trace(trace: Trace) -> None:
        seen.add(trace.workload.uuid)
        emit(trace)

    try:
        evaluate(job.problem, job.solution, options, workloads=job.workloads, skip=set(job.skip) | seen, on_trace=on_trace, workers=workers,
                 held_out=True if job.held_out else None)
    except Exception as exc:  # noqa: BLE001 - reported in the traces of the workloads it stopped
        for trace in failure_traces(job, seen, f"evaluation stopped: {one_line(exc)}", STOPPED_FLAG):
            emit(trace)


def failure_traces(job: Job, done: Iterable[str], reason: str, flag: str) -> list[Trace]:
    """A RUNTIME_ERROR trace, with this one-line reason, for every workload of the job not yet done."""
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return [Trace(definition=job.problem.name, workload=workload, solution=job.solution.name,
                  evaluation=Evaluation(status=Status.RUNTIME_ERROR, log=reason, timestamp=stamp, flags=[flag]))
            for workload in job.remaining(done)]


MAX_ATTEMPTS = 2  # a job whose lane or task dies is retried once, skipping the workloads it reported


def retried_after_death(job: Job, attempts: int, death: str) -> bool:
    """Whether a job whose lane or Ray task died is tried again (it is, once, skipping the workloads it
    reported); `death` says what died and how. Said on stderr as it happens, whichever executor ran it."""
    again = attempts < MAX_ATTEMPTS
    print(f"{death} while evaluating {job.problem.name}; "
          + ("the job is retried, skipping the workloads already done" if again else "its workloads not yet done are recorded as failed"),
          file=sys.stderr, flush=True)
    return again


def give_up(collector: Collector, index: int, job: Job, reason: str) -> None:
    """The job's workloads not yet reported become RUNTIME_ERROR traces flagged lane-died, and the job is finished."""
    for trace in failure_traces(job, collector.done_uuids(index), reason, LANE_DIED_FLAG):
        collector.add(index, trace)
    collector.finish(index)


def noting_lane(lane: str, emit: Callable[[Trace], None]) -> Callable[[Trace], None]:
    """emit, with the lane that ran the job recorded in each trace's environment (an audit note:
    where a job ran changes nothing else)."""

    def emit_noted(trace: Trace) -> None:
        if trace.evaluation is not None:
            trace.evaluation.environment = {**(trace.evaluation.environment or {}), "lane": lane}
        emit(trace)

    return emit_noted


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
