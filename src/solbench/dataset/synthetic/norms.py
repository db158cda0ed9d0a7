"""Normalisation problems: RMSNorm, LayerNorm, fused add+RMSNorm, GroupNorm, norm+linear, and backward."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SHORT, TOKENS, VAR, Spec, autograd_backward, batch_of_one, model_spec, out, rows_spec, scalar, t
from solbench.dataset.synthetic.models import (
    BERT_LARGE, DEEPSEEK_V3, GEMMA2_9B, LLAMA3_70B, LLAMA3_8B, MIXTRAL, QWEN2_7B, SD_VAE, VIT_LARGE, WHISPER, Model,
)
from solbench.dataset.synthetic.snippets import RMS_NORM

TH = ["num_tokens", "hidden_size"]
STAT = ["num_tokens", 1]


def rmsnorm(model: Model, weight_name: str = "weight", hidden: int | None = None, tag: str = "", dtype: str = "bfloat16") -> Spec:
    hidden = hidden or model.hidden
    return rows_spec(
        model, f"rmsnorm_{SHORT[dtype]}_{model.key}{tag}", "rmsnorm",
        f"RMSNorm of {model.key} over {hidden} features (statistics in fp32, Llama-style: weight times the "
        "normalised value cast back to bf16).",
        [t("hidden_states", TH, dtype), t(weight_name, ["hidden_size"], dtype), scalar("eps", model.eps)],
        [out("output", TH, dtype)],
        f"""
            import torch


            def run(hidden_states, {weight_name}, eps):
                return rms_norm(hidden_states, {weight_name}, eps)
        """, RMS_NORM,
        width=hidden,
    )


GEMMA_RMSNORM = """
def gemma_rms_norm(x, weight, eps):
    x32 = x.to(torch.float32)
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (y * (1.0 + weight.to(torch.float32))).to(x.dtype)
"""


def gemma_rmsnorm(model: Model, tag: str = "") -> Spec:
    return rows_spec(
        model, f"gemma_rmsnorm_bf16_{model.key}{tag}", "rmsnorm",
        f"Gemma-style RMSNorm of {model.key}: the weight is stored as an offset from one, (1 + weight) * x_hat in fp32.",
        [t("x", TH, "bfloat16"), t("norm_weight", ["hidden_size"], "bfloat16"), scalar("eps", model.eps)],
        [out("y", TH, "bfloat16")],
        """
            import torch


            def run(x, norm_weight, eps):
                return gemma_rms_norm(x, norm_weight, eps)
        """, GEMMA_RMSNORM,
    )


def layernorm(model: Model, dtype: str) -> Spec:
    return rows_spec(
        model, f"layernorm_{SHORT[dtype]}_{model.key}", "layernorm",
        f"LayerNorm of {model.key} (hidden {model.hidden}, eps {model.eps:g}) with affine weight and bias.",
        [t("x", TH, dtype), t("final_norm_weight", ["hidden_size"], dtype), t("final_norm_bias", ["hidden_size"], dtype),
         scalar("eps", model.eps)],
        [out("out", TH, dtype)],
        """
            import torch
            import torch.nn.functional as F


            def run(x, final_norm_weight, final_norm_bias, eps):
                return F.layer_norm(x, x.shape[-1:], final_norm_weight, final_norm_bias, eps)
        """,
    )


def _image_axes(model: Model, channels: int) -> dict:
    return {"batch_size": VAR, "num_channels": channels, "height": VAR, "width": VAR, "num_groups": model["groups"]}


IMAGE = ["batch_size", "num_channels", "height", "width"]
IMAGE_GRID = {"batch_size": [1, 2, 4, 8], ("height", "width"): [(32, 32), (64, 64), (128, 128), (256, 256), (512, 512)]}
IMAGE_SMALL = {"batch_size": 1, "height": 16, "width": 16}


def group_norm(model: Model, channels: int) -> Spec:
    return model_spec(
        model, f"group_norm_fp32_{model.key}_c{channels}", "group_norm",
        f"GroupNorm of the {model.key} decoder ({model['groups']} groups over {channels} channels, eps 1e-6).",
        _image_axes(model, channels),
        [t("x", IMAGE, "float32"), t("group_norm_weight", ["num_channels"], "float32"),
         t("group_norm_bias", ["num_channels"], "float32")],
        [out("y", IMAGE, "float32")],
        f"""
            import torch
            import torch.nn.functional as F


            def run(x, group_norm_weight, group_norm_bias):
                return F.group_norm(x, {model["groups"]}, group_norm_weight, group_norm_bias, eps=1e-6)
        """,
        constraints=["num_channels % num_groups == 0"],
        grid=IMAGE_GRID,
        small=IMAGE_SMALL,
    )


RMSNORM_BACKWARD = """
def rms_norm_backward(grad_output, x, weight, rstd):
    g = grad_output.to(torch.float32)
    x_hat = x.to(torch.float32) * rstd
    grad_weight = (g * x_hat).sum(0)
    gx_hat = g * weight.to(torch.float32)
    grad_input = rstd * (gx_hat - x_hat * (gx_hat * x_hat).mean(-1, keepdim=True))
    return grad_input.to(x.dtype), grad_weight.to(weight.dtype)
