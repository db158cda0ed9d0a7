"""The workload grid of an extracted problem: realistic (batch, seq) pairs, in a fixed order,
keeping those whose tensors fit in a few GiB of device memory."""

from __future__ import annotations

import uuid

from solbench.dataset.extract.capture import Captured, Tensor
from solbench.dataset.extract.modules import BATCH, SEQ

NAMESPACE = uuid.UUID("8b0c3f52-6a1e-4e0b-9d7a-2f4c1a9e5d37")
PREFERRED = [(1, 128), (1, 1024), (4, 512), (1, 8192), (8, 2048), (16, 1024), (32, 512), (64, 128), (4, 4096), (2, 8192)]
FALLBACK = [(b, s) for s in (128, 256, 512, 1024, 2048, 4096, 8192) for b in (1, 2, 4, 8, 16, 32, 64)]
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


def call_bytes(captured: Captured, consts: dict[str, int], batch: int, seq: int) -> int:
    axes = consts | {BATCH: batch, SEQ: seq}
    moving = [t for t in captured.inputs if BATCH in t.dims or SEQ in t.dims]  # the weights are the same at every size
    return sum(_bytes(t, axes) for t in moving) + 3 * sum(_bytes(t, axes) for t in captured.outputs)


def grid(captured: Captured, consts: dict[str, int]) -> list[dict[str, int]]:
    """Up to MOST (batch, seq) pairs, the preferred ones first, topped up with the smallest others."""
    fits = [(b, s) for b, s in PREFERRED if call_bytes(captured, consts, b, s) <= BUDGET]
    for pair in FALLBACK:
        if len(fits) >= LEAST:
            break
        if pair not in fits and call_bytes(captured, consts, *pair) <= BUDGET:
            fits.append(pair)
    fits = sorted(fits[:MOST], key=lambda p: (p[0] * p[1], p))
    return [{BATCH: b, SEQ: s} for b, s in fits]


def tolerance(captured: Captured, backward: bool) -> dict:
    dtype = next((t.dtype for t in captured.outputs if t.dtype in TOLERANCES), "float32")
    atol, rtol, ratio = TOLERANCES[dtype]
    if backward:
        atol, rtol, ratio = 2 * atol, 2 * rtol, 0.99
    return {"max_atol": atol, "max_rtol": rtol, "required_matched_ratio": ratio, "max_error_cap": None, "allow_negative_inf": False}


def workload_lines(name: str, captured: Captured, consts: dict[str, int], backward: bool) -> list[dict]:
    lines = []
    for axes in grid(captured, consts):
        lines.append({
            "uuid": str(uuid.uuid5(NAMESPACE, f"{name}/{axes[BATCH]}/{axes[SEQ]}")),
            "axes": {k: v for k, v in axes.items() if _uses(captured, k)},
            "inputs": {t.name: {"type": "random"} for t in captured.inputs},
            "tolerance": tolerance(captured, backward),
        })
    return lines


def _uses(captured: Captured, axis: str) -> bool:
    return any(axis in t.dims for t in captured.inputs + captured.outputs)
