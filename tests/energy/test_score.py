"""The energy score: the time score's formula on joules, with energy's own flags and margin."""

from __future__ import annotations

import pytest

from solbench.energy.score import (BELOW_ENERGY_SOL, ENERGY_BASELINE_NOT_ABOVE_SOL, ENERGY_BOUND_UNCERTAINTY, ENERGY_UNRESOLVED,
                                   WITHIN_ENERGY_SOL_MARGIN, below_energy_sol, energy_score, resolved)


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


def test_a_reading_within_its_resolution_gets_no_score():
    """The H100's fp8 GEMM reference (2026-12-07): 0.0066 J against E_SOL 0.0094 J, resolution 0.039 J. It
    had scored 1 as "within the margin"; a reading of noise scores nothing, whichever side of E_SOL it lies."""
    fp8 = energy_score(True, 0.006582, 0.009388, 0.03, resolution_j=0.0385)
    assert fp8.score is None and fp8.flags == [ENERGY_UNRESOLVED]
    above = energy_score(True, 0.02, 0.009388, 0.03, resolution_j=0.0385)
    assert above.score is None and above.flags == [ENERGY_UNRESOLVED]
    assert energy_score(True, 0.05, 0.009388, 0.09, resolution_j=0.0385).score == pytest.approx(1 / (1 + (0.05 - 0.009388) / (0.09 - 0.009388)))
    assert energy_score(False, 0.006582, 0.009388, 0.03, resolution_j=0.0385).score == 0.0  # wrong is still 0
    far_below = energy_score(True, -0.5, 1.0, 3.0, resolution_j=0.1)  # below E_SOL beyond every margin: flagged as before
    assert far_below.score == 0.0 and far_below.flags == [BELOW_ENERGY_SOL]
    assert energy_score(True, None, 1.0, 3.0, resolution_j=0.1).flags == []  # no reading: nothing to flag
    assert resolved(0.05, 0.04) and not resolved(0.04, 0.04) and not resolved(-0.0016, 0.086) and resolved(0.01, None) and not resolved(None, 0.1)
    assert not resolved(-0.001, None) and not resolved(0.0, None)  # a reading of no energy or less says nothing, resolution known or not
