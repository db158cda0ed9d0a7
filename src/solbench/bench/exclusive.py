"""Timed sections hold the device alone.

Evaluations of one process may run side by side on one device (`solbench run --concurrent N`): their
correctness work shares the device (`device_shared`, taken around every worker request and the
orchestrator's comparisons), while a timed section (`timed_section`) waits until no shared work is in
flight, keeps new shared work out until it ends (a waiting timed section goes first), and pauses
whatever else of this process registered a hook (the run's compiles ahead, in other processes). Work
evaluated again after running out of memory (`device_alone`) also calls the memory hooks: whatever
holds device memory in other processes for this one hands it back while it runs (the compiles ahead
are ended and queued again)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator

_hooks: list[Callable[[bool], None]] = []  # called with True as a timed section starts, False as it ends
_memory_hooks: list[Callable[[bool], None]] = []  # called with True as work that needs the device's memory starts, False as it ends


def register(hook: Callable[[bool], None], memory: Callable[[bool], None] | None = None) -> None:
    """`hook` around every timed section; `memory`, where given, around every device_alone section."""
    _hooks.append(hook)
    if memory is not None:
        _memory_hooks.append(memory)


def unregister(hook: Callable[[bool], None], memory: Callable[[bool], None] | None = None) -> None:
    if hook in _hooks:
        _hooks.remove(hook)
    if memory is not None and memory in _memory_hooks:
        _memory_hooks.remove(memory)


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


@contextlib.contextmanager
def _telling(hooks: list[Callable[[bool], None]]) -> Iterator[None]:
    """Each hook told (True) that the section starts, and (False) that it ended however it ends."""
    for hook in list(hooks):
        hook(True)
    try:
        yield
    finally:
        for hook in list(hooks):
            hook(False)


@contextlib.contextmanager
def device_alone() -> Iterator[None]:
    """Around work that must have the device to itself (a workload evaluated again after running out of
    memory beside other evaluations): within this process, and the memory hooks told it starts and ends
    (other processes' device memory handed back); timed sections inside it pass through."""
    with _share.alone(), _telling(_memory_hooks):
        yield


@contextlib.contextmanager
def timed_section() -> Iterator[None]:
    """Around a timed request: it waits for the device to be free of shared work, then every hook is
    told it starts, and told it ended however it ends."""
    with _share.alone(), _telling(_hooks):
        yield
