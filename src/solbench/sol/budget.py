"""Tasks (the problems of a dataset) run in worker processes, each under a time and a memory budget.

ProcessPoolExecutor cannot stop one task, so this is a small pool of its own: one spawned process
per lane, a pipe to it, and a shared buffer in which the worker writes the pass it is in, so that a
task that is stopped can be said with where it was. The parent polls each busy worker's resident
memory from /proc (RLIMIT_AS is unreliable with torch, which reserves far more address space than it
touches) and ends a worker that runs past the time budget or over the memory cap; a fresh one takes
its place. Workers are also replaced after `recycle_after` tasks, or when the memory they keep
between tasks has grown past half the way from their size when fresh to the cap, so that memory does
not creep over a dataset.

In this process (`run_here`, one job) the time budget is kept by a timer signal where one can be
set (the main thread, SIGALRM unused), and the tasks after one it stopped go to a worker process;
the memory cap needs worker processes.

Workers share the cores, each with torch's default intra-op threads: OpenMP's threads then wait for
work asleep (WORKER_ENVIRONMENT), not spinning on cores that the other workers need. The threads and
how the work is split among them are the same, so every value computed is the same.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterator

POLL_S = 0.1  # how often a busy worker's time and memory are checked
PASS_BYTES = 160  # room for the name of the pass a worker is in
WORKER_ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE"}  # set in each worker unless this process's environment sets them

Report = Callable[[str], None]
Work = Callable[[Any, Report], Any]  # (task, report(pass)) -> a picklable value; a top-level function


@dataclass(frozen=True)
class Limits:
    """What one task may take: seconds of wall time, bytes of its worker's resident memory (None: no limit)."""

    timeout_s: float | None = 60.0
    max_memory_bytes: int | None = 4 << 30
    recycle_after: int = 100  # tasks a worker runs before a fresh one takes its place


@dataclass
class Done:
    index: int  # the task's position in the list given
    value: Any
    elapsed_s: float


@dataclass
class Stopped:
    """A task that did not finish: `reason` is "time", "memory", "died" or "error"."""

    index: int
    reason: str
    where: str  # the pass it was in
    elapsed_s: float
    peak_bytes: int = 0
    detail: str = ""


class WorkerStartError(RuntimeError):
    """The worker processes cannot start (a broken install): no task could run in one."""


def run_here(tasks: list[Any], limits: Limits, work: Work, prepare: Callable[[], None] | None = None) -> Iterator[Done | Stopped]:
    """Each task in this process, in order; the time budget is kept where a timer signal can be set.
    A task stopped by it may leave this process half way through torch's own lazy set-up, so the
    tasks after it run in a fresh worker process (`prepare`, run first here, does that set-up before
    any timer)."""
    if prepare is not None and tasks:
        prepare()
    for index, task in enumerate(tasks):
        where = ["loading"]
        began = time.monotonic()
        try:
            with _alarm(limits.timeout_s):
                value = work(task, lambda text: where.__setitem__(0, text))
        except _OverTime:
            yield Stopped(index, "time", where[0], time.monotonic() - began)
            yield from _in_a_worker(tasks, index + 1, limits, work, prepare)
            return
        except Exception as exc:  # noqa: BLE001 - one task that breaks must not stop the others
            yield Stopped(index, "error", where[0], time.monotonic() - began, detail=first_line(exc))
        else:
            yield Done(index, value, time.monotonic() - began)


def _in_a_worker(tasks: list[Any], start: int, limits: Limits, work: Work, prepare: Callable[[], None] | None) -> Iterator[Done | Stopped]:
    """The tasks from `start` on, in one fresh worker process (their indices as in `tasks`)."""
    if start >= len(tasks):
        return
    with WorkerPool(1, limits, work, prepare) as pool:
        for outcome in pool.run(tasks[start:]):
            outcome.index += start
            yield outcome


