"""Comparison of a solution's outputs with the reference's (runs in the trusted orchestrator, on CPU).

``compare_outputs(outputs, references, declared, tolerance)`` checks one trial and returns a
``Comparison``; ``merge(comparisons)`` folds the comparisons of several trials into one.

Rules
-----
Order of the checks. The references are checked first, then the structure of the solution's outputs
(the declared outputs in the definition's order, then any extra output), then the values (in declared
order); the first failure gives the status, the failing output's name and a one-line message. So a
wrong shape of the second output is reported before a wrong value of the first.

1. References (trusted, but written by a problem author). For every declared output the reference must
   be present and be a plain CPU tensor (a Python number or 0-d tensor for a scalar output) with no NaN
   anywhere; otherwise ``INVALID_REFERENCE``. A reference on a non-CPU device raises ``ValueError``.
2. Structure of the outputs:
   - every declared output must be present and nothing else: a missing or an extra output is
     ``INCORRECT_SHAPE``;
   - a tensor output (declared shape not None) must be a ``torch.Tensor``, else ``INCORRECT_SHAPE``;
     it must be a *plain* tensor: ``type(t) is torch.Tensor`` (no subclass, no FakeTensor, no
     ``nn.Parameter``), not on the meta device, strided layout (not sparse/mkldnn), else
     ``INCORRECT_DTYPE`` ("output 'y' is a FakeTensor, not a plain tensor");
   - a tensor on a device other than CPU is a caller error: ``ValueError``;
   - the dtype must equal the declared dtype exactly (``INCORRECT_DTYPE``); fp4 is
     ``torch.float4_e2m1fn_x2``, two values per byte with the last dimension halved;
   - the logical shape (fp4: storage shape with the last dimension doubled) must equal the reference's
     logical shape exactly (``INCORRECT_SHAPE``);
   - a scalar output (declared shape None) must be a Python ``bool``/``int``/``float`` (anything else,
     a 0-d tensor included, is ``INCORRECT_SHAPE``) of the declared kind: ``bool`` for bool,
     ``int`` (not bool) for integer dtypes, ``int`` or ``float`` (not bool) for floating dtypes, else
     ``INCORRECT_DTYPE``.
3. Values. Both sides are decoded to float64: fp4 through the 16-entry e2m1 table
   (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; the low nibble of a byte is the first element),
   every other dtype (fp8, bf16, ..., ints, bool) by an upcast. Element i *matches* when
   ``|out - ref| <= max_atol + max_rtol * |ref|`` with both values finite; additionally
   - NaN in the output never matches;
   - an infinite output matches only an identical reference value, and an output ``-inf`` matches
     (where the reference is ``-inf``) only when ``tolerance.allow_negative_inf`` is true;
   - the error of a non-finite mismatch (NaN or inf on either side) counts as ``inf``.
   The output is ``INCORRECT_NUMERICAL`` when, checked in this order:
   - it is all zeros and the reference is not (whatever the tolerance says);
   - ``tolerance.max_error_cap`` is set and some element's absolute error exceeds it (regardless of
     the matched ratio);
   - the matched ratio is high enough, but some element is a *gross* error: its error exceeds ``GROSS_FACTOR``
     times ``max_atol + max_rtol * |ref|`` (the relative part capped at ``GROSS_RELATIVE * |ref|``: at a loose
     rtol of 1e-2, 100 x rtol alone would forgive a zero written in place of any value), or it is NaN or
     infinite where the reference is finite.
     The matched ratio forgives near-misses (rounding, accumulation order, split-K reductions), never
     garbage: an unwritten tail of a few thousand elements of a large output is far below 1% and
     would otherwise pass. GROSS_FACTOR = 100: the honest kernels seen miss by at most a few times
     the tolerance (cuBLAS's bf16 split-K at K = 1023: 5 bf16 ulps, 1.8x; bf16 index_add reruns:
     under 4x), while unwritten or wrong elements miss by 10^3 to 10^6 times;
   - ``matched_ratio = matched / numel`` (1.0 for an empty tensor) is below
     ``tolerance.required_matched_ratio``.
   *Selections.* An integer output declared with the same shape as floating outputs (top-k indices beside
   their weights, argmax beside its maxima) names what those values were selected from. Where two
   candidates tie within rounding, an honest kernel may select the other one: its index differs by a
   category, not by an error of magnitude, while every value beside it matches. So an index element that
   mismatches where every floating output of its shape matches is no gross error; it still counts as a
   mismatch against the matched ratio, so that a systematically wrong index output fails.

Metrics. ``max_absolute_error`` and ``max_relative_error`` (``|err| / max(|ref|, TINY)``, TINY the
smallest normal float32) are maxima over the elements where both values are finite, and ``inf`` when a
non-finite mismatch exists; ``matched_ratio`` is the lowest over the outputs; all three take every
output into account, also after a failure of an earlier one. ``first_mismatch_index`` is the row-major
multi-index (logical, so fp4 counts elements, not bytes; ``[]`` for a scalar) of the first mismatching
element of the failing output, or, when PASSED thanks to a ratio below 1, of the first output that has
a mismatch; None when nothing mismatches. When the values are never compared (a failure of steps 1 or
2) the metrics are ``inf``, ``inf``, ``0.0`` and the index None.

The values are compared in chunks of ``CHUNK`` elements with vectorised torch ops, so the temporaries
stay small whatever the size of the tensors. A chunk whose stored elements are bit for bit the
reference's and all finite matches with no error and skips the float64 decoding.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from solbench.data.definition import TensorSpec
from solbench.data.dtypes import DType
from solbench.data.trace import Status
from solbench.data.workload import Tolerance
from solbench.bench.bits import same_bits
from solbench.bench.transfer import Unsupported

__all__ = ["CHUNK", "Comparison", "compare_outputs", "decode_fp4", "merge"]

CHUNK = 1 << 18  # logical elements compared at a time (even, so fp4 bytes are never split)
_DEVICES = ("cpu", "cuda")
TINY = float(torch.finfo(torch.float32).tiny)

# e2m1: sign bit, 2 exponent bits, 1 mantissa bit; code -> value.
_FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
_FP4_TABLE = torch.tensor(_FP4_VALUES, dtype=torch.float64)
GPU_CHUNK = 1 << 24  # on a GPU, fewer and larger chunks: kernel launches, not memory, are the cost


GROSS_FACTOR = 100.0  # an element off by more than this many times its tolerance fails the output (see the module docstring)
GROSS_RELATIVE = 0.5  # ... or off by more than half its value beyond GROSS_FACTOR x atol, however loose rtol is


def _gross_bound(tolerance: Tolerance) -> str:
    atol, rtol = tolerance.max_atol, tolerance.max_rtol
    if GROSS_FACTOR * rtol <= GROSS_RELATIVE:
        return f"{GROSS_FACTOR:g}x atol {atol:g} + rtol {rtol:g}*|ref|"
    return f"{GROSS_FACTOR:g}x atol {atol:g} + {GROSS_RELATIVE:g}*|ref| (rtol {rtol:g}, its part capped)"


def gross_error(tolerance: Tolerance, reference_magnitude: Any) -> Any:
    """The error beyond which an element is garbage, not a near-miss: GROSS_FACTOR x (atol + rtol |ref|), with
    the relative part capped at GROSS_RELATIVE |ref| (at rtol 1e-2, 100 x rtol would forgive a zero in place of
    any value: its error is 100% of |ref|)."""
    return reference_magnitude * min(GROSS_FACTOR * tolerance.max_rtol, GROSS_RELATIVE) + GROSS_FACTOR * tolerance.max_atol

def _fp4_table(device: torch.device) -> torch.Tensor:
    return _FP4_TABLE if device.type == "cpu" else _FP4_TABLE.to(device)


def _chunk(tensor: torch.Tensor) -> int:
    return CHUNK if tensor.device.type == "cpu" else GPU_CHUNK
_FP4 = torch.float4_e2m1fn_x2


@dataclass
class Comparison:
    status: Status
    output: str | None
    message: str
    max_absolute_error: float
    max_relative_error: float
    matched_ratio: float
    first_mismatch_index: list[int] | None
    gross_errors: int = 0  # elements beyond GROSS_FACTOR x the tolerance, or not finite where the reference is (the most of any trial)
    # failed on the matched ratio alone, with no gross error in any output: numbers a little outside the tolerance
    # (rounding, accumulation order), not zeros, garbage, a capped error or a wrong structure
    near_miss: bool = False

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED


def _failure(status: Status, output: str | None, message: str) -> Comparison:
    return Comparison(status, output, message, math.inf, math.inf, 0.0, None)


# --- decoding ---------------------------------------------------------------------------------------


def decode_fp4(packed: torch.Tensor) -> torch.Tensor:
    """float64 values of a ``float4_e2m1fn_x2`` (or uint8) tensor; the last dimension doubles."""
    codes = packed.view(torch.uint8) if packed.dtype == _FP4 else packed
    codes = codes.to(torch.int64)
    table = _fp4_table(codes.device)
    values = torch.stack((table[codes & 15], table[codes >> 4]), dim=-1)
    return values.reshape(*packed.shape[:-1], packed.shape[-1] * 2) if packed.dim() else values


class _Values:
    """A tensor (or Python number) seen as a flat row-major sequence of float64 values, read by slices."""

    def __init__(self, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            tensor = value.detach()
            self.fp4 = tensor.dtype == _FP4 and tensor.dim() > 0
            if self.fp4:
                self.shape = (*tensor.shape[:-1], tensor.shape[-1] * 2)
                self.flat = tensor.view(torch.uint8).reshape(-1)
            else:
                self.shape = tuple(tensor.shape)
                self.flat = tensor.reshape(-1)
        else:
            self.fp4 = False
            self.shape = ()
            self.flat = torch.tensor([_to_float(value)], dtype=torch.float64)
        self.numel = math.prod(self.shape)

    def slice(self, start: int, stop: int) -> torch.Tensor:
        if self.fp4:
            codes = self.flat[start // 2 : stop // 2].to(torch.int64)
            table = _fp4_table(codes.device)
            return torch.stack((table[codes & 15], table[codes >> 4]), dim=1).reshape(-1)
        return self.flat[start:stop].to(torch.float64)

    def raw(self, start: int, stop: int) -> torch.Tensor:
        """The stored elements (fp4: the bytes) of logical elements [start, stop), undecoded."""
        return self.flat[start // 2 : stop // 2] if self.fp4 else self.flat[start:stop]

    def ranges(self) -> Iterator[tuple[int, int]]:
        step = _chunk(self.flat)
        for start in range(0, self.numel, step):
            yield start, min(start + step, self.numel)


_NATIVE_ABS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _identical_finite(out: _Values, ref: _Values, start: int, stop: int) -> bool | None:
    """For elements [start, stop) that are bit for bit the reference's and all finite, whether any is
    nonzero; None for any other chunk (compared element by element).

    Identical finite values match under every rule with no error, so two cheap passes over the stored
    elements stand in for the float64 comparison: a reference checked against itself, a baseline computing
    exactly what the reference does. Measured on a CPU: a 397M-element gradient compared in 1/6 of the time."""
    o, r = out.raw(start, stop), ref.raw(start, stop)
    if o.dtype != r.dtype or out.fp4 != ref.fp4 or o.is_complex():
        return None
    if not same_bits(o, r):
        return None
    if out.fp4:  # every e2m1 code is finite; codes 0 and 8 (+0 and -0) are the zeros
        return bool((o & 0x77).any())
    if o.numel() == 0:
        return False
    magnitude = float((o if o.dtype in _NATIVE_ABS else o.to(torch.float32)).abs().amax())
    if not magnitude < math.inf:  # an inf or a NaN: the element-wise rules decide
        return None
    return magnitude > 0


def _logical_shape(tensor: torch.Tensor) -> tuple[int, ...]:
    if tensor.dtype == _FP4 and tensor.dim():
        return (*tensor.shape[:-1], tensor.shape[-1] * 2)
    return tuple(tensor.shape)


def _unravel(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for dim in reversed(shape):
        flat_index, i = divmod(flat_index, dim)
        index.append(i)
    return index[::-1]


def _num(x: float) -> str:
    return format(x, ".8g")


def _percent(count: int, total: int) -> str:
    pct = 100.0 * count / total
    return f"{pct:.1f}" if pct >= 0.1 or pct == 0 else f"{pct:.2g}"


# --- checks -----------------------------------------------------------------------------------------


def _not_plain(value: torch.Tensor) -> str | None:
    """Why a tensor is not a plain strided tensor, or None when it is."""
    if type(value) is not torch.Tensor:
        return f"a {type(value).__name__}"
    if value.is_meta:
        return "a meta tensor"
    if value.layout != torch.strided:
        return f"a {str(value.layout).removeprefix('torch.')} tensor"
    return None


def _to_float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:  # a Python int beyond float64
        return math.inf if value > 0 else -math.inf


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _check_reference(name: str, spec: TensorSpec, reference: Any) -> Comparison | None:
    def bad(why: str) -> Comparison:
        return _failure(Status.INVALID_REFERENCE, name, f"reference output '{name}' {why}")

    if spec.shape is None:
        if isinstance(reference, torch.Tensor):
            if _not_plain(reference) or reference.dim() != 0:
                return bad(f"is a {type(reference).__name__} of shape {list(reference.shape)}, not a number")
            if reference.device.type not in _DEVICES:
                raise ValueError(f"reference output '{name}' is on {reference.device}; compare CPU or CUDA tensors")
        elif not _is_number(reference):
            return bad(f"is a {type(reference).__name__}, not a number")
        if math.isnan(_to_float(reference)):
            return bad("is NaN")
        return None
    if not isinstance(reference, torch.Tensor):
        return bad(f"is a {type(reference).__name__}, not a tensor")
    why = _not_plain(reference)
    if why:
        return bad(f"is {why}, not a plain tensor")
    if reference.device.type not in _DEVICES:
        raise ValueError(f"reference output '{name}' is on {reference.device}; compare CPU or CUDA tensors")
    if reference.dtype.is_floating_point and reference.dtype != _FP4:  # fp4 (e2m1) has no NaN
        flat = reference.detach().reshape(-1)
        step = _chunk(flat)
        for start in range(0, flat.numel(), step):
            if torch.isnan(flat[start : start + step]).any():
                return bad("contains NaN (the reference must be defined everywhere)")
    return None


def _check_structure(name: str, spec: TensorSpec, value: Any, reference: Any) -> Comparison | None:
    declared = spec.dtype
    if spec.shape is None:
        if not _is_number(value):
            return _failure(Status.INCORRECT_SHAPE, name, f"output '{name}' is a {type(value).__name__}, not a Python number")
        if declared == DType.bool:
            ok = isinstance(value, bool)
        elif declared.is_floating:
            ok = not isinstance(value, bool)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            return _failure(Status.INCORRECT_DTYPE, name, f"output '{name}' is a Python {type(value).__name__}, declared {declared.value}")
        return None
    if not isinstance(value, torch.Tensor):
        what = value.type_name if isinstance(value, Unsupported) else type(value).__name__  # a type that could not cross from the worker
        return _failure(Status.INCORRECT_SHAPE, name, f"output '{name}' is a {what}, not a tensor")
    why = _not_plain(value)
    if why:
        return _failure(Status.INCORRECT_DTYPE, name, f"output '{name}' is {why}, not a plain tensor")
    if not isinstance(reference, torch.Tensor) or value.device != reference.device:
        where = reference.device if isinstance(reference, torch.Tensor) else "cpu"
        raise ValueError(f"output '{name}' is on {value.device}, its reference on {where}; compare tensors on one device")
    if value.dtype != declared.torch_dtype():
        got = str(value.dtype).removeprefix("torch.")
        return _failure(Status.INCORRECT_DTYPE, name, f"output '{name}' has dtype {got}, declared {declared.value}")
    shape, expected = _logical_shape(value), _logical_shape(reference)
    if shape != expected:
        return _failure(Status.INCORRECT_SHAPE, name, f"output '{name}' has shape {list(shape)}, the reference has {list(expected)}")
    return None


# --- threads ---------------------------------------------------------------------------------------


_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = 1


@contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch's intra-op work on one thread while outputs are compared.

    The comparison is memory-bound, so more threads gain little, and on a loaded host (the worker busy on
    another core, other jobs) every parallel region waits for its slowest, descheduled thread: measured
    10-20x slower than one thread. One thread also leaves the other cores to a worker being timed. The
    setting is process-wide, so concurrent comparisons share one save/restore."""
    global _threads_users, _threads_saved
    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = torch.get_num_threads()
            torch.set_num_threads(1)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                torch.set_num_threads(_threads_saved)


