"""Gemma-2: the extracted attention keeps the logit softcapping (captured on transformers' eager path) and computes
what transformers' own Gemma2Attention computes (eager, with the masks written here by hand), prefill (global and
sliding-window layers, forward and backward) and decode over a cache (shrunk configs)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from solbench.data.loaders import load_problems  # noqa: E402
from solbench.data.reference import reference_module  # noqa: E402
from solbench.dataset.extract.api import build_problem  # noqa: E402
from solbench.dataset.extract.capture import state_of, transformers_config  # noqa: E402
from solbench.dataset.extract.configs import MODELS  # noqa: E402
from solbench.dataset.extract.modules import FAMILIES  # noqa: E402
from solbench.dataset.extract.writer import write_problem  # noqa: E402

from extract_testkit import tiny_problem  # noqa: E402

BATCH, SEQ, KV_LEN, HEAD_DIM = 2, 12, 21, 16
SCALE = 4.0  # inputs this large give scores beyond the cap's linear range, so the softcap shows in the output


def _module(layer: int, dtype: torch.dtype, state: dict) -> torch.nn.Module:
    """transformers' own Gemma2Attention of the shrunk config, eager, with the given weights."""
    model = MODELS["gemma2_27b"]
    config = transformers.Gemma2Config(**{**model.values, **model.tiny})
    config._attn_implementation = "eager"
    tm = FAMILIES["gemma2"].transformers_module()
    module = tm.Gemma2Attention(config, layer).to(dtype).eval()
    module.load_state_dict(state)
    return module


def _mask(seq: int, window: int | None, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask [1, 1, seq, seq]: key j is seen by query i when j <= i (and i - j < window)."""
    i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
    seen = (j <= i) & ((i - j < window) if window else True)
    return torch.where(seen, 0.0, torch.finfo(dtype).min).to(dtype)[None, None]


def _bf16_problem(tmp_path, module: str):
    """The shrunk problem extracted in bf16 (the testkit's are fp32)."""
    name = f"tiny_gemma2_27b_{module}_bf16"
    definition, lines = build_problem(MODELS["gemma2_27b"], FAMILIES["gemma2"].recipes[module], False, name, dtype="bfloat16", tiny=True)
    write_problem(tmp_path / name, definition, lines)
    [problem] = load_problems([tmp_path / name])
    return problem


def _prefill(config, batch: int, dtype: torch.dtype) -> list[torch.Tensor]:
    angles = torch.arange(SEQ)[None, :, None] * torch.rand(1, 1, HEAD_DIM) * 0.5 + torch.rand(batch, 1, 1)
    return [(torch.randn(batch, SEQ, config.hidden_size) * SCALE).to(dtype), angles.cos().to(dtype), angles.sin().to(dtype)]


def test_capture_is_eager_and_keeps_the_softcap(tmp_path):
    assert transformers_config(MODELS["gemma2_27b"])._attn_implementation == "eager"
    assert transformers_config(MODELS["llama3_8b"])._attn_implementation == "sdpa"
    assert "attention_paged_decode" not in FAMILIES["gemma2"].recipes
    for module in ("attention", "attention_sliding", "attention_decode"):
        _, _, problem, _, _ = tiny_problem(tmp_path, "gemma2_27b", module)
        definition = problem.definition
        assert "torch.ops.aten.tanh.default" in definition.reference and "50.0" in definition.reference, module
        assert "scaled_dot_product_attention" not in definition.reference and "transformers" not in definition.reference
        assert "logit softcapping 50" in definition.description


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.bfloat16, 1e-2)])
@pytest.mark.parametrize("module, layer, window", [("attention", 1, None), ("attention_sliding", 0, 8)])
def test_prefill_matches_eager_gemma2_attention(tmp_path, module, layer, window, dtype, tol):
    _, _, problem, real, config = tiny_problem(tmp_path, "gemma2_27b", module)
    if dtype == torch.bfloat16:  # the model's own dtype
        problem = _bf16_problem(tmp_path, module)
    torch.manual_seed(1)
    own = _module(layer, dtype, {k: v.to(dtype) for k, v in real.state_dict().items()})
    assert own.sliding_window == window and own.attn_logit_softcapping == 50.0
    hidden, cos, sin = _prefill(config, BATCH, dtype)
    mask = _mask(SEQ, window, dtype)
    with torch.no_grad():
        expected = own(hidden, (cos, sin), mask)[0]
        own.attn_logit_softcapping = None
        uncapped = own(hidden, (cos, sin), mask)[0]
    weights = [p.detach().to(dtype) for _, p in state_of(own)]
    got = reference_module(problem.definition).run(hidden, cos, sin, *weights)
    assert got.shape == expected.shape and got.dtype == dtype
    torch.testing.assert_close(got, expected, atol=tol * expected.abs().max().item(), rtol=tol)
    assert (uncapped - expected).abs().max() > 0.05 * expected.abs().max()  # the softcap matters here


