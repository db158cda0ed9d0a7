"""Small fusions around GEMMs: gated MLPs, ViT/CLIP MLPs, linear+bias+GELU, LM head + loss,
scaled residuals, embedding scaling, gated RMSNorm; and their backward."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SHORT, TOKENS, VAR, Spec, autograd_backward, batch_of_one, custom, model_spec, out, random_scalar, rows_spec, scalar, t, upto
from solbench.dataset.synthetic.models import (
    CLIP_TEXT, DEEPSEEK_V2_LITE, DEEPSEEK_V3, GEMMA2_9B, LLAMA3_70B, LLAMA3_8B, MAMBA2_2_7B, MIXTRAL, QWEN2_7B, T5_XXL, VIT_LARGE, WHISPER, Model,
)
from solbench.dataset.synthetic.snippets import RMS_NORM, SILU_AND_MUL

TH = ["num_tokens", "hidden_size"]
GRANITE = Model("granite_3_1_8b", "ibm-granite/granite-3.1-8b-instruct", 4096, 32, 8, 128, 12800, 49155, 1e-5, extra={"residual_multiplier": 0.22})

GATED_MLP = """
def gated_mlp(x, gate_proj, up_proj, down_proj, act):
    return (act(x @ gate_proj.T) * (x @ up_proj.T)) @ down_proj.T
"""

ACTS = {
    "silu": "torch.nn.functional.silu",
    "gelu_tanh": 'lambda h: torch.nn.functional.gelu(h, approximate="tanh")',
    "gelu": "torch.nn.functional.gelu",
}


def _inter_shards(inter: int) -> list[int]:
    return [inter // tp for tp in (1, 2, 4, 8) if inter % tp == 0]


def gated_mlp(model: Model, dtype: str, act: str, inter: int | None = None, tag: str = "") -> Spec:
    inter = inter or model.inter
    kind = {"silu": "swiglu", "gelu_tanh": "geglu_tanh", "gelu": "geglu"}[act]
    return rows_spec(
        model, f"{kind}_mlp_{SHORT[dtype]}_{model.key}{tag}", "gated_mlp",
        f"Gated MLP of {model.key}{tag.replace('_', ' ')} ({act} gate; gate_proj, up_proj, down_proj; intermediate size {inter} "
        "split over tensor-parallel ranks in the workloads).",
        [t("x", TH, dtype), t("gate_proj", ["intermediate_size", "hidden_size"], dtype),
         t("up_proj", ["intermediate_size", "hidden_size"], dtype), t("down_proj", ["hidden_size", "intermediate_size"], dtype)],
        [out("y", TH, dtype)],
        f"""
        import torch


        def run(x, gate_proj, up_proj, down_proj):
            return gated_mlp(x, gate_proj, up_proj, down_proj, {ACTS[act]})
        """, GATED_MLP,
        axes={"intermediate_size": VAR}, rows=upto(TOKENS, 4096), grid={"intermediate_size": _inter_shards(inter)},
        small_rows=16, small={"intermediate_size": 64 if dtype == "float32" else 128},
    )


def gated_mlp_backward(model: Model, dtype: str, act: str, tag: str = "") -> Spec:
    return autograd_backward(gated_mlp(model, dtype, act, tag=tag), ["x", "gate_proj", "up_proj", "down_proj"], {"y": "grad_output"})


def bias_mlp(model: Model, dtype: str, act: str, pre_norm: bool) -> Spec:
    """fc1 + bias, activation, fc2 + bias; with pre_norm, a LayerNorm first and the residual added at the end."""
    acts = {"gelu": "F.gelu(h)", "quick_gelu": "h * torch.sigmoid(1.702 * h)"}
    shape = ["batch_size", "seq_len", "hidden_size"]
    inputs = [t("hidden_states", shape, dtype)]
    if pre_norm:
        inputs += [t("mlp_norm_weight", ["hidden_size"], dtype), t("mlp_norm_bias", ["hidden_size"], dtype)]
    inputs += [t("fc1_weight", ["intermediate_size", "hidden_size"], dtype), t("fc1_bias", ["intermediate_size"], dtype),
               t("fc2_weight", ["hidden_size", "intermediate_size"], dtype), t("fc2_bias", ["hidden_size"], dtype)]
    norm = (f"    h = F.layer_norm(hidden_states, hidden_states.shape[-1:], mlp_norm_weight, mlp_norm_bias, {model.eps})\n"
            if pre_norm else "    h = hidden_states\n")
    reference = (
        f"import torch\nimport torch.nn.functional as F\n\n\ndef run({', '.join(x.name for x in inputs)}):\n{norm}"
        "    h = F.linear(h, fc1_weight, fc1_bias)\n"
        f"    h = {acts[act]}\n"
        "    h = F.linear(h, fc2_weight, fc2_bias)\n"
        f"    return {'hidden_states + h' if pre_norm else 'h'}\n"
    )
    return model_spec(
        model, f"{'prenorm_' if pre_norm else ''}mlp_{act}_{SHORT[dtype]}_{model.key}", "mlp",
        f"{model.key} MLP: " + ("LayerNorm, " if pre_norm else "") + f"fc1 with bias, {act}, fc2 with bias"
        + (", plus the residual." if pre_norm else "."),
        {"batch_size": VAR, "seq_len": VAR, "hidden_size": model.hidden, "intermediate_size": VAR},
        inputs, [out("output", shape, dtype)], reference,
        grid={"batch_size": BATCH, "seq_len": [77, 197, 257, 448, 577, 1500], "intermediate_size": _inter_shards(model.inter)[:2]},
        small={"batch_size": 1, "seq_len": 64, "intermediate_size": 256},
    )


def linear_bias_gelu(model: Model, dtype: str) -> Spec:
    return rows_spec(
        model, f"linear_bias_gelu_{SHORT[dtype]}_{model.key}", "linear_gelu",
        f"fc1 of {model.key}'s MLP with its bias and the exact GELU.",
        [t("x", TH, dtype), t("weight", ["intermediate_size", "hidden_size"], dtype), t("bias", ["intermediate_size"], dtype)],
        [out("h", ["num_tokens", "intermediate_size"], dtype)],
        """
        import torch
        import torch.nn.functional as F


        def run(x, weight, bias):
            return F.gelu(F.linear(x, weight, bias))
        """,
        axes={"intermediate_size": VAR}, rows=TOKENS, grid={"intermediate_size": _inter_shards(model.inter)[:3]},
        small_rows=16, small={"intermediate_size": 512},
    )


MAKE_LM_LABELS = """
def make_labels(axes, device):
    return {"labels": torch.randint(0, axes["vocab_size"], (axes["num_tokens"],), device=device)}
