"""evaluate_jobs: the one entry point of solbench.exec; serial, a pool of lanes on this host, or Ray."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from solbench.data.trace import Trace
from solbench.exec.collect import Collector
from solbench.exec.jobs import Job, evaluate_in_turn, kept_workers

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions

EXECUTORS = ("serial", "pool", "ray")


def evaluate_jobs(jobs: Iterable[Job], options: EvalOptions, *, executor: str = "serial", lanes: int | str | list[str] | None = None,
                  address: str | None = None, on_trace: Callable[[Trace], None] | None = None, ordered: bool = False,
                  on_job_trace: Callable[[int, Trace], None] | None = None,
                  on_job_finished: Callable[[int], None] | None = None, before_job: Callable[[int], None] | None = None,
                  concurrent: int = 1) -> list[Trace]:
    """Evaluate every job; the traces in job order (within a job, in the evaluator's order).

    executor: serial (here, one job after another), pool (lanes of this host: "all", N or GPU
    indices such as ["0", "1"]; on a machine without a GPU, or with options.device cpu, N CPU lanes),
    ray (tasks on the cluster at `address`, auto or HOST:PORT; none: a local Ray started here).
    on_trace is called here, in this process, with each trace as it arrives (ordered=True: in job
    order, so that a file it writes is the same whatever the executor). Statuses do not depend on
    the executor: each job runs the same evaluator with the same options (the device aside).
    on_job_trace, where given, is called instead with (the job's index in `jobs`, trace);
    on_job_finished with each job's index once it and every earlier job have finished (job order),
    after all their traces were handed on; before_job (serial executor) with each job's index just
    before it is evaluated (a run waits there for a compile made ahead). concurrent (serial executor):
    evaluations in flight at once on the one device, problem by problem (solbench.exec.slots)."""
    jobs = list(jobs)
    if executor not in EXECUTORS:
        from solbench.exec.lanes import LaneError

        raise LaneError(f"--executor: expected one of {', '.join(EXECUTORS)}, got {executor!r}")
    deliver = on_job_trace if on_job_trace is not None else (lambda index, trace: on_trace(trace)) if on_trace is not None else None
    collector = Collector(len(jobs), deliver, ordered, on_job_finished)
    if not jobs:
        return []
    if executor == "serial" and concurrent > 1:
        from solbench.exec.slots import run_slots

        run_slots(jobs, options, collector, concurrent, before_job)
    elif executor == "serial":
        with kept_workers(options) as workers:
            evaluate_in_turn(jobs, list(range(len(jobs))), options, workers, collector.add, collector.finish, before_job)
    elif executor == "pool":
        from solbench.exec.lanes import plan_lanes
        from solbench.exec.pool import run_pool

        run_pool(jobs, options, plan_lanes(lanes, options.device), collector)
    else:
        from solbench.exec.ray_executor import run_on_ray

        run_on_ray(jobs, options, collector, address)
    return collector.results()
