"""Several evaluations at once in this process, on one device: `concurrent` slots, each a thread with a
worker pair of its own, take the jobs problem by problem (a problem's jobs stay in one slot, in order).

Correctness work of the slots shares the device; each timed section holds it alone
(solbench.bench.exclusive), so a latency is measured as in a serial run. What the slots overlap is
the rest: worker start-up, input generation, loading compiled graphs, comparisons, the host's side."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from solbench.exec.collect import Collector
from solbench.exec.jobs import Job, evaluate_in_turn, kept_workers

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions


def problem_groups(jobs: list[Job]) -> list[list[int]]:
    """The job indices in runs of consecutive jobs of one problem."""
    groups: list[list[int]] = []
    for index, job in enumerate(jobs):
        if groups and jobs[groups[-1][-1]].problem is job.problem:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def run_slots(jobs: list[Job], options: EvalOptions, collector: Collector, concurrent: int,
              before_job: Callable[[int], None] | None = None) -> None:
    """Evaluate the jobs in `concurrent` slots; traces go to the collector (under one lock) as they arrive."""
    groups = problem_groups(jobs)
    handed = threading.Lock()  # the next group; the collector and what it calls
    failures: list[BaseException] = []
    stop = threading.Event()

    def next_group() -> list[int] | None:
        with handed:
            return groups.pop(0) if groups and not stop.is_set() else None

    def add(index: int, trace) -> None:
        with handed:
            collector.add(index, trace)

    def finish(index: int) -> None:
        with handed:
            collector.finish(index)

    def slot() -> None:
        try:
            with kept_workers(options) as workers:
                while (group := next_group()) is not None:
                    evaluate_in_turn(jobs, group, options, workers, add, finish, before_job)
        except BaseException as exc:  # noqa: BLE001 - a harness bug: the run stops, the first one is raised in the caller
            failures.append(exc)
            stop.set()

    threads = [threading.Thread(target=slot, name=f"slot-{number}", daemon=True) for number in range(min(concurrent, len(groups)))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except BaseException:
        stop.set()  # Ctrl-C: no slot starts another problem
        raise
    if failures:
        raise failures[0]
