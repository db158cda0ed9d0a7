"""The extracted reference computes what the real transformers module computes (shrunk configs, fp32)."""

from __future__ import annotations

from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from solbench.data.reference import reference_module  # noqa: E402
from solbench.dataset.extract.modules import FAMILIES  # noqa: E402

from extract_testkit import module_state, tiny_problem  # noqa: E402

BATCH, SEQ = 2, 12


def _inputs(recipe, config, axes):
    sizes = {k: (v[1] if isinstance(v, tuple) else v) for k, v in axes.items()} | {"batch_size": BATCH, "seq_len": SEQ, "kv_len": 21}
    acts = []
    for act in recipe.inputs:
        shape = [d if isinstance(d, int) else sizes[d] for d in act.dims]
        if act.dtype == "int64":
            acts.append(torch.arange(SEQ).expand(BATCH, SEQ).contiguous() + torch.tensor([[0], [5]]))
        else:
            acts.append(torch.randn(shape))
    return acts


def _check(tmp_path: Path, model_name: str, module: str, backward: bool = False, atol: float = 1e-5):
    model, recipe, problem, real, config = tiny_problem(tmp_path, model_name, module, backward)
    run = reference_module(problem.definition).run
    state = module_state(real, inlined=recipe.real)
    acts = _inputs(recipe, config, FAMILIES[model.family].axes(config))
    tm = FAMILIES[model.family].transformers_module()
    weights = [p.detach().clone() for _, p in state]
    if not backward:
        with torch.no_grad():
            expected = recipe.call(tm, config, real, *acts)
        got = run(*acts, *weights)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
    else:
        given = [a.clone().requires_grad_(a.is_floating_point()) for a in acts]
        leaves = [g for g, a in zip(given, recipe.inputs) if g.requires_grad and a.name not in recipe.no_grad] + [p for _, p in state]
        out = recipe.call(tm, config, real, *given)
        outs = out if isinstance(out, tuple) else (out,)
        grads = [torch.randn_like(o) for o in outs]
        expected = torch.autograd.grad(outs, leaves, grads)
        got = run(*acts, *weights, *grads)
    assert len(got) == len(expected) == len(problem.definition.outputs)
    for e, g in zip(expected, got):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e, atol=atol, rtol=1e-5)
        assert e.abs().max() > 0  # a non-trivial output
    return problem


def test_llama_mlp_matches_module(tmp_path):
    problem = _check(tmp_path, "llama3_8b", "mlp")
    assert list(problem.definition.inputs) == ["hidden_states", "gate_proj_weight", "up_proj_weight", "down_proj_weight"]


def test_llama_rmsnorm_matches_module(tmp_path):
    problem = _check(tmp_path, "llama3_8b", "norm")
    assert "1e-05" in problem.definition.reference  # eps inlined


def test_llama_causal_gqa_attention_matches_module(tmp_path):
    problem = _check(tmp_path, "llama3_8b", "attention")
    assert "scaled_dot_product_attention" in problem.definition.reference
    assert "transformers" not in problem.definition.reference


def test_qwen3_qknorm_attention_matches_module(tmp_path):
    _check(tmp_path, "qwen3_8b", "attention")


def test_gemma3_sliding_window_attention_matches_module(tmp_path):
    _check(tmp_path, "gemma3_27b", "attention_sliding")  # tiny window 8 < 12 tokens: the window matters


def test_llama_rope_matches_module(tmp_path):
    problem = _check(tmp_path, "llama3_8b", "rope")
    assert "INV_FREQ = [" in problem.definition.reference


def test_mixtral_moe_matches_module(tmp_path):
    _check(tmp_path, "mixtral_8x7b", "moe", atol=1e-4)


def test_llama_mlp_backward_matches_autograd(tmp_path):
    _check(tmp_path, "llama3_8b", "mlp", backward=True, atol=1e-4)


def test_vit_attention_matches_module(tmp_path):
    problem = _check(tmp_path, "vit_large", "attention")
    assert problem.definition.inputs["q_proj_bias"].shape == ["hidden_size"]


def test_vit_layernorm_and_mlp_match_module(tmp_path):
    _check(tmp_path, "vit_large", "layernorm")
    _check(tmp_path, "vit_large", "mlp")


def test_whisper_cross_attention_matches_module(tmp_path):
    problem = _check(tmp_path, "whisper_large_v3", "cross_attention")
    assert problem.definition.inputs["encoder_hidden_states"].shape == ["batch_size", "num_frames", "hidden_size"]


def test_whisper_encoder_attention_matches_module(tmp_path):
    problem = _check(tmp_path, "whisper_large_v3", "encoder_attention")
    assert list(problem.definition.axes) == ["batch_size", "hidden_size", "num_frames"]


def test_mamba2_mixer_matches_module(tmp_path):
    problem = _check(tmp_path, "mamba_codestral_7b", "mixer", atol=1e-4)  # tiny chunk 4: 12 tokens are 3 chunks
    assert problem.definition.constraints == ["seq_len % 256 == 0"]
    assert problem.definition.inputs["in_proj_weight"].shape == ["in_proj_dim", "hidden_size"]


def test_rope_apply_backward_matches_autograd(tmp_path):
    problem = _check(tmp_path, "llama3_8b", "rope_apply", backward=True)
    assert list(problem.definition.outputs) == ["grad_q", "grad_k"]  # no gradient for cos/sin


def test_decode_attention_backward_matches_autograd(tmp_path):
    problem = _check(tmp_path, "qwen3_8b", "attention_decode", backward=True, atol=1e-4)
    assert {"grad_k_cache", "grad_v_cache", "grad_hidden_states"} <= set(problem.definition.outputs)
