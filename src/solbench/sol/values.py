"""Value precision: the narrowest format that holds a tensor's values exactly.

A bf16 tensor cast to fp32 still holds bf16 values, and an fp8 tensor times a per-tensor or block
scale holds fp8 values times a scale: a contraction of such operands runs exactly on the narrow
tensor cores with fp32 accumulation, so it is priced at their rate, whatever dtype stores it.
Arithmetic on values produces full precision (the storage dtype).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from solbench.data.dtypes import DType

if TYPE_CHECKING:
    import torch

# a -> the formats that hold every value of a exactly (a itself included)
_HELD_BY: dict[DType, set[DType]] = {
    DType.float4_e2m1: {DType.float4_e2m1, DType.float8_e4m3fn, DType.float8_e5m2, DType.float16, DType.bfloat16, DType.float32, DType.float64},
    DType.float8_e4m3fn: {DType.float8_e4m3fn, DType.float16, DType.bfloat16, DType.float32, DType.float64},
    DType.float8_e5m2: {DType.float8_e5m2, DType.float16, DType.bfloat16, DType.float32, DType.float64},
    DType.float16: {DType.float16, DType.float32, DType.float64},
    DType.bfloat16: {DType.bfloat16, DType.float32, DType.float64},
    DType.float32: {DType.float32, DType.float64},
    DType.float64: {DType.float64},
    DType.int8: {DType.int8, DType.int16, DType.int32, DType.int64, DType.float16, DType.bfloat16, DType.float32, DType.float64},
    DType.uint8: {DType.uint8, DType.int16, DType.int32, DType.int64, DType.float16, DType.bfloat16, DType.float32, DType.float64},
    DType.bool: {DType.bool, DType.uint8, DType.int8, DType.int16, DType.int32, DType.int64, DType.float4_e2m1, DType.float8_e4m3fn,
                 DType.float8_e5m2, DType.float16, DType.bfloat16, DType.float32, DType.float64},
}
# Formats a constant's values are tried in, narrowest first (what a contraction can run on).
_CANDIDATES = (DType.float4_e2m1, DType.float8_e4m3fn, DType.float8_e5m2, DType.bfloat16, DType.float16, DType.float32)
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def holds(container: DType | None, values: DType | None) -> bool:
    """Whether every value of format `values` is exactly representable in `container`."""
    if container is None or values is None:
        return False
    if container == DType.float4_e2m1fn_x2:
        container = DType.float4_e2m1
    if values == DType.float4_e2m1fn_x2:
        values = DType.float4_e2m1
    return container == values or container in _HELD_BY.get(values, set())


def after_cast(source_values: DType | None, target: DType | None) -> DType | None:
    """Value precision of a cast: the source's values when the target holds them, else the target's."""
    return source_values if holds(target, source_values) else target


def narrower(a: DType | None, b: DType | None) -> DType | None:
    """The narrower of two value precisions (the one the other holds), for values drawn from both."""
    if a is None or b is None:
        return a or b
    return a if holds(b, a) else b


def widest(formats: list[DType | None]) -> DType | None:
    """A format that holds the values of all of them (the first that holds every other), or None."""
    known = [f for f in formats if f is not None]
    for candidate in known:
        if all(holds(candidate, other) for other in known):
            return candidate
    return None


def exact_format(tensor: torch.Tensor) -> DType | None:
    """The narrowest floating format that holds every value of a real tensor exactly (for constants
    such as decode tables); None for an empty or non-floating tensor. Works under any tensor mode."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        return _exact_format(tensor)


def _exact_format(tensor: torch.Tensor) -> DType | None:
    import torch

    if tensor.numel() == 0 or not (tensor.dtype.is_floating_point or tensor.dtype == torch.bool):
        return None
    values = tensor.detach().to(torch.float64).reshape(-1)
    if not bool(torch.isfinite(values).all()):
        return DType.from_torch(tensor.dtype) if tensor.dtype != torch.bool else DType.bool
    grid = torch.tensor(_E2M1, dtype=torch.float64)
    if bool(torch.isin(values.abs(), grid).all()):
        return DType.float4_e2m1
    for candidate in _CANDIDATES[1:]:
        target = candidate.torch_dtype()
        limit = torch.finfo(target).max
        if bool((values.abs() <= limit).all()) and bool((values.to(target).to(torch.float64) == values).all()):
            return candidate
    return DType.from_torch(tensor.dtype)
