"""The workload grid of an extracted problem: realistic (batch, tokens) pairs, in a fixed order,
keeping those whose tensors fit in a few GiB of device memory. The tokens are the recipe's second
var axis (seq_len, kv_len), or its number of pages (tokens / page size)."""

from __future__ import annotations

import uuid

from solbench.data.expressions import evaluate_integer
from solbench.dataset.extract.capture import Captured, Tensor
from solbench.dataset.extract.modules import BATCH, Recipe

NAMESPACE = uuid.UUID("8b0c3f52-6a1e-4e0b-9d7a-2f4c1a9e5d37")
PREFERRED = ((1, 128), (1, 1024), (4, 512), (1, 8192), (8, 2048), (16, 1024), (32, 512), (64, 128), (4, 4096), (2, 8192))
BATCHES = (1, 2, 4, 8, 16, 32, 64)
MOST, LEAST = 8, 6
BUDGET = 4 * 2**30  # activations, outputs and intermediates (estimated as twice the outputs) of one call; weights are apart
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}
TOLERANCES = {  # (max_atol, max_rtol, required_matched_ratio) as the bundled problems use them
    "bfloat16": (0.03, 0.03, 0.999),
    "float16": (0.01, 0.01, 0.999),
    "float32": (1e-4, 1e-4, 0.999),
}


def _bytes(tensor: Tensor, axes: dict[str, int]) -> int:
    count = 1
    for dim in tensor.dims:
        count *= dim if isinstance(dim, int) else axes[dim]
    return count * DTYPE_BYTES.get(tensor.dtype, 4)


def resolved(captured: Captured, consts: dict[str, int], var: dict[str, int]) -> dict[str, int]:
    """Every axis value of one workload: consts, the var axes, and the recipe's expressions of them."""
    axes = consts | var
    for name, expression in captured.exprs.items():
        axes[name] = evaluate_integer(expression, axes)
    return axes


def call_bytes(captured: Captured, consts: dict[str, int], var: dict[str, int]) -> int:
    axes = resolved(captured, consts, var)
    moving = set(captured.var_axes) | set(captured.exprs)
    changing = [t for t in captured.inputs if moving & set(map(str, t.dims))]  # the weights are the same at every size
    return sum(_bytes(t, axes) for t in changing) + 3 * sum(_bytes(t, axes) for t in captured.outputs)


def _pairs(recipe: Recipe) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    preferred = list(recipe.grid or PREFERRED)
    tokens = sorted({t for _, t in preferred} | (set() if recipe.grid else {128, 256, 512, 1024, 2048, 4096, 8192}))
    fallback = [(b, t) for t in tokens for b in BATCHES]
    return preferred, fallback


def grid(captured: Captured, consts: dict[str, int], recipe: Recipe) -> list[dict[str, int]]:
    """Up to MOST (batch, tokens) pairs, the preferred ones first, topped up with the smallest others."""
    second = captured.var_axes[1] if len(captured.var_axes) > 1 else None

    def var(pair: tuple[int, int]) -> dict[str, int]:
        return {BATCH: pair[0]} | ({second: pair[1] // recipe.step} if second else {})

    preferred, fallback = _pairs(recipe)
    if second is None:  # only batch_size varies
        preferred, fallback = [(b, 0) for b in BATCHES], []
    preferred, fallback = [p for p in preferred if p[1] % recipe.seq_multiple == 0], [p for p in fallback if p[1] % recipe.seq_multiple == 0]
    fits = [p for p in preferred if call_bytes(captured, consts, var(p)) <= BUDGET]
    for pair in fallback:
        if len(fits) >= LEAST:
            break
        if pair not in fits and call_bytes(captured, consts, var(pair)) <= BUDGET:
            fits.append(pair)
    fits = sorted(dict.fromkeys(fits[:MOST]), key=lambda p: (p[0] * p[1], p))
    return [var(p) for p in fits]


def tolerance(captured: Captured, backward: bool) -> dict:
    dtype = next((t.dtype for t in captured.outputs if t.dtype in TOLERANCES), "float32")
    atol, rtol, ratio = TOLERANCES[dtype]
    if backward:
        atol, rtol, ratio = 2 * atol, 2 * rtol, 0.99
    return {"max_atol": atol, "max_rtol": rtol, "required_matched_ratio": ratio, "max_error_cap": None, "allow_negative_inf": False}


def workload_lines(name: str, captured: Captured, consts: dict[str, int], backward: bool, recipe: Recipe) -> list[dict]:
    lines = []
    for axes in grid(captured, consts, recipe):
        key = "/".join(str(axes[a]) for a in captured.var_axes)
        lines.append({
            "uuid": str(uuid.uuid5(NAMESPACE, f"{name}/{key}")),
            "axes": {k: v for k, v in axes.items() if _uses(captured, k)},
            "inputs": {t.name: {"type": "custom" if t.custom else "random"} for t in captured.inputs},
            "tolerance": tolerance(captured, backward),
        })
    return lines


def _uses(captured: Captured, axis: str) -> bool:
    return any(axis in t.dims for t in captured.inputs + captured.outputs)
