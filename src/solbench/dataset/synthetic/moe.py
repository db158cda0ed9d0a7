"""Mixture-of-experts problems: top-k routing, expert counts, token permutation and combine, grouped
expert GEMMs in a Python loop over experts (data-dependent sizes), block alignment, router backward."""

from __future__ import annotations

import textwrap

from solbench.dataset.synthetic.core import SHORT, TOKENS, VAR, Spec, custom, model_spec, out, t
from solbench.dataset.synthetic.models import DEEPSEEK_V2_LITE, DEEPSEEK_V3, MIXTRAL, QWEN3_MOE, Model
from solbench.dataset.synthetic.snippets import DISTINCT_TOPK, MOE_EXPERTS

MOE_TOKENS = TOKENS + [16384]
SMALL_TOKENS = {"num_tokens": 16}

SOFTMAX_TOPK = """
def softmax_topk(logits, top_k, renormalize):
    probs = torch.softmax(logits.to(torch.float32), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids
"""

MAKE_TOPK_IDS = """
def make_topk_ids(axes, device):
    ids = distinct_topk(axes["num_tokens"], axes["num_experts"], axes["top_k"], device)
    return {"topk_ids": ids.to(torch.int32)}
"""


def _router_axes(model: Model) -> dict:
    return {"num_tokens": VAR, "hidden_size": model.hidden, "num_experts": model["experts"], "top_k": model["top_k"]}


