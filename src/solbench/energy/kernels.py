"""The calibration's kernels (GPU): each one call of a known amount of data movement and arithmetic.

- copies (torch `copy_` of random fp32 data): DRAM-sized ones (source and destination far larger than
  the L2: every byte goes through DRAM and the L2) and L2-resident ones (both fit in the L2 many times
  over and are copied again and again: the bytes move between the L2 and the SMs only);
- matrix products per dtype (cuBLAS through torch: bf16, fp16, tf32, fp64, fp8 `_scaled_mm`, int8
  `_int_mm`): 2 n^3 FLOPs on that tensor unit, the operands and the result once through DRAM;
- fused multiply-add loops per dtype (a Triton kernel: each element loaded once, `x = x * a + b`
  ITERATIONS times in registers, stored once): 2 FLOPs per iteration and element on the vector units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

MIB = 1 << 20


@dataclass
class Kernel:
    name: str
    run: Callable[[], Any]  # one call, not synchronised
    dram_bytes: float
    l2_bytes: float
    flops: dict[str, float] = field(default_factory=dict)


def copies(device: str, scale: float = 1.0) -> list[Kernel]:
    import torch

    found = []
    for size, resident in ((256 * MIB, False), (1024 * MIB, False), (4 * MIB, True), (10 * MIB, True)):
        size = size if resident else max(64 * MIB, int(size * scale)) // MIB * MIB
        source = torch.randn(size // 4, device=device)
        target = torch.empty_like(source)
        found.append(Kernel(f"{'l2' if resident else 'dram'}-copy-{size // MIB}MiB", lambda s=source, t=target: t.copy_(s),
                            0.0 if resident else 2.0 * size, 2.0 * size))
    return found


def matmuls(device: str, scale: float = 1.0) -> list[Kernel]:
    """One or two sizes per dtype; a dtype this torch or GPU cannot multiply is left out."""
    import torch

    big = max(1024, int(8192 * scale ** (1 / 3)) // 256 * 256)
    small = max(1024, big // 2)
    found = []
    plans: list[tuple[str, Any, list[int]]] = [("tensor_bf16", torch.bfloat16, [big, small]), ("tensor_fp16", torch.float16, [big, small]),
                                               ("tensor_tf32", torch.float32, [big]), ("tensor_fp64", torch.float64, [small])]
    for unit, dtype, sizes in plans:
        for n in sizes:
            a = torch.randn(n, n, device=device).to(dtype)
            b = torch.randn(n, n, device=device).to(dtype)
            out = torch.empty(n, n, device=device, dtype=dtype)
            run = (lambda a=a, b=b, out=out: _tf32_mm(a, b, out)) if unit == "tensor_tf32" else (lambda a=a, b=b, out=out: torch.mm(a, b, out=out))
            found.append(Kernel(f"matmul-{unit.removeprefix('tensor_')}-{n}", run, 3.0 * n * n * a.element_size(), 3.0 * n * n * a.element_size(),
                                {unit: 2.0 * n**3}))
    for n in (big, small):
        fp8 = _fp8_matmul(device, n)
        if fp8 is not None:
            found.append(fp8)
    int8 = _int8_matmul(device, big)
    if int8 is not None:
        found.append(int8)
    return found


def _tf32_mm(a: Any, b: Any, out: Any) -> None:
    import torch

    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        torch.mm(a, b, out=out)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def _fp8_matmul(device: str, n: int) -> Kernel | None:
    import torch

    try:
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=device)
        run = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
        run()
    except (RuntimeError, AttributeError, TypeError):
        return None
    return Kernel(f"matmul-fp8-{n}", run, 2.0 * n * n + 2.0 * n * n, 2.0 * n * n + 2.0 * n * n, {"tensor_fp8": 2.0 * n**3})


def _int8_matmul(device: str, n: int) -> Kernel | None:
    import torch

    try:
        a = torch.randint(-100, 100, (n, n), device=device, dtype=torch.int8)
        b = torch.randint(-100, 100, (n, n), device=device, dtype=torch.int8)
        run = lambda: torch._int_mm(a, b)  # noqa: E731
        run()
    except (RuntimeError, AttributeError, TypeError):
        return None
    return Kernel(f"matmul-int8-{n}", run, 2.0 * n * n + 4.0 * n * n, 2.0 * n * n + 4.0 * n * n, {"tensor_int8": 2.0 * n**3})


_FMA_KERNEL: Any = None


def fma_kernel() -> Any:
    """The Triton kernel of the FMA loops (compiled on first use)."""
    global _FMA_KERNEL
    if _FMA_KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def fma_loop(x_ptr, y_ptr, ab_ptr, n, ITERATIONS: tl.constexpr, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask)
            a_value = tl.load(ab_ptr)  # in x's dtype: the arithmetic stays in it (a Python float would promote fp16 to fp32)
            b_value = tl.load(ab_ptr + 1)
            for _ in range(ITERATIONS):
                x = x * a_value + b_value
            tl.store(y_ptr + offsets, x, mask=mask)

        _FMA_KERNEL = fma_loop
    return _FMA_KERNEL


def launch_fma(x: Any, y: Any, iterations: int, block: int = 1024, ab: Any = None) -> None:
    """y = x after `iterations` of x = x * 0.999 + 0.001 per element (values stay near 1 in every dtype);
    `ab`: those two constants as a tensor of x's dtype on its device (made here when not given)."""
    import torch
    import triton

    if ab is None:
        ab = torch.tensor([0.999, 0.001], dtype=x.dtype, device=x.device)
    kernel = fma_kernel()
    kernel[(triton.cdiv(x.numel(), block),)](x, y, ab, x.numel(), ITERATIONS=iterations, BLOCK=block)


def fma_loops(device: str, scale: float = 1.0) -> list[Kernel]:
    import torch

    found = []
    elements = max(1 << 20, int((1 << 22) * scale))
    for unit, dtype in (("vector_fp32", torch.float32), ("vector_fp16", torch.float16), ("vector_fp64", torch.float64)):
        x = torch.randn(elements, device=device).to(dtype)
        y = torch.empty_like(x)
        ab = torch.tensor([0.999, 0.001], dtype=dtype, device=device)
        for iterations in (512, 2048):
            moved = 2.0 * elements * x.element_size()
            found.append(Kernel(f"fma-{unit.removeprefix('vector_')}-{iterations}", lambda x=x, y=y, i=iterations, ab=ab: launch_fma(x, y, i, ab=ab),
                                moved, moved, {unit: 2.0 * iterations * elements}))
    return found


def all_kernels(device: str, scale: float = 1.0) -> list[Kernel]:
    return [*copies(device, scale), *matmuls(device, scale), *fma_loops(device, scale)]
