"""Measurement windows aligned to the energy counter's updates.

The counter (solbench.energy.counter) advances in steps about every 100 ms: a reading is the energy up
to its last update, so a window between two arbitrary readings is off by up to one update period of
power at each end (up to 45 J at 450 W, 10% of a 1 s window). Every window here starts and ends at an
update instead. The counter is read by a thread of its own (CounterPoller, every POLL_S), never by the
loop that runs the steps: a reading is a driver call whose cost would otherwise sit in every step
(the step's host time, at the GPU's power, is what the blank window subtracts, so it must be small and
steady). The poller stamps each update with the moment it happened, the midpoint between the last
reading of the old value and the first of the new one (off by half a poll interval and a reading).

- a loop window runs its step (one call, with its fresh inputs and L2 flush, synchronised) again and
  again from the first update after it starts, noting when each step ends, until an update at least
  `min_s` after the first has been seen and at least `min_steps` steps are done. Its energy covers
  the steps inside it, and of the steps it cuts (the first, from the start update, and the one running
  at the end update) the share of their time inside it: `covered_steps`, so that joules per step =
  joules / covered_steps is off only by the update times' error, not by half a step;
- an idle window waits for two updates at least `min_s` apart with nothing run: idle power = joules /
  seconds between them.

At 100 ms per update, a 1 s window spans about 10 updates; its readings carry the counter's own error
(whatever NVML's integration does within an update period), which solbench cannot see: the repeat
mode of benchmarks/energy_bound.py measures the spread of the same workload.
"""

from __future__ import annotations

import bisect
import math
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

POLL_S = 0.0005  # between the poller's readings: an update's time is known to about half of this
UPDATE_TIMEOUT_S = 2.0  # the counter must advance within this (it updates about every 0.1 s)
# Inputs made ahead of a window of calls (solbench.bench.worker.Worker.energy): at most this long to make
# them, enough for this factor x (window + the extra) of steps (the window's end waits for an update,
# about 0.1 s apart), and not for a window shorter than the minimum (per-step inputs then).
AHEAD_MAKING_S = 5.0
AHEAD_STEPS_FACTOR = 1.2
AHEAD_EXTRA_S = 0.15
AHEAD_MIN_WINDOW_S = 0.2


def calls_ahead(fitting_calls: int, batch: int, step_s: float, window_s: float, min_steps: int) -> tuple[int, float]:
    """How many calls' inputs to make ahead of a window of calls, and the window's length; (0, 0.0): make
    them in each step instead. `fitting_calls`: the calls whose inputs fit (memory, making time);
    `step_s`: one step of `batch` calls; `window_s`: the window asked for. The window is shortened to
    what the fitting calls can fill with AHEAD_STEPS_FACTOR x (window + AHEAD_EXTRA_S) of steps, down to
    AHEAD_MIN_WINDOW_S; the calls are never fewer than `min_steps` steps (the window must hold them)."""
    fitting_steps = fitting_calls // batch
    window = min(window_s, fitting_steps * step_s / AHEAD_STEPS_FACTOR - AHEAD_EXTRA_S)
    if window < min(window_s, AHEAD_MIN_WINDOW_S):
        return 0, 0.0
    # the steps the window needs, less a rounding error: a window shortened to what the fitting steps fill needs all of them, not one more
    steps = max(min_steps, math.ceil(AHEAD_STEPS_FACTOR * (window + AHEAD_EXTRA_S) / step_s - 1e-6))
    if steps > fitting_steps:
        return 0, 0.0
    return steps * batch, window


class CounterStuck(RuntimeError):
    """The counter did not advance within UPDATE_TIMEOUT_S (one line: how long it was watched)."""


class StepsExhausted(RuntimeError):
    """A loop window's step has no call left to run (their inputs were made ahead, and all are used)."""