"""


def rmsnorm_backward(model: Model, statistic: str, dtype: str = "bfloat16") -> Spec:
    """statistic: 'rstd' (saved 1/rms) or 'variance' (saved mean of squares; eps added here)."""
    if statistic == "rstd":
        params, body = "grad_output, x, weight, rstd", "    return rms_norm_backward(grad_output, x, weight, rstd)\n"
        stat_inputs = [t("rstd", STAT, "float32", "saved 1/sqrt(mean(x^2) + eps) of the forward")]
    else:
        params = "grad_output, x, weight, variance, eps"
        body = ("    rstd = torch.rsqrt(variance.clamp_min(0.0) + eps)\n"
                "    return rms_norm_backward(grad_output, x, weight, rstd)\n")
        stat_inputs = [t("variance", STAT, "float32", "saved mean(x^2) of the forward"), scalar("eps", model.eps)]
    return rows_spec(
        model, f"rmsnorm_backward_{statistic}_{SHORT[dtype]}_{model.key}", "rmsnorm_backward",
        f"Backward of {model.key}'s RMSNorm written out by hand, from the saved {statistic}: grad of the input and of the weight.",
        [t("grad_output", TH, dtype), t("x", TH, dtype), t("weight", ["hidden_size"], dtype)] + stat_inputs,
        [out("grad_input", TH, dtype), out("grad_weight", ["hidden_size"], dtype)],
        f"import torch\n\n\ndef run({params}):\n{body}", RMSNORM_BACKWARD,
    )


def gemma_rmsnorm_backward(model: Model) -> Spec:
    return autograd_backward(gemma_rmsnorm(model), ["x", "norm_weight"], {"y": "grad_y"}, grid={"num_tokens": TOKENS})


def layernorm_backward(model: Model, dtype: str) -> Spec:
    return rows_spec(
        model, f"layernorm_backward_{SHORT[dtype]}_{model.key}", "layernorm_backward",
        f"Backward of {model.key}'s LayerNorm from the saved mean and rstd, written out by hand.",
        [t("grad_output", TH, dtype), t("x", TH, dtype), t("weight", ["hidden_size"], dtype),
         t("mean", STAT, "float32"), t("rstd", STAT, "float32")],
        [out("grad_input", TH, dtype), out("grad_weight", ["hidden_size"], dtype), out("grad_bias", ["hidden_size"], dtype)],
        """
            import torch


            def run(grad_output, x, weight, mean, rstd):
                g = grad_output.to(torch.float32)
                x_hat = (x.to(torch.float32) - mean) * rstd
                gx = g * weight.to(torch.float32)
                grad_input = rstd * (gx - gx.mean(-1, keepdim=True) - x_hat * (gx * x_hat).mean(-1, keepdim=True))
                grad_weight = (g * x_hat).sum(0)
                return grad_input.to(x.dtype), grad_weight.to(weight.dtype), g.sum(0).to(weight.dtype)
        """,
    )


def group_norm_backward(model: Model, channels: int) -> Spec:
    return model_spec(
        model, f"group_norm_backward_fp32_{model.key}_c{channels}", "group_norm_backward",
        f"Backward of the {model.key} GroupNorm ({model['groups']} groups, {channels} channels) via torch.autograd.grad.",
        _image_axes(model, channels),
        [t("grad_y", IMAGE, "float32"), t("x", IMAGE, "float32"), t("group_norm_weight", ["num_channels"], "float32"),
         t("group_norm_bias", ["num_channels"], "float32")],
        [out("grad_x", IMAGE, "float32"), out("grad_weight", ["num_channels"], "float32"), out("grad_bias", ["num_channels"], "float32")],
        f"""
            import torch
            import torch.nn.functional as F


            def run(grad_y, x, group_norm_weight, group_norm_bias):
                leaves = [p.detach().requires_grad_(True) for p in (x, group_norm_weight, group_norm_bias)]
                y = F.group_norm(leaves[0], {model["groups"]}, leaves[1], leaves[2], eps=1e-6)
                return torch.autograd.grad(y, leaves, grad_y)
        """,
        constraints=["num_channels % num_groups == 0"],
        grid={"batch_size": [1, 2, 4], ("height", "width"): IMAGE_GRID[("height", "width")][:4]},
        small=IMAGE_SMALL,
    )


FUSED_ADD = """
def add_rms_norm(x, residual, weight, eps):
    residual = (x.to(torch.float32) + residual.to(torch.float32)).to(x.dtype)
    return rms_norm(residual, weight, eps), residual
