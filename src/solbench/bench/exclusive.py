"""Timed sections hold the device alone.

Evaluations of one process may run side by side on one device (`solbench run --concurrent N`): their
correctness work shares the device (`device_shared`, taken around every worker request and the
orchestrator's comparisons), while a timed section (`timed_section`) waits until no shared work is in
flight, keeps new shared work out until it ends (a waiting timed section goes first), and pauses
whatever else of this process registered a hook (the run's compiles ahead, in other processes)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator

_hooks: list[Callable[[bool], None]] = []  # called with True as a timed section starts, False as it ends


def register(hook: Callable[[bool], None]) -> None:
    _hooks.append(hook)


def unregister(hook: Callable[[bool], None]) -> None:
    if hook in _hooks:
        _hooks.remove(hook)


class _DeviceShare:
    """A readers-writer lock that prefers the writer (a timed section), re-entrant per thread: shared
    work nested in shared work or in this thread's own timed section passes through."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0  # shared holds of all threads
        self._timed: threading.Thread | None = None
        self._waiting_timed = 0
        self._mine = threading.local()

    def _held(self) -> int:
        return getattr(self._mine, "shared", 0)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        if self._timed is threading.current_thread():
            yield
            return
        with self._condition:
            if self._held() == 0:
                while self._timed is not None or self._waiting_timed:
                    self._condition.wait()
            self._readers += 1
            self._mine.shared = self._held() + 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                self._mine.shared = self._held() - 1
                self._condition.notify_all()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        me = threading.current_thread()
        if self._timed is me:
            yield
            return
        started = time.perf_counter()
        with self._condition:
            own = self._held()  # this thread's shared holds are set aside while it times
            self._readers -= own
            self._waiting_timed += 1
            while self._timed is not None or self._readers:
                self._condition.wait()
            self._waiting_timed -= 1
            self._timed = me
        self._mine.waited = time.perf_counter() - started
        try:
            yield
        finally:
            with self._condition:
                self._timed = None
                self._readers += own
                self._condition.notify_all()


_share = _DeviceShare()


def last_wait_s() -> float:
    """How long this thread's last timed section waited for the device (other evaluations' shared work)."""
    return getattr(_share._mine, "waited", 0.0)


def device_shared() -> contextlib.AbstractContextManager[None]:
    """Around device work that may run beside other correctness work but never beside a timed section."""
    return _share.shared()


def device_alone() -> contextlib.AbstractContextManager[None]:
    """Around work that must have the device to itself within this process (a workload evaluated again
    after running out of memory beside other evaluations); timed sections inside it pass through."""
    return _share.alone()


@contextlib.contextmanager
def timed_section() -> Iterator[None]:
    """Around a timed request: it waits for the device to be free of shared work, then every hook is
    told it starts, and told it ended however it ends."""
    with _share.alone():
        for hook in list(_hooks):
            hook(True)
        try:
            yield
        finally:
            for hook in list(_hooks):
                hook(False)
