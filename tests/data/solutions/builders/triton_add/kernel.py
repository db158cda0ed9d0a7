import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b, mask=mask)


def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    n = out.numel()
    add_kernel[(triton.cdiv(n, 64),)](a, b, out, n, BLOCK=64)
