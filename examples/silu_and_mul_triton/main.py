"""silu_and_mul_llama3_8b in Triton: output = silu(gate) * up, where gate_up = [gate | up].

One program per (row, block of columns); the math runs in fp32 and is rounded to bf16 once.
On a machine without a GPU, Triton's interpreter runs it: TRITON_INTERPRET=1 solbench eval ...
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def silu_and_mul_kernel(gate_up_ptr, output_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = columns < d
    gate = tl.load(gate_up_ptr + row * 2 * d + columns, mask=mask).to(tl.float32)
    up = tl.load(gate_up_ptr + row * 2 * d + d + columns, mask=mask).to(tl.float32)
    result = gate * tl.sigmoid(gate) * up
    tl.store(output_ptr + row * d + columns, result.to(output_ptr.dtype.element_ty), mask=mask)


def run(gate_up: torch.Tensor, output: torch.Tensor) -> None:
    rows, d = output.shape
    if rows and d:
        silu_and_mul_kernel[(rows, triton.cdiv(d, BLOCK))](gate_up.contiguous(), output, d, BLOCK=BLOCK)
