"""Quantised GEMMs that no transformers layer holds (the modeling code runs in bf16; quantised
checkpoints use kernels outside it), so they are not captured but written by hand from the linear
shapes of a model's published config. Each description starts with "hand-written reference:".

Three schemes, weights [N, K] (out_features, in_features) and activations [num_tokens, K]:
- fp8_gemm_*: e4m3 operands, one fp32 scale per operand (per tensor), torch._scaled_mm, bf16 out;
- fp8_block_gemm_*: DeepSeek-V3's format: e4m3 weights with an fp32 scale per 128x128 block
  [N / 128, K / 128], e4m3 activations with an fp32 scale per 1x128 token group [num_tokens, K / 128];
  the reference dequantises block-wise to fp32 and multiplies, bf16 out;
- nvfp4_gemm_*: packed e2m1 operands (float4_e2m1fn_x2, two codes a byte, low nibble first: physical
  shapes [rows, K / 2]) with an e4m3 scale per 16 values and a global fp32 scale (the product of the
  operands' global scales); the reference decodes through the e2m1 table, scales and multiplies.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from solbench.dataset.extract.configs import ModelConfig
from solbench.dataset.source_snippets import NVFP4_DECODE

NAMESPACE = uuid.UUID("5d1f7a3e-2b8c-4e69-a0d4-93c7be61f208")
TOKENS = (1, 16, 128, 512, 1024, 2048, 4096, 8192)
M = "num_tokens"
TOLERANCE = {"fp8": (5e-2, 5e-2, 0.98), "fp8_block": (5e-2, 5e-2, 0.98), "nvfp4": (1e-1, 1e-1, 0.95)}
SCALE = {"kind": "uniform", "low": 0.01, "high": 0.05}  # fp32 scales of e4m3 values (|x| <= 448)
FP4_SCALE = {"kind": "normal", "mean": 0.625, "std": 0.125}  # e4m3 block scales of e2m1 values (|x| <= 6), positive
FP8, FP4 = "float8_e4m3fn", "float4_e2m1fn_x2"


@dataclass(frozen=True)
class QuantRecipe:
    module: str  # e.g. fp8_gemm_qkv
    op_type: str
    scheme: str  # a key of TOLERANCE
    proj: str  # what the weight is, for the description
    n: int
    k: int
    backward: bool = False


def _llama_linears(v: dict[str, Any]) -> dict[str, tuple[int, int]]:
    head_dim = v.get("head_dim") or v["hidden_size"] // v["num_attention_heads"]
    q, kv = v["num_attention_heads"] * head_dim, v["num_key_value_heads"] * head_dim
    return {"qkv": (q + 2 * kv, v["hidden_size"]), "o": (v["hidden_size"], q),
            "gate_up": (2 * v["intermediate_size"], v["hidden_size"]), "down": (v["hidden_size"], v["intermediate_size"])}


def _deepseek_linears(v: dict[str, Any]) -> dict[str, tuple[int, int]]:
    heads, hidden = v["num_attention_heads"], v["hidden_size"]
    return {"q_a": (v["q_lora_rank"], hidden), "q_b": (heads * (v["qk_nope_head_dim"] + v["qk_rope_head_dim"]), v["q_lora_rank"]),
            "kv_b": (heads * (v["qk_nope_head_dim"] + v["v_head_dim"]), v["kv_lora_rank"]), "o": (hidden, heads * v["v_head_dim"]),
            "expert_gate_up": (2 * v["moe_intermediate_size"], hidden), "expert_down": (hidden, v["moe_intermediate_size"])}


def _qwen_moe_linears(v: dict[str, Any]) -> dict[str, tuple[int, int]]:
    dense = _llama_linears(v)
    return {"qkv": dense["qkv"], "o": dense["o"], "expert_gate_up": (2 * v["moe_intermediate_size"], v["hidden_size"]),
            "expert_down": (v["hidden_size"], v["moe_intermediate_size"])}


# model -> (scheme, projections): the checkpoints' own quantised formats where they have one (DeepSeek-V3 and
# Qwen3-30B-A3B-FP8 are 128x128 block-scaled), per-tensor fp8 and nvfp4 for Llama-3 (as FP8/FP4 checkpoints ship them)
PLAN: dict[str, tuple[Any, tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "llama3_8b": (_llama_linears, (("fp8", ("qkv", "o", "gate_up", "down")), ("nvfp4", ("qkv", "o", "gate_up", "down")))),
    "llama3_70b": (_llama_linears, (("fp8", ("qkv", "o", "gate_up", "down")), ("nvfp4", ("gate_up", "down")))),
    "deepseek_v3": (_deepseek_linears, (("fp8_block", ("q_a", "q_b", "kv_b", "o", "expert_gate_up", "expert_down")),
                                        ("nvfp4", ("expert_gate_up", "expert_down")))),
    "qwen3_30b_a3b": (_qwen_moe_linears, (("fp8_block", ("qkv", "o", "expert_gate_up", "expert_down")),)),
}
PREFIX = {"fp8": "fp8_gemm", "fp8_block": "fp8_block_gemm", "nvfp4": "nvfp4_gemm"}
OP_TYPE = {"fp8": "fp8_gemm", "fp8_block": "fp8_gemm", "nvfp4": "fp4_gemm"}


def quant_recipes(model: ModelConfig, tiny: bool = False) -> dict[str, QuantRecipe]:
    if model.name not in PLAN:
        return {}
    linears, schemes = PLAN[model.name]
    shapes = linears({**model.values, **(model.tiny if tiny else {})})
    found = {}
    for scheme, projs in schemes:
        for proj in projs:
            module = f"{PREFIX[scheme]}_{proj}"
            found[module] = QuantRecipe(module, OP_TYPE[scheme], scheme, proj, *shapes[proj])
    return found


FP8_REFERENCE = '''import torch


def run(a, b, a_scale, b_scale):
    """{doc}"""
    return torch._scaled_mm(a, b.t(), scale_a=a_scale, scale_b=b_scale, out_dtype=torch.bfloat16)
'''

BLOCK_REFERENCE = '''import torch

BLOCK = 128


def run(a, a_scale, b, b_scale):
    """{doc}"""
    rows, cols = a.shape
    n = b.shape[0]
    a32 = (a.to(torch.float32).view(rows, cols // BLOCK, BLOCK) * a_scale.unsqueeze(-1)).view(rows, cols)
    b32 = b.to(torch.float32).view(n // BLOCK, BLOCK, cols // BLOCK, BLOCK) * b_scale[:, None, :, None]
    return (a32 @ b32.view(n, cols).t()).to(torch.bfloat16)
'''

NVFP4_REFERENCE = "import torch\n" + NVFP4_DECODE + '''

def run(a, a_scale, b, b_scale, global_scale):
    """{doc}"""
    return (global_scale * (dequant_nvfp4(a, a_scale) @ dequant_nvfp4(b, b_scale).t())).to(torch.bfloat16)
'''


def _tensor(shape: list[str], dtype: str, distribution: dict | None = None) -> dict:
    return {"shape": shape, "dtype": dtype, **({"distribution": distribution} if distribution else {})}


def _scheme(recipe: QuantRecipe) -> tuple[dict, dict, str, str]:
    """(extra axes, inputs, reference template, what the description says of the format)."""
    if recipe.scheme == "fp8":
        inputs = {"a": _tensor([M, "K"], FP8), "b": _tensor(["N", "K"], FP8), "a_scale": _tensor([], "float32", SCALE),
                  "b_scale": _tensor([], "float32", SCALE)}
        return {}, inputs, FP8_REFERENCE, ("fp8 e4m3 activations a and weight b, one fp32 scale each (per tensor), "
                                           "torch._scaled_mm with bf16 output")
    if recipe.scheme == "fp8_block":
        axes = {"K_blocks": {"type": "expr", "expression": "K // 128"}, "N_blocks": {"type": "expr", "expression": "N // 128"}}
        inputs = {"a": _tensor([M, "K"], FP8), "a_scale": _tensor([M, "K_blocks"], "float32", SCALE),
                  "b": _tensor(["N", "K"], FP8), "b_scale": _tensor(["N_blocks", "K_blocks"], "float32", SCALE)}
        return axes, inputs, BLOCK_REFERENCE, ("fp8 e4m3 weight b with an fp32 scale per 128x128 block and e4m3 activations a "
                                               "with an fp32 scale per 1x128 token group; dequantised block-wise to fp32, "
                                               "multiplied, bf16 output")
    axes = {"K_half": {"type": "expr", "expression": "K // 2"}, "K_groups": {"type": "expr", "expression": "K // 16"}}
    inputs = {"a": _tensor([M, "K_half"], FP4), "a_scale": _tensor([M, "K_groups"], FP8, FP4_SCALE),
              "b": _tensor(["N", "K_half"], FP4), "b_scale": _tensor(["N", "K_groups"], FP8, FP4_SCALE),
              "global_scale": _tensor([], "float32", SCALE)}
    return axes, inputs, NVFP4_REFERENCE, ("nvfp4 operands: packed e2m1 (float4_e2m1fn_x2, physical shape [rows, K // 2], low "
                                           "nibble first) with an fp8 e4m3 scale per 16 values and a global fp32 scale; decoded "
                                           "through the e2m1 table, scaled, multiplied in fp32, bf16 output")


def quant_problem(model: ModelConfig, recipe: QuantRecipe, name: str, tiny: bool = False) -> tuple[dict, list[dict]]:
    """The definition and workload lines of one hand-written quantised GEMM."""
    extra_axes, inputs, template, scheme = _scheme(recipe)
    if tiny:
        recipe = quant_recipes(model, tiny=True)[recipe.module]
    doc = f"{name}: {model.title} {recipe.proj} projection [{recipe.n}, {recipe.k}], {recipe.scheme}. Hand-written by solbench dataset extract."
    description = (f"hand-written reference: {model.title}'s {recipe.proj} projection (weight [N, K] = [{recipe.n}, {recipe.k}] from "
                   f"the published config, {model.hf_id}) as a quantised GEMM over num_tokens rows: {scheme}. Written by hand "
                   "(no transformers layer runs this format), not captured.")
    definition = {
        "name": name, "op_type": recipe.op_type, "description": description, "hf_id": model.hf_id,
        "axes": {M: {"type": "var"}, "N": {"type": "const", "value": recipe.n}, "K": {"type": "const", "value": recipe.k}, **extra_axes},
        "constraints": _constraints(recipe.scheme),
        "inputs": inputs, "outputs": {"out": _tensor([M, "N"], "bfloat16")},
        "reference": template.replace("{doc}", doc),
    }
    atol, rtol, ratio = TOLERANCE[recipe.scheme]
    tolerance = {"max_atol": atol, "max_rtol": rtol, "required_matched_ratio": ratio, "max_error_cap": None, "allow_negative_inf": False}
    lines = [{"uuid": str(uuid.uuid5(NAMESPACE, f"{name}/{m}")), "axes": {M: m},
              "inputs": {key: {"type": "random"} for key in inputs}, "tolerance": tolerance} for m in TOKENS]
    return definition, lines


def _constraints(scheme: str) -> list[str]:
    if scheme == "fp8_block":
        return ["K % 128 == 0", "N % 128 == 0"]
    if scheme == "nvfp4":
        return ["K % 16 == 0"]
    return []
