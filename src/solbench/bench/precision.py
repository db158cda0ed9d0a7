"""Precision oracle: was an fp32 (or fp64) output computed in a lower precision and cast back?

Issue 5: under the ``strict`` precision policy a solution must compute at the declared precision; under
``relaxed`` any precision that meets the tolerance passes, and the trace records the precision the
solution appears to use. The tolerance check alone cannot tell the two apart (bf16 often meets a loose
tolerance), so the orchestrator runs the reference a second time on fp64 copies of the inputs
(``oracle_arguments``) and hands the three outputs to ``assess``: the reference's own distance from
that fp64 oracle is what the declared precision produces on this problem, and a solution that lands
far beyond it (and beyond an absolute floor) is downgraded. ``judge`` turns the per-output
assessments into the policy's verdict.

Statistic
---------
The error of an output ``x`` against the oracle ``o`` is the normwise relative error in the 1-norm,
``sum|x - o| / sum|o|``, over the positions that can be compared (see ``assess``). Why this one:

- it is scale-aware: multiplying the problem by any factor leaves it unchanged, and it is the quantity
  whose first-order size is "conditioning x unit roundoff", so errors of different precisions differ by
  the ratio of their unit roundoffs (2^13 between fp32 and fp16/tf32, 2^16 to bf16);
- exact positions (zeros that every precision gets right, padding, masked entries) enter neither sum,
  so an output that is 99% exact zeros keeps the same error as its dense part (a mean normalised by the
  RMS would shrink by 10x there);
- with a large dynamic range it weighs each element by its magnitude, which is what a downgrade
  perturbs most; a per-element relative error would instead be dominated by the tiny entries and by
  cancellation, where every precision is inaccurate;
- a few outliers move it by their share, not by their square (as a 2-norm would), and a high quantile
  normalised by the RMS misses downgrades confined to the large entries of a wide-range output
  (measured, in units of the fp32 roundoff: bf16 sqrt of a log-normal input has a p99 error/RMS of
  10, far under any usable floor, against 56000 for this statistic; bf16 softmax 1200 against 256000);
- it is two running sums, so it is computed in chunks without temporaries the size of the output.

Thresholds (calibrated by tests/bench/test_precision.py, which prints the table when run as a script)
------------------------------------------------------------------------------------------------------
``u`` is the unit roundoff of the declared dtype (fp32: 2^-24). An output is downgraded when its
error exceeds both ``RATIO_LIMIT`` (256) times the reference's error and ``FLOOR_UNITS`` (512) u.

- The floor exists because the reference may be more accurate than fp32 arithmetic needs to be (torch
  on CPU accumulates cumsum in double, elementwise results are correctly rounded: error 0): legit fp32
  solutions measured up to 46 u (a sequential 64K-long scan, 128x the double-accumulated
  reference's error; sequential K=8192 matmul: 24 u), while fp16/tf32 downgrades measured at least
  2967 u (fp16 elementwise; it cannot go much below ~2000 u because every fp16 result carries its own
  rounding), bf16 at least 33000 u. 512 u sits 11x above the worst legit case and 5.8x below the
  mildest downgrade.
- The ratio matters when the problem itself is ill-conditioned, so that fp32 arithmetic already has a
  large error (the reference's error times K is above the floor): there legit reorderings measured at
  most 4x the reference's error (128x overall, where the floor binds), downgrades at least 649x (tf32
  in a difference of two nearly equal matmuls) and 835x (tf32 matmul, K=8192).

Blind spot (measured, not fixable by any threshold on the error): when rounding errors average out,
e.g. a matmul of all-positive data whose inputs are rounded to tf32 (or fp16) but accumulated in fp32,
the error shrinks like 1/sqrt(K) (tf32: 53 u at K=8192, bf16: 424 u), inside or near the range of
legit fp32 reorderings. Detecting those would need another oracle (the reference run on inputs rounded
to each candidate precision, and a test of which one the solution is closest to).

Apparent precision
------------------
A downgraded output is labelled "tf32/float16" (about 11 significant bits), "bfloat16" (8) or "lower"
(fewer; fp8), from two pieces of evidence, the first one that speaks:

1. the value grid: a result computed in bf16 and cast back has only 8 significant bits in every
   element (the low 16 bits of each fp32 significand are zero), fp16 or tf32 11; when all of the
   solution's values fit such a grid and the reference's do not, the grid names the precision exactly;
2. the error's size: a well-conditioned computation at unit roundoff v has an error of about
   ``TYPICAL_ERROR_PER_ROUNDOFF`` (0.6) v (measured 0.36 to 0.75 for elementwise ops, norms and
   matmuls); when the reference's error is beyond what fp32 produces on well-conditioned work
   (``WELL_CONDITIONED_UNITS`` u), the problem amplifies errors and the estimate is divided by that
   amplification. The implied unit roundoff picks the nearest rung on a log scale.

An output that is not downgraded is labelled with its declared precision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from solbench.data.dtypes import DType

__all__ = [
    "FLOOR_UNITS",
    "RATIO_LIMIT",
    "PrecisionAssessment",
    "applies",
    "assess",
    "judge",
    "oracle_arguments",
    "outputs_to_assess",
]

RATIO_LIMIT = 256.0  # downgraded above this many times the reference's own error ...
FLOOR_UNITS = 512.0  # ... and above this many unit roundoffs of the declared dtype
TYPICAL_ERROR_PER_ROUNDOFF = 0.6  # normwise error / unit roundoff of a well-conditioned computation
WELL_CONDITIONED_UNITS = 8.0  # references measured up to 6 u on well-conditioned work; beyond 8 u, amplification
MIN_GRID_ELEMENTS = 8  # nonzero values needed before the value grid counts as evidence
CHUNK = 1 << 18

_UPCAST = (torch.float32, torch.float16, torch.bfloat16)
_CHECKED = (torch.float32, torch.float64)
_SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24}
_BITS_VIEW = {torch.float64: torch.int64, torch.float32: torch.int32}

# (label, significant bits), finest first; "lower" stands for fp8 and below.
_RUNGS: tuple[tuple[str, int], ...] = (
    ("float64", 53),
    ("float32", 24),
    ("tf32/float16", 11),
    ("bfloat16", 8),
    ("lower", 4),
)


# --- inputs and applicability -------------------------------------------------------------------


def oracle_arguments(arguments: list) -> list:
    """The same arguments with every float32/float16/bfloat16 tensor converted to float64.

    Running the reference on them gives the fp64 oracle. Other tensors (integers, bool, fp8, fp4,
    float64) and non-tensors are passed through untouched: fp8/fp4 inputs are quantised data whose
    values the reference decodes itself. Lists, tuples and dicts are converted element by element."""
    return [_to_oracle(argument) for argument in arguments]


def _to_oracle(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.dtype in _UPCAST else value
    if isinstance(value, list):
        return [_to_oracle(item) for item in value]
    if isinstance(value, tuple):
        converted = [_to_oracle(item) for item in value]
        return type(value)(*converted) if hasattr(value, "_fields") else tuple(converted)
    if isinstance(value, dict):
        return {key: _to_oracle(item) for key, item in value.items()}
    return value


def applies(dtype: DType | torch.dtype | str) -> bool:
    """Whether the check applies to an output of this declared dtype: float32 and float64 only.

    A 16- or 8-bit output is already stored in a low precision; computing it in bf16 instead of fp16
    cannot be told apart from the storage rounding, so there is nothing meaningful to flag."""
    if isinstance(dtype, torch.dtype):
        return dtype in _CHECKED
    return DType(dtype) in (DType.float32, DType.float64)


def outputs_to_assess(declared: Mapping[str, Any]) -> list[str]:
    """Names of the declared outputs (name -> TensorSpec, or name -> dtype) the check applies to.

    A scalar output (a Python number) is assessed as a 0-d tensor of its declared dtype."""
    return [name for name, spec in declared.items() if applies(getattr(spec, "dtype", spec))]


# --- assessment -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrecisionAssessment:
    """How one output's error against the fp64 oracle compares with the reference's.

    Errors are normwise relative (``sum|x - oracle| / sum|oracle|``); ``math.nan`` when nothing could
    be compared (``compared == 0`` or an all-zero oracle), in which case ``downgraded`` is False.
    ``grid_bits`` is the coarsest significand width all of the solution's values fit while the
    reference's do not, or None."""

    declared: str
    solution_error: float
    reference_error: float
    ratio: float
    threshold: float
    apparent_precision: str
    downgraded: bool
    compared: int
    grid_bits: int | None = None

    def describe(self, name: str) -> str:
        """One line: the output, both errors, the ratio and the apparent precision."""
        if self.compared == 0 or math.isnan(self.solution_error):
            return f"output '{name}': precision not assessed (no finite, nonzero oracle value)"
        verdict = f"appears computed in {self.apparent_precision}" if self.downgraded else f"consistent with {self.declared}"
        return (
            f"output '{name}' {verdict} (declared {self.declared}): error vs fp64 oracle {_num(self.solution_error)},"
            f" reference's {_num(self.reference_error)}, ratio {_ratio(self.ratio)}; limit {_num(self.threshold)}"
        )


