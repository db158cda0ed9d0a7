"""The energy score: the time score's formula on joules, with energy's own flags and margin."""

from __future__ import annotations

import pytest

from solbench.energy.score import (BELOW_ENERGY_SOL, ENERGY_BASELINE_NOT_ABOVE_SOL, ENERGY_BOUND_UNCERTAINTY, WITHIN_ENERGY_SOL_MARGIN,
                                   below_energy_sol, energy_score)


def test_the_formula_at_its_landmarks():
    assert energy_score(True, 1.0, 1.0, 3.0).score == pytest.approx(1.0)  # at E_SOL
    assert energy_score(True, 3.0, 1.0, 3.0).score == pytest.approx(0.5)  # at the baseline
    assert energy_score(True, 2.0, 1.0, 3.0).score == pytest.approx(1 / (1 + 1 / 2))
    assert energy_score(True, 9.0, 1.0, 3.0).score == pytest.approx(1 / (1 + 8 / 2))


def test_edge_cases():
    assert energy_score(False, 2.0, 1.0, 3.0).score == 0.0  # not correct
    for missing in ((None, 1.0, 3.0), (2.0, None, 3.0), (2.0, 1.0, None)):
        assert energy_score(True, *missing).score is None  # no measurement, no E_SOL or no baseline energy
    margin = energy_score(True, 1.0 - ENERGY_BOUND_UNCERTAINTY / 2, 1.0, 3.0)
    assert margin.score == 1.0 and margin.flags == [WITHIN_ENERGY_SOL_MARGIN]
    below = energy_score(True, 0.5, 1.0, 3.0)
    assert below.score == 0.0 and below.flags == [BELOW_ENERGY_SOL]
    # the measurement's resolution widens the margin
    assert energy_score(True, 0.85, 1.0, 3.0).flags == [BELOW_ENERGY_SOL]
    assert energy_score(True, 0.85, 1.0, 3.0, resolution_j=0.1).flags == [WITHIN_ENERGY_SOL_MARGIN]
    solved = energy_score(True, 2.0, 1.0, 1.0)
    assert solved.score is None and solved.flags == [ENERGY_BASELINE_NOT_ABOVE_SOL]


def test_below_energy_sol_needs_both_numbers():
    assert below_energy_sol(0.5, 1.0) and not below_energy_sol(0.95, 1.0)
    assert not below_energy_sol(None, 1.0) and not below_energy_sol(0.5, None)
