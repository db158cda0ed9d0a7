"""A pool of evaluation lanes on one host: one process per GPU (or CPU lane), fed from one job queue.

Each lane evaluates one job at a time, so no two timed runs ever share a GPU. A lane that dies is
started again and its job retried once, skipping the workloads already reported; if it dies again
the job's remaining workloads are recorded as RUNTIME_ERROR with the reason."""

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
from solbench.exec.jobs import MAX_ATTEMPTS, Job, give_up
from solbench.exec.lanes import Lane

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions

STOP_WAIT_S = 30.0
MAX_START_FAILURES = 3  # a lane that dies this often in a row before saying it is ready: give up


class PoolError(RuntimeError):
    pass


class _LaneSlot:
    """One lane and the process that currently serves it."""

    def __init__(self, lane: Lane, options: EvalOptions):
        self.lane = lane
        self.options = dataclasses.replace(options, device=lane.device)
        self.job: int | None = None
        self.ready = False
        self.start_failures = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.connection: Connection | None = None
        self.pid: int | None = None

    def start(self) -> None:
        """A fresh interpreter (no CUDA state or threads inherited) with the lane's environment."""
        parent_end, child_end = socket.socketpair()
        argv = [sys.executable, "-m", "solbench.exec.lane_process", "--fd", str(child_end.fileno())]
        self.process = subprocess.Popen(argv, pass_fds=(child_end.fileno(),), env={**os.environ, **self.lane.env}, stdin=subprocess.DEVNULL)
        child_end.close()
        self.connection = Connection(parent_end.detach())
        self.job, self.ready, self.pid = None, False, None
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


def run_pool(jobs: list[Job], options: EvalOptions, lanes: list[Lane], collector: Collector) -> None:
    """Evaluate the jobs on the lanes; every trace goes to the collector as it arrives."""
    queue: deque[int] = deque(range(len(jobs)))
    attempts = [0] * len(jobs)
    slots = [_LaneSlot(lane, options) for lane in lanes]
    try:
        for slot in slots:
            slot.start()
        while not collector.all_finished():
            for slot in slots:
                if slot.ready and slot.job is None and queue:
                    slot.job = queue.popleft()
                    attempts[slot.job] += 1
                    try:
                        slot.connection.send((slot.job, jobs[slot.job], collector.done_uuids(slot.job)))
                    except OSError:  # it died just now: counted as a death while holding the job
                        _lane_died(slot, jobs, attempts, queue, collector)
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
            slot.job = None
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
    if index is not None:
        if attempts[index] < MAX_ATTEMPTS:
            queue.appendleft(index)  # retried first, skipping the workloads it reported
        else:
            give_up(collector, index, jobs[index], f"evaluation lane {slot.lane.name} died twice while evaluating this job (exit code {code}); "
                                                   "it was retried once, skipping the workloads already done")
    slot.start()
