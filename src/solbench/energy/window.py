"""Measurement windows aligned to the energy counter's updates.

The counter (solbench.energy.counter) advances in steps about every 100 ms: a reading is the energy up
to its last update, so a window between two arbitrary readings is off by up to one update period of
power at each end (up to 45 J at 450 W, 10% of a 1 s window). Every window here starts and ends at an
update instead:

- start: poll the counter (every POLL_S) until its value changes; that moment is the window's start
  (late by at most one poll, at idle power);
- a loop window then runs its step (one call, with its fresh inputs and L2 flush) again and again,
  reading the counter after each, until at least `min_s` have passed and at least `min_steps` steps
  are done, and then until the counter changes again: the update fell inside the last step. The window
  holds the steps before it whole and a part of the last one, on average half: joules per step =
  joules / (steps - 0.5), off by at most half a step's energy over `steps` (0.05% for 1,000 steps of
  1 ms in a 1 s window; 5% for ten steps of 100 ms);
- an idle window polls until `min_s` have passed and the counter changes again: idle power =
  joules / seconds between two updates (off by a poll interval).

At 100 ms per update, a 1 s window spans about 10 updates; its readings carry the counter's own error
(whatever NVML's integration does within an update period), which solbench cannot see: the repeat
mode of benchmarks/energy_bound.py measures the spread of the same workload.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

POLL_S = 0.0002  # between polls while waiting for an update with the GPU idle
UPDATE_TIMEOUT_S = 2.0  # the counter must advance within this (it updates about every 0.1 s)


class CounterStuck(RuntimeError):
    """The counter did not advance within UPDATE_TIMEOUT_S (one line: how long it was watched)."""


@dataclass(frozen=True)
class Window:
    start_mj: int
    end_mj: int
    seconds: float
    steps: int  # steps run in the window (0 for an idle window)
    # (counter value, steps done) at each update seen after the start; the last is (end_mj, steps)
    updates: tuple[tuple[int, int], ...] = ()

    @property
    def joules(self) -> float:
        return (self.end_mj - self.start_mj) / 1e3

    @property
    def effective_steps(self) -> float:
        """Steps the window's energy covers on average: all but half of the last (see the module docstring)."""
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
                "updates": [list(update) for update in self.updates]}


Clock = Callable[[], float]


def wait_for_update(counter: Any, clock: Clock = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                    timeout_s: float = UPDATE_TIMEOUT_S) -> tuple[int, float]:
    """The counter's value just after its next update, and the time it was seen."""
    first = counter.read_mj()
    began = clock()
    while True:
        value, now = counter.read_mj(), clock()
        if value != first:
            return value, now
        if now - began > timeout_s:
            raise CounterStuck(f"the energy counter did not advance in {timeout_s:g} s")
        sleep(POLL_S)


def idle_window(counter: Any, min_s: float, clock: Clock = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Window:
    """The counter between two updates at least `min_s` apart, with nothing run in between."""
    start, began = wait_for_update(counter, clock, sleep)
    last, updates = start, []
    while True:
        sleep(POLL_S)
        value, now = counter.read_mj(), clock()
        if value != last:
            updates.append((value, 0))
            if now - began >= min_s:
                return Window(start, value, now - began, 0, tuple(updates))
        elif now - began > min_s + UPDATE_TIMEOUT_S:
            raise CounterStuck(f"the energy counter did not advance in {UPDATE_TIMEOUT_S:g} s")
        last = value


def loop_window(counter: Any, step: Callable[[], None], min_s: float, min_steps: int = 1, clock: Clock = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> Window:
    """`step` run back to back from one update until at least `min_s` and `min_steps`, and until the
    counter changes again (see the module docstring)."""
    start, began = wait_for_update(counter, clock, sleep)
    last, changed_at, steps, updates = start, began, 0, []
    while True:
        step()
        steps += 1
        value, now = counter.read_mj(), clock()
        if value != last:
            last, changed_at = value, now
            updates.append((value, steps))
            if steps >= min_steps and now - began >= min_s:
                return Window(start, value, now - began, steps, tuple(updates))
        elif now - changed_at > UPDATE_TIMEOUT_S:
            raise CounterStuck(f"the energy counter did not advance in {UPDATE_TIMEOUT_S:g} s while the calls ran")


@dataclass(frozen=True)
class Readings:
    idle: Window
    blank: Window  # the steps without the call: fresh inputs, outputs allocated, L2 flush
    loop: Window  # the same steps with the call


def measure(counter: Any, blank_step: Callable[[], None], call_step: Callable[[], None], window_s: float, idle_s: float,
            min_calls: int = 1, clock: Clock = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Readings:
    """Idle power just before, then the blank window, then the window of calls (in that order: no call
    of the solution runs before the blank window ends)."""
    idle = idle_window(counter, idle_s, clock, sleep)
    blank = loop_window(counter, blank_step, window_s, 1, clock, sleep)
    loop = loop_window(counter, call_step, window_s, min_calls, clock, sleep)
    return Readings(idle, blank, loop)