def assess(solution: torch.Tensor, reference: torch.Tensor, oracle: torch.Tensor) -> PrecisionAssessment:
    """Compare the solution's and the reference's errors against the fp64 oracle of one output.

    The declared precision is the reference's dtype (float32 or float64; ``applies`` says which
    outputs to pass). Positions are compared where the oracle is finite and within the declared
    dtype's range, and the reference is finite: elsewhere the declared precision itself cannot
    represent the answer (an fp32 overflow of an fp64-finite value), so neither side is judged there.
    A non-finite solution value at a compared position is an infinite error."""
    for name, tensor in (("solution", solution), ("reference", reference), ("oracle", oracle)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name} is a {type(tensor).__name__}; pass tensors (a scalar output as a 0-d tensor)")
    if reference.dtype not in _CHECKED:
        raise ValueError(f"the precision check applies to float32/float64 outputs, the reference is {reference.dtype}")
    if solution.shape != reference.shape or oracle.shape != reference.shape:
        raise ValueError(
            f"shapes differ: solution {list(solution.shape)}, reference {list(reference.shape)}, oracle {list(oracle.shape)}"
        )
    declared = reference.dtype
    sums = _Sums.measure(solution.detach(), reference.detach(), oracle.detach(), declared)
    return _judge_sums(sums, declared, grid_comparable=solution.dtype == declared)


