"""Which submodules of each model family are extracted, how each is built from the transformers
package's own modeling code, and how it is called on example inputs.

A recipe names the activation inputs (with their axes); the weights are the module's own
parameters. Var axes are `batch_size` and the recipe's second one (`seq_len`, or `kv_len` /
`pages_per_seq` for decode); const axes come from the config and from the recipe.
"""

from __future__ import annotations

from typing import Any, Callable

from solbench.dataset.extract.decode import decode_recipes
from solbench.dataset.extract.conv import convnext_family, resnet_family, vqgan_family
from solbench.dataset.extract.dit import dit_family
from solbench.dataset.extract.encoders import vit_family, whisper_family
from solbench.dataset.extract.expert_parallel import ep_recipe
from solbench.dataset.extract.gemma2 import gemma2_family
from solbench.dataset.extract.moe_parts import moe_part_recipes
from solbench.dataset.extract.ssm import mamba2_family
from solbench.dataset.extract.varlen import varlen_recipe
from solbench.dataset.extract.recipe import BATCH, KV, PAGES, POOL, POSITIONS, SEQ, UNIT, VAR_AXES, Act, Family, Recipe

__all__ = ["BATCH", "FAMILIES", "KV", "PAGES", "POOL", "SEQ", "VAR_AXES", "Act", "Family", "Recipe"]


def _cls(prefix: str, suffix: str) -> Callable[[Any, Any], Any]:
    return lambda tm, cfg: getattr(tm, prefix + suffix)


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


def _dense_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    axes: dict[str, int | tuple[str, int]] = {
        "hidden_size": cfg.hidden_size, "intermediate_size": cfg.intermediate_size,
        "num_heads": cfg.num_attention_heads, "num_kv_heads": cfg.num_key_value_heads, "head_dim": head_dim,
    }
    for name in ("moe_intermediate_size", "num_experts", "num_local_experts", "n_routed_experts"):
        if getattr(cfg, name, None):
            axes["num_experts" if "experts" in name else name] = getattr(cfg, name)
    if getattr(cfg, "n_shared_experts", None):
        axes["shared_intermediate_size"] = cfg.moe_intermediate_size * cfg.n_shared_experts
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        if getattr(cfg, name, None):
            axes[name] = getattr(cfg, name)
    axes["q_dim"] = ("num_heads * head_dim", cfg.num_attention_heads * head_dim)
    axes["kv_dim"] = ("num_kv_heads * head_dim", cfg.num_key_value_heads * head_dim)
    if "moe_intermediate_size" in axes:
        axes["gate_up_dim"] = ("2 * moe_intermediate_size", 2 * cfg.moe_intermediate_size)
    axes["gate_up_dim_dense"] = ("2 * intermediate_size", 2 * cfg.intermediate_size)
    return axes


def _attention_call(mask: Callable[[Any, Any], Any] | None = None) -> Callable[..., Any]:
    def call(tm: Any, cfg: Any, module: Any, hidden_states: Any, cos: Any, sin: Any) -> Any:
        return module(hidden_states, (cos, sin), mask(cfg, hidden_states) if mask else None)[0]
    return call


def _sliding_mask(cfg: Any, hidden_states: Any) -> Any:
    """The sliding-window causal mask exactly as the model builds it for a prefill without padding."""
    import torch
    from transformers.masking_utils import create_sliding_window_causal_mask

    positions = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
    return create_sliding_window_causal_mask(config=cfg, inputs_embeds=hidden_states, attention_mask=None,
                                             cache=None, position_ids=positions)


def _rope_call(apply: str, **kwargs: Any) -> Callable[..., Any]:
    def call(tm: Any, cfg: Any, module: Any, q: Any, k: Any, position_ids: Any) -> Any:
        cos, sin = module(q, position_ids, **kwargs)
        return getattr(tm, apply)(q, k, cos, sin)
    return call


def _acts_attention(rope_dim: str = "head_dim") -> tuple[Act, ...]:
    return (Act("hidden_states", (BATCH, SEQ, "hidden_size")), Act("cos", (BATCH, SEQ, rope_dim), distribution=UNIT),
            Act("sin", (BATCH, SEQ, rope_dim), distribution=UNIT))


def _acts_rope(heads: str = "num_heads", kv_heads: str = "num_kv_heads", dim: str = "head_dim") -> tuple[Act, ...]:
    return (Act("q", (BATCH, heads, SEQ, dim)), Act("k", (BATCH, kv_heads, SEQ, dim)),
            Act("position_ids", (BATCH, SEQ), "int64", POSITIONS))


HIDDEN = (Act("hidden_states", (BATCH, SEQ, "hidden_size")),)


def _no_parameters(tm: Any, cfg: Any) -> Any:
    import torch

    class ApplyRotaryPosEmb(torch.nn.Module):
        """No state: the recipe's call applies transformers' apply_rotary_pos_emb."""

    return ApplyRotaryPosEmb()


