"""Gemma-2: attention with logit softcapping (scores = tanh(scores / cap) * cap before the mask and the
softmax), alternating sliding-window (even layers) and global (odd layers) attention.

transformers applies the softcap only on its eager attention path (SDPA has no softcap argument and
drops it), so the family is captured with eager attention: the mask is then the additive float mask
the model builds (0 where a token is seen, the dtype's minimum elsewhere), made in the reference.
The paged decode recipe is not offered: its boolean mask is meant for SDPA (eager would add it to the
scores as 0/1).
"""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import Family, Recipe

GLOBAL_LAYER, SLIDING_LAYER = 1, 0  # layer_types: sliding_attention at even indices, full_attention at odd ones
SOFTCAP = "logit softcapping 50 (scores = tanh(scores / 50) * 50 before the mask and the softmax, transformers' eager path)"
SCALE = "scale query_pre_attn_scalar**-0.5"


def _causal_mask(cfg: Any, hidden_states: Any) -> Any:
    """The causal mask exactly as the model builds it for a prefill without padding (eager: additive float)."""
    import torch
    from transformers.masking_utils import create_causal_mask

    positions = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
    return create_causal_mask(config=cfg, inputs_embeds=hidden_states, attention_mask=None, cache=None, position_ids=positions)


def _decode_call(tm: Any, cfg: Any, module: Any, *acts: Any) -> Any:
    """The decoder family's decode call, traced with size-oblivious guards: eager attention's repeat_kv copy of the
    appended cache otherwise leaves a stride guard (a min of two multiples of kv_len + 1) that torch.export cannot prove."""
    import torch.fx.experimental._config as fx_config

    from solbench.dataset.extract.decode import _decode_call as decode_call

    with fx_config.patch(backed_size_oblivious=True):
        return decode_call(tm, cfg, module, *acts)


def gemma2_family() -> Family:
    """The decoder family's recipes with Gemma-2's attention (softcapped, eager), norm and MLP; no paged decode.
    The modules helpers are imported here, not at the top: modules imports this file to register the family."""
    from solbench.dataset.extract.modules import _acts_attention, _attention_call, _decoder_family, _sliding_mask, dataclass_replace

    family = _decoder_family("Gemma2", "gemma2", "Gemma2Config", attention_layer=GLOBAL_LAYER,
                             decode_note=f"a global layer; {SOFTCAP}; {SCALE}")
    del family.recipes["attention_paged_decode"]
    family.recipes["attention_decode"] = dataclass_replace(family.recipes["attention_decode"], call=_decode_call)
    family.recipes["attention"] = Recipe(
        "attention", "attention", f"causal prefill self-attention (a global layer): q/k/v projections, RoPE from the given cos/sin, "
        f"grouped-query attention with {SOFTCAP}, the model's own causal mask built in the reference (no padding), and the output "
        f"projection; {SCALE}", lambda tm, cfg: tm.Gemma2Attention(cfg, GLOBAL_LAYER), _attention_call(_causal_mask), _acts_attention())
    family.recipes["attention_sliding"] = Recipe(
        "attention_sliding", "attention", f"sliding-window causal prefill self-attention (a local layer, window 4096): the model's own "
        f"sliding-window mask is built in the reference; grouped-query attention with {SOFTCAP}; {SCALE}",
        lambda tm, cfg: tm.Gemma2Attention(cfg, SLIDING_LAYER), _attention_call(_sliding_mask), _acts_attention())
    family.recipes["norm"] = dataclass_replace(family.recipes["norm"], summary="Gemma RMSNorm over the hidden dimension: "
                                               "x * rsqrt(mean(x^2) + eps) * (1 + weight), in fp32")
    family.recipes["mlp"] = dataclass_replace(family.recipes["mlp"], summary="gated feed-forward block: "
                                              "down_proj(gelu_tanh(gate_proj(x)) * up_proj(x))")
    return Family(family.modeling, family.config_class, family.axes, family.recipes, attn_implementation="eager")
