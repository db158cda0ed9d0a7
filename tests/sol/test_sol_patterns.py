"""Work a kernel can skip, seen from structure (issue 11, item 4): attention with a mask that depends
on no input is priced like causal SDPA, and a broadcast multiply and sum is a contraction."""

from __future__ import annotations

import pytest

from sol_testkit import sol

BF16, F32 = "bfloat16", "float32"
QKV = {"q": ([2, 8, 1024, 64], BF16), "k": ([2, 8, 1024, 64], BF16), "v": ([2, 8, 1024, 64], BF16)}
OUT = {"o": ([2, 8, 1024, 64], BF16)}
SDPA = """
    import torch
    def run(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
"""


@pytest.mark.parametrize("masking", [
    "scores.masked_fill(torch.triu(torch.ones(S, S, dtype=torch.bool, device=q.device), diagonal=1), float('-inf'))",
    "scores + torch.full((S, S), float('-inf'), dtype=q.dtype, device=q.device).triu(1)",
    "scores.masked_fill(torch.arange(S)[None, :] > torch.arange(S)[:, None], float('-inf'))",
    "torch.where(torch.ones(S, S, dtype=torch.bool).tril(), scores, float('-inf'))",
])
def test_explicit_causal_mask_is_priced_like_causal_sdpa(masking):
    explicit = sol(f"""
        import math
        import torch
        def run(q, k, v):
            S = q.shape[-2]
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
            return torch.softmax({masking}, dim=-1) @ v
    """, QKV, OUT, policy="relaxed")
    causal = sol(SDPA, QKV, OUT, policy="relaxed")
    tensor = {u: f for u, f in explicit.flops_by_unit.items() if u.startswith("tensor")}
    assert tensor == {"tensor_bf16": pytest.approx(causal.flops_by_unit["tensor_bf16"], rel=1e-3)}
    assert explicit.t_sol_s == pytest.approx(causal.t_sol_s, rel=0.02)
    assert any("a constant mask keeps 0.5" in note for note in explicit.notes)
    assert "vector_int32" not in explicit.flops_by_unit  # building the mask is no kernel's work


def test_a_mask_from_an_input_is_not_assumed_sparse():
    inputs = {**QKV, "mask": ([1024, 1024], "bool")}
    result = sol("""
        import torch
        def run(q, k, v, mask):
            scores = q @ k.transpose(-1, -2)
            return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=-1) @ v
    """, inputs, OUT)
    assert result.flops_by_unit["tensor_bf16"] == 2 * 2 * 8 * 1024 * 1024 * 64 * 2
    assert not any("constant mask" in note for note in result.notes)


def test_a_sliding_window_keeps_its_band():
    result = sol("""
        import torch
        def run(q, k, v):
            S = q.shape[-2]
            i = torch.arange(S)
            keep = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < 128)
            scores = q @ k.transpose(-1, -2)
            return torch.softmax(scores.masked_fill(~keep, float('-inf')), dim=-1) @ v
    """, QKV, OUT)
    band = sum(min(128, row + 1) for row in range(1024)) / 1024**2
    assert result.flops_by_unit["tensor_bf16"] == pytest.approx(2 * 2 * 8 * 1024 * 1024 * 64 * 2 * band, rel=1e-6)


def test_logit_softcapping_between_the_scores_and_the_mask_keeps_the_mask_seen():
    """Gemma-2 caps the scores (tanh(s / 50) * 50) before adding its causal mask: still causal work."""
    capped = sol("""
        import torch
        def run(q, k, v):
            S = q.shape[-2]
            scores = torch.tanh((q @ k.transpose(-1, -2)) / 50.0) * 50.0
            mask = torch.full((S, S), float('-inf'), dtype=q.dtype, device=q.device).triu(1)
            return torch.softmax(scores + mask, dim=-1) @ v
    """, QKV, OUT, policy="relaxed")
    causal = sol(SDPA, QKV, OUT, policy="relaxed")
    assert capped.flops_by_unit["tensor_bf16"] == pytest.approx(causal.flops_by_unit["tensor_bf16"], rel=1e-3)
    assert any("a constant mask keeps 0.5" in note for note in capped.notes)


WINDOWED_SDPA = """
    import torch
    def run(q, k, v):
        S = q.shape[-2]
        i = torch.arange(S, device=q.device)
        keep = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < 128)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
"""


def test_sdpa_with_a_constant_mask_is_priced_for_the_pairs_it_keeps():
    """A sliding window given to SDPA as a mask built from shapes: the band's pairs, not all S x S."""
    result = sol(WINDOWED_SDPA, QKV, OUT, policy="relaxed")
    band = sum(min(128, row + 1) for row in range(1024))
    assert result.flops_by_unit["tensor_bf16"] == pytest.approx(2 * 8 * band * 2 * 64 * 2, rel=1e-3)


def test_a_constant_mask_too_large_to_compute_keeps_at_least_one_key_per_query():
    """At S = 8192 the additive bf16 mask (128 MiB) is not computed for real: its values are unknown, so
    the bound may only count what any mask must leave, one key per query (never all S x S pairs)."""
    qkv = {name: ([1, 1, 8192, 16], BF16) for name in ("q", "k", "v")}
    result = sol("""
        import torch
        def run(q, k, v):
            S = q.shape[-2]
            scores = q @ k.transpose(-1, -2)
            mask = torch.full((S, S), float('-inf'), dtype=q.dtype, device=q.device).triu(1)
            return torch.softmax(scores + mask, dim=-1) @ v
    """, qkv, {"o": ([1, 1, 8192, 16], BF16)}, policy="relaxed")
    assert result.flops_by_unit["tensor_bf16"] == pytest.approx(2 * 8192 * 16 * 2, rel=1e-3)
    assert any("of unknown values" in note and "one key per query" in note for note in result.notes)


def test_broadcast_multiply_and_sum_is_a_contraction():
    result = sol("""
        def run(a, b):
            return (a[:, :, None] * b[None, :, :]).sum(1)
    """, {"a": ([512, 256], F32), "b": ([256, 384], F32)}, {"c": ([512, 384], F32)}, policy="strict")
    assert result.flops_by_unit == {"tensor_fp32": 2 * 512 * 256 * 384}
    assert any("is a contraction" in note for note in result.notes)


def test_a_multiply_and_sum_that_broadcasts_one_side_stays_on_the_vector_units():
    result = sol("""
        def run(a, w):
            return (a * w).sum(-1)
    """, {"a": ([512, 256], F32), "w": ([256], F32)}, {"c": ([512], F32)}, policy="strict")
    assert set(result.flops_by_unit) == {"vector_fp32"}
