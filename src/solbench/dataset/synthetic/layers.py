"""The kinds of problem whose SOL analysis was slowest on the public set (issue 28): nvfp4 layers
(attention over an nvfp4 KV cache, a linear that quantises its activations, a gated MLP and a whole
decoder layer, all through the packed-e2m1 decode), packed-sequence attention with YaRN-scaled
rotary embeddings (positions from cu_seqlens, one SDPA per sequence), and attention with two
rotary position streams on two parts of the head (GLM's 2D positions)."""

from __future__ import annotations

import math

from solbench.dataset.source_snippets import NVFP4_DECODE as NVFP4
from solbench.dataset.synthetic.attention import MAKE_CU_SEQLENS
from solbench.dataset.synthetic.core import BATCH, SEQ, TOKENS, VAR, Spec, custom, mnk_spec, model_spec, out, scalar, t
from solbench.dataset.synthetic.models import LLAMA3_8B, LLAMA3_70B, QWEN2_7B, Model
from solbench.dataset.synthetic.quant import FP4, FP4_AXES, FP4_TOLERANCE, FP8, QUANT_NVFP4
from solbench.dataset.synthetic.snippets import GQA_DECODE, PER_SEQUENCE_ATTENTION, RMS_NORM, ROTATE_HALF, SILU_AND_MUL

GLM4_9B = Model("glm4_9b", "THUDM/glm-4-9b-chat", 4096, 32, 2, 128, 13696, 151552, 1.5625e-07, 10000.0, 131072)

# Activations rounded to nvfp4 and back (per 16 values: an fp8 scale of amax / 6 times the global scale, the
# nearest e2m1 magnitude), as a layer that runs in nvfp4 sees them.
NVFP4_ROUND = """
def round_nvfp4(x, global_scale):
    packed, scale = quant_nvfp4(x, global_scale)
    return dequant_nvfp4(packed, scale) / global_scale

def linear_nvfp4(x, weight, weight_scale, weight_global_scale, act_global_scale):
    w = dequant_nvfp4(weight, weight_scale) * weight_global_scale
    return round_nvfp4(x, act_global_scale) @ w.T
"""

NVFP4_SCALARS = [scalar("weight_global_scale", 0.5, description="the weights' global scale"),
                 scalar("act_global_scale", 448.0 * 6.0 / 8.0, description="the activations' global scale")]


def nvfp4_linear(model: Model, proj: str) -> Spec:
    n, k = model.projection(proj)
    return mnk_spec(
        model, n, k, proj in ("qkv", "gate_up"), f"nvfp4_linear_dynamic_quant_{model.key}_{proj}", "fp4_linear",
        f"nvfp4 {proj} linear of {model.key} ([{n}, {k}], bias) that quantises its bf16 activations on the fly: per 16 values an "
        "fp8 scale and the nearest e2m1 code; the packed weight decoded through the table; product in fp32, output bf16.",
        [t("x", ["M", "K"], "bfloat16"), t("weight", ["N", "K_half"], FP4), t("weight_scale", ["N", "K_blocks"], FP8),
         t("bias", ["N"], "bfloat16"), *NVFP4_SCALARS],
        [out("y", ["M", "N"], "bfloat16")],
        """
        import torch


        def run(x, weight, weight_scale, bias, weight_global_scale, act_global_scale):
            y = linear_nvfp4(x, weight, weight_scale, weight_global_scale, act_global_scale)
            return (y + bias.to(torch.float32)).to(torch.bfloat16)
        """, NVFP4, QUANT_NVFP4, NVFP4_ROUND,
        axes=FP4_AXES, constraints=["K % 16 == 0"], tolerance=FP4_TOLERANCE,
    )


MLP_AXES = {"gate_up_size": "2 * intermediate_size", "hidden_half": "hidden_size // 2", "hidden_blocks": "hidden_size // 16",
            "inter_half": "intermediate_size // 2", "inter_blocks": "intermediate_size // 16"}
