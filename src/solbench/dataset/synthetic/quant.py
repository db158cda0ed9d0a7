"""Quantised problems: fp8 (e4m3) GEMMs with per-tensor and 128x128 block scales, fp8 quantisation
(per tensor, per 1x128 token group, fused into RMSNorm and SiLU-and-mul), an fp8 KV-cache decode, an
fp8 block-scaled MoE and an fp8 dgrad; nvfp4 (packed float4_e2m1fn_x2, physical shapes [N, K // 2],
float8_e4m3fn scales per 16 values) GEMMs, dequantisation and quantisation."""

from __future__ import annotations

import math

from solbench.dataset.synthetic.core import BATCH, SEQ, SHORT, TOKENS, VAR, Spec, custom, mnk_spec, model_spec, out, rows_spec, scalar, t
from solbench.dataset.synthetic.models import DEEPSEEK_V3, LLAMA3_70B, LLAMA3_8B, MIXTRAL, QWEN2_7B, Model
from solbench.dataset.source_snippets import NVFP4_DECODE as NVFP4
from solbench.dataset.synthetic.snippets import DISTINCT_TOPK, GQA_DECODE, MOE_EXPERTS, RMS_NORM, SILU_AND_MUL

FP8 = "float8_e4m3fn"
FP4 = "float4_e2m1fn_x2"

DEQUANT_BLOCKS = """
def dequant_blocks(q, scales, rows, cols):
    scales = scales.to(torch.float32).repeat_interleave(rows, dim=-2).repeat_interleave(cols, dim=-1)
    return q.to(torch.float32) * scales[..., : q.shape[-2], : q.shape[-1]]
"""

BLOCK_AXES = {"K_blocks": "K // 128", "N_blocks": "N // 128"}
BLOCK_CHECKS = {"constraints": ["K % 128 == 0", "N % 128 == 0"], "valid": lambda axes: axes["N"] % 128 == 0 and axes["K"] % 128 == 0}
FP8_TOLERANCE = (5e-2, 5e-2, 0.98)
FP8_QUANT_TOLERANCE = (1e-1, 1e-1, 0.98)
FP4_TOLERANCE = (1e-1, 1e-1, 0.95)


def fp8_gemm_per_tensor(model: Model, proj: str, out_dtype: str = "bfloat16") -> Spec:
    n, k = model.projection(proj)
    return mnk_spec(
        model, n, k, proj in ("qkv", "gate_up"), f"fp8_gemm_per_tensor_{SHORT[out_dtype]}_out_{model.key}_{proj}", "fp8_gemm",
        f"fp8 (e4m3) {proj} projection of {model.key} ([{n}, {k}]) with one fp32 scale per operand: both operands "
        f"dequantised to fp32, multiplied, output in {out_dtype}.",
        [t("a", ["M", "K"], FP8), t("b", ["N", "K"], FP8), t("a_scale", [1], "float32"), t("b_scale", [1], "float32")],
        [out("out", ["M", "N"], out_dtype)],
        f"""
        import torch


        def run(a, b, a_scale, b_scale):
            out = (a.to(torch.float32) * a_scale) @ (b.to(torch.float32) * b_scale).T
            return out.to(torch.{out_dtype})
        """,
        hf_id=model.hf_id.replace("-Instruct", "-Instruct-FP8") if "Instruct" in model.hf_id else model.hf_id + "-FP8",
        tolerance=FP8_TOLERANCE,
    )


DEEPSEEK_SHAPES = {"q_a": (1536, 7168), "q_b": (24576, 1536), "o": (7168, 16384), "shared_gate_up": (4096, 7168), "shared_down": (7168, 2048)}


