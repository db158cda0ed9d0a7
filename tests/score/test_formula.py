"""The SOL score of one workload and the ratios beside it: values and every edge case."""

from __future__ import annotations

import math

import pytest

from solbench.score.formula import (BASELINE_NOT_ABOVE_SOL, FASTER_THAN_SOL, WITHIN_SOL_MARGIN, fast_p, geomean, mean, median, ratio, reclaimed, sol_score)


@pytest.mark.parametrize(("latency", "expected"), [
    (1.0, 1.0),  # at the speed of light
    (5.0, 0.5),  # at the baseline
    (3.0, 1 / (1 + 2 / 4)),  # halfway between in time
    (13.0, 1 / (1 + 12 / 4)),  # slower than the baseline
])
def test_score_follows_the_formula(latency: float, expected: float):
    value = sol_score(True, latency, sol_ms=1.0, baseline_ms=5.0)
    assert value.score == pytest.approx(expected) and value.flags == []


def test_a_workload_that_is_not_correct_scores_zero_whatever_its_time():
    assert sol_score(False, 1.0, 1.0, 5.0).score == 0.0
    assert sol_score(False, None, None, None).score == 0.0


def test_faster_than_sol_is_never_a_score_of_one_but_zero_with_a_flag():
    value = sol_score(True, 0.5, sol_ms=1.0, baseline_ms=5.0)
    assert value.score == 0.0 and value.flags == [FASTER_THAN_SOL]
    assert sol_score(True, 0.9, sol_ms=1.0, baseline_ms=5.0, iqr_ms=0.01).flags == [FASTER_THAN_SOL]  # 10% below: beyond 5% + its IQR


@pytest.mark.parametrize(("latency", "iqr"), [(0.975, None), (0.951, None), (0.92, 0.04)])
def test_a_time_below_sol_within_its_spread_and_the_bounds_uncertainty_is_at_the_speed_of_light(latency: float, iqr: float | None):
    """A 1.44 us kernel against T_SOL 1.477 us (2.5% below) was seen on the H200: noise, not physics broken."""
    value = sol_score(True, latency, sol_ms=1.0, baseline_ms=5.0, iqr_ms=iqr)
    assert value.score == 1.0 and value.flags == [WITHIN_SOL_MARGIN]


@pytest.mark.parametrize("baseline", [1.0, 0.8])
def test_a_baseline_not_above_sol_leaves_no_score_and_a_flag(baseline: float):
    value = sol_score(True, 2.0, sol_ms=1.0, baseline_ms=baseline)
    assert value.score is None and value.flags == [BASELINE_NOT_ABOVE_SOL]


@pytest.mark.parametrize(("latency", "sol", "baseline"), [(None, 1.0, 5.0), (2.0, None, 5.0), (2.0, 1.0, None)])
def test_an_unknown_time_leaves_no_score(latency, sol, baseline):
    assert sol_score(True, latency, sol, baseline).score is None


def test_scores_stay_in_the_unit_interval():
    for latency in (1.0, 1.0 + 1e-12, 1e9):
        score = sol_score(True, latency, 1.0, 2.0).score
        assert 0.0 <= score <= 1.0


def test_ratios_and_reclaimed_fraction():
    assert ratio(6.0, 2.0) == 3.0
    assert ratio(6.0, 0.0) is None and ratio(None, 2.0) is None
    assert reclaimed(reference_ms=10.0, latency_ms=4.0, sol_ms=2.0) == pytest.approx(0.75)
    assert reclaimed(reference_ms=10.0, latency_ms=12.0, sol_ms=2.0) == pytest.approx(-0.25)  # slower than the reference
    assert reclaimed(reference_ms=2.0, latency_ms=1.0, sol_ms=2.0) is None  # no gap to reclaim


def test_means_medians_and_geomeans_skip_unknowns():
    assert mean([1.0, None, 0.0]) == 0.5 and mean([None]) is None
    assert median([3.0, 1.0, None, 2.0]) == 2.0 and median([4.0, 1.0]) == 2.5 and median([]) is None
    assert geomean([2.0, 8.0, None]) == pytest.approx(4.0) and geomean([]) is None
    assert math.isclose(geomean([1.0]), 1.0)


def test_fast_p_is_the_share_of_all_workloads_correct_and_faster_by_p():
    speedups = [0.9, 1.2, 1.6, 2.5, 3.0]
    correct = [True, True, True, True, False]  # the fastest is wrong: never counted
    assert fast_p(speedups, correct) == {"1.0": 3 / 5, "1.5": 2 / 5, "2.0": 1 / 5}
    assert fast_p([], []) == {}