# --- values --------------------------------------------------------------------------------------


@dataclass
class _Result:
    failure: str | None  # message, None when the output passes
    max_abs: float
    max_rel: float
    ratio: float
    first_index: list[int] | None
    gross: int = 0
    near_miss: bool = False  # the failure is the matched ratio's, with no gross error


def _allowed_infinities(out: torch.Tensor, ref: torch.Tensor, tolerance: Tolerance) -> torch.Tensor:
    """The infinite outputs that match: identical to the reference's, and -inf only where the tolerance allows it."""
    same_inf = torch.isinf(out) & (out == ref)
    if not tolerance.allow_negative_inf:
        same_inf &= out > 0
    return same_inf


def _matching(out: torch.Tensor, ref: torch.Tensor, tolerance: Tolerance) -> torch.Tensor:
    """Which decoded elements match under the rules of the module docstring (finite and within tolerance,
    or an allowed infinity)."""
    diff = (out - ref).abs_()
    return (diff <= tolerance.allowed_error(ref.abs())) & torch.isfinite(diff) | _allowed_infinities(out, ref, tolerance)


class _Selection:
    """The floating outputs beside an integer output of the same declared shape: where each of them matches,
    an index that differs selected a candidate tying with the reference's (see "Selections")."""

    def __init__(self, pairs: list[tuple[Any, Any]], tolerance: Tolerance) -> None:
        self.pairs = [(_Values(out), _Values(ref)) for out, ref in pairs]
        self.tolerance = tolerance

    def values_match(self, start: int, stop: int) -> torch.Tensor:
        agree = None
        for out, ref in self.pairs:
            match = _matching(out.slice(start, stop), ref.slice(start, stop), self.tolerance)
            agree = match if agree is None else agree & match
        assert agree is not None
        return agree