MLP_WEIGHTS = [t("gate_up_weight", ["gate_up_size", "hidden_half"], FP4), t("gate_up_scale", ["gate_up_size", "hidden_blocks"], FP8),
               t("down_weight", ["hidden_size", "inter_half"], FP4), t("down_scale", ["hidden_size", "inter_blocks"], FP8)]
NVFP4_MLP = """
def mlp_nvfp4(x, gate_up_weight, gate_up_scale, down_weight, down_scale, weight_global_scale, act_global_scale):
    gate_up = linear_nvfp4(x, gate_up_weight, gate_up_scale, weight_global_scale, act_global_scale)
    return linear_nvfp4(silu_and_mul(gate_up), down_weight, down_scale, weight_global_scale, act_global_scale)
"""
SIZE_CHECKS = ["hidden_size % 16 == 0", "intermediate_size % 16 == 0"]


def nvfp4_mlp(model: Model) -> Spec:
    return model_spec(
        model, f"nvfp4_mlp_{model.key}", "fp4_mlp",
        f"The gated MLP of {model.key} in nvfp4: gate_up and down weights packed e2m1 with fp8 scales per 16 values, the "
        "activations rounded to nvfp4 before each GEMM, SiLU-and-mul between them in fp32, output bf16.",
        {"num_tokens": VAR, "hidden_size": VAR, "intermediate_size": VAR, **MLP_AXES},
        [t("x", ["num_tokens", "hidden_size"], "bfloat16"), *MLP_WEIGHTS, *NVFP4_SCALARS],
        [out("y", ["num_tokens", "hidden_size"], "bfloat16")],
        """
        import torch


        def run(x, gate_up_weight, gate_up_scale, down_weight, down_scale, weight_global_scale, act_global_scale):
            y = mlp_nvfp4(x, gate_up_weight, gate_up_scale, down_weight, down_scale, weight_global_scale, act_global_scale)
            return y.to(torch.bfloat16)
        """, NVFP4, QUANT_NVFP4, NVFP4_ROUND, SILU_AND_MUL, NVFP4_MLP,
        constraints=SIZE_CHECKS,
        grid={"num_tokens": TOKENS, ("hidden_size", "intermediate_size"): [(model.hidden, model.inter)]},
        small={"num_tokens": 16, "hidden_size": 256, "intermediate_size": 512},
        tolerance=FP4_TOLERANCE,
    )


