"""Calibrated tolerances: how far the reference's native-precision outputs are from an fp64 run of
the same reference on the same inputs, turned into each workload's `max_atol` and `max_rtol` and
written back into its line of the workload file (nothing else in the file changes).

Measurement (per workload, `runs` fresh draws of solbench's own inputs, trials 0..runs-1 of `seed`)
----------------------------------------------------------------------------------------------------
Each draw runs the reference twice at native precision (run-to-run non-determinism: atomics, split
reductions) and once on fp64 copies of the floating inputs (solbench.bench.precision.oracle_arguments:
integer, bool, fp8 and fp4 inputs unchanged). A reference that casts to a low dtype itself still does
so in the fp64 run; that is measured (every floating op result below float64 is seen) and noted.

Rule (``E`` and ``N`` in the output's units, maxima over draws and outputs)
--------------------------------------------------------------------------
- ``max_rtol`` = the floor of the outputs' dtype (the largest over the floating outputs):
  one ulp at the bottom of a binade, ``2^(1-p)`` for ``p`` significant bits (bf16 2^-7, fp16 2^-10,
  fp8 e4m3 2^-3, e5m2 2^-2, fp4 2^-1), because two results each correctly rounded to the output dtype
  may differ by that much; fp32 2^-20 and fp64 2^-49 (8 ulps: results of these precisions differ by
  their accumulation order far beyond one rounding). Integer and bool outputs add nothing.
- ``E`` = the largest ``|native - fp64| - rtol * |fp64|`` over the elements (0 when every element is
  within rtol), ``N`` the same for two native runs (``|run2 - run1| - rtol * |run1|``). Where the
  workload's ``required_matched_ratio`` r is below 1, the ``floor((1 - r) * numel / 2)`` largest
  excesses of each output and draw are left out (half the mismatches the ratio allows: the other half is
  margin for draws not seen).
- ``max_atol`` = ``max(1.25 * (E + N), rtol * S)``, ``S`` the largest RMS of an fp64 output: the 1.25
  margin of the SOL-ExecBench paper on the excess the reference itself shows, non-determinism added
  (a second run can be N further off), and never below one rounding at the output's typical magnitude
  (results near zero from cancellation carry errors of the size of the terms, not of the result).
- Both are rounded up to 3 significant digits; the other tolerance fields are kept.

By construction the native run of every draw passes solbench.bench.correctness.compare_outputs
against the fp64 run with the new tolerance; `check_runs` more draws (trials after the calibration's)
check that on inputs the calibration did not see, and a workload whose check fails is not written.
What this cannot promise: a solution as accurate as the reference but rounding differently may be up
to twice the reference's distance from fp64 away from the reference (triangle inequality); the rtol
floor of one ulp is what leaves room for that.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from json.decoder import scanstring
from pathlib import Path
from typing import Any, Callable

import torch

from solbench.bench.correctness import compare_outputs, decode_fp4
from solbench.bench.precision import oracle_arguments
from solbench.data.dtypes import DType
from solbench.data.errors import SpecError
from solbench.data.files import write_atomically
from solbench.data.inputs import generate_inputs
from solbench.data.loaders.problem_folder import WORKLOAD_FILE
from solbench.data.problem import Problem
from solbench.data.reference import reference_module
from solbench.data.workload import Tolerance, Workload

__all__ = ["MARGIN", "RTOL_FLOORS", "Calibration", "against_fp64", "calibrate_workload", "rtol_floor", "tolerance_edits", "workload_file",
           "write_calibrations"]

MARGIN = 1.25
RTOL_FLOORS: dict[DType, float] = {
    DType.float64: 2.0**-49,
    DType.float32: 2.0**-20,
    DType.float16: 2.0**-10,
    DType.bfloat16: 2.0**-7,
    DType.float8_e4m3fn: 2.0**-3,
    DType.float8_e5m2: 2.0**-2,
    DType.float4_e2m1: 2.0**-1,
    DType.float4_e2m1fn_x2: 2.0**-1,
}
SIGNIFICANT_DIGITS = 3


def rtol_floor(dtype: DType) -> float:
    """The relative tolerance below which honest results of this output dtype cannot be held (0: integers, bool)."""
    return RTOL_FLOORS.get(dtype, 0.0)


def round_up(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """The smallest number of `digits` significant digits that is >= value (0 and non-finite values as they are)."""
    if value <= 0 or not math.isfinite(value):
        return value
    if float(f"{value:.{digits}g}") == value:  # already short (0.0123 is stored a hair above 0.0123: keep it)
        return value
    exact = Decimal(value)
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return float(exact.quantize(step, rounding=ROUND_CEILING))  # the nearest float of a number >= value is >= value


# --- measurement --------------------------------------------------------------------------------


@dataclass
class Calibration:
    """What the calibration of one workload found; `max_atol`/`max_rtol` are None when it failed."""

    workload: Workload
    runs: int
    max_atol: float | None = None
    max_rtol: float | None = None
    max_abs_error: float = 0.0  # largest |native - fp64| over draws and elements
    max_rel_error: float = 0.0  # largest |native - fp64| / |fp64| where |fp64| > 0
    nondeterminism: float = 0.0  # largest |run2 - run1|
    checked: int = 0  # held-out draws that passed compare_outputs with the new tolerance
    notes: list[str] = field(default_factory=list)
    failure: str | None = None

    @property
    def old(self) -> Tolerance:
        return self.workload.effective_tolerance

    @property
    def tolerance(self) -> Tolerance | None:
        """The workload's tolerance with the calibrated atol and rtol (None when it failed)."""
        if self.failure is not None or self.max_atol is None or self.max_rtol is None:
            return None
        return self.old.model_copy(update={"max_atol": self.max_atol, "max_rtol": self.max_rtol})