def _selections(declared: dict[str, TensorSpec], outputs: dict[str, Any], references: dict[str, Any],
                tolerance: Tolerance) -> dict[str, _Selection]:
    """For each integer tensor output with floating outputs of its declared shape, those outputs."""
    found = {}
    for name, spec in declared.items():
        if spec.shape is None or spec.dtype.is_floating or spec.dtype == DType.bool:
            continue
        beside = [other for other, theirs in declared.items()
                  if theirs.shape is not None and theirs.dtype.is_floating and theirs.dims == spec.dims]
        if beside:
            found[name] = _Selection([(outputs[other], references[other]) for other in beside], tolerance)
    return found


def _compare_values(name: str, value: Any, reference: Any, tolerance: Tolerance, selection: _Selection | None = None) -> _Result:
    out, ref = _Values(value), _Values(reference)
    atol, rtol, cap = tolerance.max_atol, tolerance.max_rtol, tolerance.max_error_cap
    total = out.numel
    mismatched = 0
    max_abs = max_rel = 0.0
    first: tuple[int, float, float] | None = None  # flat index, got, expected
    over_cap: tuple[int, float, float, float] | None = None  # flat index, error, got, expected
    gross = 0
    first_gross: tuple[int, float, float] | None = None  # flat index, got, expected
    out_nonzero = ref_nonzero = False

    for start, stop in out.ranges():
        identical_nonzero = _identical_finite(out, ref, start, stop)
        if identical_nonzero is not None:  # no error anywhere in the chunk
            out_nonzero, ref_nonzero = out_nonzero or identical_nonzero, ref_nonzero or identical_nonzero
            continue
        o, r = out.slice(start, stop), ref.slice(start, stop)
        if not out_nonzero:
            out_nonzero = bool((o != 0).any())
        if not ref_nonzero:
            ref_nonzero = bool((r != 0).any())
        diff = (o - r).abs_()
        abs_ref = r.abs()
        scratch = tolerance.allowed_error(abs_ref)
        match = diff <= scratch
        far = diff > gross_error(tolerance, abs_ref)  # NaN differences (a NaN output) are handled below
        chunk_max = float(diff.max())  # NaN or inf exactly when some element is not finite on both sides
        if not math.isfinite(chunk_max):
            finite = torch.isfinite(diff)
            match &= finite
            match |= _allowed_infinities(o, r, tolerance)
            # the error of a non-finite element is 0 where it matches (an identical inf), else inf
            diff = torch.where(finite, diff, torch.where(match, 0.0, math.inf))
            chunk_max = float(diff.max())
            far |= ~torch.isfinite(o) & ~match
        far &= torch.isfinite(r)  # only against a finite reference
        n_far = int(torch.count_nonzero(far))
        if n_far and selection is not None:  # an index beside matching values selected a tying candidate
            far &= ~selection.values_match(start, stop)
            n_far = int(torch.count_nonzero(far))
        if n_far:
            gross += n_far
            if first_gross is None:
                i = int(far.to(torch.uint8).argmax())
                first_gross = (start + i, float(o[i]), float(r[i]))
        n_bad = o.numel() - int(torch.count_nonzero(match))
        if n_bad:
            mismatched += n_bad
            if first is None:
                i = int((~match).to(torch.uint8).argmax())
                first = (start + i, float(o[i]), float(r[i]))
        if cap is not None and over_cap is None and chunk_max > cap:
            i = int((diff > cap).to(torch.uint8).argmax())
            over_cap = (start + i, float(diff[i]), float(o[i]), float(r[i]))
        max_abs = max(max_abs, chunk_max)
        chunk_rel = float(torch.div(diff, abs_ref.clamp_min_(TINY), out=scratch).max())
        # NaN only from inf / inf: a mismatch against an infinite reference, whose error is inf
        max_rel = max(max_rel, math.inf if math.isnan(chunk_rel) else chunk_rel)

    ratio = 1.0 if total == 0 else (total - mismatched) / total
    first_index = None if first is None else _unravel(first[0], out.shape)
    failure = None
    near_miss = False
    where = "" if not out.shape else f"first at {first_index}: " if first else ""
    if not out_nonzero and ref_nonzero:
        failure = f"output '{name}' is all zeros, the reference is not"
    elif over_cap is not None:
        index, error, got, expected = over_cap
        at = f" at {_unravel(index, out.shape)}" if out.shape else ""
        failure = (f"output '{name}': absolute error {_num(error)}{at} exceeds max_error_cap {cap:g}"
                   f" (got {_num(got)}, expected {_num(expected)})")
    elif ratio < tolerance.required_matched_ratio:
        assert first is not None
        near_miss = first_gross is None
        bound = f"atol {atol:g} + rtol {rtol:g}*|ref|"
        if out.shape:
            failure = (f"output '{name}': {mismatched} of {total} elements ({_percent(mismatched, total)}%) outside {bound};"
                       f" {where}got {_num(first[1])}, expected {_num(first[2])}")
            if tolerance.required_matched_ratio < 1:
                failure += f"; matched ratio {ratio:.6g} < required {tolerance.required_matched_ratio:g}"
            if first_gross is not None and tolerance.required_matched_ratio < 1:  # where the ratio forgives, say what it never would
                failure += (f"; {gross} of them gross errors (beyond {_gross_bound(tolerance)}, or not finite where the reference is), "
                            f"first at {_unravel(first_gross[0], out.shape)}")
        else:
            failure = f"output '{name}': got {_num(first[1])}, expected {_num(first[2])}, outside {bound}"
    elif first_gross is not None:
        index, got, expected = first_gross
        at = f"first at {_unravel(index, out.shape)}: " if out.shape else ""
        failure = (f"output '{name}': {gross} of {total} elements ({_percent(gross, total)}%) are gross errors (beyond {_gross_bound(tolerance)}, "
                   f"or not finite where the reference is), whatever the matched ratio; "
                   f"{at}got {_num(got)}, expected {_num(expected)}")
    return _Result(failure, max_abs, max_rel, ratio, first_index, gross, near_miss)