def fp8_block_gemm(proj: str) -> Spec:
    model = DEEPSEEK_V3
    n, k = DEEPSEEK_SHAPES[proj]
    return mnk_spec(
        model, n, k, proj in ("q_a", "q_b", "shared_gate_up"), f"fp8_block_scaled_gemm_{model.key}_{proj}", "fp8_gemm",
        f"DeepSeek-V3 style fp8 GEMM of the {proj} weight ([{n}, {k}]): activations with a scale per 1x128 group, "
        "weights with a scale per 128x128 block; both dequantised to fp32 before the product, output bf16.",
        [t("a", ["M", "K"], FP8), t("a_scale", ["M", "K_blocks"], "float32", "one scale per 128 consecutive values of a row"),
         t("b", ["N", "K"], FP8), t("b_scale", ["N_blocks", "K_blocks"], "float32", "one scale per 128x128 block")],
        [out("c", ["M", "N"], "bfloat16")],
        """
        import torch


        def run(a, a_scale, b, b_scale):
            a32 = dequant_blocks(a, a_scale, 1, 128)
            b32 = dequant_blocks(b, b_scale, 128, 128)
            return (a32 @ b32.T).to(torch.bfloat16)
        """, DEQUANT_BLOCKS,
        axes=BLOCK_AXES, tolerance=FP8_TOLERANCE, **BLOCK_CHECKS,
    )


QUANT_GROUPS = """
def quant_groups(x, group):
    rows, cols = x.shape
    g = x.to(torch.float32).view(rows, cols // group, group)
    scale = g.abs().amax(dim=-1).clamp_min(1e-10) / 448.0
    q = (g / scale[..., None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q.view(rows, cols), scale
"""


def fp8_quant_group(model: Model, width: int, tag: str) -> Spec:
    return rows_spec(
        model, f"fp8_quant_per_token_group_{model.key}_{tag}", "fp8_quant",
        f"Dynamic fp8 quantisation of {model.key} activations ({width} features) with one fp32 scale per group of 128 values "
        "(amax / 448).",
        [t("x", ["num_tokens", "hidden_size"], "bfloat16")],
        [out("x_q", ["num_tokens", "hidden_size"], FP8), out("x_scale", ["num_tokens", "num_groups"], "float32")],
        """
        import torch


        def run(x):
            return quant_groups(x, 128)
        """, QUANT_GROUPS,
        width=width, axes={"num_groups": "hidden_size // 128"}, small_rows=32, tolerance=FP8_QUANT_TOLERANCE,
    )


def fp8_quant_static(model: Model) -> Spec:
    return rows_spec(
        model, f"fp8_quant_static_per_tensor_{model.key}", "fp8_quant",
        f"Static per-tensor fp8 quantisation of {model.key} activations with a calibrated scale (a scalar input).",
        [t("x", ["num_tokens", "hidden_size"], "bfloat16"), scalar("scale", 0.0234375)], [out("x_q", ["num_tokens", "hidden_size"], FP8)],
        """
        import torch


        def run(x, scale):
            return (x.to(torch.float32) / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
        """,
        small_rows=32, tolerance=FP8_QUANT_TOLERANCE,
    )


def fp8_rmsnorm_quant(model: Model) -> Spec:
    return rows_spec(
        model, f"rmsnorm_fp8_quant_{model.key}", "rmsnorm_fp8_quant",
        f"RMSNorm of {model.key} fused with static fp8 quantisation of its output (scale given as a 1-element tensor).",
        [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"), t("norm_weight", ["hidden_size"], "bfloat16"),
         t("scale", [1], "float32"), scalar("eps", model.eps)],
        [out("out", ["num_tokens", "hidden_size"], FP8)],
        """
        import torch


        def run(hidden_states, norm_weight, scale, eps):
            normed = rms_norm(hidden_states, norm_weight, eps).to(torch.float32)
            return (normed / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
        """, RMS_NORM,
        small_rows=32, tolerance=FP8_QUANT_TOLERANCE,
    )


