"""Least DRAM traffic of a contraction that any tiling within an on-chip capacity must pay.

Hong-Kung style: an output tile of m x n accumulators stays on chip while A and B stream through;
A is then read once per column of tiles and B once per row of tiles. Keeping all of A (or B) on
chip instead reads each operand once. The least over these schedules is the bound.
"""

from __future__ import annotations

from math import ceil

from solbench.sol.costs import Contraction

ACCUMULATOR_BYTES = 4  # fp32 accumulators


def _candidates(limit: int) -> list[int]:
    """Tile sizes to try: powers of two, the whole extent, and every size that splits it evenly
    into a given number of tiles (ceil(limit / k) for small k)."""
    values = {limit}
    size = 1
    while size < limit:
        values.add(size)
        size *= 2
    values.update(ceil(limit / k) for k in range(1, 65))
    return sorted(values)


def gemm_traffic(m: int, n: int, k: int, a: float, b: float, c: float, ea: float, eb: float, capacity: float) -> float:
    """Least bytes moved for one C[m, n] = A[m, k] B[k, n] (a, b, c: operand sizes in bytes)."""
    if a + b + c <= capacity:
        return a + b + c
    best = float("inf")
    if a + m * ACCUMULATOR_BYTES <= capacity or b + n * ACCUMULATOR_BYTES <= capacity:
        best = a + b + c  # one operand resident, the other streamed once, one output column/row at a time
    # For each tile width, the tallest tile that fits (and the same the other way round).
    for tile_n in _candidates(n):
        tile_m = min(m, int((capacity - tile_n * eb) // (tile_n * ACCUMULATOR_BYTES + ea)))
        if tile_m >= 1:
            best = min(best, a * ceil(n / tile_n) + b * ceil(m / tile_m) + c)
    for tile_m in _candidates(m):
        tile_n = min(n, int((capacity - tile_m * ea) // (tile_m * ACCUMULATOR_BYTES + eb)))
        if tile_n >= 1:
            best = min(best, a * ceil(n / tile_n) + b * ceil(m / tile_m) + c)
    if best == float("inf"):  # a capacity too small for even one accumulator: stream everything per output
        best = a * n + b * m + c
    return best


def attention_traffic(contraction: Contraction, capacity: float) -> float:
    """Flash-style: each query row keeps its q vector and fp32 accumulator on chip; K and V stream
    once per pass over the rows of one KV head (queries of a GQA group share the pass)."""
    c = contraction
    heads = max(1, c.batch)
    q_row = c.a_bytes / heads / max(1, c.m)  # bytes of one query row (all its d elements)
    state_per_row = q_row + c.n * ACCUMULATOR_BYTES
    passes = max(1, ceil(c.m * state_per_row / capacity))
    return c.a_bytes + c.c_bytes + (c.b_bytes + c.extra_bytes) * passes


def contraction_surplus(contraction: Contraction, capacity: float) -> float:
    """Traffic beyond reading every operand and writing the result once."""
    c = contraction
    compulsory = c.a_bytes + c.b_bytes + c.c_bytes + c.extra_bytes
    if c.kind == "attention":
        return max(0.0, attention_traffic(c, capacity) - compulsory)
    batch = max(1, c.batch)
    ea, eb, _ = c.element_bytes
    per_batch = gemm_traffic(c.m, c.n, c.k, c.a_bytes / batch, c.b_bytes / batch, c.c_bytes / batch, ea, eb, capacity)
    return max(0.0, per_batch * batch - compulsory)
