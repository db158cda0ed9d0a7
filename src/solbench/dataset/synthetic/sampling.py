"""Sampling-like ops over a vocabulary (FlashInfer-Bench style): top-k / top-p / min-p filtering and
renormalisation, temperature softmax, greedy argmax, inverse-CDF sampling from given uniforms."""

from __future__ import annotations

from solbench.dataset.synthetic.core import VAR, Spec, custom, model_spec, out, random_scalar, scalar, t
from solbench.dataset.synthetic.models import DEEPSEEK_V3, LLAMA3_70B, LLAMA3_8B, QWEN2_7B, QWEN3_MOE, Model

LOGITS = ["batch_size", "vocab_size"]
GRID = {"batch_size": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]}
SMALL = {"batch_size": 4}

TOP_P_MASK = """
def top_p_mask(probs, top_p):
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    drop_sorted = sorted_probs.cumsum(dim=-1) - sorted_probs > top_p
    return torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
"""


def _sampling(name: str, description: str, model: Model, inputs: list, outputs: list, reference: str, *parts: str,
              neg_inf: bool = False, custom_entry: str | None = None) -> Spec:
    return model_spec(
        model, f"{name}_{model.key}", "sampling",
        description,
        {"batch_size": VAR, "vocab_size": model.vocab},
        inputs,
        outputs,
        reference, *parts,
        grid=GRID,
        small=SMALL,
        neg_inf=neg_inf,
        custom=custom_entry,
    )


def top_k_mask_logits(model: Model, k: int) -> Spec:
    return _sampling(
        "top_k_mask_logits_fp32", f"Keeps the top-{k} logits of each row of {model.key}'s vocabulary, the rest set to -inf.",
        model, [t("logits", LOGITS, "float32"), scalar("top_k", k, "int64")], [out("masked_logits", LOGITS, "float32")],
        """
        import torch


        def run(logits, top_k):
            kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
            return logits.masked_fill(logits < kth, float("-inf"))
        """,
        neg_inf=True,
    )


def _renorm(model: Model, name: str, description: str, parameter, drop: str, *parts: str) -> Spec:
    """Softmax of the logits, the probabilities where `drop` holds set to zero, the rest renormalised."""
    return _sampling(
        name, description, model, [t("logits", LOGITS, "float32"), parameter], [out("renorm_probs", LOGITS, "float32")],
        f"import torch\n\n\ndef run(logits, {parameter.name}):\n"
        "    probs = torch.softmax(logits, dim=-1)\n"
        f"    kept = probs.masked_fill({drop}, 0.0)\n"
        "    return kept / kept.sum(dim=-1, keepdim=True)\n", *parts,
    )


def top_k_renorm(model: Model, k: int) -> Spec:
    return _renorm(model, "top_k_renorm_probs_fp32",
                   f"Softmax of {model.key}'s logits, then only the top-{k} probabilities kept and renormalised.",
                   scalar("top_k", k, "int64"), "probs < torch.topk(probs, top_k, dim=-1).values[:, -1:]")


def top_p_renorm(model: Model, p: float) -> Spec:
    return _renorm(model, "top_p_renorm_probs_fp32",
                   f"Nucleus filtering of {model.key}'s softmax probabilities (top_p {p}): the smallest set of most likely "
                   "tokens whose mass reaches top_p is kept and renormalised.",
                   scalar("top_p", p), "top_p_mask(probs, top_p)", TOP_P_MASK)


def min_p_renorm(model: Model, min_p: float) -> Spec:
    return _renorm(model, "min_p_renorm_probs_fp32",
                   f"min-p filtering of {model.key}'s probabilities: tokens below {min_p} times the row's largest probability "
                   "are dropped, the rest renormalised.",
                   scalar("min_p", min_p), "probs < min_p * probs.amax(dim=-1, keepdim=True)")


def temperature_softmax(model: Model) -> Spec:
    return _sampling(
        "temperature_softmax_fp32", f"Softmax of {model.key}'s logits divided by a temperature (a Python float drawn per workload).",
        model, [t("logits", LOGITS, "float32"), random_scalar("temperature")], [out("probs", LOGITS, "float32")],
        """
        import torch


        def run(logits, temperature):
            return torch.softmax(logits / temperature, dim=-1)
        """,
    )


def greedy(model: Model) -> Spec:
    return _sampling(
        "greedy_argmax_bf16", f"Greedy decoding over {model.key}'s vocabulary: the id of the largest logit of each row "
        "(the reference puts its row index on CUDA whenever CUDA is available).",
        model, [t("logits", LOGITS, "bfloat16")], [out("next_token_ids", ["batch_size"], "int64"), out("max_logits", ["batch_size", 1], "bfloat16")],
        """
        import torch

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


        def run(logits):
            ids = torch.argmax(logits, dim=-1)
            rows = torch.arange(logits.shape[0], device=DEVICE)
            return ids, logits[rows, ids][:, None]
        """,
    )


def top_k_top_p(model: Model, k: int, p: float) -> Spec:
    return _sampling(
        "top_k_top_p_mask_logits_fp32", f"{model.key}'s logits filtered by top-{k} and then top-p {p} (on the renormalised "
        "top-k distribution); dropped logits become -inf.",
        model, [t("logits", LOGITS, "float32"), scalar("top_k", k, "int64"), scalar("top_p", p)], [out("masked_logits", LOGITS, "float32")],
        """
        import torch


        def run(logits, top_k, top_p):
            kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
            return logits.masked_fill(top_p_mask(torch.softmax(logits, dim=-1), top_p), float("-inf"))
        """, TOP_P_MASK,
        neg_inf=True,
    )


def sampling_from_probs(model: Model, p: float) -> Spec:
    return _sampling(
        "top_p_sampling_from_logits", f"Samples one token per row of {model.key}'s top-p ({p}) filtered distribution by inverse CDF, "
        "with the uniform draws given as an input (so the result is deterministic).",
        model, [t("logits", LOGITS, "float32"), custom("uniform_samples", ["batch_size"], "float32", "one U[0, 1) draw per row"),
                scalar("top_p", p)],
        [out("samples", ["batch_size"], "int64")],
        """
        import torch


        def run(logits, uniform_samples, top_p):
            probs = torch.softmax(logits, dim=-1)
            kept = probs.masked_fill(top_p_mask(probs, top_p), 0.0)
            cdf = torch.cumsum(kept, dim=-1)
            target = uniform_samples[:, None] * cdf[:, -1:]
            return torch.searchsorted(cdf, target).squeeze(-1).clamp(max=logits.shape[-1] - 1)


        def make_uniforms(axes, device):
            return {"uniform_samples": torch.rand(axes["batch_size"], device=device)}
        """, TOP_P_MASK,
        custom_entry="make_uniforms",
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "FlashInfer-Bench": [
            top_k_mask_logits(LLAMA3_8B, 50),
            top_k_renorm(LLAMA3_70B, 40),
            top_p_renorm(QWEN2_7B, 0.9),
            min_p_renorm(QWEN3_MOE, 0.05),
            temperature_softmax(QWEN3_MOE),
            greedy(LLAMA3_8B),
            top_k_top_p(DEEPSEEK_V3, 20, 0.95),
            sampling_from_probs(LLAMA3_8B, 0.9),
        ],
    }
