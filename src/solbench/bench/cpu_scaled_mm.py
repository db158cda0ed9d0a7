"""`torch._scaled_mm` on CPU tensors through PyTorch's own CPU kernel rather than oneDNN's.

On CPUs with AMX-INT8 but no fp8 unit (Sapphire Rapids and later Xeons), PyTorch hands a CPU fp8
`_scaled_mm` to oneDNN, whose fp8 matmul there is a slow generic kernel: Llama-3-70B's fp8 down
projection at one token took 18.7 s per call, 1.4 s through PyTorch's own CPU kernel (operands widened
to fp32, scaled, fp32 accumulation), which PyTorch takes whenever oneDNN is off
(benchmarks/cpu_scaled_mm.py). The two agree to one bf16 rounding step. CPU workers only check
correctness (timing is the GPU's), so both workers of a CPU evaluation call the faster one: the
reference and a solution alike, the comparison stays even.
"""

from __future__ import annotations

import functools
from typing import Any

ROUTED = "__solbench_cpu_route__"


def route_cpu_scaled_mm(torch: Any) -> None:
    """Rebind `torch._scaled_mm` to call the original with oneDNN off for CPU operands (idempotent).
    Compiled code is left alone: under torch.compile the original is traced as it is."""
    original = torch._scaled_mm
    if getattr(original, ROUTED, False):
        return
    mkldnn = torch.backends.mkldnn
    compiling = torch.compiler.is_compiling

    @functools.wraps(original)
    def scaled_mm(*args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("self")
        if compiling() or getattr(getattr(first, "device", None), "type", None) != "cpu" or not mkldnn.enabled:
            return original(*args, **kwargs)
        mkldnn.enabled = False
        try:
            return original(*args, **kwargs)
        finally:
            mkldnn.enabled = True

    setattr(scaled_mm, ROUTED, True)
    torch._scaled_mm = scaled_mm