def test_sliding_window_matters(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, "gemma2_27b", "attention_sliding")
    torch.manual_seed(2)
    hidden, cos, sin = _prefill(config, BATCH, torch.float32)
    own = _module(0, torch.float32, real.state_dict())
    with torch.no_grad():
        full = own(hidden, (cos, sin), _mask(SEQ, None, torch.float32))[0]
    got = reference_module(problem.definition).run(hidden, cos, sin, *[p.detach() for _, p in state_of(own)])
    assert (got[:, 8:] - full[:, 8:]).abs().max() > 1e-3  # the window of 8 cuts the later queries' past
    torch.testing.assert_close(got[:, :8], full[:, :8], atol=1e-4, rtol=1e-4)


def test_attention_backward_matches_autograd(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, "gemma2_27b", "attention", backward=True)
    torch.manual_seed(3)
    own = _module(1, torch.float32, real.state_dict())
    acts = [a.requires_grad_(True) for a in _prefill(config, BATCH, torch.float32)]
    weights = [p for _, p in state_of(own)]
    out = own(*acts[:1], tuple(acts[1:]), _mask(SEQ, None, torch.float32))[0]
    grad = torch.randn_like(out)
    expected = torch.autograd.grad(out, [*acts, *weights], grad)
    got = reference_module(problem.definition).run(*[a.detach() for a in acts], *[w.detach() for w in weights], grad)
    assert list(problem.definition.outputs)[0] == "grad_hidden_states" and len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-4 * e.abs().max().item(), rtol=1e-4)


@pytest.mark.parametrize("batch, kv_len", [(1, 1), (3, KV_LEN)])
def test_decode_matches_module_with_its_cache(tmp_path, batch, kv_len):
    _, _, problem, real, config = tiny_problem(tmp_path, "gemma2_27b", "attention_decode")
    torch.manual_seed(4)
    own = _module(1, torch.float32, real.state_dict())
    hidden = torch.randn(batch, 1, config.hidden_size) * SCALE
    angles = torch.rand(batch, 1, HEAD_DIM) * 6.0
    k_cache = torch.randn(batch, config.num_key_value_heads, kv_len, HEAD_DIM) * SCALE
    v_cache = torch.randn(batch, config.num_key_value_heads, kv_len, HEAD_DIM)
    cache = transformers.DynamicCache(config=own.config)
    cache.update(k_cache, v_cache, own.layer_idx)
    with torch.no_grad():
        expected = own(hidden, (angles.cos(), angles.sin()), None, cache=cache)[0]
    weights = [p.detach() for _, p in state_of(own)]
    got = reference_module(problem.definition).run(hidden, angles.cos(), angles.sin(), k_cache, v_cache, *weights)
    assert got.shape == (batch, 1, config.hidden_size)
    torch.testing.assert_close(got, expected, atol=1e-4 * expected.abs().max().item(), rtol=1e-4)
