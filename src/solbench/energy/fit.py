"""The least-squares fit of the energy figures to measured calibration kernels.

Each kernel's dynamic energy per call (measured joules per call less the static power over its time)
is modelled as

    E_dyn = B_dram x e_dram + B_l2 x e_l2 + sum over units of F_u x e_u

and the coefficients are fitted by least squares on the relative error (each row divided by its
measured value, so that a 1 ms copy counts as much as a 1 s matmul), with no coefficient below 0
(a coefficient that comes out negative is fixed at 0 and the rest fitted again: a small active-set
non-negative least squares). The residuals are kept with the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DRAM = "dram"
L2 = "l2"


@dataclass(frozen=True)
class Sample:
    """One calibration kernel per call: what it moves and computes, and the dynamic joules measured."""

    kernel: str
    dram_bytes: float
    l2_bytes: float
    flops: dict[str, float]  # unit -> FLOPs
    joules: float  # dynamic: measured joules per call less static power x seconds per call


@dataclass
class Fit:
    coefficients: dict[str, float]  # "dram", "l2" (J per byte) and units (J per FLOP)
    fitted: list[float]
    residuals: list[float]  # (fitted - measured) / measured
    notes: list[str] = field(default_factory=list)

    @property
    def rms_residual(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.residuals)))) if self.residuals else 0.0

    @property
    def max_residual(self) -> float:
        return float(np.max(np.abs(self.residuals))) if self.residuals else 0.0


class FitError(ValueError):
    """The samples cannot determine the figures (one line: why)."""


def columns_of(samples: list[Sample]) -> list[str]:
    units = sorted({unit for sample in samples for unit, flops in sample.flops.items() if flops > 0})
    return [DRAM, L2, *units]


def design(samples: list[Sample], columns: list[str]) -> np.ndarray:
    rows = []
    for sample in samples:
        values = {DRAM: sample.dram_bytes, L2: sample.l2_bytes, **sample.flops}
        rows.append([float(values.get(column, 0.0)) for column in columns])
    return np.array(rows, dtype=float)


def fit(samples: list[Sample]) -> Fit:
    """Non-negative, relative-error least squares over the samples (see the module docstring)."""
    if not samples:
        raise FitError("no calibration samples to fit")
    bad = [s.kernel for s in samples if not s.joules > 0]
    if bad:
        raise FitError(f"a calibration kernel measured no dynamic energy (its joules per call are not above the static power's): {bad[0]}")
    columns = columns_of(samples)
    matrix = design(samples, columns)
    measured = np.array([s.joules for s in samples], dtype=float)
    unused = [c for i, c in enumerate(columns) if not matrix[:, i].any()]
    if unused:
        raise FitError(f"no calibration sample exercises {', '.join(unused)}")
    scaled = matrix / measured[:, None]
    target = np.ones(len(samples))
    scale = scaled.max(axis=0)  # columns of bytes (1e9) and FLOPs (1e12) to comparable sizes
    free = list(range(len(columns)))
    solution = np.zeros(len(columns))
    notes = []
    while free:
        least, *_ = np.linalg.lstsq(scaled[:, free] / scale[free], target, rcond=None)
        values = least / scale[free]
        if (values >= 0).all():
            solution[:] = 0.0
            solution[free] = values
            break
        worst = free[int(np.argmin(values))]
        notes.append(f"{columns[worst]} came out negative in the fit and is fixed at 0")
        free.remove(worst)
    if len(samples) < len(columns):
        notes.append(f"{len(samples)} samples for {len(columns)} coefficients: the fit is underdetermined")
    fitted = matrix @ solution
    residuals = ((fitted - measured) / measured).tolist()
    return Fit(dict(zip(columns, solution.tolist())), fitted.tolist(), residuals, notes)