class _CalibrationFailed(Exception):
    pass


class _LowDtypes:
    """Records the floating dtypes below float64 that any op produces while it is active."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        seen: set[torch.dtype] = set()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                result = func(*args, **(kwargs or {}))
                for leaf in tree_leaves(result):
                    if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.dtype != torch.float64:
                        seen.add(leaf.dtype)
                return result

        self.mode = Mode()
        self.seen = seen

    def names(self) -> list[str]:
        return sorted(str(dtype).removeprefix("torch.") for dtype in self.seen)


@dataclass
class _Draw:
    native: dict[str, Any]
    oracle: dict[str, Any]
    second: dict[str, Any] | None
    low_dtypes: list[str]


def _copy(values: list[Any]) -> list[Any]:
    return [value.clone() if isinstance(value, torch.Tensor) else value for value in values]


def _outputs_of(problem: Problem, result: Any, what: str) -> dict[str, Any]:
    names = list(problem.definition.outputs)
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(values) != len(names):
        raise _CalibrationFailed(f"the {what} returned {len(values)} value(s); the definition declares {len(names)} output(s) ({', '.join(names)})")
    return {name: value.detach() if isinstance(value, torch.Tensor) else value for name, value in zip(names, values)}


def _call(function: Callable[..., Any], arguments: list[Any], what: str) -> Any:
    try:
        with torch.enable_grad():  # backward problems differentiate inside run; the worker runs it so too
            return function(*arguments)
    except Exception as exc:  # noqa: BLE001 - the reference is the problem's code: its failure is this workload's finding
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise _CalibrationFailed(f"the {what} failed: {type(exc).__name__}: {first}") from None


def _draw(problem: Problem, workload: Workload, seed: int, trial: int, device: str, profile: str | None, second: bool) -> _Draw:
    try:
        inputs = list(generate_inputs(problem, workload, seed=seed, trial=trial, device=device, profile=profile).values())
    except Exception as exc:  # noqa: BLE001 - custom input code and files belong to the problem
        raise _CalibrationFailed(f"input generation failed: {type(exc).__name__}: {exc}") from None
    function = reference_module(problem.definition).run
    native = _outputs_of(problem, _call(function, _copy(inputs), "reference"), "reference")
    again = _outputs_of(problem, _call(function, _copy(inputs), "reference"), "reference") if second else None
    low = _LowDtypes()
    upcast = oracle_arguments(_copy(inputs))  # made outside the mode: only the reference's own ops are seen
    with low.mode:
        result = _call(function, upcast, "reference on fp64 inputs")
    return _Draw(native, _outputs_of(problem, result, "reference on fp64 inputs"), again, low.names())


def against_fp64(problem: Problem, workload: Workload, *, seed: int = 0, trial: int = 0, device: str = "cpu",
                 profile: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reference's outputs on one draw and those of its run on fp64 copies of the same inputs, as the
    calibration measures them (benchmarks/tolerance_audit.py judges a tolerance by them). ValueError with
    the reason where the reference or its fp64 run fails."""
    try:
        draw = _draw(problem, workload, seed, trial, device, profile, second=False)
    except _CalibrationFailed as exc:
        raise ValueError(str(exc)) from None
    return draw.native, draw.oracle


