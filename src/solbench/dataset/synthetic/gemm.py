"""GEMM-like problems: plain, upcast, biased, scaled, batched, broadcast-sum contractions, backward."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SHORT, TOKENS, VAR, Spec, mnk_spec, model_spec, out, random_scalar, t, upto
from solbench.dataset.synthetic.models import (
    DEEPSEEK_V3, GEMMA2_9B, LLAMA3_70B, LLAMA3_8B, MAMBA2_2_7B, MAMBA_2_8B, MIXTRAL, QWEN2_7B, VIT_LARGE, WHISPER, Model,
)

COLUMN_PARALLEL = {"qkv", "q", "gate_up", "fc1", "lm_head", "router", "q_a", "kv_a", "in_proj"}

PLAIN = """
import torch


def run(x, weight):
    return torch.matmul(x, weight.t())
"""

UPCAST_KN = """
import torch


def run(hidden_states, w):
    out = hidden_states.to(torch.float32) @ w.to(torch.float32)
    return out.to(torch.bfloat16)
"""

UPCAST_NK = """
import torch


def run(a, b):
    return (a.to(torch.float32) @ b.to(torch.float32).T).to(torch.bfloat16)
"""

BIAS = """
import torch
import torch.nn.functional as F


def run(x, weight, bias):
    return F.linear(x, weight, bias)
"""

SCALED = """
import torch


def run(a, b, alpha):
    return (alpha * (a.float() @ b.float().T)).to(a.dtype)
"""

LINEAR_BACKWARD = """
import torch


def run(grad_output, x, weight):
    grad_input = grad_output @ weight
    grad_weight = grad_output.transpose(0, 1) @ x
    return grad_input, grad_weight
"""

LINEAR_BIAS_BACKWARD = """
import torch


def run(grad_output, x, weight):
    g = grad_output.to(torch.float32)
    grad_input = (g @ weight.to(torch.float32)).to(x.dtype)
    grad_weight = (g.T @ x.to(torch.float32)).to(weight.dtype)
    grad_bias = g.sum(dim=0).to(weight.dtype)
    return grad_input, grad_weight, grad_bias
