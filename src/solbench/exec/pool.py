"""A pool of evaluation lanes on one host: one process per GPU (or CPU lane), fed from one job queue.

Each lane evaluates one job at a time, so no two timed runs ever share a GPU. A GPU lane is sent its
next job ahead, so that it starts that job's solution worker while the current one is evaluated
(the interpreter, torch and the CUDA context: seconds per job). A lane that dies is started again and
its job retried once, skipping the workloads already reported (a job it held ahead is queued again,
not counted as tried); if it dies again the job's remaining workloads are recorded as RUNTIME_ERROR
with the reason."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

from solbench.exec.collect import Collector
from solbench.exec.jobs import Job, give_up, retried_after_death
from solbench.exec.lanes import Lane

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions

STOP_WAIT_S = 30.0
MAX_START_FAILURES = 3  # a lane that dies this often in a row before saying it is ready: give up


class PoolError(RuntimeError):
    pass


class _LaneSlot:
    """One lane and the process that currently serves it."""

    def __init__(self, lane: Lane, options: EvalOptions, ahead: int):
        self.lane = lane
        self.options = dataclasses.replace(options, device=lane.device)
        self.jobs: list[int] = []  # the job being evaluated, then those sent ahead
        self.ahead = ahead
        self.ready = False
        self.start_failures = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.connection: Connection | None = None
        self.pid: int | None = None

    @property
    def job(self) -> int | None:
        """The job the lane is evaluating (or will start next)."""
        return self.jobs[0] if self.jobs else None

    def start(self) -> None:
        """A fresh interpreter (no CUDA state or threads inherited) with the lane's environment."""
        parent_end, child_end = socket.socketpair()
        argv = [sys.executable, "-m", "solbench.exec.lane_process", "--fd", str(child_end.fileno())]
        self.process = subprocess.Popen(argv, pass_fds=(child_end.fileno(),), env={**os.environ, **self.lane.env}, stdin=subprocess.DEVNULL)
        child_end.close()
        self.connection = Connection(parent_end.detach())
        self.jobs, self.ready, self.pid = [], False, None
        self.connection.send((self.lane.name, self.options))

    def stop(self, at_once: bool = False) -> None:
        """Ask the lane to end (at_once: SIGTERM, which unwinds the evaluation in flight and closes its workers)."""
        if self.process is None:
            return
        try:
            if at_once:
                self.process.terminate()
            else:
                self.connection.send(None)
        except OSError:
            pass
        try:
            self.process.wait(5 if at_once else STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.connection.close()
        self.process = None


def run_pool(jobs: list[Job], options: EvalOptions, lanes: list[Lane], collector: Collector, ahead: int | None = None) -> None:
    """Evaluate the jobs on the lanes; every trace goes to the collector as it arrives. `ahead`: jobs
    sent to a lane beyond the one it evaluates (default: SPARES_AHEAD on GPU lanes, whose solution
    workers start ahead; 0 on CPU lanes, where a worker starting early would compete for the cores
    with the job being evaluated)."""
    from solbench.bench.workers import SPARES_AHEAD

    queue: deque[int] = deque(range(len(jobs)))
    attempts = [0] * len(jobs)
    slots = [_LaneSlot(lane, options, (SPARES_AHEAD if lane.device.startswith("cuda") else 0) if ahead is None else ahead) for lane in lanes]
    try:
        for slot in slots:
            slot.start()
        while not collector.all_finished():
            for slot in slots:
                while slot.ready and len(slot.jobs) <= slot.ahead and queue:
                    index = queue.popleft()
                    attempts[index] += 1
                    slot.jobs.append(index)
                    try:
                        slot.connection.send((index, jobs[index], collector.done_uuids(index)))
                    except OSError:  # it died just now: counted as a death while holding the job
                        _lane_died(slot, jobs, attempts, queue, collector)
                        break
            waiting: dict[Any, _LaneSlot] = {slot.connection: slot for slot in slots}
            for ready in wait(list(waiting)):
                slot = waiting[ready]
                if slot.process is not None and _drain(slot, collector) == "died":
                    _lane_died(slot, jobs, attempts, queue, collector)
    except BaseException:
        for slot in slots:
            slot.stop(at_once=True)  # an interrupt or a failing on_trace: the jobs in flight are abandoned
        raise
    for slot in slots:
        slot.stop()


def _drain(slot: _LaneSlot, collector: Collector) -> str:
    """Read everything the lane has sent; "died" if its process is gone."""
    while slot.connection.poll():
        try:
            message: Any = slot.connection.recv()
        except (EOFError, OSError):
            return "died"
        if message[0] == "ready":
            slot.ready, slot.pid, slot.start_failures = True, message[1], 0
        elif message[0] == "trace":
            collector.add(message[1], message[2])
        elif message[0] == "done":
            collector.finish(message[1])
            slot.jobs.remove(message[1])
    return "alive" if slot.process.poll() is None else "died"


def _lane_died(slot: _LaneSlot, jobs: list[Job], attempts: list[int], queue: deque[int], collector: Collector) -> None:
    code = slot.process.wait()
    index = slot.job
    if not slot.ready:
        slot.start_failures += 1
        if slot.start_failures >= MAX_START_FAILURES:
            raise PoolError(f"evaluation lane {slot.lane.name} could not start: its process exited with code {code} {slot.start_failures} times")
    slot.connection.close()
    slot.process = None
    for later in reversed(slot.jobs[1:]):  # sent ahead, never started: queued again, not counted as tried
        attempts[later] -= 1
        queue.appendleft(later)
    slot.jobs = []
    if index is not None:
        if retried_after_death(jobs[index], attempts[index], f"evaluation lane {slot.lane.name} died (exit code {code})"):
            queue.appendleft(index)  # retried first, skipping the workloads it reported
        else:
            give_up(collector, index, jobs[index], f"evaluation lane {slot.lane.name} died twice while evaluating this job (exit code {code}); "
                                                   "it was retried once, skipping the workloads already done")
    slot.start()