def _rope_apply(tm: Any, cfg: Any, module: Any, q: Any, k: Any, cos: Any, sin: Any) -> Any:
    return tm.apply_rotary_pos_emb(q, k, cos, sin)


def _decoder_family(prefix: str, modeling: str, config_class: str, *, mlp: bool = True, moe: str | None = None,
                    qk_norm: bool = False, extra: dict[str, Recipe] | None = None, rope_kwargs: dict | None = None,
                    attention_layer: int = 0, decode_note: str = "") -> Family:
    qk = " with per-head RMSNorm on q and k (qk-norm)" if qk_norm else ""
    recipes = {
        "attention": Recipe("attention", "attention", f"causal prefill self-attention{qk}: q/k/v projections, RoPE from the given cos/sin, "
                            "grouped-query scaled dot-product attention (causal, no padding) and the output projection",
                            lambda tm, cfg: getattr(tm, prefix + "Attention")(cfg, attention_layer), _attention_call(), _acts_attention()),
        "norm": Recipe("norm", "rmsnorm", "RMSNorm over the hidden dimension (computed in fp32, scaled by the weight)",
                       lambda tm, cfg: getattr(tm, prefix + "RMSNorm")(cfg.hidden_size, eps=cfg.rms_norm_eps),
                       lambda tm, cfg, m, x: m(x), HIDDEN),
        "rope": Recipe("rope", "rope", "rotary position embedding: cos/sin from the position ids (inverse frequencies inlined) "
                       "applied to q and k (rotate-half)", lambda tm, cfg: getattr(tm, prefix + "RotaryEmbedding")(cfg),
                       _rope_call("apply_rotary_pos_emb", **(rope_kwargs or {})), _acts_rope(), ("q_embed", "k_embed"), real=True, backward=False),
    }
    recipes["rope_apply"] = Recipe(
        "rope_apply", "rope", "rotate-half rotary position embedding applied to q and k from given cos/sin (transformers' "
        "apply_rotary_pos_emb; its backward rotates the gradients back)", _no_parameters, _rope_apply,
        (*_acts_rope()[:2], Act("cos", (BATCH, SEQ, "head_dim"), distribution=UNIT), Act("sin", (BATCH, SEQ, "head_dim"), distribution=UNIT)),
        ("q_embed", "k_embed"), no_grad=("cos", "sin"))
    recipes.update(decode_recipes(recipes["attention"].build, qk, decode_note))
    if mlp:
        recipes["mlp"] = Recipe("mlp", "mlp", "gated feed-forward block: down_proj(act(gate_proj(x)) * up_proj(x))",
                                lambda tm, cfg: getattr(tm, prefix + "MLP")(cfg), lambda tm, cfg, m, x: m(x), HIDDEN)
    if moe:
        recipes["moe"] = Recipe("moe", "moe", "sparse mixture-of-experts block: top-k router, tokens sorted by expert, grouped "
                                "GEMMs of the experts' gated MLPs, weighted sum of the chosen experts",
                                lambda tm, cfg: getattr(tm, moe)(cfg), lambda tm, cfg, m, x: _first(m(x)), HIDDEN, backward=False)
    recipes.update(extra or {})
    return Family(modeling, config_class, _dense_axes, recipes)


def _deepseek() -> Family:
    family = _decoder_family("DeepseekV3", "deepseek_v3", "DeepseekV3Config", moe="DeepseekV3MoE")
    for name in ("attention_decode", "attention_paged_decode", "rope_apply"):  # MLA: a latent cache, interleaved RoPE
        del family.recipes[name]
    family.recipes["attention"] = Recipe(
        "attention", "attention_mla", "multi-head latent attention (MLA), causal prefill: low-rank q (q_a_proj, RMSNorm, q_b_proj), "
        "compressed kv (kv_a_proj_with_mqa, RMSNorm, kv_b_proj), interleaved RoPE on the rope part of q and k from the given cos/sin, "
        "scaled dot-product attention with the yarn mscale and the output projection",
        lambda tm, cfg: tm.DeepseekV3Attention(cfg, 0), _attention_call(), _acts_attention("qk_rope_head_dim"))
    family.recipes["rope"] = Recipe(
        "rope", "rope", "yarn-scaled rotary position embedding (interleaved) on the rope part of q and k", lambda tm, cfg: tm.DeepseekV3RotaryEmbedding(cfg),
        _rope_call("apply_rotary_pos_emb_interleave"), _acts_rope("num_heads", "num_heads", "qk_rope_head_dim"), ("q_embed", "k_embed"), real=True, backward=False)
    family.recipes["moe"] = Recipe(
        "moe", "moe", "mixture-of-experts block with a shared expert: sigmoid router with the score-correction bias, group-limited top-k "
        "(noaux_tc), grouped GEMMs of the routed experts' gated MLPs scaled by routed_scaling_factor, plus the shared expert's MLP",
        lambda tm, cfg: tm.DeepseekV3MoE(cfg), lambda tm, cfg, m, x: _first(m(x)), HIDDEN, backward=False)
    return family