"""


def _projection(model: Model, proj: str) -> tuple[int, int]:
    special = {
        "router": (model.extra.get("experts", 8), model.hidden),
        "q_a": (model.extra.get("q_lora", 1536), model.hidden),
        "kv_a": (model.extra.get("kv_lora", 512) + model.extra.get("rope_dim", 64), model.hidden),
        "q_b": (model.heads * (model.extra.get("nope_dim", 128) + model.extra.get("rope_dim", 64)), model.extra.get("q_lora", 1536)),
        "in_proj": (2 * model.inter, model.hidden),
        "out_proj": (model.hidden, model.inter),
    }
    return special[proj] if proj in special else model.projection(proj)


def _gemm(model: Model, proj: str, name: str, op_type: str, description: str, inputs: list, outputs: list, reference: str) -> Spec:
    n, k = _projection(model, proj)
    return mnk_spec(model, n, k, proj in COLUMN_PARALLEL, name, op_type, description.format(proj=proj, model=model.key, n=n, k=k),
                    inputs, outputs, reference)


def gemm(model: Model, proj: str, dtype: str) -> Spec:
    return _gemm(model, proj, f"gemm_{SHORT[dtype]}_{model.key}_{proj}", "gemm",
                 "{proj} projection of {model} (weight [{n}, {k}], tensor-parallel shards in the workloads): "
                 f"output = x @ weight.T in {dtype}.",
                 [t("x", ["M", "K"], dtype), t("weight", ["N", "K"], dtype)], [out("output", ["M", "N"], dtype)], PLAIN)


def gemm_upcast(model: Model, proj: str, weight_kn: bool) -> Spec:
    inputs = (
        [t("hidden_states", ["M", "K"], "bfloat16"), t("w", ["K", "N"], "bfloat16")]
        if weight_kn
        else [t("a", ["M", "K"], "bfloat16"), t("b", ["N", "K"], "bfloat16")]
    )
    return _gemm(model, proj, f"gemm_bf16_upcast_{model.key}_{proj}", "gemm",
                 "{proj} projection of {model} ([{n}, {k}]) written as an fp32 contraction of bf16 data: both operands are "
                 "upcast to float32, multiplied, and the product is rounded back to bf16.",
                 inputs, [out("out", ["M", "N"], "bfloat16")], UPCAST_KN if weight_kn else UPCAST_NK)


def linear_bias(model: Model, proj: str, dtype: str) -> Spec:
    return _gemm(model, proj, f"linear_bias_{SHORT[dtype]}_{model.key}_{proj}", "linear",
                 "Biased {proj} projection of {model} ([{n}, {k}]): " + f"F.linear(x, weight, bias) in {dtype}.",
                 [t("x", ["M", "K"], dtype), t("weight", ["N", "K"], dtype), t("bias", ["N"], dtype)],
                 [out("output", ["M", "N"], dtype)], BIAS)


def gemm_scaled(model: Model, proj: str) -> Spec:
    return _gemm(model, proj, f"gemm_scaled_bf16_{model.key}_{proj}", "gemm",
                 "alpha * (a @ b.T) for the {proj} projection of {model}; alpha is a Python float drawn per workload.",
                 [t("a", ["M", "K"], "bfloat16"), t("b", ["N", "K"], "bfloat16"), random_scalar("alpha")],
                 [out("c", ["M", "N"], "bfloat16")], SCALED)


def linear_backward(model: Model, proj: str, dtype: str, bias: bool) -> Spec:
    outputs = [out("grad_input", ["M", "K"], dtype), out("grad_weight", ["N", "K"], dtype)]
    if bias:
        outputs.append(out("grad_bias", ["N"], dtype))
    return _gemm(model, proj, f"linear_backward_{SHORT[dtype]}_{model.key}_{proj}", "linear_backward",
                 "Backward of the {proj} projection of {model} ([{n}, {k}]): gradients of x and weight"
                 + (" and bias (fp32 accumulation)." if bias else "."),
                 [t("grad_output", ["M", "N"], dtype), t("x", ["M", "K"], dtype), t("weight", ["N", "K"], dtype)],
                 outputs, LINEAR_BIAS_BACKWARD if bias else LINEAR_BACKWARD)


def attention_scores_matmul(model: Model, dtype: str) -> Spec:
    return model_spec(
        model, f"matmul_attention_scores_{SHORT[dtype]}_{model.key}", "batched_matmul",
        f"Attention scores of {model.key} as a batched matmul: q @ k^T per (batch, head), unscaled.",
        {"batch_size": VAR, "num_heads": model.heads, "seq_len": VAR, "head_dim": model.head_dim},
        [t("q", ["batch_size", "num_heads", "seq_len", "head_dim"], dtype),
         t("k", ["batch_size", "num_heads", "seq_len", "head_dim"], dtype)],
        [out("scores", ["batch_size", "num_heads", "seq_len", "seq_len"], dtype)],
        """
            import torch


            def run(q, k):
                return torch.matmul(q, k.transpose(-1, -2))
        """,
        grid={"batch_size": BATCH, "seq_len": [197, 256, 448, 512, 1024, 1500, 2048]},
        small={"batch_size": 1, "seq_len": 64},
    )


def bmm_probs_value(model: Model, dtype: str) -> Spec:
    return model_spec(
        model, f"bmm_{SHORT[dtype]}_{model.key}_probs_v", "batched_matmul",
        f"Second matmul of {model.key} attention on flattened (batch*heads): probs [BH, S, S] @ v [BH, S, D].",
        {"batch_heads": VAR, "seq_len": VAR, "head_dim": model.head_dim},
        [t("probs", ["batch_heads", "seq_len", "seq_len"], dtype), t("v", ["batch_heads", "seq_len", "head_dim"], dtype)],
        [out("context", ["batch_heads", "seq_len", "head_dim"], dtype)],
        """
            import torch


            def run(probs, v):
                return torch.bmm(probs, v)
        """,
        grid={"batch_heads": [b * model.heads for b in BATCH], "seq_len": [197, 256, 448, 512, 1024, 1500]},
        small={"batch_heads": model.heads, "seq_len": 64},
    )


def lora_expand() -> Spec:
    model = LLAMA3_8B
    return model_spec(
        model, f"lora_expand_broadcast_sum_fp32_{model.key}", "lora_expand",
        "LoRA B-projection of Llama-3-8B's q_proj (rank 16) written as a broadcast multiply and a sum "
        "over the rank: (x[:, :, None] * lora_b[None, :, :]).sum(-2).",
        {"num_tokens": VAR, "rank": 16, "out_features": VAR},
        [t("x", ["num_tokens", "rank"], "float32", "LoRA A-projection output"), t("lora_b", ["rank", "out_features"], "float32")],
        [out("y", ["num_tokens", "out_features"], "float32")],
        """
            import torch


            def run(x, lora_b):
                return (x[:, :, None] * lora_b[None, :, :]).sum(-2)
        """,
        grid={"num_tokens": upto(TOKENS, 2048), "out_features": [1024, 4096, 6144]},
        small={"num_tokens": 16, "out_features": 1024},
    )


def ssm_state_readout() -> Spec:
    model = MAMBA2_2_7B
    return model_spec(
        model, f"ssm_state_readout_broadcast_sum_fp32_{model.key}", "batched_contraction",
        "Decode-step read-out of Mamba-2's SSM state: y[b, h, p] = sum_n C[b, h, n] * state[b, h, n, p], "
        "written as a broadcast multiply and a sum over the state dimension.",
        {"batch_size": VAR, "num_heads": model.heads, "d_state": model["d_state"], "head_dim": model.head_dim},
        [t("C", ["batch_size", "num_heads", "d_state"], "float32"),
         t("state", ["batch_size", "num_heads", "d_state", "head_dim"], "float32")],
        [out("y", ["batch_size", "num_heads", "head_dim"], "float32")],
        """
            import torch


            def run(C, state):
                return (C[..., :, None] * state).sum(-2)
        """,
        grid={"batch_size": BATCH + [128, 256]},
        small={"batch_size": 1},
    )


def problems() -> dict[str, list[Spec]]:
    l1 = [
        gemm(LLAMA3_8B, "qkv", "bfloat16"),
        gemm(LLAMA3_8B, "gate_up", "bfloat16"),
        gemm(LLAMA3_8B, "down", "bfloat16"),
        gemm(LLAMA3_8B, "lm_head", "bfloat16"),
        gemm(LLAMA3_70B, "qkv", "bfloat16"),
        gemm(LLAMA3_70B, "down", "float32"),
        gemm(QWEN2_7B, "gate_up", "float32"),
        gemm(GEMMA2_9B, "qkv", "float32"),
        gemm(DEEPSEEK_V3, "q_b", "bfloat16"),
        gemm(VIT_LARGE, "fc1", "float16"),
        gemm(WHISPER, "fc1", "float16"),
        gemm(WHISPER, "qkv", "float16"),
        gemm(VIT_LARGE, "fc2", "float32"),
        gemm(WHISPER, "fc2", "float32"),
        gemm(MAMBA_2_8B, "in_proj", "float32"),
        linear_backward(MAMBA_2_8B, "out_proj", "float32", bias=False),
        gemm_upcast(LLAMA3_8B, "qkv", weight_kn=True),
        gemm_upcast(LLAMA3_8B, "o", weight_kn=False),
        gemm_upcast(LLAMA3_70B, "gate_up", weight_kn=True),
        gemm_upcast(QWEN2_7B, "down", weight_kn=False),
        gemm_upcast(DEEPSEEK_V3, "kv_a", weight_kn=True),
        gemm_upcast(MIXTRAL, "router", weight_kn=False),
        linear_bias(QWEN2_7B, "qkv", "bfloat16"),
        linear_bias(VIT_LARGE, "qkv", "float32"),
        linear_bias(WHISPER, "q", "float16"),
        gemm_scaled(LLAMA3_8B, "o"),
        attention_scores_matmul(VIT_LARGE, "float32"),
        attention_scores_matmul(WHISPER, "float16"),
        bmm_probs_value(LLAMA3_8B, "float32"),
        lora_expand(),
        ssm_state_readout(),
        linear_backward(LLAMA3_8B, "qkv", "bfloat16", bias=False),
        linear_backward(LLAMA3_8B, "down", "float32", bias=False),
        linear_backward(VIT_LARGE, "fc1", "float32", bias=True),
        linear_backward(WHISPER, "fc2", "float16", bias=True),
    ]
    return {"L1": l1}