@dataclass
class _Sums:
    solution_error: float  # sum |solution - oracle|
    reference_error: float  # sum |reference - oracle|
    oracle_norm: float  # sum |oracle|
    compared: int
    solution_nonzero: int
    solution_fits: dict[int, bool]  # significand width -> every solution value fits it
    reference_fits: dict[int, bool]

    @classmethod
    def measure(cls, solution: torch.Tensor, reference: torch.Tensor, oracle: torch.Tensor, declared: torch.dtype) -> _Sums:
        widths = [bits for _, bits in _RUNGS if bits < _SIGNIFICAND_BITS[declared]]
        sums = cls(0.0, 0.0, 0.0, 0, 0, {w: True for w in widths}, {w: True for w in widths})
        flat_solution, flat_reference, flat_oracle = (t.reshape(-1) for t in (solution, reference, oracle))
        largest = float(torch.finfo(declared).max)
        for start in range(0, flat_reference.numel(), CHUNK):
            stop = start + CHUNK
            sol_part = flat_solution[start:stop]
            ref_part = flat_reference[start:stop]
            o = flat_oracle[start:stop].to(device=ref_part.device, dtype=torch.float64)
            r = ref_part.to(torch.float64)
            s = sol_part.to(device=ref_part.device, dtype=torch.float64)
            keep = torch.isfinite(o) & (o.abs() <= largest) & torch.isfinite(r)
            o, r, s = o[keep], r[keep], s[keep]
            solution_diff = (s - o).abs_()
            solution_diff[~torch.isfinite(s)] = math.inf  # NaN - o is NaN: count it as infinitely wrong
            sums.solution_error += float(solution_diff.sum())
            sums.reference_error += float((r - o).abs_().sum())
            sums.oracle_norm += float(o.abs().sum())
            sums.compared += int(o.numel())
            sums.solution_nonzero += int(torch.count_nonzero(s[torch.isfinite(s)]))
            if sol_part.dtype == declared:
                _update_fits(sums.solution_fits, sol_part, declared)
            _update_fits(sums.reference_fits, ref_part, declared)
        return sums


