"""bench/exclusive.py: shared device work runs side by side; a timed section runs alone, goes before
shared work that arrives after it, and a thread may time while it holds shared work of its own."""

from __future__ import annotations

import threading
import time

from solbench.bench import exclusive
from solbench.bench.exclusive import device_shared, timed_section


def _in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_shared_work_overlaps_and_a_timed_section_waits_for_it_then_runs_alone() -> None:
    events: list[str] = []
    both_in = threading.Barrier(3)
    release = threading.Event()

    def shared(name: str) -> None:
        with device_shared():
            events.append(f"{name} in")
            both_in.wait(5)
            release.wait(5)
            events.append(f"{name} out")

    readers = [_in_thread(lambda n=n: shared(n)) for n in ("a", "b")]
    both_in.wait(5)  # two shared sections at once: nothing made them wait for each other

    def timed() -> None:
        with timed_section():
            events.append("timed in")
            time.sleep(0.05)
            events.append("timed out")

    timer = _in_thread(timed)
    time.sleep(0.1)
    assert "timed in" not in events  # still waiting for the shared work
    late = _in_thread(lambda: _late(events))
    time.sleep(0.1)
    assert "late in" not in events  # a timed section waits: shared work that came after it waits behind it
    release.set()
    for thread in (*readers, timer, late):
        thread.join(5)
    assert events.index("timed in") > max(events.index("a out"), events.index("b out"))
    assert events.index("timed out") == events.index("timed in") + 1  # nothing in between
    assert events.index("late in") > events.index("timed out")


def _late(events: list[str]) -> None:
    with device_shared():
        events.append("late in")


def test_a_thread_that_holds_shared_work_can_time_and_its_requests_inside_pass() -> None:
    done = threading.Event()

    def nested() -> None:
        with device_shared(), device_shared():
            with timed_section():
                with device_shared():  # a request inside the timed section: the section's own thread
                    pass
            done.set()

    thread = _in_thread(nested)
    thread.join(5)
    assert done.is_set()
    assert exclusive._share._readers == 0 and exclusive._share._timed is None


def test_hooks_are_told_of_a_timed_section_only_once_it_holds_the_device() -> None:
    seen: list[tuple[bool, int]] = []

    def hook(started: bool) -> None:
        seen.append((started, exclusive._share._readers))

    release = threading.Event()
    holder = _in_thread(lambda: _hold(release))
    time.sleep(0.05)
    exclusive.register(hook)
    try:
        timer = _in_thread(_time_once)
        time.sleep(0.1)
        assert seen == []  # waiting: the compiles ahead are not paused yet for nothing
        release.set()
        timer.join(5)
        holder.join(5)
    finally:
        exclusive.unregister(hook)
    assert seen == [(True, 0), (False, 0)]


def _hold(release: threading.Event) -> None:
    with device_shared():
        release.wait(5)


def _time_once() -> None:
    with timed_section():
        pass


def test_memory_hooks_are_told_of_work_evaluated_again_alone_and_not_of_timed_sections() -> None:
    timed: list[bool] = []
    memory: list[tuple[bool, int]] = []

    def memory_hook(started: bool) -> None:
        memory.append((started, exclusive._share._readers))

    exclusive.register(timed.append, memory_hook)
    try:
        _time_once()
        assert timed == [True, False] and memory == []
        release = threading.Event()
        holder = _in_thread(lambda: _hold(release))
        time.sleep(0.05)
        again = _in_thread(_alone_once)
        time.sleep(0.1)
        assert memory == []  # it waits for the shared work like a timed section, before any memory is handed back
        release.set()
        again.join(5)
        holder.join(5)
    finally:
        exclusive.unregister(timed.append, memory_hook)
    assert memory == [(True, 0), (False, 0)] and timed == [True, False]
    assert memory_hook not in exclusive._memory_hooks


def _alone_once() -> None:
    with exclusive.device_alone():
        pass
