"""Joules per call from a worker's windows, and the trusted side's cross-check of them.

Per call: the loop window's joules per step less the blank windows' (the same steps without the
call: fresh inputs generated, outputs allocated, the L2 flushed, the device synchronised), measured
before and after it and averaged, so that a drift of the GPU's power that is steady across the three
windows cancels. What is left is the call's own energy: its dynamic energy, the write-back of its
outputs (the next step's flush pays it), and the static power over the call's wall time (host launch
time included, as a user would pay it). Its resolution adds: each window's boundary error (the update
times' error, at the window's power, over its steps; half a step where a window does not say how much
of its cut steps it covers), the standard error of joules per step within each window (from the
updates inside it; Window.per_step_spread_j), and half the difference of the two blank windows (the
drift that did not cancel), and SETUP_SUBTRACTION_ERROR of the setup's joules per call: the setup of
a step among calls does not cost exactly what it costs alone (the GPU overlaps the next step's input
generation with the calls, and power does not add), so where the setup is many times the call, the
difference of two large numbers is off by a share of the setup that neither window's spread shows.
benchmarks/energy_bound.py's repeats measure the spread of the whole measurement.

Cross-check: the worker runs the solution, so its readings are checked against the orchestrator's
own readings of the same counter just before the request and just after the answer (the counter
is device-wide and monotonic): every window must lie inside that bracket, in order, add up, draw no
more than the power limit, and leave no more energy outside the windows than the power limit over
the time outside them (plus the counter's update period at each end). A worker that reports less
energy than it used is caught where the difference exceeds that slack; what it can still hide is
bounded by the floor (a measured energy below E_SOL is flagged) and the integrity checks that guard
the worker's own code (pynvml and solbench.energy among them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from solbench.energy.window import POLL_S, Window

POWER_SLACK = 1.25  # the power limit is enforced on average: short excursions above it are allowed for
UPDATE_PERIOD_S = 0.1  # the counter's update period (H200: ~0.1 s); a reading may be this old
# Share of the subtracted setup energy that a reading may be off by. Measured on an H100 (2026-12-07,
# benchmarks/results/2026-12-07f-h100-energy-all): the eager and the compiled fp8 GEMM of Llama-3-8B's
# down projection (the same 24.4 us cuBLAS call) read 0.0017 and 0.0321 J per call, 0.030 J apart, with
# 0.31 J of setup per call (fresh fp8 weights for each call) and stated resolutions of 0.0067 and 0.023 J.
SETUP_SUBTRACTION_ERROR = 0.10
RULE = "energy-counter"


@dataclass(frozen=True)
class PerCall:
    joules: float
    overhead_j: float  # per step of the blank window: what each call's untimed setup costs, subtracted
    resolution_j: float
    mean_power_w: float  # over the window of calls (setup included)
    idle_power_w: float
    window_s: float
    calls: int


def per_call(idle: Window, blank: Window, loop: Window, blank_after: Window | None = None) -> PerCall:
    blanks = [blank] + ([blank_after] if blank_after is not None else [])
    call_step = loop.per_step_j
    blank_step = sum(window.per_step_j for window in blanks) / len(blanks)
    boundary = _boundary_j(loop) + sum(_boundary_j(window) for window in blanks) / len(blanks)
    drift = 0.5 * abs(blank.per_step_j - blank_after.per_step_j) if blank_after is not None else 0.0
    spread = math.hypot(loop.per_step_spread_j, *(window.per_step_spread_j / len(blanks) for window in blanks))
    subtraction = SETUP_SUBTRACTION_ERROR * blank_step
    return PerCall(call_step - blank_step, blank_step, boundary + spread + drift + subtraction, loop.mean_power_w, idle.mean_power_w,
                   loop.seconds, loop.steps)


def _boundary_j(window: Window) -> float:
    """How far a window's joules per step may be off from where its ends fall: two poll intervals of its
    power where it knows the share of its cut steps inside it (generous: the error is about half a poll
    at each end), half a step where it does not."""
    if window.covered_steps is not None:
        return 2 * POLL_S * window.mean_power_w / window.effective_steps
    return 0.5 * window.per_step_j / window.effective_steps


def forged(before_mj: int, after_mj: int, elapsed_s: float, windows: Iterable[Window], power_limit_w: float | None) -> str | None:
    """Why the worker's windows cannot be true readings of the counter between the orchestrator's two
    readings `elapsed_s` apart (the finding), or None."""
    windows = list(windows)
    previous = before_mj
    for index, window in enumerate(windows):
        if window.start_mj < previous or window.end_mj < window.start_mj:
            return (f"window {index + 1}: counter readings {window.start_mj}..{window.end_mj} mJ are not in order after {previous} mJ "
                    "(the orchestrator's reading before the request, then each window's end)")
        if not window.seconds > 0:
            return f"window {index + 1}: {window.seconds!r} s is not a duration"
        if window.updates and (window.updates[-1][0] != window.end_mj or window.updates[-1][1] > window.steps
                               or any(not (a[0] <= b[0] and a[1] <= b[1]) for a, b in zip(((window.start_mj, 0), *window.updates), window.updates))):
            return f"window {index + 1}: its updates do not run in order from {window.start_mj} mJ to {window.end_mj} mJ and {window.steps} steps"
        previous = window.end_mj
    if previous > after_mj:
        return f"the last window ends at {previous} mJ, after the orchestrator's reading of {after_mj} mJ once the worker had answered"
    inside_s = sum(window.seconds for window in windows)
    if inside_s > elapsed_s + UPDATE_PERIOD_S:
        return f"the windows last {inside_s:.3f} s together, longer than the request took ({elapsed_s:.3f} s)"
    if power_limit_w is None:
        return None
    ceiling = POWER_SLACK * power_limit_w
    for index, window in enumerate(windows):
        if window.seconds >= UPDATE_PERIOD_S and window.mean_power_w > ceiling:
            return f"window {index + 1}: {window.mean_power_w:.0f} W is above the power limit ({power_limit_w:.0f} W)"
    outside_j = (after_mj - before_mj) / 1e3 - sum(window.joules for window in windows)
    allowed_j = ceiling * (max(0.0, elapsed_s - inside_s) + 2 * UPDATE_PERIOD_S) + 1.0
    if outside_j > allowed_j:
        return (f"the counter advanced {outside_j:.1f} J outside the reported windows, more than the GPU can draw in the "
                f"{max(0.0, elapsed_s - inside_s):.3f} s between them at its power limit ({allowed_j:.1f} J): the windows under-report")
    return None
