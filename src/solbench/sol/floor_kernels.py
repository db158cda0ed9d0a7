"""The two kernels that `solbench hw calibrate` times for the latency floors (solbench.sol.calibrate):
one that does nothing, and one that reads one 128-byte cache line (32 float32) and writes it back
elsewhere (the store keeps the load from being dropped). Imported only where CUDA is."""

from __future__ import annotations

import triton
import triton.language as tl

LINE_FLOATS = 32  # one 128-byte cache line of float32


@triton.jit
def empty_kernel(x_ptr):
    pass


@triton.jit
def one_line_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets))


def launch_empty(x: object) -> None:
    empty_kernel[(1,)](x, num_warps=1)


def launch_one_line(x: object, y: object) -> None:
    one_line_kernel[(1,)](x, y, BLOCK=LINE_FLOATS, num_warps=1)
