"""Mamba-2: the mixer block (in_proj, causal depthwise conv1d, the chunked SSD scan, gated RMSNorm,
out_proj). transformers' Mamba2Mixer runs its pure-torch path here (the fused Triton/CUDA kernels are
only taken in training or on CUDA with mamba_ssm installed); that path pads seq_len to a multiple of
chunk_size, so the problem's seq_len is a multiple of the chunk size (256) and the padding drops out."""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, Act, Family, Recipe

CHUNK = 256
# (batch, seq_len), seq_len a multiple of the chunk size
MAMBA_GRID = ((1, 256), (1, 1024), (4, 512), (1, 8192), (8, 2048), (16, 1024), (32, 512), (64, 256))


def _mamba2_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    inner = cfg.expand * cfg.hidden_size
    groups = cfg.n_groups * cfg.state_size
    return {
        "hidden_size": cfg.hidden_size, "intermediate_size": inner, "num_heads": cfg.num_heads, "head_dim": cfg.head_dim,
        "state_size": cfg.state_size, "n_groups": cfg.n_groups, "conv_kernel": cfg.conv_kernel,
        "conv_dim": ("intermediate_size + 2 * n_groups * state_size", inner + 2 * groups),
        "in_proj_dim": ("2 * intermediate_size + 2 * n_groups * state_size + num_heads", 2 * inner + 2 * groups + cfg.num_heads),
    }


def _conv1d_call(tm: Any, cfg: Any, conv: Any, xbc: Any) -> Any:
    """The mixer's conv step exactly as torch_forward runs it: channels first, causal (padding conv_kernel - 1, the
    tail cut back to seq_len), SiLU."""
    seq_len = xbc.shape[1]
    return tm.ACT2FN[cfg.hidden_act](conv(xbc.transpose(1, 2))[..., :seq_len].transpose(1, 2))


def mamba2_family() -> Family:
    mixer = Recipe(
        "mixer", "ssm", "Mamba-2 mixer (SSD) in prefill: in_proj to gate, x/B/C and dt; causal depthwise conv1d with SiLU on x/B/C; "
        "the chunked state-space scan (chunk 256, softplus dt + dt_bias, A = -exp(A_log), D skip) in transformers' pure-torch "
        "path (torch_forward: the CUDA/Triton kernels are not used); RMSNorm gated by SiLU(gate); out_proj",
        lambda tm, cfg: tm.Mamba2Mixer(cfg, 0), lambda tm, cfg, m, x: m(x), (Act("hidden_states", (BATCH, SEQ, "hidden_size")),),
        backward=False, grid=MAMBA_GRID, seq_multiple=CHUNK)
    conv1d = Recipe(
        "conv1d", "conv1d", "the Mamba-2 mixer's causal depthwise conv1d alone (kernel 4, one filter per channel of x/B/C, "
        "with bias, left padding 3 so each output sees only its own and the 3 earlier tokens) followed by SiLU, on the "
        "[batch, seq_len, conv_dim] x/B/C part of in_proj's output, as the mixer's pure-torch path runs it",
        lambda tm, cfg: tm.Mamba2Mixer(cfg, 0).conv1d, _conv1d_call, (Act("xbc", (BATCH, SEQ, "conv_dim")),))
    return Family("mamba2", "Mamba2Config", _mamba2_axes, {"mixer": mixer, "conv1d": conv1d})