def _update_fits(fits: dict[int, bool], values: torch.Tensor, declared: torch.dtype) -> None:
    """Clear the widths that some finite value of ``values`` needs more significand bits than."""
    open_widths = [w for w, still in fits.items() if still]
    if not open_widths:
        return
    finite = values[torch.isfinite(values)].contiguous()
    raw = finite.view(_BITS_VIEW[declared])
    for width in open_widths:
        low_bits = (1 << (_SIGNIFICAND_BITS[declared] - width)) - 1
        if bool(torch.any(raw & low_bits)):
            fits[width] = False


def _judge_sums(sums: _Sums, declared: torch.dtype, grid_comparable: bool) -> PrecisionAssessment:
    declared_name = str(declared).removeprefix("torch.")
    unit = float(torch.finfo(declared).eps) / 2
    floor = FLOOR_UNITS * unit
    if sums.compared == 0 or sums.oracle_norm == 0.0:
        return PrecisionAssessment(declared_name, math.nan, math.nan, math.nan, floor, declared_name, False, sums.compared)
    solution_error = sums.solution_error / sums.oracle_norm
    reference_error = sums.reference_error / sums.oracle_norm
    ratio = _divide(solution_error, reference_error)
    threshold = max(RATIO_LIMIT * reference_error, floor)
    downgraded = solution_error > threshold
    grid_bits = None
    if grid_comparable and sums.solution_nonzero >= MIN_GRID_ELEMENTS:
        grid_bits = min(
            (w for w, fits in sums.solution_fits.items() if fits and not sums.reference_fits[w]), default=None
        )
    apparent = declared_name
    if downgraded:
        apparent = _apparent_precision(solution_error, reference_error, unit, grid_bits)
    return PrecisionAssessment(
        declared_name, solution_error, reference_error, ratio, threshold, apparent, downgraded, sums.compared, grid_bits
    )


def _apparent_precision(solution_error: float, reference_error: float, unit: float, grid_bits: int | None) -> str:
    """The label of a downgraded output: the value grid when it speaks, else the error's size."""
    declared_bits = round(-math.log2(unit))  # 24 for fp32, 53 for fp64
    coarser = [(label, bits) for label, bits in _RUNGS if bits < declared_bits]
    if grid_bits is not None:
        return next(label for label, bits in coarser if bits == grid_bits)
    if math.isinf(solution_error):
        return coarser[-1][0]
    amplification = max(1.0, reference_error / (WELL_CONDITIONED_UNITS * unit))
    implied_roundoff = solution_error / (TYPICAL_ERROR_PER_ROUNDOFF * amplification)
    implied_bits = -math.log2(implied_roundoff)
    # nearest rung on the log scale, never the declared one or a finer one (the output is downgraded)
    return min(coarser, key=lambda rung: abs(rung[1] - implied_bits))[0]


# --- verdict --------------------------------------------------------------------------------------


def judge(assessments: dict[str, PrecisionAssessment], policy: str) -> tuple[bool, str]:
    """The policy's verdict over the assessed outputs: (passes, one-line message).

    ``strict``: fails on the first downgraded output (in the dict's order), naming it, both errors,
    the ratio and the apparent precision. ``relaxed``: always passes (the tolerance check decides);
    the note records the apparent precision, to be written to the trace. With no downgrade either
    policy passes with a note saying the outputs are consistent with their declared precision."""
    if policy not in ("strict", "relaxed"):
        raise ValueError(f"unknown precision policy {policy!r}; expected 'strict' or 'relaxed'")
    downgraded = [(name, a) for name, a in assessments.items() if a.downgraded]
    if not downgraded:
        if not assessments:
            return True, ""
        declared = sorted({a.declared for a in assessments.values()})
        return True, f"precision: outputs consistent with their declared {'/'.join(declared)}"
    name, first = downgraded[0]
    others = f" (+{len(downgraded) - 1} more output(s))" if len(downgraded) > 1 else ""
    if policy == "strict":
        return False, f"precision downgrade under strict policy: {first.describe(name)}{others}"
    labels = ", ".join(f"'{n}' {a.apparent_precision}" for n, a in downgraded)
    return True, f"precision (relaxed, accepted): apparent precision {labels}; {first.describe(name)}"


# --- formatting -----------------------------------------------------------------------------------


def _divide(numerator: float, denominator: float) -> float:
    if denominator > 0:
        return numerator / denominator
    return 1.0 if numerator == 0 else math.inf


def _num(x: float) -> str:
    return format(x, ".3g")


def _ratio(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}x"
