"""Data-dependent ops on tensors whose values are not known (fake tensors): their least possible
result, so that the bound never counts more work than is certainly needed.

- sizes: nonzero, argwhere, masked_select, boolean indexing and repeat_interleave by a tensor give
  no element at all; unique gives one value (none of an empty tensor); bincount gives its minlength
  (one bin for a non-empty input);
- values read back to Python (`.item()`, `.tolist()`): zero (False for a bool);
- ops whose fake kernel refuses arguments a real kernel takes (block-scaled `_scaled_mm`) get their
  output from the shape rule of the op.
"""

from __future__ import annotations

from typing import Any

SIZE_DEPENDENT = {"nonzero", "argwhere", "masked_select", "_unique2", "unique_dim", "unique_consecutive", "bincount",
                  "repeat_interleave", "_local_scalar_dense", "index", "index_put", "index_put_", "_index_put_impl", "_index_put_impl_"}


def needs_least(packet: str, args: tuple) -> bool:
    """Whether this op on these (fake) arguments has a size or value that depends on data."""
    import torch

    if packet not in SIZE_DEPENDENT:
        return False
    if packet == "repeat_interleave":
        return len(args) >= 2 and isinstance(args[1], torch.Tensor) or (len(args) == 1 and isinstance(args[0], torch.Tensor) and args[0].dtype != torch.bool)
    if packet.startswith(("index", "_index_put")):
        indices = args[1] if len(args) > 1 else []
        return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in (indices or []))
    return True


def least_result(func: Any, packet: str, args: tuple, kwargs: dict, fake_mode: Any) -> Any:
    import torch

    source = args[0]
    if packet == "_local_scalar_dense":
        return False if source.dtype == torch.bool else (0.0 if source.dtype.is_floating_point else 0)
    if packet in ("nonzero", "argwhere"):
        return source.new_empty((0, source.dim()), dtype=torch.int64)
    if packet == "masked_select":
        return source.new_empty((0,))
    if packet == "repeat_interleave":
        if len(args) == 1:  # repeat_interleave(repeats): indices
            return source.new_empty((0,), dtype=torch.int64)
        dim = kwargs.get("dim", args[2] if len(args) > 2 else None)
        if dim is None:
            return source.new_empty((0,))
        shape = list(source.shape)
        shape[dim % max(1, source.dim())] = 0
        return source.new_empty(shape)
    if packet in ("_unique2", "unique_dim", "unique_consecutive"):
        count = min(1, source.numel())
        values = source.new_empty((count,)) if packet != "unique_dim" else source.new_empty((count, *source.shape[1:]))
        return values, source.new_empty(source.shape, dtype=torch.int64), source.new_empty((count,), dtype=torch.int64)
    if packet == "bincount":
        minlength = kwargs.get("minlength", args[2] if len(args) > 2 else 0) or 0
        weights = kwargs.get("weights", args[1] if len(args) > 1 else None)
        size = max(int(minlength), 1 if source.numel() else 0)
        dtype = weights.dtype if isinstance(weights, torch.Tensor) else torch.int64
        return source.new_empty((size,), dtype=dtype)
    if packet.startswith(("index_put", "_index_put")):  # x[mask] = v with no true element: nothing is written
        return source if packet.endswith("_") else source.clone()
    # boolean indexing: as indexing with the (empty) positions of the mask's true elements
    indices = list(args[1])
    expanded: list[Any] = []
    for index in indices:
        if isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8):
            expanded += [source.new_empty((0,), dtype=torch.int64)] * index.dim()
        else:
            expanded.append(index)
    return func(source, expanded, *args[2:], **kwargs)


def shape_rule_result(func: Any, packet: str, args: tuple, kwargs: dict, error: Exception) -> Any:
    """The output of an op whose fake kernel refused its arguments, from the op's shape rule; None
    when there is no rule for it."""
    import torch

    if packet in ("_scaled_mm", "_scaled_mm_v2", "_scaled_grouped_mm") and len(args) >= 2:
        a, b = args[0], args[1]
        out_dtype = kwargs.get("out_dtype") or (args[6] if len(args) > 6 and isinstance(args[6], torch.dtype) else None) or torch.bfloat16
        return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)
    return None
