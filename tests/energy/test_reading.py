"""Joules per call from the windows (calls less their blank setup) and the trusted side's cross-check."""

from __future__ import annotations

import pytest

from solbench.energy.reading import SETUP_SUBTRACTION_ERROR, forged, per_call
from solbench.energy.window import Window


def windows(scale: float = 1.0) -> tuple[Window, Window, Window]:
    idle = Window(1_000_000, 1_000_000 + 25_500, 0.3, 0)  # 85 W
    blank = Window(1_030_000, 1_030_000 + int(200_000 * scale), 1.0, 5001)  # 200 J over 5,001 steps of setup
    loop = Window(1_240_000, 1_240_000 + int(450_000 * scale), 1.0, 2001)  # 450 J over 2,001 calls with their setup
    return idle, blank, loop


def test_the_resolution_holds_the_spread_within_each_window():
    idle, blank, loop = windows()
    steady = per_call(idle, blank, loop).resolution_j
    # the same totals, but the power swung between the window's updates: a larger resolution
    swings = tuple((loop.start_mj + k * 45_000 + (9_000 if k % 2 else -9_000), k * 200) for k in range(1, 10)) + ((loop.end_mj, loop.steps),)
    swinging = Window(loop.start_mj, loop.end_mj, loop.seconds, loop.steps, swings)
    assert swinging.per_step_spread_j > 0
    assert per_call(idle, blank, swinging).resolution_j == pytest.approx(steady + swinging.per_step_spread_j)
    assert forged(idle.start_mj, swinging.end_mj, 2.4, (idle, blank, swinging), 700.0) is None


def test_per_call_is_the_calls_window_less_the_blank_window_per_step():
    idle, blank, loop = windows()
    reading = per_call(idle, blank, loop)
    assert reading.joules == pytest.approx(450 / 2000.5 - 200 / 5000.5)
    assert reading.overhead_j == pytest.approx(200 / 5000.5)
    assert reading.idle_power_w == pytest.approx(85.0) and reading.mean_power_w == pytest.approx(450.0)
    assert reading.calls == 2001 and reading.window_s == 1.0
    assert reading.resolution_j == pytest.approx(0.5 * (450 / 2000.5 / 2000.5 + 200 / 5000.5 / 5000.5) + SETUP_SUBTRACTION_ERROR * 200 / 5000.5)


def test_honest_windows_pass_the_cross_check():
    idle, blank, loop = windows()
    # the orchestrator read 2 J before and 30 J after (idle gaps of ~0.35 s in all), 2.9 s between its readings
    assert forged(idle.start_mj - 2_000, loop.end_mj + 30_000, 2.9, (idle, blank, loop), 700.0) is None
    assert forged(idle.start_mj, loop.end_mj, 2.31, (idle, blank, loop), None) is None  # no power limit known: containment only


def test_under_reported_windows_are_caught():
    idle, blank, loop = windows(scale=0.4)  # the worker reports 40% of what the counter advanced
    before, after = idle.start_mj, idle.start_mj + 25_500 + 200_000 + 450_000 + 30_000
    finding = forged(before, after, 2.5, (idle, blank, loop), 700.0)
    assert finding is not None and "under-report" in finding


@pytest.mark.parametrize("case, words", [
    ("before", "not in order"), ("after", "after the orchestrator's reading"), ("backwards", "not in order"),
    ("long", "longer than the request took"), ("power", "above the power limit"), ("duration", "is not a duration"),
    ("updates", "updates do not run in order"),
])
def test_impossible_windows_are_caught(case: str, words: str):
    idle, blank, loop = windows()
    before, after, elapsed = idle.start_mj, loop.end_mj + 1_000, 2.9
    if case == "before":
        before = idle.start_mj + 1
    elif case == "after":
        after = loop.end_mj - 1
    elif case == "backwards":
        blank = Window(blank.end_mj, blank.start_mj, blank.seconds, blank.steps)
    elif case == "long":
        elapsed = 1.0
    elif case == "power":
        loop = Window(loop.start_mj, loop.start_mj + 2_000_000, 1.0, loop.steps)
        after = loop.end_mj
    elif case == "duration":
        loop = Window(loop.start_mj, loop.end_mj, 0.0, loop.steps)
    elif case == "updates":
        middle = (loop.start_mj + loop.end_mj) // 2
        loop = Window(loop.start_mj, loop.end_mj, loop.seconds, loop.steps, ((middle, 1500), (middle - 10, 1700), (loop.end_mj, loop.steps)))
    finding = forged(before, after, elapsed, (idle, blank, loop), 700.0)
    assert finding is not None and words in finding


def test_the_blank_windows_before_and_after_are_averaged_and_their_difference_is_in_the_resolution():
    idle, blank, loop = windows()
    covered = Window(loop.start_mj, loop.end_mj, loop.seconds, loop.steps, covered_steps=2000.2)
    drifted = Window(loop.end_mj + 5_000, loop.end_mj + 5_000 + 210_000, 1.0, 5001, covered_steps=5000.9)  # 5% more power after the calls
    first = Window(blank.start_mj, blank.end_mj, blank.seconds, blank.steps, covered_steps=5000.9)
    reading = per_call(idle, first, covered, drifted)
    blank_step = (200 / 5000.9 + 210 / 5000.9) / 2
    assert reading.overhead_j == pytest.approx(blank_step) and reading.joules == pytest.approx(450 / 2000.2 - blank_step)
    drift = 0.5 * (210 - 200) / 5000.9
    boundary = 2 * 0.0005 * (450 / 2000.2 + (200 / 5000.9 + 210 / 5000.9) / 2)
    assert reading.resolution_j == pytest.approx(drift + boundary + SETUP_SUBTRACTION_ERROR * blank_step)
    assert forged(idle.start_mj, drifted.end_mj, 3.4, (idle, first, covered, drifted), 700.0) is None


def test_a_call_far_smaller_than_its_setup_is_within_the_resolution():
    """The H100's eager fp8 GEMM: 0.31 J of setup (fresh fp8 weights) per call of about 0.01 J. A share of the
    setup that the subtraction may be off by makes such a reading no finer than that share."""
    idle = Window(1_000_000, 1_025_500, 0.3, 0)
    blank = Window(1_030_000, 1_030_000 + 308_000, 1.0, 1000)  # 0.308 J per step of setup
    loop = Window(1_340_000, 1_340_000 + 309_700, 1.0, 1000)  # 0.3097 J per step: the call read as 1.7 mJ
    reading = per_call(idle, blank, loop)
    assert reading.joules == pytest.approx(0.0017, rel=0.01)
    assert reading.resolution_j >= SETUP_SUBTRACTION_ERROR * 0.308 > 10 * reading.joules
