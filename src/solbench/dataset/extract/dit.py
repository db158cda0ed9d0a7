"""Qwen2.5-Omni's Token2Wav DiT: the flow-matching diffusion transformer that turns the talker's codec
tokens into mel frames (each code repeated twice; BigVGAN makes 240 samples of a frame, so at the
24 kHz output of the model's README 100 frames are a second of speech). The sampler calls the whole
DiT 36 times a generation: RK4 (4 evaluations a step) over the 9 intervals of its 10 time points.

A DiT block (DiTDecoderLayer) is adaLN-Zero conditioned on the time embedding (one vector per sample:
a SiLU and a linear give the shift, scale and gate of the attention and of the MLP, applied around
parameter-free LayerNorms), then bidirectional attention whose mask is built from the frames' blocks of
`block_size` (24): a frame sees the frames of its own block, plus the previous block in the
look-backward layers (0 and 20) or the next block in the look-ahead layer (10). RoPE is applied to the
first head only, after a de-interleave of its head dim (the checkpoint's interleaved layout), as the
module does. The block-difference tensor is made in the reference by the model's own
`_create_block_diff`, and the layer turns it into its boolean mask, so the mask is part of the problem.

batch_size is the DiT's batch: classifier-free guidance doubles it (a conditional and an unconditional
pass), and transformers decodes one request at a time, so 2 is the common case; seq_len is the number
of mel frames. Nothing is data-dependent: the whole block is captured (the module's in-place write of the
rotated first head into q and k stays an aten.copy_ into views of them in the forward reference). The input embedding (ECAPA
speaker encoder, codec embedding) and the sampler loop are not extracted.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, UNIT, Act, Family, Recipe

# (DiT batch, mel frames): one request with CFG (batch 2) from 4.8 s to 30 s of speech, 2 and 4 requests
# batched, and one without guidance (batch 1)
DIT_GRID = ((1, 480), (2, 480), (2, 1000), (2, 2000), (2, 3000), (4, 1000), (8, 1000), (8, 2000))
FREQ_EMBED_DIM = 256  # DiTTimestepEmbedding's default sinusoid width, as the model builds it
HIDDEN = Act("hidden_states", (BATCH, SEQ, "hidden_size"))
TIME = Act("time_embedding", (BATCH, "hidden_size"))
BLOCK_ACTS = (HIDDEN, TIME, Act("cos", (BATCH, SEQ, "head_dim"), distribution=UNIT),
              Act("sin", (BATCH, SEQ, "head_dim"), distribution=UNIT))
NO_GRAD = ("cos", "sin")  # functions of the frame positions only: nothing upstream learns from them
TIMES = {"kind": "uniform", "low": 0.0, "high": 1.0}  # flow-matching time steps


def _dit_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    return {"hidden_size": cfg.hidden_size, "num_heads": cfg.num_attention_heads, "head_dim": cfg.head_dim,
            "intermediate_size": int(cfg.hidden_size * cfg.ff_mult), "freq_embed_dim": FREQ_EMBED_DIM,
            "inner_dim": ("num_heads * head_dim", cfg.num_attention_heads * cfg.head_dim),
            "modulation_dim": ("6 * hidden_size", 6 * cfg.hidden_size)}


def _layer_index(cfg: Any, kind: str) -> int:
    """The first layer of the kind: "block" (own block only), "ahead" (sees the next block), "backward" (the previous)."""
    ahead, backward = set(cfg.look_ahead_layers), set(cfg.look_backward_layers)
    for i in range(cfg.num_hidden_layers):
        if (kind == "block" and i not in ahead | backward) or (kind == "ahead" and i in ahead) or (kind == "backward" and i in backward):
            return i
    raise ValueError(f"the config has no layer of kind {kind!r}")


def _build_layer(kind: str) -> Any:
    def build(tm: Any, cfg: Any) -> Any:
        """The layer as Qwen2_5OmniToken2WavDiTModel builds its layer of that index."""
        i = _layer_index(cfg, kind)
        return tm.DiTDecoderLayer(cfg, look_ahead_block=1 if i in cfg.look_ahead_layers else 0,
                                  look_backward_block=1 if i in cfg.look_backward_layers else 0)
    return build


def _block_diff(tm: Any, cfg: Any, hidden_states: Any) -> Any:
    """The model's own block-difference tensor [batch, heads, seq, seq] (its method reads only these two attributes)."""
    owner = SimpleNamespace(block_size=cfg.block_size, num_attention_heads=cfg.num_attention_heads)
    return tm.Qwen2_5OmniToken2WavDiTModel._create_block_diff(owner, hidden_states)