def router_topk(model: Model, with_counts: bool) -> Spec:
    k = model["top_k"]
    outputs = [out("topk_weights", ["num_tokens", k], "float32"), out("topk_ids", ["num_tokens", k], "int64")]
    ret = "    return weights, ids\n"
    if with_counts:
        outputs.append(out("tokens_per_expert", ["num_experts"], "int64"))
        ret = f"    return weights, ids, torch.bincount(ids.flatten(), minlength={model['experts']})\n"
    reference = (
        "import torch\n\n\ndef run(hidden_states, router_weight):\n"
        "    logits = hidden_states.to(torch.float32) @ router_weight.to(torch.float32).T\n"
        f"    weights, ids = softmax_topk(logits, {k}, renormalize=True)\n" + ret
    )
    return model_spec(
        model, f"moe_router_topk{'_counts' if with_counts else ''}_bf16_{model.key}", "moe_router",
        f"Top-{k} softmax router of {model.key} ({model['experts']} experts): fp32 logits, softmax, top-k, "
        "weights renormalised" + (", and the number of tokens routed to each expert (torch.bincount)." if with_counts else "."),
        _router_axes(model),
        [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"), t("router_weight", ["num_experts", "hidden_size"], "bfloat16")],
        outputs,
        reference, SOFTMAX_TOPK,
        grid={"num_tokens": MOE_TOKENS},
        small=SMALL_TOKENS,
    )


def grouped_topk_router(model: Model) -> Spec:
    groups, topk_groups, k, scale = model["groups"], model["topk_groups"], model["top_k"], model["scaling"]
    return model_spec(
        model, f"moe_grouped_topk_router_bf16_{model.key}", "moe_router",
        f"{model.key}'s group-limited router: sigmoid scores plus a correction bias choose the best {topk_groups} of "
        f"{groups} expert groups (by the sum of their top-2 scores), then the top-{k} experts inside them; the weights are "
        f"the uncorrected scores, normalised and scaled by {scale}.",
        _router_axes(model),
        [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"), t("gate_weight", ["num_experts", "hidden_size"], "bfloat16"),
         t("e_score_correction_bias", ["num_experts"], "float32")],
        [out("topk_weights", ["num_tokens", k], "float32"), out("topk_ids", ["num_tokens", k], "int64")],
        f"""
            import torch

            NUM_GROUPS, TOPK_GROUPS, TOP_K, SCALING = {groups}, {topk_groups}, {k}, {scale}


            def run(hidden_states, gate_weight, e_score_correction_bias):
                num_tokens = hidden_states.shape[0]
                scores = torch.sigmoid(hidden_states.to(torch.float32) @ gate_weight.to(torch.float32).T)
                biased = scores + e_score_correction_bias[None, :]
                grouped = biased.view(num_tokens, NUM_GROUPS, -1)
                group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)
                keep = torch.zeros_like(group_scores).scatter_(1, group_scores.topk(TOPK_GROUPS, dim=-1).indices, 1.0)
                masked = grouped.masked_fill(keep[:, :, None] == 0, float("-inf")).view(num_tokens, -1)
                ids = masked.topk(TOP_K, dim=-1).indices
                weights = scores.gather(1, ids)
                weights = weights / weights.sum(dim=-1, keepdim=True) * SCALING
                return weights, ids
        """,
        grid={"num_tokens": MOE_TOKENS},
        small=SMALL_TOKENS,
    )


def moe_permute(model: Model, method: str, dtype: str = "bfloat16") -> Spec:
    """method 'argsort' (stable sort of the expert ids) or 'nonzero' (one mask per expert)."""
    if method == "argsort":
        body = """
            def run(hidden_states, topk_ids):
                flat = topk_ids.flatten().long()
                order = torch.argsort(flat, stable=True)
                counts = torch.bincount(flat, minlength=NUM_EXPERTS)
                offsets = torch.zeros(NUM_EXPERTS + 1, dtype=torch.int64, device=flat.device)
                offsets[1:] = torch.cumsum(counts, 0)
                return hidden_states[order // topk_ids.shape[1]], order, offsets
        """
    else:
        body = """
            def run(hidden_states, topk_ids):
                flat = topk_ids.flatten().long()
                rows = [torch.nonzero(flat == e, as_tuple=True)[0] for e in range(NUM_EXPERTS)]
                order = torch.cat(rows)
                counts = torch.tensor([r.numel() for r in rows], dtype=torch.int64, device=flat.device)
                offsets = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
                return hidden_states[order // topk_ids.shape[1]], order, offsets
        """
    reference = f"import torch\n\nNUM_EXPERTS = {model['experts']}\n\n\n" + textwrap.dedent(body)
    return model_spec(
        model, f"moe_permute_{method}_{SHORT[dtype]}_{model.key}", "moe_permute",
        f"Token permutation before {model.key}'s expert GEMMs: (token, slot) pairs sorted by expert "
        f"({'torch.argsort' if method == 'argsort' else 'torch.nonzero per expert'}), the permuted hidden states, and "
        "each expert's row offsets.",
        {**_router_axes(model), "num_rows": "num_tokens * top_k", "num_offsets": "num_experts + 1"},
        [t("hidden_states", ["num_tokens", "hidden_size"], dtype),
         custom("topk_ids", ["num_tokens", "top_k"], "int32", "distinct experts per token")],
        [out("permuted_hidden_states", ["num_rows", "hidden_size"], dtype), out("sorted_rows", ["num_rows"], "int64"),
         out("expert_offsets", ["num_offsets"], "int64")],
        reference, DISTINCT_TOPK, MAKE_TOPK_IDS,
        grid={"num_tokens": TOKENS},
        small=SMALL_TOKENS,
        custom="make_topk_ids",
    )


def moe_combine(model: Model, dtype: str = "bfloat16") -> Spec:
    return model_spec(
        model, f"moe_combine_{SHORT[dtype]}_{model.key}", "moe_combine",
        f"Un-permutation after {model.key}'s experts: each expert output row is weighted by its routing weight and "
        "added to its token with index_add_.",
        {**_router_axes(model), "num_rows": "num_tokens * top_k"},
        [t("expert_output", ["num_rows", "hidden_size"], dtype),
         custom("sorted_rows", ["num_rows"], "int64", "row i holds the flat (token * top_k + slot) index"),
         t("routing_weights", ["num_tokens", "top_k"], "float32")],
        [out("output", ["num_tokens", "hidden_size"], dtype)],
        """
            import torch


            def run(expert_output, sorted_rows, routing_weights):
                num_tokens, top_k = routing_weights.shape
                weighted = expert_output.to(torch.float32) * routing_weights.flatten()[sorted_rows][:, None]
                out = torch.zeros(num_tokens, expert_output.shape[1], dtype=torch.float32, device=expert_output.device)
                out.index_add_(0, sorted_rows // top_k, weighted)
                return out.to(expert_output.dtype)


            def make_sorted_rows(axes, device):
                return {"sorted_rows": torch.randperm(axes["num_tokens"] * axes["top_k"]).to(device)}
        """,
        grid={"num_tokens": TOKENS},
        small=SMALL_TOKENS,
        custom="make_sorted_rows",
    )


EXPERT_WEIGHTS = ["num_experts", "gate_up_size", "hidden_size"]


def fused_moe(model: Model, routed: bool, expert_parallel: bool = False) -> Spec:
    """routed: the router runs in the reference; otherwise topk_ids (custom) and routing_weights are inputs."""
    k, experts = model["top_k"], model["experts"]
    axes = {"num_tokens": VAR, "hidden_size": VAR, "intermediate_size": VAR, "gate_up_size": "2 * intermediate_size",
            "num_experts": VAR if expert_parallel else experts, "top_k": k}
    weights = [t("w13", EXPERT_WEIGHTS, "bfloat16", "gate and up projections of each expert, stacked"),
               t("w2", ["num_experts", "hidden_size", "intermediate_size"], "bfloat16")]
    if routed:
        inputs = [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"),
                  t("router_weight", ["num_experts", "hidden_size"], "bfloat16")] + weights
        run = f"""
            def run(hidden_states, router_weight, w13, w2):
                logits = hidden_states.to(torch.float32) @ router_weight.to(torch.float32).T
                topk_weights, topk_ids = softmax_topk(logits, {k}, renormalize=True)
                return moe_experts(hidden_states, topk_ids, topk_weights, w13, w2)
        """
        parts = [SOFTMAX_TOPK, MOE_EXPERTS]
    else:
        inputs = [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"),
                  custom("topk_ids", ["num_tokens", "top_k"], "int32", "expert of each (token, slot), distinct per token"),
                  t("routing_weights", ["num_tokens", "top_k"], "float32")] + weights
        run = """
            def run(hidden_states, topk_ids, routing_weights, w13, w2):
                return moe_experts(hidden_states, topk_ids.long(), routing_weights, w13, w2)
        """
        parts = [MOE_EXPERTS, DISTINCT_TOPK, MAKE_TOPK_IDS]
    inter, hidden = model["moe_inter"], model.hidden
    shards = [(hidden, inter // tp) for tp in (1, 2, 4, 8) if inter // tp >= 128]
    grid = {"num_tokens": TOKENS, ("hidden_size", "intermediate_size"): shards}
    local = k if expert_parallel else experts
    small = {"num_tokens": 16, "hidden_size": 256, "intermediate_size": 128} if local <= 16 else {"num_tokens": 16, "hidden_size": 128, "intermediate_size": 32}
    if expert_parallel:
        grid["num_experts"] = [experts // ep for ep in (8, 16, 32, 64) if experts // ep >= k]
        small["num_experts"] = k
    return model_spec(
        model, f"fused_moe_{'routed' if routed else 'topk'}_bf16_{model.key}" + ("_ep" if expert_parallel else ""), "moe",
        f"{model.key} MoE layer ({'router + ' if routed else ''}top-{k} of {experts} experts"
        + (", the local experts of one expert-parallel rank" if expert_parallel else "")
        + "): tokens sorted by expert (bincount, argsort), each expert's SwiGLU GEMMs on its own rows in a Python loop, "
        "results weighted and added back per token with index_add_.",
        axes,
        inputs,
        [out("output", ["num_tokens", "hidden_size"], "bfloat16")],
        "import torch\n\n\n" + textwrap.dedent(run), *parts,
        grid=grid,
        small=small,
        custom=None if routed else "make_topk_ids",
        valid=(lambda axes: axes["num_experts"] >= k) if expert_parallel else None,
    )


def moe_align_block_size(model: Model, block: int = 64) -> Spec:
    experts = model["experts"]
    return model_spec(
        model, f"moe_align_block_size_{model.key}_b{block}", "moe_align",
        f"Sorts the (token, slot) pairs of {model.key} by expert and pads each expert's rows to a multiple of "
        f"{block}, for block-wise grouped GEMMs: padded row ids (padding = num_rows), the expert of each block (-1 unused), "
        "and the padded total.",
        {"num_tokens": VAR, "num_experts": experts, "top_k": model["top_k"], "block_size": block,
              "max_padded": "num_tokens * top_k + num_experts * (block_size - 1)", "max_blocks": "max_padded // block_size"},
        [custom("topk_ids", ["num_tokens", "top_k"], "int32")],
        [out("sorted_ids", ["max_padded"], "int32"), out("expert_ids", ["max_blocks"], "int32"),
         out("num_tokens_post_pad", [1], "int32")],
        f"""
            import torch

            NUM_EXPERTS, BLOCK = {experts}, {block}


            def run(topk_ids):
                flat = topk_ids.flatten().long()
                counts = torch.bincount(flat, minlength=NUM_EXPERTS)
                padded = (counts + BLOCK - 1) // BLOCK * BLOCK
                max_padded = flat.numel() + NUM_EXPERTS * (BLOCK - 1)
                sorted_ids = torch.full((max_padded,), flat.numel(), dtype=torch.int32, device=flat.device)
                expert_ids = torch.full((max_padded // BLOCK,), -1, dtype=torch.int32, device=flat.device)
                order = torch.argsort(flat, stable=True).to(torch.int32)
                start, row = 0, 0
                for expert, (count, size) in enumerate(zip(counts.tolist(), padded.tolist())):
                    sorted_ids[row:row + count] = order[start:start + count]
                    expert_ids[row // BLOCK:(row + size) // BLOCK] = expert
                    start, row = start + count, row + size
                return sorted_ids, expert_ids, padded.sum().view(1).to(torch.int32)
        """, DISTINCT_TOPK, MAKE_TOPK_IDS,
        grid={"num_tokens": MOE_TOKENS},
        small=SMALL_TOKENS,
        custom="make_topk_ids",
    )


def router_backward(model: Model) -> Spec:
    k = model["top_k"]
    return model_spec(
        model, f"moe_router_softmax_topk_backward_fp32_{model.key}", "moe_router_backward",
        f"Backward of {model.key}'s softmax + top-{k} + renormalisation router with respect to its logits "
        "(the chosen experts are fixed by the forward), via torch.autograd.grad.",
        {"num_tokens": VAR, "num_experts": model["experts"], "top_k": k},
        [t("router_logits", ["num_tokens", "num_experts"], "float32"), t("grad_topk_weights", ["num_tokens", "top_k"], "float32")],
        [out("grad_router_logits", ["num_tokens", "num_experts"], "float32")],
        f"""
            import torch


            def run(router_logits, grad_topk_weights):
                logits = router_logits.detach().requires_grad_(True)
                weights, _ = softmax_topk(logits, {k}, renormalize=True)
                (grad,) = torch.autograd.grad(weights, logits, grad_topk_weights)
                return grad
        """, SOFTMAX_TOPK,
        grid={"num_tokens": MOE_TOKENS},
        small=SMALL_TOKENS,
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [router_topk(MIXTRAL, with_counts=False)],
        "L2": [
            router_topk(MIXTRAL, with_counts=True),
            router_topk(QWEN3_MOE, with_counts=True),
            grouped_topk_router(DEEPSEEK_V3),
            moe_permute(DEEPSEEK_V3, "argsort"),
            moe_permute(QWEN3_MOE, "nonzero", "float32"),
            moe_combine(MIXTRAL),
            moe_combine(QWEN3_MOE, "float32"),
            fused_moe(QWEN3_MOE, routed=True),
            router_backward(MIXTRAL),
        ],
        "FlashInfer-Bench": [
            fused_moe(MIXTRAL, routed=True),
            fused_moe(QWEN3_MOE, routed=False),
            fused_moe(DEEPSEEK_V3, routed=False, expert_parallel=True),
            fused_moe(DEEPSEEK_V2_LITE, routed=False),
            router_topk(QWEN3_MOE, with_counts=False),
            moe_align_block_size(DEEPSEEK_V3),
        ],
    }
