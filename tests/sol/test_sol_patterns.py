"""Work a kernel can skip, seen from structure (issue 11, item 4): attention with a mask that depends
on no input is priced like causal SDPA, and a broadcast multiply and sum is a contraction."""

from __future__ import annotations

import textwrap

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


def _custom_problem(reference: str, lengths_source: str, total: int = 1024):
    """q, k, v [1, 2, total, 32] bf16 and seq_lens int32 [3] made by the reference's get_inputs."""
    from solbench.data import Definition, Problem, Workload
    from solbench.data.files import parse_model

    source = textwrap.dedent(reference).strip() + "\n\n\ndef get_inputs(axes, device):\n    return {\"seq_lens\": " + lengths_source + "}\n"
    shape = [1, 2, total, 32]
    definition, issues = parse_model(Definition, {
        "name": "packed", "axes": {}, "reference": source, "custom_inputs_entrypoint": "get_inputs",
        "inputs": {**{n: {"shape": shape, "dtype": BF16} for n in ("q", "k", "v")}, "seq_lens": {"shape": [3], "dtype": "int32"}},
        "outputs": {"o": {"shape": shape, "dtype": BF16}}})
    assert definition is not None, [str(i) for i in issues]
    inputs = {"q": {"type": "random"}, "k": {"type": "random"}, "v": {"type": "random"}, "seq_lens": {"type": "custom"}}
    workload, issues = parse_model(Workload, {"uuid": "wl-packed", "axes": {}, "inputs": inputs})
    assert workload is not None, [str(i) for i in issues]
    return Problem(definition, [workload])


PACKED = """
    import torch
    def run(q, k, v, seq_lens):
        S = q.shape[-2]
        ends = torch.cumsum(seq_lens.long(), 0)
        token = torch.arange(S)
        sequence = torch.searchsorted(ends, token, right=True)
        keep = (sequence[:, None] == sequence[None, :]) & (token[None, :] <= token[:, None])
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
"""


def test_a_mask_from_lengths_the_entry_point_fixes_is_priced_for_the_pairs_it_keeps():
    """Packed sequences (varlen) whose lengths get_inputs makes without a random draw: the same at every
    seed, so the block-diagonal causal mask they build is known and only its pairs are priced."""
    from solbench.sol.analysis import analyze
    from solbench.sol.hardware import get_hardware

    problem = _custom_problem(PACKED, "torch.tensor([256, 512, 256], dtype=torch.int32, device=device)")
    result = analyze(problem, problem.workloads[0], get_hardware("H200"), "relaxed")
    kept = sum(n * (n + 1) // 2 for n in (256, 512, 256))
    assert result.flops_by_unit["tensor_bf16"] == pytest.approx(2 * kept * 2 * 32 * 2, rel=1e-3)
    assert any("drawn the same at every seed" in note for note in result.notes), result.notes


def test_lengths_drawn_at_random_are_not_taken_as_known():
    """The same reference with lengths that depend on the seed: no mask is assumed, all pairs are priced."""
    from solbench.sol.analysis import analyze
    from solbench.sol.hardware import get_hardware

    problem = _custom_problem(PACKED, "torch.tensor([256, 512, 256], dtype=torch.int32, device=device) + torch.randint(-8, 8, (3,), device=device).to(torch.int32)")
    result = analyze(problem, problem.workloads[0], get_hardware("H200"), "relaxed")
    assert result.flops_by_unit["tensor_bf16"] == pytest.approx(2 * 1024 * 1024 * 2 * 32 * 2, rel=1e-3)
    assert not any("drawn the same at every seed" in note for note in result.notes)


EXPLICIT_BACKWARD = """
    import torch
    def run(q, k, v, do):
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        with torch.enable_grad():
            S = q.shape[-2]
            scores = q @ k.transpose(-1, -2)
            MASKING
            o = torch.softmax(scores, dim=-1) @ v
            return torch.autograd.grad(o, (q, k, v), do)
"""
GRADS = {name: ([1, 2, 512, 64], BF16) for name in ("dq", "dk", "dv")}
QKV_DO = {name: ([1, 2, 512, 64], BF16) for name in ("q", "k", "v", "do")}


def test_the_backward_of_masked_attention_is_priced_for_the_kept_pairs_too():
    """Written out with autograd: the gradients' products (dP = dO V^T, dS K, dS^T Q, P^T dO) and the
    softmax gradient do no work at masked pairs either (P is 0 there), so all six products scale."""
    full = sol(EXPLICIT_BACKWARD.replace("MASKING", "pass"), QKV_DO, GRADS, policy="relaxed")
    causal = sol(EXPLICIT_BACKWARD.replace("MASKING", "scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float('-inf'))"),
                 QKV_DO, GRADS, policy="relaxed")
    share = (512 * 513 // 2) / 512**2
    assert full.flops_by_unit["tensor_bf16"] == pytest.approx(6 * 2 * 2 * 512 * 512 * 64, rel=1e-3)
    assert causal.flops_by_unit["tensor_bf16"] == pytest.approx(share * full.flops_by_unit["tensor_bf16"], rel=1e-3)
    assert any("the backward's" in note for note in causal.notes), causal.notes


def test_the_sdpa_backward_with_a_constant_mask_is_priced_for_the_pairs_it_keeps():
    windowed = sol(WINDOWED_SDPA.replace("return torch.nn", "q, k, v = (t.detach().requires_grad_() for t in (q, k, v))\n        with torch.enable_grad():\n            o = torch.nn").replace(
        "attn_mask=keep)", "attn_mask=keep)\n            return torch.autograd.grad(o, (q, k, v), o.detach())"), QKV, {"dq": QKV["q"], "dk": QKV["k"], "dv": QKV["v"]}, policy="relaxed")
    band = sum(min(128, row + 1) for row in range(1024))
    backward = [r for r in windowed.nodes if "backward" in r.node.op and "attention" in r.node.op]
    assert backward, [r.node.op for r in windowed.nodes]
    assert backward[0].cost.flops["tensor_bf16"] == pytest.approx(2 * 8 * band * 2 * (3 * 64 + 2 * 64), rel=1e-3)
