"""A mixture-of-experts block as one GPU of E-way expert parallelism holds it (rank 0).

The router is the model's own, over all routed experts; of its top-k picks only those in the local
range [0, num_experts / E) are kept, the others become transformers' EP sentinel (index
num_local_experts, weight 0: the grouped-GEMM experts sort them to the tail and skip them). The local
experts are the model's own expert module built with num_local_experts experts. The all-to-all
dispatch/combine between ranks is not part of the problem: every token is seen by the router, and the
output is this rank's partial sum (the other ranks' experts contribute zero here).
"""

from __future__ import annotations

import copy
from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, Act, Recipe


def local_experts(cfg: Any, count_field: str, ep: int) -> int:
    total = getattr(cfg, count_field)
    if total % ep:
        raise ValueError(f"{total} experts do not split over {ep} ranks")
    return total // ep


def _build(router: str, experts: str, count_field: str, ep: int) -> Any:
    def build(tm: Any, cfg: Any) -> Any:
        import torch

        local_cfg = copy.deepcopy(cfg)
        setattr(local_cfg, count_field, local_experts(cfg, count_field, ep))

        class ExpertParallelMoE(torch.nn.Module):
            """The router over all experts and the first 1/ep of the experts."""

            def __init__(self) -> None:
                super().__init__()
                self.gate = getattr(tm, router)(cfg)
                self.experts = getattr(tm, experts)(local_cfg)
                # transformers masks the rows of the EP sentinel (picks of other ranks' experts) only in expert-parallel
                # mode; without it those rows of the grouped GEMM's output are uninitialised memory times weight 0 (NaN)
                self.experts._is_expert_parallel = True
                self.num_local = local_experts(cfg, count_field, ep)

        return ExpertParallelMoE()
    return build


def ep_call(tm: Any, cfg: Any, module: Any, hidden_states: Any) -> Any:
    """Route over all experts, keep the local picks (remapped to 0..num_local-1), run the local experts."""
    import torch

    shape = hidden_states.shape
    flat = hidden_states.reshape(-1, shape[-1])
    _, weights, indices = module.gate(flat)
    local = indices < module.num_local  # rank 0 holds experts [0, num_local)
    indices = torch.where(local, indices, module.num_local)
    weights = torch.where(local, weights, torch.zeros_like(weights))
    return module.experts(flat, indices, weights).reshape(shape)


def ep_recipe(router: str, experts: str, count_field: str, ep: int, routing: str, note: str) -> Recipe:
    summary = (f"mixture-of-experts block on one GPU of {ep}-way expert parallelism (rank 0): {routing}; only the picks that "
               f"fall in the local range [0, experts / {ep}) kept (others dropped with weight 0, the dispatch/combine "
               f"all-to-all not included), grouped GEMMs of the local experts' gated MLPs, weighted sum.{note}")
    def own_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
        return {"num_local_experts": (f"num_experts // {ep}", local_experts(cfg, count_field, ep))}

    return Recipe(f"moe_ep{ep}", "moe", summary, _build(router, experts, count_field, ep), ep_call,
                  (Act("hidden_states", (BATCH, SEQ, "hidden_size")),), backward=False, own_axes=own_axes)