class WorkerPool:
    """Worker processes that run tasks under limits; a worker that breaks a limit or dies is replaced."""

    def __init__(self, jobs: int, limits: Limits, work: Work, prepare: Callable[[], None] | None = None):
        self._context = multiprocessing.get_context("spawn")
        self._limits, self._work, self._prepare = limits, work, prepare
        self._lanes = [self._start() for _ in range(max(1, jobs))]

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for lane in self._lanes:
            lane.end()
        self._lanes = []

    def run(self, tasks: list[Any]) -> Iterator[Done | Stopped]:
        """Each task's outcome as soon as it is known (in the order they finish); tasks start in the order given."""
        pending = deque(enumerate(tasks))
        while pending or any(lane.busy for lane in self._lanes):
            for lane in self._lanes:
                if lane.ready and not lane.busy and pending:
                    lane.assign(*pending.popleft())
            wait([lane.conn for lane in self._lanes] + [lane.process.sentinel for lane in self._lanes], timeout=POLL_S)
            outcomes = []
            for lane in list(self._lanes):  # every process started stays in self._lanes, for close() to end
                outcome, healthy = self._step(lane)
                outcomes.append(outcome)
                if not healthy:
                    lane.end()
                    self._lanes.remove(lane)
                    if pending:
                        self._lanes.append(self._start())
            yield from (outcome for outcome in outcomes if outcome is not None)

    def _start(self) -> _Lane:
        return _Lane(self._context, self._work, self._prepare)

    def _step(self, lane: _Lane) -> tuple[Done | Stopped | None, bool]:
        """What a lane has to say now, and whether it may go on."""
        if lane.conn.poll():
            try:
                kind, value, elapsed = lane.conn.recv()
            except (EOFError, OSError):
                return self._died(lane), False
            if kind == "ready":
                lane.ready, lane.fresh_bytes = True, resident_bytes(lane.process.pid)
                return None, True
            if kind == "broken":
                raise WorkerStartError(f"the worker processes cannot start: {value}")
            index, lane.index = lane.index, None
            lane.served += 1
            outcome = Done(index, value, elapsed) if kind == "done" else Stopped(index, "error", lane.where(), elapsed, lane.peak, value)
            return outcome, not self._worn(lane)
        if not lane.process.is_alive():
            return self._died(lane), False
        if not lane.busy:
            return None, True
        rss = resident_bytes(lane.process.pid)
        lane.peak = max(lane.peak, rss)
        if self._limits.max_memory_bytes and rss > self._limits.max_memory_bytes:
            return lane.stop("memory"), False
        if self._limits.timeout_s and time.monotonic() - lane.started > self._limits.timeout_s:
            return lane.stop("time"), False
        return None, True

    def _died(self, lane: _Lane) -> Stopped | None:
        """The task of a worker that ended by itself (a crash, the kernel's OOM killer)."""
        lane.process.join(1)
        code = lane.process.exitcode
        if not lane.ready:
            raise WorkerStartError(f"the worker processes cannot start: one ended before it was ready (exit code {code})")
        if not lane.busy:
            return None
        return lane.stop("died", _how_it_ended(code))

    def _worn(self, lane: _Lane) -> bool:
        """Whether an idle worker should make way for a fresh one (memory kept between tasks creeps up)."""
        cap = self._limits.max_memory_bytes
        kept = resident_bytes(lane.process.pid) - lane.fresh_bytes
        return lane.served >= self._limits.recycle_after or bool(cap and kept > (cap - lane.fresh_bytes) / 2)


class _Lane:
    """One worker process and the task it runs."""

    def __init__(self, context: Any, work: Work, prepare: Callable[[], None] | None):
        self.conn, child = context.Pipe()
        self._where = context.Array("c", PASS_BYTES, lock=False)
        self.process = context.Process(target=_serve, args=(child, self._where, work, prepare), daemon=True)
        with _environment(WORKER_ENVIRONMENT):  # read by OpenMP as torch loads it: before any code of the worker runs
            self.process.start()
        child.close()
        self.ready = False
        self.fresh_bytes = 0  # its resident memory when it was ready
        self.index: int | None = None
        self.started = 0.0
        self.peak = 0
        self.served = 0

    @property
    def busy(self) -> bool:
        return self.index is not None

    def assign(self, index: int, task: Any) -> None:
        self.index, self.started, self.peak = index, time.monotonic(), 0
        self.conn.send(task)

    def where(self) -> str:
        return self._where.value.decode(errors="replace") or "loading"

    def stop(self, reason: str, detail: str = "") -> Stopped:
        """The stopped task's outcome; the worker is ended by the pool."""
        assert self.index is not None
        return Stopped(self.index, reason, self.where(), time.monotonic() - self.started, self.peak, detail)

    def end(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def _serve(conn: Connection, where: Any, work: Work, prepare: Callable[[], None] | None) -> None:
    """A worker's loop: a task in, its value (or its error) out, the pass it is in written to `where`."""

    def report(text: str) -> None:
        where.value = text.encode()[: PASS_BYTES - 1]

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the workers
    report("starting")
    try:
        if prepare is not None:
            prepare()
    except Exception as exc:  # noqa: BLE001 - said by the parent as why no worker can start
        conn.send(("broken", first_line(exc), 0.0))
        return
    conn.send(("ready", None, 0.0))
    while True:
        report("loading")
        try:
            task = conn.recv()
        except EOFError:
            return
        began = time.monotonic()
        try:
            message = ("done", work(task, report), 0.0)
        except Exception as exc:  # noqa: BLE001 - said to the parent as this task's failure
            message = ("error", first_line(exc), 0.0)
        report("sending its results")
        message = (message[0], message[1], time.monotonic() - began)
        try:
            conn.send(message)
        except Exception as exc:  # noqa: BLE001 - a value that cannot be pickled
            conn.send(("error", f"cannot send the results: {first_line(exc)}", message[2]))


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """These variables (those not set already) in the environment that a process started now inherits."""
    added = {name: value for name, value in variables.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _how_it_ended(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"


def first_line(exc: BaseException) -> str:
    """`Type: the message's first line`, for one line on stderr."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def resident_bytes(pid: int) -> int:
    """A process's resident memory (VmRSS) from /proc; 0 where that cannot be read (not Linux, ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _OverTime(BaseException):
    """Raised by the timer signal in this process (a BaseException: the analysis catches Exception)."""


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raise _OverTime after `seconds`, where a timer signal is free to use (else no time budget)."""
    usable = (seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))
    if not usable:
        yield
        return

    def expire(*_: object) -> None:
        raise _OverTime

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
