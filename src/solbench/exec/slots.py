"""Several evaluations at once in this process, on one device: `concurrent` slots, each a thread with a
worker pair of its own, take the jobs problem by problem (a problem's jobs stay in one slot, in order).

Correctness work of the slots shares the device; each timed section holds it alone
(solbench.bench.exclusive), so a latency is measured as in a serial run. What the slots overlap is
the rest: worker start-up, input generation, loading compiled graphs, comparisons, the host's side."""

from __future__ import annotations

import threading
import time
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


STOP_WAIT_S = 30.0  # after Ctrl-C, how long the slots get to end (their workers killed) before the interrupt goes on


def run_slots(jobs: list[Job], options: EvalOptions, collector: Collector, concurrent: int,
              before_job: Callable[[int], None] | None = None) -> None:
    """Evaluate the jobs in `concurrent` slots; traces go to the collector (under one lock) as they arrive.

    On Ctrl-C (or a slot's harness error) the slots stop: nothing more reaches the collector (a job cut
    short is no failure of its solution; a resumed run does it again), every slot's workers are killed
    and the slots are waited for, so that no slot thread is left inside torch as the interpreter ends
    (a daemon thread ended there aborted the process: 'terminate called recursively')."""
    groups = problem_groups(jobs)
    handed = threading.Lock()  # the next group; the collector and what it calls
    failures: list[BaseException] = []
    stop = threading.Event()
    pairs: list = []  # each slot's worker pair
    waiting: set[threading.Thread] = set()  # slots in before_job

    def next_group() -> list[int] | None:
        with handed:
            return groups.pop(0) if groups and not stop.is_set() else None

    def add(index: int, trace) -> None:
        with handed:
            if not stop.is_set():
                collector.add(index, trace)

    def finish(index: int) -> None:
        with handed:
            if not stop.is_set():
                collector.finish(index)

    def before(index: int) -> None:  # a slot waiting here (for a compile made ahead) is in no worker and no torch call
        with handed:
            waiting.add(threading.current_thread())
        try:
            before_job(index)  # type: ignore[misc]
        finally:
            with handed:
                waiting.discard(threading.current_thread())

    def slot(ended: threading.Event) -> None:
        try:
            with kept_workers(options) as workers:
                with handed:
                    pairs.append(workers)
                while (group := next_group()) is not None:
                    evaluate_in_turn(jobs, group, options, workers, add, finish, before if before_job is not None else None, stop.is_set)
        except BaseException as exc:  # noqa: BLE001 - a harness bug: the run stops, the first one is raised in the caller
            failures.append(exc)
            stop.set()
        finally:
            ended.set()

    ended = {threading.Thread(target=slot, args=(event,), name=f"slot-{number}", daemon=True): event
             for number, event in ((number, threading.Event()) for number in range(min(concurrent, len(groups))))}
    for thread in ended:
        thread.start()
    try:
        for thread in ended:
            while thread.is_alive():
                thread.join(0.5)
    except BaseException:
        stop.set()  # Ctrl-C: no slot starts another problem, or another job once its wait in before_job ends
        _end_slots(ended, pairs, waiting, handed)
        raise
    if failures:
        raise failures[0]


def _end_slots(ended: dict[threading.Thread, threading.Event], pairs: list, waiting: set[threading.Thread], handed: threading.Lock) -> None:
    """Kill the slots' workers until every slot has ended or waits in before_job (it starts no job after
    that wait), STOP_WAIT_S at most; a worker restarted meanwhile is killed too. Each slot says it has
    ended with its own event: after a join cut by Ctrl-C, Thread.is_alive() may already say False."""
    deadline = time.monotonic() + STOP_WAIT_S

    def busy() -> bool:
        with handed:
            return any(not event.is_set() and thread not in waiting for thread, event in ended.items())

    while busy() and time.monotonic() < deadline:
        with handed:
            for pair in pairs:
                if pair is not None:
                    pair.kill_processes()
        for event in ended.values():
            event.wait(0.2)
    for thread, event in ended.items():
        if event.is_set():
            thread.join(1.0)  # it only returns from here on