def fp8_silu_quant(model: Model) -> Spec:
    return model_spec(
        model, f"silu_and_mul_fp8_quant_{model.key}", "silu_and_mul_fp8_quant",
        f"SwiGLU activation of {model.key} fused with per-token-group (1x128) fp8 quantisation of the result.",
        {"num_tokens": VAR, "intermediate_size": VAR, "gate_up_size": "2 * intermediate_size", "num_groups": "intermediate_size // 128"},
        [t("x", ["num_tokens", "gate_up_size"], "bfloat16")],
        [out("out", ["num_tokens", "intermediate_size"], FP8), out("out_scale", ["num_tokens", "num_groups"], "float32")],
        """
            import torch


            def run(x):
                return quant_groups(silu_and_mul(x), 128)
        """, SILU_AND_MUL, QUANT_GROUPS,
        constraints=["intermediate_size % 128 == 0"],
        grid={"num_tokens": TOKENS, "intermediate_size": [model["moe_inter"], model.inter // 8]},
        small={"num_tokens": 16, "intermediate_size": 256},
        tolerance=FP8_QUANT_TOLERANCE,
    )


def fp8_kv_decode(model: Model) -> Spec:
    cache = ["batch_size", "kv_len", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"gqa_decode_fp8_kv_{model.key}", "attention_decode",
        f"Decode attention of {model.key} against an fp8 (e4m3) KV cache with per-tensor k and v scales; queries and output bf16.",
        {"batch_size": VAR, "kv_len": VAR, "num_qo_heads": model.heads, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("q", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16"), t("k_cache", cache, FP8), t("v_cache", cache, FP8),
         scalar("k_scale", 0.0625), scalar("v_scale", 0.0625), scalar("sm_scale", 1.0 / math.sqrt(model.head_dim))],
        [out("out", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16")],
        """
            import torch


            def run(q, k_cache, v_cache, k_scale, v_scale, sm_scale):
                return gqa_decode(q, k_cache.to(torch.float32) * k_scale, v_cache.to(torch.float32) * v_scale, sm_scale)
        """, GQA_DECODE,
        constraints=["num_qo_heads % num_kv_heads == 0"],
        grid={"batch_size": BATCH, "kv_len": SEQ + [16384, 32768]},
        small={"batch_size": 2, "kv_len": 256},
        tolerance=FP8_TOLERANCE,
    )


def fp8_block_moe(model: Model) -> Spec:
    k = model["top_k"]
    return model_spec(
        model, f"fp8_block_scaled_moe_{model.key}_ep", "fp8_moe",
        f"{model.key} MoE on the local experts of one expert-parallel rank with fp8 weights and activations "
        "(128x128 weight blocks, 1x128 activation groups): everything dequantised, then each expert's SwiGLU GEMMs on its "
        "own rows in a Python loop, combined with index_add_.",
        {"num_tokens": VAR, "hidden_size": VAR, "intermediate_size": VAR, "num_experts": VAR, "top_k": k,
              "gate_up_size": "2 * intermediate_size", "hidden_blocks": "hidden_size // 128", "inter_blocks": "intermediate_size // 128",
              "gate_up_blocks": "gate_up_size // 128"},
        [t("hidden_states", ["num_tokens", "hidden_size"], FP8), t("hidden_scale", ["num_tokens", "hidden_blocks"], "float32"),
         custom("topk_ids", ["num_tokens", "top_k"], "int32"), t("topk_weights", ["num_tokens", "top_k"], "float32"),
         t("w13", ["num_experts", "gate_up_size", "hidden_size"], FP8), t("w13_scale", ["num_experts", "gate_up_blocks", "hidden_blocks"], "float32"),
         t("w2", ["num_experts", "hidden_size", "intermediate_size"], FP8), t("w2_scale", ["num_experts", "hidden_blocks", "inter_blocks"], "float32")],
        [out("output", ["num_tokens", "hidden_size"], "bfloat16")],
        """
            import torch


            def run(hidden_states, hidden_scale, topk_ids, topk_weights, w13, w13_scale, w2, w2_scale):
                x = dequant_blocks(hidden_states, hidden_scale, 1, 128).to(torch.bfloat16)
                return moe_experts(x, topk_ids.long(), topk_weights, dequant_blocks(w13, w13_scale, 128, 128),
                                   dequant_blocks(w2, w2_scale, 128, 128))


            def make_topk_ids(axes, device):
                return {"topk_ids": distinct_topk(axes["num_tokens"], axes["num_experts"], axes["top_k"], device).to(torch.int32)}
        """, DEQUANT_BLOCKS, MOE_EXPERTS, DISTINCT_TOPK,
        constraints=["hidden_size % 128 == 0", "intermediate_size % 128 == 0", "num_experts >= top_k"],
        grid={"num_tokens": TOKENS, ("hidden_size", "intermediate_size"): [(7168, 2048)], "num_experts": [8, 16, 32]},
        small={"num_tokens": 16, "hidden_size": 256, "intermediate_size": 128, "num_experts": 8},
        custom="make_topk_ids",
        tolerance=FP8_TOLERANCE,
    )


def fp8_dgrad(proj: str) -> Spec:
    model = DEEPSEEK_V3
    n, k = DEEPSEEK_SHAPES[proj]
    return mnk_spec(
        model, n, k, False, f"fp8_block_scaled_linear_backward_dgrad_{model.key}_{proj}", "fp8_linear_backward",
        f"Input gradient of DeepSeek-V3's fp8 {proj} linear: the bf16 output gradient times the 128x128-block dequantised fp8 weight.",
        [t("grad_output", ["M", "N"], "bfloat16"), t("weight", ["N", "K"], FP8), t("weight_scale", ["N_blocks", "K_blocks"], "float32")],
        [out("grad_input", ["M", "K"], "bfloat16")],
        """
        import torch


        def run(grad_output, weight, weight_scale):
            w = dequant_blocks(weight, weight_scale, 128, 128)
            return (grad_output.to(torch.float32) @ w).to(torch.bfloat16)
        """, DEQUANT_BLOCKS,
        axes=BLOCK_AXES, tolerance=FP8_TOLERANCE, **BLOCK_CHECKS,
    )


FP4_AXES = {"K_half": "K // 2", "K_blocks": "K // 16"}
FP4_CHECKS = {"constraints": ["K % 16 == 0"], "tolerance": FP4_TOLERANCE}


def nvfp4_gemm(model: Model, proj: str) -> Spec:
    n, k = model.projection(proj)
    return mnk_spec(
        model, n, k, proj in ("qkv", "gate_up"), f"nvfp4_gemm_{model.key}_{proj}", "fp4_gemm",
        f"nvfp4 {proj} projection of {model.key} ([{n}, {k}]): both operands packed e2m1 (two per byte, physical shape "
        "[rows, K // 2]) with an fp8 e4m3 scale per 16 values and a global alpha; decoded through a table, scaled, "
        "multiplied in fp32, output bf16.",
        [t("a", ["M", "K_half"], FP4), t("a_scale", ["M", "K_blocks"], FP8), t("b", ["N", "K_half"], FP4),
         t("b_scale", ["N", "K_blocks"], FP8), scalar("alpha", 1.0 / 36.0, description="product of the two global scales")],
        [out("out", ["M", "N"], "bfloat16")],
        """
        import torch


        def run(a, a_scale, b, b_scale, alpha):
            return (alpha * (dequant_nvfp4(a, a_scale) @ dequant_nvfp4(b, b_scale).T)).to(torch.bfloat16)
        """, NVFP4,
        axes=FP4_AXES, hf_id=model.hf_id.replace("meta-llama/", "nvidia/").replace("-Instruct", "-Instruct-FP4"), **FP4_CHECKS,
    )


def nvfp4_w4a16(model: Model, proj: str) -> Spec:
    n, k = model.projection(proj)
    return mnk_spec(
        model, n, k, proj in ("qkv", "gate_up"), f"nvfp4_w4a16_gemm_{model.key}_{proj}", "fp4_gemm",
        f"Weight-only nvfp4 {proj} projection of {model.key}: bf16 activations times a packed e2m1 weight [N, K // 2] with "
        "fp8 block scales (16 values) and a global weight scale.",
        [t("x", ["M", "K"], "bfloat16"), t("weight", ["N", "K_half"], FP4), t("weight_scale", ["N", "K_blocks"], FP8),
         scalar("weight_global_scale", 0.5)],
        [out("y", ["M", "N"], "bfloat16")],
        """
        import torch


        def run(x, weight, weight_scale, weight_global_scale):
            w = dequant_nvfp4(weight, weight_scale) * weight_global_scale
            return (x.to(torch.float32) @ w.T).to(torch.bfloat16)
        """, NVFP4,
        axes=FP4_AXES, **FP4_CHECKS,
    )


# nvfp4 quantisation: per 16 values an fp8 scale (amax / 6, times the global scale), each value the nearest
# e2m1 code, packed two per byte (low nibble first) as float4_e2m1fn_x2.
QUANT_NVFP4 = """
E2M1_MAGNITUDES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def quant_nvfp4(x, global_scale):
    rows, cols = x.shape
    blocks = x.to(torch.float32).view(rows, cols // 16, 16)
    scale = (blocks.abs().amax(dim=-1) / 6.0 * global_scale).clamp(min=2.0 ** -9, max=448.0).to(torch.float8_e4m3fn)
    scaled = blocks / (scale.to(torch.float32) / global_scale)[..., None]
    magnitudes = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=x.device)
    codes = (scaled.abs()[..., None] - magnitudes).abs().argmin(dim=-1)
    codes = (codes | ((scaled < 0).long() << 3)).view(rows, cols // 2, 2).to(torch.uint8)
    packed = codes[..., 0] | (codes[..., 1] << 4)
    return packed.view(torch.float4_e2m1fn_x2), scale
"""


PACKED_ROWS = {"hidden_half": "hidden_size // 2", "num_blocks": "hidden_size // 16"}


def nvfp4_dequant(model: Model) -> Spec:
    return rows_spec(
        model, f"nvfp4_dequant_{model.key}", "fp4_dequant",
        f"Decodes packed nvfp4 activations of {model.key} (hidden {model.hidden}) to bf16: table lookup of both nibbles, "
        "times the fp8 block scale, divided by the global scale.",
        [t("x_fp4", ["num_tokens", "hidden_half"], FP4), t("x_scale", ["num_tokens", "num_blocks"], FP8),
         scalar("global_scale", 448.0 * 6.0 / 8.0)],
        [out("x", ["num_tokens", "hidden_size"], "bfloat16")],
        """
        import torch


        def run(x_fp4, x_scale, global_scale):
            return (dequant_nvfp4(x_fp4, x_scale) / global_scale).to(torch.bfloat16)
        """, NVFP4,
        axes=PACKED_ROWS, tolerance=(1e-2, 1e-2, 0.99),
    )


def nvfp4_quant(model: Model) -> Spec:
    return rows_spec(
        model, f"nvfp4_quant_{model.key}", "fp4_quant",
        f"nvfp4 quantisation of {model.key} activations: per 16 values an fp8 scale (amax / 6, times the global scale), "
        "values rounded to the nearest e2m1 code and packed two per byte (low nibble first) as float4_e2m1fn_x2.",
        [t("x", ["num_tokens", "hidden_size"], "bfloat16"), scalar("global_scale", 448.0 * 6.0 / 8.0)],
        [out("x_fp4", ["num_tokens", "hidden_half"], FP4), out("x_scale", ["num_tokens", "num_blocks"], FP8)],
        """
        import torch


        def run(x, global_scale):
            return quant_nvfp4(x, global_scale)
        """, QUANT_NVFP4,
        axes=PACKED_ROWS, tolerance=FP4_TOLERANCE,
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "Quant": [
            fp8_gemm_per_tensor(LLAMA3_8B, "qkv"),
            fp8_gemm_per_tensor(LLAMA3_8B, "o"),
            fp8_gemm_per_tensor(LLAMA3_70B, "gate_up"),
            fp8_gemm_per_tensor(QWEN2_7B, "down", "float16"),
            fp8_gemm_per_tensor(MIXTRAL, "qkv"),
            fp8_block_gemm("q_a"),
            fp8_block_gemm("q_b"),
            fp8_block_gemm("o"),
            fp8_block_gemm("shared_gate_up"),
            fp8_block_gemm("shared_down"),
            fp8_quant_group(DEEPSEEK_V3, DEEPSEEK_V3.hidden, "hidden"),
            fp8_quant_group(DEEPSEEK_V3, DEEPSEEK_V3["moe_inter"], "moe_inter"),
            fp8_quant_static(LLAMA3_8B),
            fp8_rmsnorm_quant(LLAMA3_8B),
            fp8_silu_quant(DEEPSEEK_V3),
            fp8_kv_decode(LLAMA3_8B),
            fp8_block_moe(DEEPSEEK_V3),
            fp8_dgrad("o"),
            nvfp4_gemm(LLAMA3_8B, "qkv"),
            nvfp4_gemm(LLAMA3_70B, "down"),
            nvfp4_gemm(QWEN2_7B, "gate_up"),
            nvfp4_w4a16(LLAMA3_8B, "down"),
            nvfp4_dequant(LLAMA3_8B),
            nvfp4_quant(LLAMA3_70B),
        ],
    }