@dataclass(frozen=True)
class Window:
    start_mj: int
    end_mj: int
    seconds: float
    steps: int  # steps run in the window (0 for an idle window)
    # (counter value, steps done) at each update seen after the start; the last is (end_mj, steps done by then)
    updates: tuple[tuple[int, int], ...] = ()
    covered_steps: float | None = None  # the steps' time inside the window, in steps (None: steps - 0.5, the old rule)

    @property
    def joules(self) -> float:
        return (self.end_mj - self.start_mj) / 1e3

    @property
    def effective_steps(self) -> float:
        """Steps the window's energy covers (see the module docstring)."""
        if self.covered_steps is not None:
            return max(self.covered_steps, 0.5)
        return max(self.steps - 0.5, 0.5)

    @property
    def per_step_j(self) -> float:
        return self.joules / self.effective_steps

    @property
    def mean_power_w(self) -> float:
        return self.joules / self.seconds if self.seconds > 0 else 0.0

    @property
    def per_step_spread_j(self) -> float:
        """The standard error of joules per step, from the steps' energy between successive updates (0 with
        fewer than 3 such intervals): how much the power drifted within the window. Each interval's steps are
        known to one step at either end, so it also holds the boundary error (an over-estimate, never under)."""
        samples, last_mj, last_steps = [], self.start_mj, 0
        for mj, steps in self.updates:
            if steps > last_steps:
                samples.append((mj - last_mj) / 1e3 / (steps - last_steps))
                last_mj, last_steps = mj, steps
        if len(samples) < 3:
            return 0.0
        return statistics.stdev(samples) / math.sqrt(len(samples))

    def to_json(self) -> dict[str, Any]:
        return {"start_mj": self.start_mj, "end_mj": self.end_mj, "seconds": self.seconds, "steps": self.steps,
                "updates": [list(update) for update in self.updates], "covered_steps": self.covered_steps}


Clock = Callable[[], float]


class CounterPoller:
    """Reads the counter every POLL_S in a daemon thread while in a `with` block; `updates` holds each
    change seen, as (value, when it happened by `clock`). A reading that raises ends the polling and is
    raised again by `wait_for` (as CounterStuck, naming the error)."""

    def __init__(self, counter: Any, clock: Clock = time.monotonic, interval_s: float = POLL_S):
        self.counter, self.clock, self.interval_s = counter, clock, interval_s
        self.updates: list[tuple[int, float]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="energy-counter", daemon=True)

    def __enter__(self) -> "CounterPoller":
        self._last = (self.counter.read_mj(), self.clock())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _poll(self) -> None:
        last_value, last_read = self._last
        try:
            while not self._stop.wait(self.interval_s):
                value, now = self.counter.read_mj(), self.clock()
                if value != last_value:
                    self.updates.append((value, 0.5 * (last_read + now)))
                last_value, last_read = value, now
        except BaseException as exc:  # noqa: BLE001 - handed to the loop, which raises it as one line
            self.error = exc

    def wait_for(self, index: int, began: float, timeout_s: float = UPDATE_TIMEOUT_S) -> tuple[int, float]:
        """The update at `index` of `updates`, waited for (the caller's loop idle) up to `timeout_s` after `began`."""
        while len(self.updates) <= index:
            self._raise_if_failed()
            if self.clock() - began > timeout_s:
                raise CounterStuck(f"the energy counter did not advance in {timeout_s:g} s")
            time.sleep(self.interval_s)
        return self.updates[index]

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise CounterStuck(f"the energy counter could not be read: {type(self.error).__name__}: {self.error}")


def idle_window(counter: Any, min_s: float, clock: Clock = time.monotonic, poll_s: float = POLL_S) -> Window:
    """The counter between two updates at least `min_s` apart, with nothing run in between."""
    with CounterPoller(counter, clock, poll_s) as poller:
        start, start_at = poller.wait_for(0, clock())
        index = 1
        while True:
            value, at = poller.wait_for(index, max(start_at + min_s, poller.updates[index - 1][1]))
            if at - start_at >= min_s:
                updates = tuple((mj, 0) for mj, _ in poller.updates[1:index + 1])
                return Window(start, value, at - start_at, 0, updates)
            index += 1


