"""The two halves of a mixture-of-experts block as problems of their own, as MoE kernels are written:
the router (gate linear, softmax or sigmoid scores, top-k, renormalisation) and the experts (tokens
sorted by their chosen experts, grouped GEMMs of the experts' gated MLPs, the weighted sum back per
token) given the routing. Both are the model's own transformers modules."""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, Act, Recipe

HIDDEN = (Act("hidden_states", (BATCH, SEQ, "hidden_size")),)


def _router_call(tm: Any, cfg: Any, module: Any, hidden_states: Any) -> Any:
    batch, seq, _ = hidden_states.shape
    _, weights, indices = module(hidden_states.reshape(-1, hidden_states.shape[-1]))
    return weights.reshape(batch, seq, -1), indices.reshape(batch, seq, -1)


def _experts_call(tm: Any, cfg: Any, module: Any, hidden_states: Any, topk_indices: Any, topk_weights: Any) -> Any:
    top_k = topk_indices.shape[-1]
    flat = hidden_states.reshape(-1, hidden_states.shape[-1])
    return module(flat, topk_indices.reshape(-1, top_k), topk_weights.reshape(-1, top_k)).reshape(hidden_states.shape)


def moe_part_recipes(router: str, experts: str, routing: str) -> dict[str, Recipe]:
    """moe_router and moe_experts of a family whose router and experts modules are `router` and `experts`."""
    def top_k(cfg: Any) -> dict[str, int | tuple[str, int]]:
        return {"top_k": cfg.num_experts_per_tok}

    return {
        "moe_router": Recipe(
            "moe_router", "moe_router", f"mixture-of-experts router: {routing}; the top-k weights and expert indices of every token",
            lambda tm, cfg: getattr(tm, router)(cfg), _router_call, HIDDEN, ("topk_weights", "topk_indices"), backward=False, own_axes=top_k),
        "moe_experts": Recipe(
            "moe_experts", "moe_experts", "mixture-of-experts experts given the routing: tokens sorted by their chosen experts, grouped GEMMs "
            "of the experts' gated MLPs, each token's outputs weighted by its top-k weights and summed",
            lambda tm, cfg: getattr(tm, experts)(cfg), _experts_call,
            (*HIDDEN, Act("topk_indices", (BATCH, SEQ, "top_k"), dtype="int64", distribution={"kind": "integers", "low": 0, "high": "num_experts"}),
             Act("topk_weights", (BATCH, SEQ, "top_k"), distribution={"kind": "uniform", "low": 0.0, "high": 1.0})),
            backward=False, own_axes=top_k),
    }