def _block_call(tm: Any, cfg: Any, module: Any, hidden_states: Any, time_embedding: Any, cos: Any, sin: Any) -> Any:
    return module(hidden_states, time_embedding, position_embeddings=(cos, sin), block_diff=_block_diff(tm, cfg, hidden_states))


def _timestep_embedding(tm: Any, cfg: Any) -> Any:
    return tm.DiTTimestepEmbedding(cfg.hidden_size)


BLOCK = ("DiT block, {mask}: adaLN-Zero (SiLU and a linear of the time embedding give shift/scale/gate for attention and MLP; "
         "LayerNorms without affine, eps 1e-6), bidirectional attention over the mel frames (q/k/v projections with bias, RoPE "
         "from the given cos/sin on the first head only after de-interleaving its head dim, the block mask built in the reference "
         "from block_size 24, scaled dot-product attention, output projection), gated residual, then a gated GELU-tanh MLP residual")


def dit_family() -> Family:
    recipes = {
        "dit_block": Recipe("dit_block", "dit_block", BLOCK.format(mask="a frame attends within its own block (19 of the 22 layers)"),
                            _build_layer("block"), _block_call, BLOCK_ACTS, grid=DIT_GRID, no_grad=NO_GRAD),
        "dit_block_look_ahead": Recipe(
            "dit_block_look_ahead", "dit_block", BLOCK.format(mask="look-ahead layer 10: a frame attends within its block and the next"),
            _build_layer("ahead"), _block_call, BLOCK_ACTS, grid=DIT_GRID, no_grad=NO_GRAD),
        "dit_block_look_backward": Recipe(
            "dit_block_look_backward", "dit_block",
            BLOCK.format(mask="look-backward layers 0 and 20: a frame attends within its block and the previous one"),
            _build_layer("backward"), _block_call, BLOCK_ACTS, grid=DIT_GRID, no_grad=NO_GRAD),
        "adaln": Recipe("adaln", "norm", "adaLN-Zero modulation: LayerNorm without affine (eps 1e-6) of the frames, scaled by "
                        "(1 + scale) and shifted per sample, where shift/scale and the gates (returned for the attention and MLP "
                        "residuals) are the chunks of a linear of SiLU(time embedding)",
                        lambda tm, cfg: tm.Qwen2_5_OmniAdaLayerNormZero(cfg.hidden_size),
                        lambda tm, cfg, m, x, t: m(x, emb=t), (HIDDEN, TIME),
                        ("modulated", "gate_msa", "shift_mlp", "scale_mlp", "gate_mlp"), grid=DIT_GRID),
        "timestep_embedding": Recipe(
            "timestep_embedding", "timestep_embedding", "time-step embedding of the flow-matching time t in [0, 1]: a sinusoidal "
            "embedding of 1000 t (256 frequencies), then linear, SiLU, linear to the hidden size",
            _timestep_embedding, lambda tm, cfg, m, t: m(t), (Act("timestep", (BATCH,), distribution=TIMES),), no_grad=("timestep",)),
    }
    return Family("qwen2_5_omni", "Qwen2_5OmniDiTConfig", _dit_axes, recipes)