"""


def lm_head_loss(model: Model, softcap: bool = False, dtype: str = "bfloat16") -> Spec:
    cap = f"    logits = {model['final_softcap']} * torch.tanh(logits / {model['final_softcap']})\n" if softcap else ""
    return rows_spec(
        model, f"lm_head_cross_entropy{'_softcap' if softcap else ''}_{SHORT[dtype]}_{model.key}", "lm_head_loss",
        f"{model.key}'s LM head (vocabulary {model.vocab}) and the mean cross-entropy of the logits in fp32"
        + (f", final logits softcapped at {model['final_softcap']}" if softcap else "") + "; a 0-d loss.",
        [t("hidden_states", TH, dtype), t("lm_head", ["vocab_size", "hidden_size"], dtype),
         custom("labels", ["num_tokens"], "int64", "target ids in [0, vocab_size)")],
        [out("loss", [], "float32")],
        "import torch\nimport torch.nn.functional as F\n\n\ndef run(hidden_states, lm_head, labels):\n"
        f"    logits = (hidden_states @ lm_head.T).to(torch.float32)\n{cap}"
        "    return F.cross_entropy(logits, labels)\n", MAKE_LM_LABELS,
        axes={"vocab_size": VAR}, rows=upto(TOKENS, 2048), grid={"vocab_size": [model.vocab]},
        small_rows=8, small={"vocab_size": 256}, custom="make_labels",
    )


def lm_head_loss_backward(model: Model) -> Spec:
    return autograd_backward(lm_head_loss(model), ["hidden_states", "lm_head"], {})


def scaled_residual_rmsnorm(model: Model) -> Spec:
    return model_spec(
        model, f"scaled_residual_rmsnorm_bf16_{model.key}", "fused_add_rmsnorm",
        f"{model.key}'s scaled residual (residual + alpha * hidden_states; alpha a Python float drawn per workload) "
        "followed by RMSNorm; returns the normalised output and the new residual.",
        {"num_tokens": VAR, "hidden_size": model.hidden},
        [t("hidden_states", TH, "bfloat16"), t("residual", TH, "bfloat16"), random_scalar("alpha", description="residual multiplier"),
         t("norm_weight", ["hidden_size"], "bfloat16"), scalar("eps", model.eps)],
        [out("normed", TH, "bfloat16"), out("residual_out", TH, "bfloat16")],
        """
            import torch


            def run(hidden_states, residual, alpha, norm_weight, eps):
                residual = (residual.to(torch.float32) + alpha * hidden_states.to(torch.float32)).to(residual.dtype)
                return rms_norm(residual, norm_weight, eps), residual
        """, RMS_NORM,
        grid={"num_tokens": TOKENS + [16384]},
        small={"num_tokens": 64},
    )


def linear_bias_residual(model: Model) -> Spec:
    return model_spec(
        model, f"out_proj_bias_residual_fp16_{model.key}", "linear_residual",
        f"Attention output projection of {model.key} with its bias, added to the residual stream.",
        {"num_tokens": VAR, "hidden_size": VAR},
        [t("attn_output", TH, "float16"), t("weight", ["hidden_size", "hidden_size"], "float16"), t("bias", [1, "hidden_size"], "float16"),
         t("residual", TH, "float16")],
        [out("hidden_states", TH, "float16")],
        """
            import torch


            def run(attn_output, weight, bias, residual):
                return residual + torch.addmm(bias, attn_output, weight.T)
        """,
        grid={"num_tokens": [1, 4, 32, 448, 1500, 3000, 6000, 12000], "hidden_size": [model.hidden]},
        small={"num_tokens": 32, "hidden_size": 512},
    )


def scaled_embedding(model: Model) -> Spec:
    return model_spec(
        model, f"scaled_embedding_bf16_{model.key}", "embedding",
        f"{model.key}'s input embedding: table rows for the token ids, multiplied by sqrt(hidden_size) rounded to bf16.",
        {"num_tokens": VAR, "vocab_size": VAR, "hidden_size": model.hidden},
        [custom("input_ids", ["num_tokens"], "int64"), t("embed_tokens", ["vocab_size", "hidden_size"], "bfloat16")],
        [out("inputs_embeds", TH, "bfloat16")],
        """
            import torch
            import torch.nn.functional as F


            def run(input_ids, embed_tokens):
                normalizer = torch.tensor(embed_tokens.shape[1] ** 0.5, dtype=embed_tokens.dtype, device=embed_tokens.device)
                return F.embedding(input_ids, embed_tokens) * normalizer


            def make_ids(axes, device):
                return {"input_ids": torch.randint(0, axes["vocab_size"], (axes["num_tokens"],), device=device)}
        """,
        grid={"num_tokens": TOKENS, "vocab_size": [model.vocab]},
        small={"num_tokens": 16, "vocab_size": 512},
        custom="make_ids",
    )


def gated_rmsnorm(model: Model) -> Spec:
    return model_spec(
        model, f"gated_rmsnorm_bf16_{model.key}", "gated_rmsnorm",
        f"{model.key}'s output norm: the SSM output gated by silu(z), then RMSNorm over the {model.inter} inner channels.",
        {"num_tokens": VAR, "d_inner": model.inter},
        [t("y", ["num_tokens", "d_inner"], "bfloat16"), t("z", ["num_tokens", "d_inner"], "bfloat16"),
         t("norm_weight", ["d_inner"], "bfloat16"), scalar("eps", 1e-5)],
        [out("out", ["num_tokens", "d_inner"], "bfloat16")],
        """
            import torch
            import torch.nn.functional as F


            def run(y, z, norm_weight, eps):
                gated = y.to(torch.float32) * F.silu(z.to(torch.float32))
                normed = gated * torch.rsqrt(gated.pow(2).mean(-1, keepdim=True) + eps)
                return (normed * norm_weight.to(torch.float32)).to(y.dtype)
        """,
        grid={"num_tokens": TOKENS + [16384]},
        small={"num_tokens": 64},
    )


def fused_gate_up_mlp(model: Model) -> Spec:
    return model_spec(
        model, f"swiglu_mlp_fused_gate_up_bf16_{model.key}", "gated_mlp",
        f"{model.key}'s MLP with the gate and up projections stored as one weight [2 * intermediate, hidden]: "
        "one GEMM, silu(gate) * up, down projection.",
        {"num_tokens": VAR, "hidden_size": model.hidden, "intermediate_size": VAR, "gate_up_size": "2 * intermediate_size"},
        [t("x", TH, "bfloat16"), t("gate_up_proj", ["gate_up_size", "hidden_size"], "bfloat16"),
         t("down_proj", ["hidden_size", "intermediate_size"], "bfloat16")],
        [out("y", TH, "bfloat16")],
        """
            import torch


            def run(x, gate_up_proj, down_proj):
                return silu_and_mul(x @ gate_up_proj.T) @ down_proj.T
        """, SILU_AND_MUL,
        grid={"num_tokens": upto(TOKENS, 4096), "intermediate_size": _inter_shards(model.inter)},
        small={"num_tokens": 16, "intermediate_size": 128},
    )


def softcap_log_softmax(model: Model) -> Spec:
    return model_spec(
        model, f"softcap_log_softmax_fp32_{model.key}", "log_softmax",
        f"{model.key}'s final logit softcapping (cap * tanh(logits / cap)) followed by log-softmax over the vocabulary.",
        {"num_tokens": VAR, "vocab_size": model.vocab},
        [t("logits", ["num_tokens", "vocab_size"], "float32"), scalar("final_logit_softcapping", model["final_softcap"])],
        [out("log_probs", ["num_tokens", "vocab_size"], "float32")],
        """
            import torch


            def run(logits, final_logit_softcapping):
                capped = final_logit_softcapping * torch.tanh(logits / final_logit_softcapping)
                return torch.log_softmax(capped, dim=-1)
        """,
        grid={"num_tokens": upto(TOKENS, 1024)},
        small={"num_tokens": 2},
        neg_inf=True,
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L2": [
            gated_mlp(LLAMA3_8B, "bfloat16", "silu"),
            batch_of_one(gated_mlp(QWEN2_7B, "bfloat16", "silu")),
            batch_of_one(gated_mlp(LLAMA3_70B, "float32", "silu")),
            gated_mlp(MIXTRAL, "float32", "silu", tag="_expert"),
            gated_mlp(DEEPSEEK_V3, "bfloat16", "silu", inter=2 * DEEPSEEK_V3["moe_inter"], tag="_shared_expert"),
            batch_of_one(gated_mlp(GEMMA2_9B, "bfloat16", "gelu_tanh")),
            bias_mlp(VIT_LARGE, "float32", "gelu", pre_norm=True),
            bias_mlp(WHISPER, "float16", "gelu", pre_norm=True),
            bias_mlp(CLIP_TEXT, "float16", "quick_gelu", pre_norm=False),
            linear_bias_gelu(VIT_LARGE, "float32"),
            batch_of_one(linear_bias_gelu(WHISPER, "float16")),
            lm_head_loss(LLAMA3_8B),
            lm_head_loss(T5_XXL, dtype="float32"),
            lm_head_loss(GEMMA2_9B, softcap=True),
            batch_of_one(scaled_residual_rmsnorm(GRANITE)),
            linear_bias_residual(WHISPER),
            scaled_embedding(GEMMA2_9B),
            batch_of_one(gated_rmsnorm(MAMBA2_2_7B)),
            batch_of_one(fused_gate_up_mlp(DEEPSEEK_V2_LITE)),
            softcap_log_softmax(GEMMA2_9B),
            gated_mlp_backward(LLAMA3_8B, "bfloat16", "silu"),
            gated_mlp_backward(QWEN2_7B, "float32", "silu"),
            gated_mlp_backward(MIXTRAL, "bfloat16", "silu", tag="_expert"),
            gated_mlp_backward(T5_XXL, "float32", "gelu"),
            autograd_backward(bias_mlp(VIT_LARGE, "float32", "gelu", pre_norm=True), ["hidden_states", "fc1_weight", "fc2_weight"],
                              {"output": "grad_output"}),
            autograd_backward(linear_bias_gelu(VIT_LARGE, "float32"), ["x", "weight", "bias"], {"h": "grad_h"}),
            lm_head_loss_backward(LLAMA3_8B),
        ],
    }