"""


def fused_add_rmsnorm(model: Model, weight_name: str = "weight", dtype: str = "bfloat16") -> Spec:
    return rows_spec(
        model, f"fused_add_rmsnorm_{SHORT[dtype]}_{model.key}", "fused_add_rmsnorm",
        f"Residual add followed by RMSNorm in {model.key}: returns the normalised output and the updated residual.",
        [t("hidden_states", TH, dtype), t("residual", TH, dtype), t(weight_name, ["hidden_size"], dtype),
         scalar("eps", model.eps)],
        [out("output", TH, dtype), out("residual_out", TH, dtype)],
        f"""
            import torch


            def run(hidden_states, residual, {weight_name}, eps):
                return add_rms_norm(hidden_states, residual, {weight_name}, eps)
        """, RMS_NORM, FUSED_ADD,
    )


def fused_add_rmsnorm_backward(model: Model, dtype: str = "bfloat16") -> Spec:
    return autograd_backward(fused_add_rmsnorm(model, dtype=dtype), ["hidden_states", "weight"],
                             {"output": "grad_output", "residual_out": "grad_residual_out"}, grid={"num_tokens": TOKENS})


def rmsnorm_linear(model: Model, dtype: str = "bfloat16") -> Spec:
    n = model.heads * model.head_dim
    return rows_spec(
        model, f"rmsnorm_q_proj_{SHORT[dtype]}_{model.key}", "rmsnorm_linear",
        f"input_layernorm (RMSNorm) of {model.key} followed by the q projection of one tensor-parallel rank.",
        [t("hidden_states", TH, dtype), t("input_layernorm_weight", ["hidden_size"], dtype),
         t("q_proj_weight", ["q_dim", "hidden_size"], dtype), scalar("eps", model.eps)],
        [out("q", ["num_tokens", "q_dim"], dtype)],
        """
        import torch


        def run(hidden_states, input_layernorm_weight, q_proj_weight, eps):
            return rms_norm(hidden_states, input_layernorm_weight, eps) @ q_proj_weight.T
        """, RMS_NORM,
        axes={"q_dim": VAR}, rows=TOKENS, grid={"q_dim": [n // tp for tp in (1, 2, 4, 8)]},
        small_rows=16, small={"q_dim": 128 if dtype == "float32" else 256},
    )


def rmsnorm_linear_backward(model: Model) -> Spec:
    return autograd_backward(rmsnorm_linear(model), ["hidden_states", "input_layernorm_weight", "q_proj_weight"], {"q": "grad_q"})


def post_norm_residual(model: Model) -> Spec:
    return model_spec(
        model, f"residual_layernorm_fp32_{model.key}", "add_layernorm",
        f"Post-norm residual of {model.key}: LayerNorm(dense_out + bias + residual), as in BERT's output sub-layers.",
        {"batch_size": VAR, "seq_len": VAR, "hidden_size": model.hidden},
        [t("dense_out", ["batch_size", "seq_len", "hidden_size"], "float32"), t("dense_bias", ["hidden_size"], "float32"),
         t("residual", ["batch_size", "seq_len", "hidden_size"], "float32"),
         t("output_norm_weight", ["hidden_size"], "float32"), t("output_norm_bias", ["hidden_size"], "float32"),
         scalar("eps", model.eps)],
        [out("hidden_states", ["batch_size", "seq_len", "hidden_size"], "float32")],
        """
            import torch
            import torch.nn.functional as F


            def run(dense_out, dense_bias, residual, output_norm_weight, output_norm_bias, eps):
                h = dense_out + dense_bias + residual
                return F.layer_norm(h, h.shape[-1:], output_norm_weight, output_norm_bias, eps)
        """,
        grid={"batch_size": BATCH, "seq_len": [128, 256, 384, 512]},
        small={"batch_size": 1, "seq_len": 128},
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [
            rmsnorm(LLAMA3_8B, "norm_weight"),
            batch_of_one(rmsnorm(LLAMA3_70B, dtype="float32")),
            batch_of_one(rmsnorm(QWEN2_7B, "norm_weight")),
            batch_of_one(rmsnorm(DEEPSEEK_V3, "q_a_norm_weight", hidden=DEEPSEEK_V3["q_lora"], tag="_q_a")),
            rmsnorm(DEEPSEEK_V3, "kv_a_norm_weight", hidden=DEEPSEEK_V3["kv_lora"], tag="_kv_a", dtype="float32"),
            batch_of_one(gemma_rmsnorm(GEMMA2_9B)),
            batch_of_one(layernorm(VIT_LARGE, "float32")),
            layernorm(WHISPER, "float16"),
            group_norm(SD_VAE, 512),
            rmsnorm_backward(LLAMA3_8B, "rstd"),
            rmsnorm_backward(QWEN2_7B, "rstd", "float32"),
            rmsnorm_backward(LLAMA3_70B, "rstd", "float32"),
            rmsnorm_backward(LLAMA3_8B, "variance"),
            gemma_rmsnorm_backward(GEMMA2_9B),
            layernorm_backward(VIT_LARGE, "float32"),
            layernorm_backward(WHISPER, "float16"),
            group_norm_backward(SD_VAE, 256),
        ],
        "L2": [
            fused_add_rmsnorm(LLAMA3_8B, "post_attention_layernorm_weight"),
            batch_of_one(fused_add_rmsnorm(LLAMA3_70B)),
            batch_of_one(fused_add_rmsnorm(QWEN2_7B, "norm_weight")),
            batch_of_one(fused_add_rmsnorm(MIXTRAL, dtype="float32")),
            fused_add_rmsnorm_backward(DEEPSEEK_V3),
            rmsnorm_linear(LLAMA3_8B),
            batch_of_one(rmsnorm_linear(QWEN2_7B)),
            batch_of_one(rmsnorm_linear(LLAMA3_70B, dtype="float32")),
            post_norm_residual(BERT_LARGE),
            fused_add_rmsnorm_backward(LLAMA3_8B),
            fused_add_rmsnorm_backward(QWEN2_7B, "float32"),
            rmsnorm_linear_backward(LLAMA3_8B),
        ],
        "FlashInfer-Bench": [
            fused_add_rmsnorm(GEMMA2_9B, "input_layernorm_weight"),
            rmsnorm(LLAMA3_8B, "weight", tag="_flashinfer"),
            gemma_rmsnorm(GEMMA2_9B, tag="_flashinfer"),
        ],
    }
