"""Safetensors inputs whose file is absent, drawn from the definition instead (asked for with
`--synthesize-missing-blobs`; every trace of such a workload says so).

Public FlashInfer-Bench problems name trace blobs that are published separately. Their index
inputs must be valid for the tensors they index, so integer inputs are drawn by name:

- ``<p>_indptr`` (1-D, n + 1 entries): sorted offsets from 0 to the pool size, where the pool is
  the length of ``<p>_indices`` if there is one, else the leading dimension of another input named
  ``<p>...`` (``qo`` also finds ``q``), else of the first floating input; segments are non-empty
  when the pool is large enough;
- ``<p>_indices``: values in [0, rows) where rows is the least leading dimension of the floating
  inputs of 3+ dims named like a cache, pool or page table (``cache``, ``pool``, ``page``, ``kv``),
  else of every floating input of 2+ dims; distinct where there are enough rows;
- ``*_last_page_len``: in [1, page_size] (the ``page_size`` axis, else dim 1 of that pool);
- other integers: in [0, rows), bool a fair coin; floating inputs as random inputs of the profile.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from solbench.data.dtypes import DType

if TYPE_CHECKING:
    import torch

    from solbench.data.problem import Problem

POOL_WORDS = ("cache", "pool", "page", "kv")


def synthesize_input(problem: Problem, name: str, axes: dict[str, int], generator: torch.Generator, device: torch.device,
                     profile: str) -> Any:
    """A value for input `name` of the problem at these axes (see the module docstring)."""
    import torch

    from solbench.data.inputs import random_tensor
    from solbench.data.profiles import sol_execbench_tensor

    declared = problem.definition.inputs[name]
    shape = declared.resolve_shape(axes)
    dtype = declared.dtype
    if dtype.is_floating:
        if profile == "sol-execbench":
            return sol_execbench_tensor(name, dtype, shape, "", generator, device)
        return random_tensor(dtype, shape, declared.distribution, axes, generator, device)
    if dtype == DType.bool:
        return torch.randint(0, 2, shape, generator=generator, device=device).bool()
    shapes = {n: (spec.dtype, spec.resolve_shape(axes)) for n, spec in problem.definition.inputs.items() if spec.shape}
    target = dtype.torch_dtype()
    if name.endswith("indptr") and len(shape) == 1:
        prefix = name[: -len("indptr")].rstrip("_")
        return _offsets(shape[0], _pool_size(prefix, name, shapes), generator, device).to(target)
    if name.endswith("last_page_len"):
        page = axes.get("page_size") or _page_size(shapes)
        return torch.randint(1, max(1, page) + 1, shape, generator=generator, device=device, dtype=torch.int64).to(target)
    rows = _rows(shapes)
    if name.endswith("indices") and math.prod(shape) <= rows:
        order = torch.randperm(rows, generator=generator, device=device)[: math.prod(shape)]
        return order.reshape(shape).to(target)
    return torch.randint(0, rows, shape, generator=generator, device=device, dtype=torch.int64).to(target)


def _offsets(entries: int, pool: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """entries sorted offsets: 0 first, pool last; non-empty segments when the pool allows."""
    import torch

    segments = max(entries - 1, 0)
    if segments == 0:
        return torch.zeros(entries, dtype=torch.int64, device=device)
    if pool >= segments:
        cuts = torch.randperm(pool - 1, generator=generator, device=device)[: segments - 1] + 1 if segments > 1 else torch.empty(0, dtype=torch.int64, device=device)
        cuts = cuts.sort().values
    else:
        cuts = torch.randint(0, pool + 1, (segments - 1,), generator=generator, device=device).sort().values
    ends = torch.tensor([0], dtype=torch.int64, device=device), cuts.to(torch.int64), torch.tensor([pool], dtype=torch.int64, device=device)
    return torch.cat(ends)


def _pool_size(prefix: str, own: str, shapes: dict[str, tuple[DType, tuple[int, ...]]]) -> int:
    indices = shapes.get(f"{prefix}_indices") or shapes.get(f"{prefix}indices")
    if indices is not None:
        return math.prod(indices[1])
    starts = (prefix, "q") if prefix == "qo" else (prefix,)
    for name, (_, shape) in shapes.items():
        if name != own and prefix and name.startswith(starts) and not name.endswith(("indptr", "last_page_len")) and shape:
            return shape[0]
    floating = [shape for dtype, shape in shapes.values() if dtype.is_floating and shape]
    return floating[0][0] if floating else 0


def _pools(shapes: dict[str, tuple[DType, tuple[int, ...]]]) -> list[tuple[int, ...]]:
    named = [shape for name, (dtype, shape) in shapes.items() if dtype.is_floating and len(shape) >= 3 and any(w in name.lower() for w in POOL_WORDS)]
    return named or [shape for dtype, shape in shapes.values() if dtype.is_floating and len(shape) >= 2]


def _rows(shapes: dict[str, tuple[DType, tuple[int, ...]]]) -> int:
    pools = _pools(shapes)
    return max(1, min((shape[0] for shape in pools), default=1))


def _page_size(shapes: dict[str, tuple[DType, tuple[int, ...]]]) -> int:
    pools = [shape for shape in _pools(shapes) if len(shape) >= 4]
    if not pools:
        return 1
    shape = pools[0]
    return shape[2] if shape[1] == 2 and len(shape) >= 5 else shape[1]  # [pages, 2, page_size, H, D] or [pages, page_size, H, D]
