"""Is T_SOL a valid bound on a real GPU, and how tight is it?

For each workload (bf16 GEMMs of several shapes, fp8 GEMM, SDPA prefill and decode, RMSNorm,
LayerNorm, softmax, an elementwise chain, a convolution) this times the fastest implementation at
hand (cuBLAS through torch, torch.compile, SDPA's flash kernel, cuDNN) with CUDA events, an L2
flush before every call and the median of many calls, and compares it with T_SOL of the hardware
spec. measured / T_SOL >= 1 must hold everywhere (a smaller ratio means the bound is invalid);
how close it is to 1 is the bound's tightness.

    python benchmarks/sol_tightness_gpu.py [--hardware H200] [--repeats 50] [--json out.json] [--no-compile]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any, Callable

import torch
import torch.nn.functional as F

from solbench.sol.analysis import analyze
from solbench.sol.hardware import get_hardware
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.workload import Workload

CASES: list[dict[str, Any]] = []


def case(name: str, inputs: dict[str, tuple[list[int] | None, str]], outputs: dict[str, tuple[list[int], str]], reference: str, implementations: dict[str, Callable[..., Any]], scalars: dict[str, float] | None = None) -> None:
    CASES.append(dict(name=name, inputs=inputs, outputs=outputs, reference=reference, implementations=implementations, scalars=scalars or {}))


def gemm_case(m: int, n: int, k: int) -> None:
    case(
        f"gemm_bf16_{m}x{n}x{k}",
        {"a": ([m, k], "bfloat16"), "b": ([n, k], "bfloat16")},
        {"c": ([m, n], "bfloat16")},
        "import torch\ndef run(a, b):\n    return a @ b.t()\n",
        {"cublas": lambda a, b: a @ b.t()},
    )


for shape in [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (16, 8192, 8192), (1024, 14336, 4096), (128, 4096, 14336)]:
    gemm_case(*shape)


def upcast_gemm_case(n: int) -> None:
    """bf16 in, fp32 math in the reference, bf16 out (issue 11): bf16 tensor cores compute it exactly."""
    case(
        f"gemm_bf16_upcast_{n}",
        {"a": ([n, n], "bfloat16"), "b": ([n, n], "bfloat16")},
        {"c": ([n, n], "bfloat16")},
        "import torch\ndef run(a, b):\n    return (a.to(torch.float32) @ b.to(torch.float32)).to(torch.bfloat16)\n",
        {"cublas_bf16": lambda a, b: a @ b},
    )


for size in (1024, 2048, 4096, 8192):
    upcast_gemm_case(size)

case(
    "gemm_fp8_8192",
    {"a": ([8192, 8192], "float8_e4m3fn"), "b": ([8192, 8192], "float8_e4m3fn"), "scale_a": ([], "float32"), "scale_b": ([], "float32")},
    {"c": ([8192, 8192], "bfloat16")},
    "import torch\ndef run(a, b, scale_a, scale_b):\n    return torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)\n",
    {"cublas": lambda a, b, sa, sb: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)},
)

SDPA = "import torch\nimport torch.nn.functional as F\ndef run(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, is_causal={causal})\n"


def flash(causal: bool) -> Callable[..., Any]:
    def call(q, k, v):
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return call


def sdpa_any(causal: bool) -> Callable[..., Any]:
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)


for b, h, s, causal in [(4, 32, 4096, True), (8, 16, 2048, False)]:
    shape = [b, h, s, 128]
    case(
        f"sdpa_prefill_b{b}h{h}s{s}{'_causal' if causal else ''}",
        {"q": (shape, "bfloat16"), "k": (shape, "bfloat16"), "v": (shape, "bfloat16")},
        {"o": (shape, "bfloat16")},
        SDPA.format(causal=causal),
        {"flash": flash(causal), "sdpa": sdpa_any(causal)},
    )
case(
    "sdpa_decode_b32h32s8192",
    {"q": ([32, 32, 1, 128], "bfloat16"), "k": ([32, 32, 8192, 128], "bfloat16"), "v": ([32, 32, 8192, 128], "bfloat16")},
    {"o": ([32, 32, 1, 128], "bfloat16")},
    SDPA.format(causal=False),
    {"flash": flash(False), "sdpa": sdpa_any(False)},
)

RMSNORM = "import torch\ndef run(x, w, eps):\n    h = x.float()\n    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n    return (h * w.float()).to(x.dtype)\n"


def rmsnorm(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * w.float()).to(x.dtype)


case("rmsnorm_bf16_16384x4096", {"x": ([16384, 4096], "bfloat16"), "w": ([4096], "bfloat16"), "eps": (None, "float32")},
     {"y": ([16384, 4096], "bfloat16")}, RMSNORM, {"eager": rmsnorm, "compiled": ("compile", rmsnorm)}, {"eps": 1e-5})
case("layernorm_bf16_16384x4096", {"x": ([16384, 4096], "bfloat16"), "w": ([4096], "bfloat16"), "b": ([4096], "bfloat16")},
     {"y": ([16384, 4096], "bfloat16")},
     "import torch\nimport torch.nn.functional as F\ndef run(x, w, b):\n    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)\n",
     {"eager": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)})
case("softmax_fp32_8192x8192", {"x": ([8192, 8192], "float32")}, {"y": ([8192, 8192], "float32")},
     "import torch\ndef run(x):\n    return torch.softmax(x, dim=-1)\n", {"eager": lambda x: torch.softmax(x, dim=-1)})


def chain(x, y):
    return torch.tanh(x * torch.sigmoid(y)) + 0.5 * x


case("elementwise_bf16_64M", {"x": ([1 << 26], "bfloat16"), "y": ([1 << 26], "bfloat16")}, {"z": ([1 << 26], "bfloat16")},
     "import torch\ndef run(x, y):\n    return torch.tanh(x * torch.sigmoid(y)) + 0.5 * x\n", {"eager": chain, "compiled": ("compile", chain)})
case("conv2d_bf16_b32c128_56x56", {"x": ([32, 128, 56, 56], "bfloat16"), "w": ([128, 128, 3, 3], "bfloat16")},
     {"y": ([32, 128, 56, 56], "bfloat16")},
     "import torch\nimport torch.nn.functional as F\ndef run(x, w):\n    return F.conv2d(x, w, padding=1)\n",
     {"cudnn": lambda x, w: F.conv2d(x, w, padding=1),
      "cudnn_channels_last": ("channels_last", lambda x, w: F.conv2d(x, w, padding=1))})


def make_problem(spec: dict[str, Any]) -> tuple[Problem, Workload]:
    definition = Definition.model_validate({
        "name": spec["name"],
        "inputs": {n: {"shape": s, "dtype": d} for n, (s, d) in spec["inputs"].items()},
        "outputs": {n: {"shape": s, "dtype": d} for n, (s, d) in spec["outputs"].items()},
        "reference": spec["reference"],
    })
    inputs = {n: ({"type": "scalar", "value": spec["scalars"][n]} if s is None else {"type": "random"}) for n, (s, _) in spec["inputs"].items()}
    workload = Workload.model_validate({"uuid": spec["name"], "axes": {}, "inputs": inputs})
    return Problem(definition, [workload]), workload


def real_inputs(spec: dict[str, Any]) -> list[Any]:
    values = []
    for name, (shape, dtype) in spec["inputs"].items():
        if shape is None:
            values.append(spec["scalars"][name])
        elif dtype.startswith("float8"):
            values.append(torch.randn(shape, device="cuda").clamp(-4, 4).to(getattr(torch, dtype)))
        elif shape == []:
            values.append(torch.tensor(1.0, device="cuda"))
        else:
            values.append(torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)))
    return values


def time_ms(function: Callable[..., Any], arguments: list[Any], repeats: int) -> list[float]:
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")  # 4x the H200's L2
    for _ in range(3):
        function(*arguments)
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function(*arguments)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hardware", default="H200")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    hardware = get_hardware(args.hardware)
    rows = []
    for spec in CASES:
        problem, workload = make_problem(spec)
        bound = analyze(problem, workload, hardware, "strict")
        arguments = real_inputs(spec)
        best_name, best = None, float("inf")
        timings: dict[str, float] = {}
        for name, implementation in spec["implementations"].items():
            call, call_arguments = implementation, arguments
            if isinstance(implementation, tuple) and implementation[0] == "compile":
                if args.no_compile:
                    continue
                call = torch.compile(implementation[1])
            elif isinstance(implementation, tuple) and implementation[0] == "channels_last":
                call = implementation[1]
                call_arguments = [a.contiguous(memory_format=torch.channels_last) if isinstance(a, torch.Tensor) and a.dim() == 4 else a for a in arguments]
            try:
                median = statistics.median(time_ms(call, call_arguments, args.repeats))
            except Exception as exc:  # noqa: BLE001 - one backend failing must not stop the table
                print(f"{spec['name']}: {name} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=sys.stderr)
                continue
            timings[name] = median
            if median < best:
                best_name, best = name, median
        sol_ms = bound.t_sol_s * 1e3
        rows.append({
            "workload": spec["name"], "t_sol_ms": sol_ms, "best_ms": best, "best": best_name, "ratio": best / sol_ms,
            "bottleneck": bound.bottleneck, "timings_ms": timings, "t_fused_ms": bound.t_fused_s * 1e3,
            "uncovered": bound.uncovered_ops,
        })
        print(f"{spec['name']:<36} T_SOL {sol_ms:9.4f} ms  best {best:9.4f} ms ({best_name})  measured/T_SOL {best / sol_ms:6.2f}  [{bound.bottleneck}]", flush=True)
    invalid = [r for r in rows if r["ratio"] < 1.0]
    print()
    print(f"{'workload':<36} {'T_SOL ms':>10} {'best ms':>10} {'ratio':>7}  implementation / bottleneck")
    for r in rows:
        print(f"{r['workload']:<36} {r['t_sol_ms']:10.4f} {r['best_ms']:10.4f} {r['ratio']:7.2f}  {r['best']} / {r['bottleneck']}")
    print(f"{len(rows)} workloads on {torch.cuda.get_device_name()}; bound beaten (ratio < 1): {len(invalid)}")
    if args.json_path:
        with open(args.json_path, "w") as handle:
            json.dump({"device": torch.cuda.get_device_name(), "hardware": hardware.name, "rows": rows}, handle, indent=1)
    if invalid:
        sys.exit(1)


if __name__ == "__main__":
    main()
