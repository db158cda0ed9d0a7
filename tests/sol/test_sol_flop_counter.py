"""Tensor-unit FLOPs of matmuls, convolutions and attention against torch.utils.flop_counter.

solbench captures on fake tensors; FlopCounterMode counts the same call on real small CPU tensors.
FlopCounterMode does not count the CPU flash-attention kernel, so attention is counted on the math
backend (its two bmm), which is what FlopCounterMode prices for any sdpa call.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from sol_testkit import problem_with_inferred_outputs, real_inputs, run_reference, tensor_flops
from solbench.sol.analysis import analyze
from solbench.sol.hardware import get_hardware

F32 = "float32"


def _reference(body: str, inputs: dict) -> str:
    return "import torch\nimport torch.nn.functional as F\n\n\ndef run(%s):\n    return %s\n" % (", ".join(inputs), body)


def _both_counts(body: str, inputs: dict) -> tuple[float, float, object]:
    """(solbench's tensor-unit FLOPs, FlopCounterMode's total, the SolResult)."""
    problem = problem_with_inferred_outputs(_reference(body, inputs), inputs)
    result = analyze(problem, problem.workloads[0], get_hardware("H200"))
    values = real_inputs(problem)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        run_reference(problem, values)
    return tensor_flops(result), float(counter.get_total_flops()), result


CASES = {
    # matrix products
    "mm": ("torch.mm(a, b)", {"a": ([12, 20], F32), "b": ([20, 7], F32)}),
    "addmm": ("torch.addmm(c, a, b)", {"c": ([7], F32), "a": ([12, 20], F32), "b": ([20, 7], F32)}),
    "addmm_full_bias": ("torch.addmm(c, a, b, beta=0.5, alpha=2.0)", {"c": ([12, 7], F32), "a": ([12, 20], F32), "b": ([20, 7], F32)}),
    "bmm": ("torch.bmm(a, b)", {"a": ([3, 12, 20], F32), "b": ([3, 20, 7], F32)}),
    "baddbmm": ("torch.baddbmm(c, a, b)", {"c": ([3, 12, 7], F32), "a": ([3, 12, 20], F32), "b": ([3, 20, 7], F32)}),
    "matmul_2d": ("torch.matmul(a, b)", {"a": ([12, 20], F32), "b": ([20, 7], F32)}),
    "matmul_batch_times_matrix": ("torch.matmul(a, b)", {"a": ([2, 3, 12, 20], F32), "b": ([20, 7], F32)}),
    "matmul_broadcast_batches": ("torch.matmul(a, b)", {"a": ([2, 1, 12, 20], F32), "b": ([3, 20, 7], F32)}),
    "matmul_matrix_times_batch": ("torch.matmul(a, b)", {"a": ([12, 20], F32), "b": ([4, 20, 7], F32)}),
    "matmul_bf16": ("a @ b", {"a": ([5, 12, 20], "bfloat16"), "b": ([5, 20, 7], "bfloat16")}),
    "linear": ("F.linear(x, w, b)", {"x": ([12, 20], F32), "w": ([7, 20], F32), "b": ([7], F32)}),
    "linear_3d_no_bias": ("F.linear(x, w)", {"x": ([2, 6, 20], F32), "w": ([7, 20], F32)}),
    # convolutions
    "conv1d": ("F.conv1d(x, w, b)", {"x": ([2, 4, 16], F32), "w": ([6, 4, 3], F32), "b": ([6], F32)}),
    "conv2d": ("F.conv2d(x, w, b)", {"x": ([2, 4, 10, 9], F32), "w": ([6, 4, 3, 3], F32), "b": ([6], F32)}),
    "conv3d": ("F.conv3d(x, w)", {"x": ([1, 2, 6, 5, 7], F32), "w": ([4, 2, 3, 3, 3], F32)}),
    "conv2d_grouped": ("F.conv2d(x, w, groups=2)", {"x": ([2, 4, 8, 8], F32), "w": ([6, 2, 3, 3], F32)}),
    "conv2d_depthwise": ("F.conv2d(x, w, groups=4)", {"x": ([2, 4, 8, 8], F32), "w": ([4, 1, 3, 3], F32)}),
    "conv2d_dilated": ("F.conv2d(x, w, dilation=2)", {"x": ([2, 4, 11, 11], F32), "w": ([6, 4, 3, 3], F32)}),
    "conv2d_strided": ("F.conv2d(x, w, stride=(2, 3))", {"x": ([2, 4, 11, 11], F32), "w": ([6, 4, 3, 3], F32)}),
    "conv2d_padded": ("F.conv2d(x, w, padding=2)", {"x": ([2, 4, 7, 7], F32), "w": ([6, 4, 3, 3], F32)}),
    "conv2d_same": ("F.conv2d(x, w, padding='same')", {"x": ([2, 4, 7, 7], F32), "w": ([6, 4, 3, 3], F32)}),
    "conv2d_all": ("F.conv2d(x, w, b, stride=2, padding=1, dilation=2, groups=2)", {"x": ([2, 4, 12, 12], F32), "w": ([6, 2, 3, 3], F32), "b": ([6], F32)}),
    "conv1d_bf16": ("F.conv1d(x, w, padding=2)", {"x": ([2, 8, 32], "bfloat16"), "w": ([16, 8, 5], "bfloat16")}),
    "conv_transpose1d": ("F.conv_transpose1d(x, w, stride=2)", {"x": ([2, 4, 8], F32), "w": ([4, 3, 3], F32)}),
    "conv_transpose1d_bias": ("F.conv_transpose1d(x, w, b, stride=3, padding=1)", {"x": ([2, 4, 8], F32), "w": ([4, 3, 4], F32), "b": ([3], F32)}),
    "conv_transpose2d": ("F.conv_transpose2d(x, w, stride=2, padding=1)", {"x": ([2, 4, 5, 6], F32), "w": ([4, 3, 4, 4], F32)}),
    "conv_transpose2d_groups_output_padding": (
        "F.conv_transpose2d(x, w, stride=2, output_padding=1, groups=2)", {"x": ([2, 4, 5, 5], F32), "w": ([4, 3, 3, 3], F32)}),
    "conv_transpose2d_dilated": ("F.conv_transpose2d(x, w, dilation=2)", {"x": ([1, 4, 5, 5], F32), "w": ([4, 2, 3, 3], F32)}),
    "conv_transpose3d": (
        "F.conv_transpose3d(x, w, stride=2, output_padding=1)", {"x": ([1, 2, 3, 4, 3], F32), "w": ([2, 3, 2, 2, 2], F32)}),
    "conv_transpose3d_groups": (
        "F.conv_transpose3d(x, w, stride=(1, 2, 2), groups=2, output_padding=(0, 1, 1))", {"x": ([1, 4, 3, 3, 3], F32), "w": ([4, 1, 3, 3, 3], F32)}),
    # attention (non-causal)
    "sdpa": ("F.scaled_dot_product_attention(q, k, v)", {"q": ([2, 4, 16, 8], F32), "k": ([2, 4, 16, 8], F32), "v": ([2, 4, 16, 8], F32)}),
    "sdpa_cross": ("F.scaled_dot_product_attention(q, k, v)", {"q": ([2, 4, 12, 8], F32), "k": ([2, 4, 20, 8], F32), "v": ([2, 4, 20, 8], F32)}),
    "sdpa_bf16": ("F.scaled_dot_product_attention(q, k, v)", {"q": ([1, 2, 16, 16], "bfloat16"), "k": ([1, 2, 16, 16], "bfloat16"), "v": ([1, 2, 16, 16], "bfloat16")}),
    "sdpa_value_dim": ("F.scaled_dot_product_attention(q, k, v)", {"q": ([2, 4, 16, 8], F32), "k": ([2, 4, 24, 8], F32), "v": ([2, 4, 24, 16], F32)}),
    "sdpa_gqa": ("F.scaled_dot_product_attention(q, k, v, enable_gqa=True)", {"q": ([2, 8, 16, 8], F32), "k": ([2, 2, 16, 8], F32), "v": ([2, 2, 16, 8], F32)}),
    "sdpa_float_mask": ("F.scaled_dot_product_attention(q, k, v, attn_mask=m)", {"q": ([2, 4, 16, 8], F32), "k": ([2, 4, 16, 8], F32), "v": ([2, 4, 16, 8], F32), "m": ([16, 16], F32)}),
    "sdpa_bool_mask": ("F.scaled_dot_product_attention(q, k, v, attn_mask=m)", {"q": ([2, 4, 16, 8], F32), "k": ([2, 4, 16, 8], F32), "v": ([2, 4, 16, 8], F32), "m": ([2, 1, 16, 16], "bool")}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tensor_flops_match_flop_counter(case: str) -> None:
    body, inputs = CASES[case]
    ours, torch_count, result = _both_counts(body, inputs)
    assert torch_count > 0
    assert ours == torch_count
    assert result.uncovered_ops == []


def test_gqa_is_supported_by_this_torch() -> None:
    q, k = torch.randn(1, 4, 4, 8), torch.randn(1, 2, 4, 8)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    assert out.shape == (1, 4, 4, 8)


@pytest.mark.parametrize(
    "shapes",
    [
        # (B, H, S_q, S_k, D)
        (2, 4, 16, 16, 8),
        (1, 2, 64, 64, 16),
        (3, 1, 33, 33, 4),
    ],
)
def test_causal_attention_counts_unmasked_pairs(shapes: tuple[int, ...]) -> None:
    b, h, s_q, s_k, d = shapes
    inputs = {"q": ([b, h, s_q, d], F32), "k": ([b, h, s_k, d], F32), "v": ([b, h, s_k, d], F32)}
    ours, torch_count, _ = _both_counts("F.scaled_dot_product_attention(q, k, v, is_causal=True)", inputs)
    # Square and top-left aligned: row i keeps keys 0..i, so S (S + 1) / 2 pairs per head.
    pairs = s_q * (s_q + 1) // 2
    assert ours == 2 * b * h * pairs * (d + d)
    assert torch_count == 4 * b * h * s_q * s_k * d  # FlopCounterMode counts every pair
    assert ours / torch_count == pytest.approx(0.5 * (s_q + 1) / s_q)
    assert 0.5 < ours / torch_count < 0.55  # about half


def test_causal_attention_rectangular_top_left() -> None:
    # S_q = 10 queries, S_k = 4 keys, top-left aligned (torch's is_causal): row i keeps min(i + 1, 4) keys.
    inputs = {"q": ([1, 2, 10, 8], F32), "k": ([1, 2, 4, 8], F32), "v": ([1, 2, 4, 8], F32)}
    ours, torch_count, _ = _both_counts("F.scaled_dot_product_attention(q, k, v, is_causal=True)", inputs)
    pairs = 1 + 2 + 3 + 4 + 6 * 4  # 34
    assert ours == 2 * 1 * 2 * pairs * (8 + 8)
    assert torch_count == 4 * 1 * 2 * 10 * 4 * 8

    # More keys than queries: row i still keeps keys 0..i only (no bottom-right alignment).
    inputs = {"q": ([1, 2, 4, 8], F32), "k": ([1, 2, 10, 8], F32), "v": ([1, 2, 10, 8], F32)}
    ours, _, _ = _both_counts("F.scaled_dot_product_attention(q, k, v, is_causal=True)", inputs)
    assert ours == 2 * 1 * 2 * (1 + 2 + 3 + 4) * (8 + 8)


def test_causal_pairs_match_torch_mask() -> None:
    """The pairs solbench keeps are exactly the True entries of torch's causal mask."""
    from solbench.sol.costs.contractions import causal_pairs

    for s_q, s_k in [(16, 16), (10, 4), (4, 10), (1, 7), (7, 1)]:
        mask = torch.ones(s_q, s_k, dtype=torch.bool).tril(diagonal=0)
        assert causal_pairs(s_q, s_k) == int(mask.sum())
