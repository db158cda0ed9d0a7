"""Families without a KV-cached decoder layer: ViT (image encoder) and Whisper (audio encoder
self-attention and the decoder's cross-attention over the encoder's frames)."""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, Act, Family, Recipe

# ViT token counts: (image size / 16)^2 + 1 (the class token) at 224, 384 and 512 pixels
VIT_GRID = ((1, 197), (8, 197), (64, 197), (1, 577), (16, 577), (1, 1025), (8, 1025), (32, 1025))
# Whisper decoder tokens: 1 (a decode step) to 448 (max_target_positions)
CROSS_GRID = ((1, 1), (8, 1), (64, 1), (1, 64), (4, 128), (1, 448), (16, 448), (64, 448))
FRAMES = "num_frames"
HIDDEN = (Act("hidden_states", (BATCH, SEQ, "hidden_size")),)


def _vit_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    return {"hidden_size": cfg.hidden_size, "intermediate_size": cfg.intermediate_size,
            "num_heads": cfg.num_attention_heads, "head_dim": cfg.hidden_size // cfg.num_attention_heads}


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


def vit_family() -> Family:
    def layernorm(tm: Any, cfg: Any) -> Any:
        import torch

        return torch.nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    recipes = {
        "attention": Recipe("attention", "attention", "bidirectional self-attention over the image tokens (patches and the class "
                            "token, no mask): q/k/v projections with bias, scaled dot-product attention, the output projection",
                            lambda tm, cfg: tm.ViTAttention(cfg), lambda tm, cfg, m, x: _first(m(x)), HIDDEN, grid=VIT_GRID),
        "mlp": Recipe("mlp", "mlp", "feed-forward block: fc2(gelu(fc1(x))) with biases", lambda tm, cfg: tm.ViTMLP(cfg),
                      lambda tm, cfg, m, x: m(x), HIDDEN, grid=VIT_GRID),
        "layernorm": Recipe("layernorm", "layernorm", "LayerNorm over the hidden dimension (weight and bias; the layer's "
                            "layernorm_before/after)", layernorm, lambda tm, cfg, m, x: m(x), HIDDEN, grid=VIT_GRID),
    }
    return Family("vit", "ViTConfig", _vit_axes, recipes)


def _whisper_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    return {"hidden_size": cfg.d_model, "num_heads": cfg.encoder_attention_heads, "head_dim": cfg.d_model // cfg.encoder_attention_heads,
            FRAMES: cfg.max_source_positions}


def whisper_family() -> Family:
    def attention(decoder: bool) -> Any:
        def build(tm: Any, cfg: Any) -> Any:
            heads = cfg.decoder_attention_heads if decoder else cfg.encoder_attention_heads
            return tm.WhisperAttention(cfg.d_model, heads, dropout=0.0, is_decoder=decoder, layer_idx=0 if decoder else None, config=cfg)
        return build

    recipes = {
        "encoder_attention": Recipe(
            "encoder_attention", "attention", "encoder self-attention over the 1500 frames of a 30 s window (bidirectional, "
            "no mask): q/v/output projections with bias, k without, scaled dot-product attention",
            attention(False), lambda tm, cfg, m, x: _first(m(x)), (Act("hidden_states", (BATCH, FRAMES, "hidden_size")),)),
        "cross_attention": Recipe(
            "cross_attention", "cross_attention", "decoder cross-attention: the decoder's tokens (queries) attend over the "
            "encoder's 1500 frames (keys/values projected from encoder_hidden_states, no cache), no mask",
            attention(True), lambda tm, cfg, m, x, enc: _first(m(x, key_value_states=enc)),
            (Act("hidden_states", (BATCH, SEQ, "hidden_size")), Act("encoder_hidden_states", (BATCH, FRAMES, "hidden_size"))),
            grid=CROSS_GRID),
    }
    return Family("whisper", "WhisperConfig", _whisper_axes, recipes)