# --- entry points -----------------------------------------------------------------------------------


def compare_outputs(
    outputs: dict[str, Any], references: dict[str, Any], declared: dict[str, TensorSpec], tolerance: Tolerance
) -> Comparison:
    """Compare one trial's outputs with the reference's; see the module docstring for the rules."""
    with _single_thread():
        return _compare(outputs, references, declared, tolerance)


def _compare(
    outputs: dict[str, Any], references: dict[str, Any], declared: dict[str, TensorSpec], tolerance: Tolerance
) -> Comparison:
    for name, spec in declared.items():
        if name not in references:
            return _failure(Status.INVALID_REFERENCE, name, f"reference output '{name}' is missing")
        bad = _check_reference(name, spec, references[name])
        if bad:
            return bad
    for name, spec in declared.items():
        if name not in outputs:
            return _failure(Status.INCORRECT_SHAPE, name, f"output '{name}' is missing")
        bad = _check_structure(name, spec, outputs[name], references[name])
        if bad:
            return bad
    for name in outputs:
        if name not in declared:
            return _failure(Status.INCORRECT_SHAPE, name, f"unexpected output '{name}' (declared: {', '.join(declared)})")

    failed: tuple[str, str] | None = None
    max_abs = max_rel = 0.0
    ratio = 1.0
    first_index = None
    gross = 0
    near_miss = False
    selections = _selections(declared, outputs, references, tolerance)
    for name in declared:
        result = _compare_values(name, outputs[name], references[name], tolerance, selections.get(name))
        gross += result.gross
        max_abs, max_rel = max(max_abs, result.max_abs), max(max_rel, result.max_rel)
        ratio = min(ratio, result.ratio)
        if failed is None:
            if result.failure is not None:
                failed = (name, result.failure)
                first_index = result.first_index
                near_miss = result.near_miss
            elif first_index is None:
                first_index = result.first_index
    if failed is None:
        return Comparison(Status.PASSED, None, "", max_abs, max_rel, ratio, first_index, gross)
    return Comparison(Status.INCORRECT_NUMERICAL, failed[0], failed[1], max_abs, max_rel, ratio, first_index, gross, near_miss and gross == 0)


def merge(comparisons: list[Comparison]) -> Comparison:
    """Fold the comparisons of several trials: the first failure wins (status, output, message and
    index); the errors are the maxima over the trials, the matched ratio the minimum. When every trial
    passed, the index is the first trial's that has one."""
    if not comparisons:
        raise ValueError("merge() needs at least one comparison")
    winner = next((c for c in comparisons if c.status != Status.PASSED), None)
    if winner is None:
        index = next((c.first_mismatch_index for c in comparisons if c.first_mismatch_index is not None), None)
        status, output, message = Status.PASSED, None, ""
    else:
        index, status, output, message = winner.first_mismatch_index, winner.status, winner.output, winner.message
    return Comparison(
        status=status,
        output=output,
        message=message,
        max_absolute_error=max(c.max_absolute_error for c in comparisons),
        max_relative_error=max(c.max_relative_error for c in comparisons),
        matched_ratio=min(c.matched_ratio for c in comparisons),
        first_mismatch_index=index,
        gross_errors=max(c.gross_errors for c in comparisons),
        near_miss=winner is not None and winner.near_miss and all(c.gross_errors == 0 for c in comparisons),
    )
