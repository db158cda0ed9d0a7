"""The energy score: the time score's formula (solbench.score.formula.sol_score) on joules.

    S_E = 1 / (1 + (E_k - E_SOL) / (E_b - E_SOL))

E_k: the solution's measured joules per call; E_SOL: the energy bound (solbench.energy.bound); E_b:
the least joules per call of the correct baseline candidates (solbench.score.baselines). The edge cases
are the time score's, with energy's own flags: below E_SOL by more than the measurement's resolution
plus ENERGY_BOUND_UNCERTAINTY scores 0 and is flagged `below-energy-sol` (a wrong bound or a forged
reading, kept for audit; never a status of its own: the bound is a fit, not physics measured per
chip); within that margin S_E = 1, `within-energy-sol-margin`; E_b not above E_SOL: no score,
`energy-baseline-not-above-sol`. No measured energy, no E_SOL or no E_b: no score.

A reading not above its own resolution (solbench.energy.reading: a call so short that the setup's
joules, subtracted, dwarf it) says nothing of the call: it gets no score and the flag
`energy-unresolved` (unless it is below E_SOL beyond the margin: still flagged and 0), and it never
sets E_b (solbench.score.baselines). On an H100 (2026-12-07) the fp8 GEMM reference read 0.0066 J
against E_SOL 0.0094 J with a resolution of 0.039 J, which scored 1 ("within the margin"), and the
embedding reference read -0.0016 J, which as E_b would have left the problem without an energy score.
"""

from __future__ import annotations

from solbench.score.formula import BASELINE_NOT_ABOVE_SOL, FASTER_THAN_SOL, WITHIN_SOL_MARGIN, WorkloadScoreValue, sol_score

# The energy bound's own error as a share of E_SOL: its per-byte and per-operation figures are a least-squares
# fit (the spec keeps its residuals), and the energy of moving data depends on the data (calibrated on random values).
ENERGY_BOUND_UNCERTAINTY = 0.10
BELOW_ENERGY_SOL = "below-energy-sol"
WITHIN_ENERGY_SOL_MARGIN = "within-energy-sol-margin"
ENERGY_BASELINE_NOT_ABOVE_SOL = "energy-baseline-not-above-sol"
ENERGY_UNRESOLVED = "energy-unresolved"
_FLAGS = {FASTER_THAN_SOL: BELOW_ENERGY_SOL, WITHIN_SOL_MARGIN: WITHIN_ENERGY_SOL_MARGIN, BASELINE_NOT_ABOVE_SOL: ENERGY_BASELINE_NOT_ABOVE_SOL}


def energy_score(correct: bool, joules: float | None, sol_j: float | None, baseline_j: float | None,
                 resolution_j: float | None = None) -> WorkloadScoreValue:
    """S_E for one workload (see the module docstring)."""
    value = sol_score(correct, joules, sol_j, baseline_j, resolution_j, bound_uncertainty=ENERGY_BOUND_UNCERTAINTY)
    if correct and joules is not None and not resolved(joules, resolution_j) and FASTER_THAN_SOL not in value.flags:
        return WorkloadScoreValue(None, [ENERGY_UNRESOLVED])
    return WorkloadScoreValue(value.score, [_FLAGS.get(flag, flag) for flag in value.flags])


def resolved(joules: float | None, resolution_j: float | None) -> bool:
    """Whether a reading says something of the call: above its resolution, or above zero where no resolution
    is known (False with no reading)."""
    return joules is not None and joules > (resolution_j or 0.0)


def below_energy_sol(joules: float | None, sol_j: float | None, resolution_j: float | None = None) -> bool:
    """Whether a measured energy is below E_SOL by more than its resolution plus the bound's uncertainty."""
    from solbench.score.formula import below_sol_margin

    return joules is not None and sol_j is not None and below_sol_margin(joules, sol_j, resolution_j, ENERGY_BOUND_UNCERTAINTY)