def _gemma() -> Family:
    family = _decoder_family("Gemma3", "gemma3", "Gemma3TextConfig", qk_norm=True, rope_kwargs={"layer_type": "full_attention"}, attention_layer=5,
                             decode_note="a global layer; scale query_pre_attn_scalar**-0.5")
    family.recipes["attention"] = dataclass_replace(family.recipes["attention"], summary=family.recipes["attention"].summary.replace(
        "causal prefill", "causal prefill (a global layer)") + "; scale query_pre_attn_scalar**-0.5")
    family.recipes["attention_sliding"] = Recipe(
        "attention_sliding", "attention", "sliding-window causal prefill self-attention (a local layer) with qk-norm: the model's own "
        "sliding-window mask is built in the reference; scale query_pre_attn_scalar**-0.5",
        lambda tm, cfg: tm.Gemma3Attention(cfg, 0), _attention_call(_sliding_mask), _acts_attention())
    family.recipes["norm"] = dataclass_replace(family.recipes["norm"], summary="Gemma RMSNorm over the hidden dimension: x * rsqrt(mean(x^2) + eps) * (1 + weight), in fp32")
    family.recipes["rope"] = dataclass_replace(family.recipes["rope"], summary="rotary position embedding of the global layers (linear scaling, factor 8) applied to q and k")
    return family


def dataclass_replace(recipe: Recipe, **changes: Any) -> Recipe:
    import dataclasses

    return dataclasses.replace(recipe, **changes)


FAMILIES: dict[str, Family] = {
    "llama": _decoder_family("Llama", "llama", "LlamaConfig"),
    "qwen3": _decoder_family("Qwen3", "qwen3", "Qwen3Config", qk_norm=True),
    "qwen3_moe": _decoder_family("Qwen3Moe", "qwen3_moe", "Qwen3MoeConfig", mlp=False, moe="Qwen3MoeSparseMoeBlock", qk_norm=True),
    "mixtral": _decoder_family("Mixtral", "mixtral", "MixtralConfig", mlp=False, moe="MixtralSparseMoeBlock"),
    "deepseek_v3": _deepseek(),
    "gemma2": gemma2_family(),
    "gemma3": _gemma(),
    "vit": vit_family(),
    "whisper": whisper_family(),
    "mamba2": mamba2_family(),
    "convnext": convnext_family(),
    "resnet": resnet_family(),
    "chameleon": vqgan_family(),
    "qwen2_5_omni_dit": dit_family(),
}
FAMILIES["llama"].recipes["attention_varlen"] = varlen_recipe(FAMILIES["llama"].recipes["attention"].build)  # packed (varlen) prefill
for _ep in (8, 32):  # 32: the expert parallelism of DeepSeek-V3's prefill deployment (8 routed experts a GPU)
    FAMILIES["deepseek_v3"].recipes[f"moe_ep{_ep}"] = ep_recipe("DeepseekV3TopkRouter", "DeepseekV3Experts", "n_routed_experts", _ep, (
        "the full router (sigmoid scores with the score-correction bias, group-limited top-k over all routed experts, noaux_tc, "
        "weights scaled by routed_scaling_factor)"), " The shared expert is dropped (it runs elsewhere).")
FAMILIES["deepseek_v3"].recipes.update(moe_part_recipes("DeepseekV3TopkRouter", "DeepseekV3Experts", (
    "sigmoid scores with the score-correction bias, group-limited top-k over the routed experts, weights scaled by routed_scaling_factor")))
FAMILIES["mixtral"].recipes.update(moe_part_recipes("MixtralTopKRouter", "MixtralExperts", "softmax over the experts, top-2, renormalised"))
FAMILIES["qwen3_moe"].recipes.update(moe_part_recipes("Qwen3MoeTopKRouter", "Qwen3MoeExperts", "softmax over the experts, top-k, renormalised"))
for _ep in (4, 8):
    FAMILIES["mixtral"].recipes[f"moe_ep{_ep}"] = ep_recipe("MixtralTopKRouter", "MixtralExperts", "num_local_experts", _ep, (
        "the full router (softmax over all experts, top-2, renormalised)"), "")
for _ep in (4, 8):
    FAMILIES["qwen3_moe"].recipes[f"moe_ep{_ep}"] = ep_recipe("Qwen3MoeTopKRouter", "Qwen3MoeExperts", "num_experts", _ep, (
        "the full router (softmax over all experts, top-k, renormalised)"), "")
