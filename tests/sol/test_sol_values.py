"""Value precision: contractions are priced by the precision of the values their operands hold,
not by the dtype that stores them (issue 11, item 1)."""

from __future__ import annotations

import pytest
import torch

from solbench.sol.values import after_cast, exact_format, holds, widest
from solbench.data.dtypes import DType
from sol_testkit import sol, tensor_flops

BF16, F32, FP8 = "bfloat16", "float32", "float8_e4m3fn"
N = 4096


def test_holds_and_casts():
    assert holds(DType.float32, DType.bfloat16) and holds(DType.float32, DType.float16)
    assert not holds(DType.bfloat16, DType.float16) and not holds(DType.float16, DType.bfloat16)
    assert holds(DType.bfloat16, DType.float8_e4m3fn) and holds(DType.float16, DType.float8_e5m2)
    assert holds(DType.float8_e4m3fn, DType.float4_e2m1) and holds(DType.float32, DType.float4_e2m1fn_x2)
    assert holds(DType.bfloat16, DType.int8) and not holds(DType.int8, DType.bfloat16)
    assert after_cast(DType.bfloat16, DType.float32) == DType.bfloat16  # an upcast keeps the values
    assert after_cast(DType.float32, DType.bfloat16) == DType.bfloat16  # a downcast rounds to the target
    assert after_cast(DType.float16, DType.bfloat16) == DType.bfloat16
    assert widest([DType.float8_e4m3fn, DType.bfloat16]) == DType.bfloat16


@pytest.mark.parametrize(("values", "expected"), [
    ([0.0, 0.5, -1.5, 6.0, 3.0], DType.float4_e2m1),
    ([0.0, 448.0, -0.125, 1.75], DType.float8_e4m3fn),
    ([1.0, 1.0078125, 2.0**100], DType.bfloat16),
    ([1.0, 1.0009765625], DType.float16),
    ([0.1, 0.2], DType.float32),
])
def test_exact_format_of_constants(values, expected):
    assert exact_format(torch.tensor(values, dtype=torch.float32)) == expected


@pytest.mark.parametrize("policy", ["strict", "relaxed"])
def test_upcast_matmul_is_priced_at_the_bf16_rate(policy):
    # bf16 values upcast to fp32: bf16 tensor cores with fp32 accumulation compute the product exactly
    result = sol("""
        import torch
        def run(x, w):
            return (x.to(torch.float32) @ w.to(torch.float32)).to(torch.bfloat16)
    """, {"x": ([N, N], BF16), "w": ([N, N], BF16)}, {"y": ([N, N], BF16)}, policy=policy)
    assert result.flops_by_unit == {"tensor_bf16": 2 * N**3}
    assert result.t_sol_s == pytest.approx(2 * N**3 / 989.4e12)  # below cuBLAS's bf16 time on an H200


def test_genuine_fp32_contraction_keeps_the_fp32_price_under_strict():
    result = sol("""
        def run(x, w):
            return x @ w
    """, {"x": ([N, N], F32), "w": ([N, N], F32)}, {"y": ([N, N], F32)}, policy="strict")
    assert result.flops_by_unit == {"tensor_fp32": 2 * N**3}
    assert result.t_sol_s == pytest.approx(2 * N**3 / (494.7e12 / 3))  # 3xTF32


def test_fp8_dequantised_with_per_tensor_and_per_row_scales_is_an_fp8_contraction():
    result = sol("""
        import torch
        def run(a, b, scale_a, scale_b):
            return ((a.to(torch.float32) * scale_a) @ (b.to(torch.float32) * scale_b[:, None]).T).to(torch.bfloat16)
    """, {"a": ([N, N], FP8), "b": ([N, N], FP8), "scale_a": ([], F32), "scale_b": ([N], F32)}, {"y": ([N, N], BF16)}, policy="strict")
    assert {u for u, f in result.flops_by_unit.items() if u.startswith("tensor")} == {"tensor_fp8"}
    assert tensor_flops(result) == 2 * N**3


def test_block_scaled_fp8_is_an_fp8_contraction():
    result = sol("""
        import torch
        def run(a, b, scale_a, scale_b):
            a = a.to(torch.float32) * scale_a.repeat_interleave(128, 0).repeat_interleave(128, 1)
            b = b.to(torch.float32) * scale_b.repeat_interleave(128, 0).repeat_interleave(128, 1)
            return (a @ b.T).to(torch.bfloat16)
    """, {"a": ([1024, 1024], FP8), "b": ([1024, 1024], FP8), "scale_a": ([8, 8], F32), "scale_b": ([8, 8], F32)},
        {"y": ([1024, 1024], BF16)}, policy="strict")
    assert result.flops_by_unit.get("tensor_fp8") == 2 * 1024**3
    assert "tensor_fp32" not in result.flops_by_unit


def test_arithmetic_produces_full_precision():
    # x + y of bf16 values in fp32 is no longer a bf16 value: the product is an fp32 contraction
    result = sol("""
        import torch
        def run(x, y, w):
            return (x.to(torch.float32) + y.to(torch.float32)) @ w.to(torch.float32)
    """, {"x": ([512, 512], BF16), "y": ([512, 512], BF16), "w": ([512, 512], BF16)}, {"z": ([512, 512], F32)}, policy="strict")
    assert "tensor_fp32" in result.flops_by_unit and "tensor_bf16" not in result.flops_by_unit


def test_fp4_decoded_through_a_constant_table_is_an_fp4_contraction():
    result = sol("""
        import torch
        E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
        def decode(packed):
            codes = packed.view(torch.uint8).to(torch.int64)
            table = torch.tensor(E2M1, dtype=torch.float32, device=packed.device)
            return torch.stack((table[codes & 15], table[codes >> 4]), dim=-1).reshape(packed.shape[0], -1)
        def run(a, b):
            return (decode(a) @ decode(b).T).to(torch.bfloat16)
    """, {"a": ([256, 128], "float4_e2m1fn_x2"), "b": ([512, 128], "float4_e2m1fn_x2")}, {"y": ([256, 512], BF16)},
        hardware="B200", policy="strict")
    assert result.flops_by_unit.get("tensor_fp4") == 2 * 256 * 512 * 256
    assert result.uncovered_ops == []