def loop_window(counter: Any, step: Callable[[], None], min_s: float, min_steps: int = 1, clock: Clock = time.monotonic,
                poll_s: float = POLL_S, shortest_s: float | None = None) -> Window:
    """`step` run back to back from one update until an update at least `min_s` after it has been seen
    and at least `min_steps` steps are done (see the module docstring). A step that raises StepsExhausted
    ends the window at the last update seen if that is at least `shortest_s` after the start and the
    steps are done (the calls made ahead ran slower than when they were counted: the window is shorter,
    not lost); otherwise it is CounterStuck."""
    with CounterPoller(counter, clock, poll_s) as poller:
        start, start_at = poller.wait_for(0, clock())
        ends: list[float] = [clock()]  # ends[0]: when the first step began; ends[i]: when step i ended
        while True:
            try:
                step()
            except StepsExhausted as exc:
                seen = len(poller.updates)
                value, at = poller.updates[seen - 1]
                if shortest_s is not None and seen > 1 and at - start_at >= shortest_s and len(ends) - 1 >= min_steps:
                    break
                raise CounterStuck(str(exc)) from None
            ends.append(clock())
            poller._raise_if_failed()
            seen = len(poller.updates)  # the poller only appends: the first `seen` stay as they are
            value, at = poller.updates[seen - 1]
            if seen > 1 and at - start_at >= min_s and len(ends) - 1 >= min_steps:
                break
            if ends[-1] - at > UPDATE_TIMEOUT_S:
                raise CounterStuck(f"the energy counter did not advance in {UPDATE_TIMEOUT_S:g} s while the calls ran")
        inside = [(mj, _steps_done(ends, when)) for mj, when in poller.updates[1:seen]]
        return Window(start, value, at - start_at, len(ends) - 1, tuple(inside), covered_steps=_covered(ends, start_at, at))


def _steps_done(ends: list[float], when: float) -> int:
    """Steps whose end is at or before `when`."""
    return bisect.bisect_right(ends, when, lo=1) - 1


def _covered(ends: list[float], start: float, end: float) -> float:
    """The steps' time between `start` and `end`, in steps: each step i runs from ends[i - 1] to ends[i]."""
    covered = 0.0
    for began, ended in zip(ends, ends[1:]):
        if ended > began:
            covered += max(0.0, min(ended, end) - max(began, start)) / (ended - began)
    return covered


@dataclass(frozen=True)
class Readings:
    idle: Window
    blank: Window  # the steps without the call: fresh inputs, outputs allocated, L2 flush
    loop: Window  # the same steps with the call
    blank_after: Window | None = None  # the blank steps again: the GPU's power drift across the loop window


def measure(counter: Any, blank_step: Callable[[], None], call_step: Callable[[], None], window_s: float, idle_s: float,
            min_calls: int = 1, clock: Clock = time.monotonic, poll_s: float = POLL_S,
            before_calls: Callable[[], None] | None = None, shortest_s: float | None = None) -> Readings:
    """Idle power just before, then the blank window, the window of calls and the blank window again (no
    call of the solution runs before the first blank window ends; the second shows how far the power of
    the same steps moved while the calls ran, and their mean is what is subtracted). `before_calls` runs
    between the first blank window and the window of calls, inside neither (the calls' inputs made ahead);
    `shortest_s`: the window of calls may end that early when its calls run out (loop_window)."""
    idle = idle_window(counter, idle_s, clock, poll_s)
    blank = loop_window(counter, blank_step, window_s, 1, clock, poll_s)
    if before_calls is not None:
        before_calls()
    loop = loop_window(counter, call_step, window_s, min_calls, clock, poll_s, shortest_s)
    after = loop_window(counter, blank_step, window_s, 1, clock, poll_s)
    return Readings(idle, blank, loop, after)