def nvfp4_kv_decode(model: Model) -> Spec:
    cache = ["batch_size", "kv_len", "num_kv_heads", "head_half"]
    scales = ["batch_size", "kv_len", "num_kv_heads", "head_blocks"]
    return model_spec(
        model, f"gqa_decode_nvfp4_kv_{model.key}", "attention_decode",
        f"Decode attention of {model.key} against an nvfp4 KV cache (each head's 128 values packed e2m1 two per byte, an fp8 "
        "scale per 16 values, a global scale); queries and output bf16, scores in fp32.",
        {"batch_size": VAR, "kv_len": VAR, "num_qo_heads": model.heads, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim,
         "head_half": "head_dim // 2", "head_blocks": "head_dim // 16"},
        [t("q", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16"), t("k_cache", cache, FP4), t("k_scale", scales, FP8),
         t("v_cache", cache, FP4), t("v_scale", scales, FP8), scalar("kv_global_scale", 448.0 * 6.0 / 8.0),
         scalar("sm_scale", 1.0 / math.sqrt(model.head_dim))],
        [out("out", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16")],
        """
        import torch


        def decode_cache(cache, scale, global_scale):
            batch, length, heads, half = cache.shape
            flat = dequant_nvfp4(cache.view(torch.uint8).reshape(-1, half), scale.reshape(-1, scale.shape[-1]))
            return flat.view(batch, length, heads, 2 * half) / global_scale


        def run(q, k_cache, k_scale, v_cache, v_scale, kv_global_scale, sm_scale):
            k = decode_cache(k_cache, k_scale, kv_global_scale)
            v = decode_cache(v_cache, v_scale, kv_global_scale)
            return gqa_decode(q, k, v, sm_scale)
        """, NVFP4, GQA_DECODE,
        constraints=["num_qo_heads % num_kv_heads == 0"],
        grid={"batch_size": BATCH, "kv_len": SEQ + [16384, 32768]},
        small={"batch_size": 2, "kv_len": 256},
        tolerance=FP4_TOLERANCE,
    )


ROPE_FROM_POSITIONS = """
def rope(x, positions, theta):
    dim = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=x.device) / dim)
    freqs = positions.to(torch.float32)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1).unsqueeze(-2)
    x32 = x.to(torch.float32)
    return (x32 * emb.cos() + rotate_half(x32) * emb.sin()).to(x.dtype)
"""


def nvfp4_decoder_layer(model: Model) -> Spec:
    return model_spec(
        model, f"nvfp4_decoder_layer_{model.key}", "fp4_decoder_layer",
        f"A whole {model.key} decoder layer in nvfp4 (prefill): RMSNorm, the qkv linear, RoPE at positions 0..seq_len-1, causal "
        "GQA attention through SDPA, the o linear and the residual, RMSNorm, the gated MLP and the residual; every linear has a "
        "packed e2m1 weight with fp8 scales per 16 values and rounds its activations to nvfp4.",
        {"batch_size": VAR, "seq_len": VAR, "hidden_size": VAR, "intermediate_size": VAR, "num_qo_heads": VAR, "num_kv_heads": VAR,
         "head_dim": model.head_dim, "qkv_size": "(num_qo_heads + 2 * num_kv_heads) * head_dim",
         "q_half": "num_qo_heads * head_dim // 2", "q_blocks": "num_qo_heads * head_dim // 16", **MLP_AXES},
        [t("hidden_states", ["batch_size", "seq_len", "hidden_size"], "bfloat16"), t("input_layernorm_weight", ["hidden_size"], "bfloat16"),
         t("qkv_weight", ["qkv_size", "hidden_half"], FP4), t("qkv_scale", ["qkv_size", "hidden_blocks"], FP8),
         t("o_weight", ["hidden_size", "q_half"], FP4), t("o_scale", ["hidden_size", "q_blocks"], FP8),
         t("post_attention_layernorm_weight", ["hidden_size"], "bfloat16"), *MLP_WEIGHTS, *NVFP4_SCALARS,
         scalar("eps", model.eps), scalar("rope_theta", model.theta)],
        [out("output", ["batch_size", "seq_len", "hidden_size"], "bfloat16")],
        f"""
        import torch
        import torch.nn.functional as F

        HEAD_DIM = {model.head_dim}


        def run(hidden_states, input_layernorm_weight, qkv_weight, qkv_scale, o_weight, o_scale, post_attention_layernorm_weight,
                gate_up_weight, gate_up_scale, down_weight, down_scale, weight_global_scale, act_global_scale, eps, rope_theta):
            batch, seq, hidden = hidden_states.shape
            scales = (weight_global_scale, act_global_scale)
            q_size = 2 * o_weight.shape[1]
            kv_size = (qkv_weight.shape[0] - q_size) // 2
            x = rms_norm(hidden_states, input_layernorm_weight, eps).reshape(batch * seq, hidden)
            qkv = linear_nvfp4(x, qkv_weight, qkv_scale, *scales).to(torch.bfloat16)
            q, k, v = qkv.split([q_size, kv_size, kv_size], dim=-1)
            positions = torch.arange(seq, device=hidden_states.device)
            q = rope(q.view(batch, seq, -1, HEAD_DIM), positions, rope_theta).transpose(1, 2)
            k = rope(k.view(batch, seq, -1, HEAD_DIM), positions, rope_theta).transpose(1, 2)
            v = v.view(batch, seq, -1, HEAD_DIM).transpose(1, 2)
            attention = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            attention = attention.transpose(1, 2).reshape(batch * seq, q_size)
            h = hidden_states + linear_nvfp4(attention, o_weight, o_scale, *scales).to(torch.bfloat16).view(batch, seq, hidden)
            x = rms_norm(h, post_attention_layernorm_weight, eps).reshape(batch * seq, hidden)
            y = mlp_nvfp4(x, gate_up_weight, gate_up_scale, down_weight, down_scale, *scales)
            return h + y.to(torch.bfloat16).view(batch, seq, hidden)
        """, NVFP4, QUANT_NVFP4, NVFP4_ROUND, SILU_AND_MUL, NVFP4_MLP, RMS_NORM, ROTATE_HALF, ROPE_FROM_POSITIONS,
        constraints=[*SIZE_CHECKS, "num_qo_heads % num_kv_heads == 0"],
        grid={"batch_size": [1, 2, 4], "seq_len": [128, 512, 1024, 2048],
              ("hidden_size", "intermediate_size", "num_qo_heads", "num_kv_heads"): [(model.hidden, model.inter, model.heads, model.kv_heads)]},
        small={"batch_size": 1, "seq_len": 16, "hidden_size": 256, "intermediate_size": 512, "num_qo_heads": 2, "num_kv_heads": 1},
        valid=lambda axes: axes["batch_size"] * axes["seq_len"] <= 4096,
        tolerance=FP4_TOLERANCE,
    )


YARN_FREQUENCIES = """
def yarn_inv_freq(dim, theta, factor, original, device, beta_fast=32.0, beta_slow=1.0):
    # each pair of dims: interpolated (divided by the factor) below a ramp of wavelengths, kept above it
    base = theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim)

    def dim_of(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = max(math.floor(dim_of(beta_fast)), 0), min(math.ceil(dim_of(beta_slow)), dim - 1)
    ramp = ((torch.arange(dim // 2, dtype=torch.float32, device=device) - low) / max(high - low, 1e-3)).clamp(0, 1)
    return (1.0 / (factor * base)) * ramp + (1.0 / base) * (1 - ramp)
"""

def yarn_rope_attention(model: Model, factor: float, original: int) -> Spec:
    return model_spec(
        model, f"yarn_rope_ragged_attention_bf16_{model.key}", "rope_attention",
        f"{model.key} with YaRN context extension (factor {factor:g} over {original} positions): rotary frequencies "
        "interpolated along a ramp of wavelengths and cos/sin scaled by 0.1 ln(factor) + 1, applied to q and k of a packed "
        "batch (each token's position counted from its sequence's start in cu_seqlens), then causal attention per sequence.",
        {"total_tokens": VAR, "batch_size": VAR, "batch_size_plus_one": "batch_size + 1", "num_qo_heads": model.heads,
         "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("q", ["total_tokens", "num_qo_heads", "head_dim"], "bfloat16"), t("k", ["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
         t("v", ["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
         custom("cu_seqlens", ["batch_size_plus_one"], "int32", "sorted boundaries, 0 first and total_tokens last"),
         scalar("rope_theta", model.theta), scalar("sm_scale", 1.0 / math.sqrt(model.head_dim))],
        [out("o", ["total_tokens", "num_qo_heads", "head_dim"], "bfloat16")],
        f"""
        import math

        import torch
        import torch.nn.functional as F

        FACTOR = {factor}
        ORIGINAL_POSITIONS = {original}


        def run(q, k, v, cu_seqlens, rope_theta, sm_scale):
            total, _, head_dim = q.shape
            starts = cu_seqlens[:-1].long()
            lengths = cu_seqlens[1:].long() - starts
            positions = torch.arange(total, device=q.device) - torch.repeat_interleave(starts, lengths)
            inv_freq = yarn_inv_freq(head_dim, rope_theta, FACTOR, ORIGINAL_POSITIONS, q.device)
            freqs = positions.to(torch.float32)[:, None] * inv_freq
            emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
            mscale = 0.1 * math.log(FACTOR) + 1.0
            cos, sin = emb.cos() * mscale, emb.sin() * mscale
            q = (q.to(torch.float32) * cos + rotate_half(q.to(torch.float32)) * sin).to(q.dtype)
            k = (k.to(torch.float32) * cos + rotate_half(k.to(torch.float32)) * sin).to(k.dtype)
            return attention_per_sequence(q, k, v, cu_seqlens, sm_scale)
        """, ROTATE_HALF, YARN_FREQUENCIES, PER_SEQUENCE_ATTENTION, MAKE_CU_SEQLENS,
        constraints=["num_qo_heads % num_kv_heads == 0", "total_tokens >= batch_size"],
        grid={"total_tokens": [1024, 2048, 4096, 8192, 16384], "batch_size": BATCH},
        small={"total_tokens": 96, "batch_size": 3},
        custom="make_cu_seqlens",
        valid=lambda axes: axes["total_tokens"] >= axes["batch_size"],
    )


def dual_rope_attention(model: Model) -> Spec:
    shape_q = ["batch_size", "seq_len", "num_qo_heads", "head_dim"]
    shape_kv = ["batch_size", "seq_len", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"dual_rope_causal_attention_bf16_{model.key}", "rope_attention",
        f"Causal GQA attention of {model.key} with two rotary position streams (GLM's 2D positions for blank infilling): the first "
        "quarter of each head rotated at position_ids, the second quarter at block_position_ids, the rest left as it is.",
        {"batch_size": VAR, "seq_len": VAR, "num_qo_heads": model.heads, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("q", shape_q, "bfloat16"), t("k", shape_kv, "bfloat16"), t("v", shape_kv, "bfloat16"),
         custom("position_ids", ["batch_size", "seq_len"], "int64", "positions in the text, frozen over the span being filled"),
         custom("block_position_ids", ["batch_size", "seq_len"], "int64", "0 over the context, then 1, 2, ... inside the span"),
         scalar("rope_theta", model.theta), scalar("sm_scale", 1.0 / math.sqrt(model.head_dim))],
        [out("o", shape_q, "bfloat16")],
        """
        import torch
        import torch.nn.functional as F


        def dual_rope(x, position_ids, block_position_ids, theta):
            quarter = x.shape[-1] // 4
            first, second, rest = x[..., :quarter], x[..., quarter:2 * quarter], x[..., 2 * quarter:]
            return torch.cat((rope(first, position_ids, theta), rope(second, block_position_ids, theta), rest), dim=-1)


        def run(q, k, v, position_ids, block_position_ids, rope_theta, sm_scale):
            q = dual_rope(q, position_ids, block_position_ids, rope_theta).transpose(1, 2)
            k = dual_rope(k, position_ids, block_position_ids, rope_theta).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True, scale=sm_scale, enable_gqa=True)
            return o.transpose(1, 2)


        def make_position_ids(axes, device):
            batch, seq = axes["batch_size"], axes["seq_len"]
            span_start = torch.randint(1, seq + 1, (batch, 1))
            steps = torch.arange(seq)[None, :].expand(batch, seq)
            return {"position_ids": torch.minimum(steps, span_start - 1).to(device),
                    "block_position_ids": (steps - span_start + 1).clamp(min=0).to(device)}
        """, ROTATE_HALF, ROPE_FROM_POSITIONS,
        constraints=["num_qo_heads % num_kv_heads == 0"],
        grid={"batch_size": BATCH[:4], "seq_len": SEQ},
        small={"batch_size": 1, "seq_len": 32},
        custom="make_position_ids",
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L2": [
            yarn_rope_attention(QWEN2_7B, 4.0, 32768),
            dual_rope_attention(GLM4_9B),
        ],
        "Quant": [
            nvfp4_kv_decode(LLAMA3_8B),
            nvfp4_linear(LLAMA3_70B, "o"),
            nvfp4_mlp(LLAMA3_8B),
            nvfp4_decoder_layer(LLAMA3_8B),
        ],
    }