def _as_float64(value: Any, device: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.float4_e2m1fn_x2:
            return decode_fp4(value).reshape(-1)
        return value.detach().reshape(-1).to(torch.float64)
    return torch.tensor([float(value)], dtype=torch.float64, device=device)


def _errors(value: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """|value - reference|: 0 where both are the same (an identical inf too), inf where only one is finite or either is NaN."""
    error = (value - reference).abs()
    error = torch.where(value == reference, torch.zeros_like(error), error)
    return torch.nan_to_num(error, nan=math.inf, posinf=math.inf)


def _kept_max(excess: torch.Tensor, left_out: int) -> float:
    """The largest excess once the `left_out` largest are left out (the matched-ratio budget)."""
    if excess.numel() <= left_out:
        return 0.0
    if left_out == 0:
        return float(excess.max())
    return float(torch.topk(excess, left_out + 1).values[-1])


def _excess(value: torch.Tensor, reference: torch.Tensor, rtol: float) -> torch.Tensor:
    excess = _errors(value, reference) - rtol * reference.abs()
    return torch.nan_to_num(excess, nan=math.inf).clamp_min(0)


def calibrate_workload(problem: Problem, workload: Workload, *, runs: int = 5, check_runs: int = 1, seed: int = 0,
                       device: str = "cpu", profile: str | None = None) -> Calibration:
    """Calibrate one workload's max_atol and max_rtol (the rule is in the module docstring). Never raises
    for what the reference does: a failure is the Calibration's `failure`."""
    if runs < 1:
        raise ValueError("at least one run")
    calibration = Calibration(workload, runs)
    try:
        _measure(problem, workload, calibration, runs, check_runs, seed, device, profile)
    except _CalibrationFailed as exc:
        calibration.failure = str(exc)
        calibration.max_atol = calibration.max_rtol = None
    return calibration


def _measure(problem: Problem, workload: Workload, calibration: Calibration, runs: int, check_runs: int, seed: int, device: str,
             profile: str | None) -> None:
    declared = problem.definition.outputs
    rtol = round_up(max((rtol_floor(spec.dtype) for spec in declared.values()), default=0.0))
    ratio = workload.effective_tolerance.required_matched_ratio
    excess = nondeterministic = scale = 0.0
    low_dtypes: set[str] = set()
    for trial in range(runs):
        draw = _draw(problem, workload, seed, trial, device, profile, second=True)
        low_dtypes.update(draw.low_dtypes)
        for name, spec in declared.items():
            native, oracle = _as_float64(draw.native[name], device), _as_float64(draw.oracle[name], device)
            if native.shape != oracle.shape:
                raise _CalibrationFailed(f"output {name!r} has {native.numel()} elements in the native run, {oracle.numel()} in the fp64 run")
            if native.numel() == 0:
                continue
            left_out = math.floor((1 - ratio) * native.numel() / 2)
            found = _kept_max(_excess(native, oracle, rtol), left_out)
            if not math.isfinite(found):
                raise _CalibrationFailed(f"output {name!r}: the native and fp64 runs disagree on non-finite values (NaN or inf); no finite tolerance covers that")
            if not spec.dtype.is_floating and found > 0:
                raise _CalibrationFailed(f"output {name!r} ({spec.dtype.value}) differs between the native and fp64 runs beyond what "
                                         f"required_matched_ratio {ratio:g} allows (a near tie decides it?); set this workload's tolerance by hand")
            excess = max(excess, found)
            errors = _errors(native, oracle)
            finite = torch.isfinite(errors)
            if bool(finite.any()):
                calibration.max_abs_error = max(calibration.max_abs_error, float(errors[finite].max()))
                nonzero = finite & (oracle != 0)
                if bool(nonzero.any()):
                    calibration.max_rel_error = max(calibration.max_rel_error, float((errors[nonzero] / oracle[nonzero].abs()).max()))
            if spec.dtype.is_floating:
                magnitude = oracle[torch.isfinite(oracle)]
                if magnitude.numel():
                    scale = max(scale, float(magnitude.square().mean().sqrt()))
            assert draw.second is not None
            again = _as_float64(draw.second[name], device)
            calibration.nondeterminism = max(calibration.nondeterminism, float(_errors(again, native).max()))
            nondeterministic = max(nondeterministic, _kept_max(_excess(again, native, rtol), left_out))
    if not math.isfinite(nondeterministic):
        raise _CalibrationFailed("two native runs on the same inputs disagree on non-finite values (NaN or inf)")
    calibration.max_rtol = rtol
    calibration.max_atol = round_up(max(MARGIN * (excess + nondeterministic), rtol * scale))
    if calibration.nondeterminism > 0:
        calibration.notes.append(f"non-deterministic: two native runs differ by up to {calibration.nondeterminism:.3g} (folded in)")
    if low_dtypes:
        calibration.notes.append(f"the fp64 run follows the reference's own casts to {', '.join(low_dtypes)}")
    if all(spec.type == "safetensors" for spec in workload.inputs.values()):
        calibration.notes.append("inputs come from files: every run saw the same data")
    tolerance = calibration.tolerance
    assert tolerance is not None
    for trial in range(runs, runs + check_runs):  # draws the calibration did not see
        draw = _draw(problem, workload, seed, trial, device, profile, second=False)
        comparison = compare_outputs(draw.native, draw.oracle, declared, tolerance)
        if not comparison.passed:
            raise _CalibrationFailed(f"held-out check (trial {trial}) fails with atol {calibration.max_atol:g}, rtol {rtol:g}: "
                                     f"{comparison.message or comparison.status.value}; try more --runs")
        calibration.checked += 1


# --- writing back ---------------------------------------------------------------------------------


def workload_file(problem: Problem) -> Path:
    """The file that holds the problem's workload lines; a SpecError for formats that have none."""
    source = problem.source
    if problem.kind == "problem" and source is not None:
        return (source if source.is_dir() else source.parent) / WORKLOAD_FILE
    if problem.kind == "flashinfer" and problem.root is not None and source is not None:
        # the loader's rule (solbench.data.loaders.flashinfer): workloads/<op_type>/<name>.jsonl, else any <name>.jsonl
        relative = source.relative_to(problem.root / "definitions").with_suffix(".jsonl")
        candidates = [problem.root / "workloads" / relative, *sorted((problem.root / "workloads").rglob(f"{problem.name}.jsonl"))]
        found = next((c for c in candidates if c.is_file()), None)
        if found is not None:
            return found
    what = {"kernelbench": "a KernelBench-style file"}.get(problem.kind, f"a {problem.kind} problem")
    raise SpecError(f"{what} has no workload file beside a definition to write tolerances into; import it into a problem folder first",
                    path=source)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


_DECODER = json.JSONDecoder()


def _members(text: str, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """(key, value start, value end) of each member of the JSON object at text[start] ('{'), and the
    index of its closing '}'."""
    members: list[tuple[str, int, int]] = []
    index = _skip_space(text, start + 1)
    if text[index] == "}":
        return members, index
    while True:
        key, index = scanstring(text, index + 1)
        index = _skip_space(text, _skip_space(text, index) + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, index)
        members.append((key, index, end))
        index = _skip_space(text, end)
        if text[index] == "}":
            return members, index
        index = _skip_space(text, index + 1)  # past ','


def _number(value: float) -> str:
    return repr(float(value))


def tolerance_edits(line: str, atol: float, rtol: float) -> str:
    """The workload line with only the values of tolerance.max_atol and tolerance.max_rtol replaced (added
    at the end of the tolerance object when absent; a tolerance object added when there is none). A
    trace-shaped line ({"definition": ..., "workload": {...}}) is edited inside its workload."""
    start = _skip_space(line, 0)
    members, close = _members(line, start)
    keys = [key for key, _, _ in members]
    if "workload" in keys and "uuid" not in keys:  # the loader's rule for trace-shaped lines
        _, value_start, _ = next(m for m in members if m[0] == "workload")
        members, close = _members(line, value_start)
    colon = ": " if '": ' in line else ":"
    comma = ", " if ', "' in line else ","
    wanted = {"max_atol": _number(atol), "max_rtol": _number(rtol)}
    edits: list[tuple[int, int, str]] = []
    tolerance = [(s, e) for key, s, e in members if key == "tolerance"]
    if tolerance and line[tolerance[-1][0]] == "{":
        inner, inner_close = _members(line, tolerance[-1][0])
        present = {key for key, _, _ in inner}
        edits += [(s, e, wanted[key]) for key, s, e in inner if key in wanted]
        added = [f'"{key}"{colon}{text}' for key, text in wanted.items() if key not in present]
        if added:
            edits.append((inner_close, inner_close, (comma if inner else "") + comma.join(added)))
    else:
        body = "{" + comma.join(f'"{key}"{colon}{text}' for key, text in wanted.items()) + "}"
        if tolerance:  # "tolerance": null
            edits.append((tolerance[-1][0], tolerance[-1][1], body))
        else:
            edits.append((close, close, (comma if members else "") + f'"tolerance"{colon}{body}'))
    for begin, end, text in sorted(edits, reverse=True):
        line = line[:begin] + text + line[end:]
    return line


def write_calibrations(problem: Problem, calibrations: list[Calibration]) -> int:
    """Write the calibrated tolerances into the problem's workload file (atomically; every other byte
    unchanged) and return how many lines changed. The file is read again first, and a line that no
    longer holds its workload's uuid stops the write."""
    path = workload_file(problem)
    lines_of = {id(w): number for w, number in zip(problem.workloads, problem.workload_lines)}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read: {exc}", path=path) from None
    lines = text.split("\n")
    changed = 0
    for calibration in calibrations:
        tolerance = calibration.tolerance
        number = lines_of.get(id(calibration.workload))
        if tolerance is None or number is None:
            continue
        line = lines[number - 1]
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        row = row.get("workload", row) if isinstance(row, dict) and "uuid" not in row else row
        if not isinstance(row, dict) or row.get("uuid") != calibration.workload.uuid:
            raise SpecError(f"no longer holds workload {calibration.workload.uuid!r} (the file changed since it was read); nothing written",
                            path=path, line=number)
        edited = tolerance_edits(line, tolerance.max_atol, tolerance.max_rtol)
        if edited != line:
            lines[number - 1] = edited
            changed += 1
    if changed:
        write_atomically(path, "\n".join(lines))
    return changed
