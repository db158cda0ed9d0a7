"""The SOL score of one workload and the ratios beside it.

S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)): 1 at the speed of light, 0.5 at the baseline, towards 0
when slower. Decisions where the formula says nothing:
- a workload that is not correct scores 0;
- T_k < T_SOL is physically impossible: a wrong bound or a hack. Beyond the margin (the measured
  spread, IQR, plus the bound's own uncertainty BOUND_UNCERTAINTY) it scores 0 (never 1) and is
  flagged `faster-than-sol` for audit; 0 rather than None so that a suite mean can never gain by it.
  Within the margin it is at the speed of light as far as anyone can measure: S = 1, flagged
  `within-sol-margin`;
- T_b <= T_SOL leaves nothing between the baseline and the bound: no score (None), flagged
  `baseline-not-above-sol` (the problem is solved, or its bound must be audited);
- no T_k (timing off), no T_SOL (no hardware spec) or no T_b: no score (None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

FASTER_THAN_SOL = "faster-than-sol"
WITHIN_SOL_MARGIN = "within-sol-margin"
# The bound's own modelling error, as a share of T_SOL: a median this far below T_SOL (plus its IQR) is
# noise, not physics broken (a 1.44 us RoPE against T_SOL 1.477 us, 2.5% below, was seen on the H200).
BOUND_UNCERTAINTY = 0.05
BASELINE_NOT_ABOVE_SOL = "baseline-not-above-sol"
FAST_P_THRESHOLDS = (1.0, 1.5, 2.0)


@dataclass(frozen=True)
class WorkloadScoreValue:
    score: float | None
    flags: list[str] = field(default_factory=list)


def below_sol_margin(latency_ms: float, sol_ms: float, iqr_ms: float | None = None, bound_uncertainty: float = BOUND_UNCERTAINTY) -> bool:
    """Whether a median is below T_SOL by more than its spread plus the bound's uncertainty."""
    return latency_ms < sol_ms * (1.0 - bound_uncertainty) - (iqr_ms or 0.0)


def sol_score(correct: bool, latency_ms: float | None, sol_ms: float | None, baseline_ms: float | None,
              iqr_ms: float | None = None, bound_uncertainty: float = BOUND_UNCERTAINTY) -> WorkloadScoreValue:
    """S for one workload (see the module docstring for every edge case). The same formula scores
    energy (solbench.energy.score): joules for times, E_SOL for T_SOL, with that bound's uncertainty."""
    if not correct:
        return WorkloadScoreValue(0.0)
    if latency_ms is None or sol_ms is None or baseline_ms is None:
        return WorkloadScoreValue(None)
    if latency_ms < sol_ms:
        if below_sol_margin(latency_ms, sol_ms, iqr_ms, bound_uncertainty):
            return WorkloadScoreValue(0.0, [FASTER_THAN_SOL])
        return WorkloadScoreValue(1.0, [WITHIN_SOL_MARGIN] if baseline_ms > sol_ms else [WITHIN_SOL_MARGIN, BASELINE_NOT_ABOVE_SOL])
    if baseline_ms <= sol_ms:
        return WorkloadScoreValue(None, [BASELINE_NOT_ABOVE_SOL])
    score = 1.0 / (1.0 + (latency_ms - sol_ms) / (baseline_ms - sol_ms))
    return WorkloadScoreValue(min(1.0, max(0.0, score)))


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is unknown or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def reclaimed(reference_ms: float | None, latency_ms: float | None, sol_ms: float | None) -> float | None:
    """(T_ref - T_k) / (T_ref - T_SOL): the share of the gap between the reference and the bound that
    the solution closes (negative when slower than the reference); None without a gap."""
    if reference_ms is None or latency_ms is None or sol_ms is None or reference_ms <= sol_ms:
        return None
    return (reference_ms - latency_ms) / (reference_ms - sol_ms)


def mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def median(values: Iterable[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    middle = len(known) // 2
    return known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive known values (None if there are none)."""
    known = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in known) / len(known)) if known else None


def fast_p(speedups: list[float | None], correct: list[bool], thresholds: Iterable[float] = FAST_P_THRESHOLDS) -> dict[str, float]:
    """fast_p as KernelBench defines it: the share of all workloads that are correct and more than p
    times faster than the reference ("1.0", "1.5", "2.0" -> share). Empty for no workloads."""
    if not speedups:
        return {}
    return {f"{p:.1f}": sum(1 for s, ok in zip(speedups, correct) if ok and s is not None and s > p) / len(speedups) for p in thresholds}
