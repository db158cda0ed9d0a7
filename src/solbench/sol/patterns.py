"""Work a kernel can skip or do on faster units, seen from the structure of the graph.

Per-op pricing overstates two patterns that are common in references:

- attention written out with a mask that depends on no input (`torch.triu(torch.ones(S, S))`
  then `masked_fill(-inf)`, or an additive mask of -inf / dtype min) before a softmax: the masked
  (query, key) pairs need no work, so the score and value products and the ops between them are
  priced for the pairs the mask keeps, as causal SDPA is;
- a contraction written as a broadcast multiply and a sum (`(a[..., :, None] * b[..., None, :, :]).sum(-2)`):
  one multiply-add per product element on the matrix units, not a multiply and an add on the
  vector units.

`adjust(graph, costs)` rewrites the costs in place and returns a note per pattern found.
"""

from __future__ import annotations

from collections import defaultdict
from math import prod
from typing import TYPE_CHECKING

from solbench.sol.costs.base import Contraction, operand_bytes, operand_unit

if TYPE_CHECKING:
    from solbench.sol.costs import Cost
    from solbench.sol.graph import Graph, OpNode, TensorInfo

CONTRACTIONS = {"mm", "bmm", "addmm", "baddbmm", "matmul"}
SOFTMAXES = {"_softmax", "softmax", "_safe_softmax", "special_softmax", "_log_softmax", "log_softmax"}
PASS_THROUGH = {"_to_copy", "clone", "contiguous", "view", "_unsafe_view", "reshape", "expand", "mul", "div", "true_divide",
                "native_dropout", "alias", "detach", "squeeze", "unsqueeze", "permute", "transpose",
                "tanh"}  # logit softcapping (Gemma-2: tanh(scores / cap) * cap): pairwise, so a masked pair stays masked
MASKING = {"masked_fill", "add", "where", "sub"}
MASKED_VALUE = -1e30  # a fill at or below this (or -inf, or half a narrow dtype's lowest value) masks the score out


def adjust(graph: Graph, costs: list[Cost | None]) -> list[str]:
    producers, consumers = _links(graph)
    notes = _masked_scores(graph, costs, producers, consumers)
    notes += _masked_attention_backward(graph, costs)
    notes += _broadcast_contractions(graph, costs, producers, consumers)
    return notes


def _links(graph: Graph) -> tuple[dict[int, OpNode], dict[int, list[OpNode]]]:
    producers: dict[int, OpNode] = {}
    consumers: dict[int, list[OpNode]] = defaultdict(list)
    for node in graph.nodes:
        for tensor in node.outputs:
            producers.setdefault(tensor.id, node)
        for tensor in node.inputs:
            consumers[tensor.id].append(node)
    return producers, consumers


# --- attention with a constant mask -------------------------------------------------------------


def _masked_scores(graph: Graph, costs: list[Cost | None], producers: dict[int, OpNode], consumers: dict[int, list[OpNode]]) -> list[str]:
    notes = []
    scaled_once: set[int] = set()
    for node in graph.nodes:
        if node.packet not in SOFTMAXES or not node.inputs:
            continue
        chain: list[OpNode] = []
        kept: float | None = None
        scores_product: OpNode | None = None
        current = node.inputs[0]
        for _ in range(12):  # walk back to the product of queries and keys
            producer = producers.get(current.id)
            if producer is None:
                break
            if producer.packet in CONTRACTIONS:
                scores_product = producer
                break
            if producer.packet in MASKING and kept is None:
                kept = _kept_fraction(producer, current)
            elif producer.packet not in PASS_THROUGH:
                break
            chain.append(producer)
            data = [t for t in producer.inputs if not t.constant]
            if not data:
                break
            current = data[0]
        if kept is None or scores_product is None or kept >= 1.0:
            continue
        value_product = _consumer_product(node, consumers)
        around = [scores_product, *chain, node] + ([value_product] if value_product is not None else [])
        region = _scores_region(node, current.shape, around, producers, consumers)
        for index in sorted(region - scaled_once):
            cost = costs[index]
            if cost is not None:
                for unit in cost.flops:
                    cost.flops[unit] *= kept
        scaled_once |= region
        how = (f"keeps {kept:.3g} of the scores" if kept > least_kept_share(current.shape) else
               "of unknown values (too large to compute here) keeps at least one key per query")
        backward = len(region) - len(set(op.index for op in around))
        also = f", and {backward} more op(s) on tensors of the scores' shape joined to them (the backward's)" if backward > 0 else ""
        notes.append(f"op {node.index} ({node.packet}): a constant mask {how}; the products around it{also} are priced for the kept pairs only")
    return notes


def _kept_fraction(node: OpNode, scores: TensorInfo) -> float | None:
    """The share of score elements a constant mask leaves (None when the op is no such mask)."""
    import torch

    low = _masking_threshold(scores)
    if node.packet in ("masked_fill", "where") and not _masks_out(node.args[2] if len(node.args) > 2 else None, low):
        return None
    masks = [t for t in node.inputs if t.constant and t is not scores and t.shape and _broadcasts_to(t.shape, scores.shape)]
    if not masks or (node.packet in ("add", "sub") and not (masks[0].dtype is not None and masks[0].dtype.is_floating)):
        return None
    values = masks[0].values
    if values is None:  # too large to have been computed: the least it can keep is one key per query
        return least_kept_share(scores.shape)
    if node.packet in ("masked_fill", "where"):  # counted, never widened: masks reach 10^8 elements
        marked = int(torch.count_nonzero(values))  # True (non-zero) entries: filled by masked_fill, kept by where
        dropped = marked if node.packet == "masked_fill" else values.numel() - marked
    else:
        sign = -1.0 if node.packet == "sub" else 1.0
        exact = values if values.dtype == torch.float64 else values.to(torch.float32)  # the half formats widen exactly
        dropped = int(torch.count_nonzero((exact * sign) <= max(low, float(torch.finfo(values.dtype).min) / 2)))
    return 1.0 - dropped / max(1, values.numel())


def least_kept_share(scores_shape: tuple) -> float:
    """The least share of (query, key) pairs a mask of unknown values can keep: one key per query
    (a query with none has no softmax)."""
    return 1.0 / max(1, int(scores_shape[-1])) if scores_shape else 1.0


def constant_mask_share(mask: TensorInfo, scores_shape: tuple) -> float:
    """The share of pairs that an attention mask depending on no input keeps (SDPA's convention: a
    bool mask is True where a key is seen, a float one is added, -inf or the dtype's lowest half masks
    out); one key per query when its values are not known."""
    import torch

    if mask.values is None:
        return least_kept_share(scores_shape)
    values = mask.values
    if values.dtype == torch.bool:
        return float(values.to(torch.float64).mean())
    low = max(MASKED_VALUE, float(torch.finfo(values.dtype).min) / 2) if values.dtype.is_floating_point else MASKED_VALUE
    return float((values.to(torch.float64) > low).to(torch.float64).mean())


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether a tensor of `shape` broadcasts to exactly `target` (a mask of the scores, not a widening)."""
    import torch

    try:
        return tuple(torch.broadcast_shapes(tuple(shape), tuple(target))) == tuple(target)
    except RuntimeError:
        return False


def _masks_out(fill: object, low: float) -> bool:
    """Whether a fill value (a number, or a constant tensor of one value) masks a score out."""
    from solbench.sol.graph import TensorInfo

    if isinstance(fill, TensorInfo):
        if not fill.constant or fill.values is None or fill.values.numel() != 1:
            return False
        fill = float(fill.values.reshape(-1)[0])
    return isinstance(fill, (int, float)) and fill <= low


def _masking_threshold(scores: TensorInfo) -> float:
    """A value at or below which a score is masked out: -1e30, or half the lowest of a narrow dtype (fp16)."""
    import torch

    if scores.dtype is not None and scores.dtype.is_floating and scores.dtype.bits >= 16:
        return max(MASKED_VALUE, float(torch.finfo(scores.dtype.torch_dtype()).min) / 2)
    return MASKED_VALUE


def _masked_attention_backward(graph: Graph, costs: list[Cost | None]) -> list[str]:
    """An attention backward op (the gradient of SDPA) whose forward was given a constant mask: the mask
    it receives is the forward's converted inside SDPA (bool to additive, not recorded), so it is not
    seen as constant; the forward with the same queries, keys and values says which pairs it keeps."""
    from solbench.sol.costs.contractions import ATTENTION_BACKWARD, ATTENTION_OPS, attention_backward_geometry, attention_mask, masked_pairs
    from solbench.sol.graph import TensorInfo

    forward_masks = {}
    for node in graph.nodes:
        mask = attention_mask(node) if node.packet in ATTENTION_OPS else None
        if isinstance(mask, TensorInfo) and mask.constant:
            forward_masks[tuple(getattr(a, "id", None) for a in node.args[:3])] = mask
    notes = []
    for node in graph.nodes:
        cost = costs[node.index]
        if node.packet not in ATTENTION_BACKWARD or cost is None or not forward_masks:
            continue
        mask = forward_masks.get(tuple(getattr(a, "id", None) for a in node.args[1:4]))
        shape = attention_backward_geometry(node)
        if mask is None or (isinstance(shape.mask, TensorInfo) and shape.mask.constant):  # none, or priced by its own mask already
            continue
        before = shape.head_pairs
        after, _ = masked_pairs(mask, shape.s_q, shape.s_k, before)
        if after < before:
            for unit in cost.flops:
                cost.flops[unit] *= after / before
            notes.append(f"op {node.index} ({node.packet}): its forward's constant mask keeps {after / before:.3g} of the pairs; "
                         "the backward is priced for them only")
    return notes


REGION_LIMIT = 400  # ops of one attention's scores-shaped region at most (a guard: a graph is far smaller)


def _scores_region(softmax: OpNode, scores_shape: tuple, around: list[OpNode], producers: dict[int, OpNode],
                   consumers: dict[int, list[OpNode]]) -> set[int]:
    """The ops joined to a masked softmax through tensors of the scores' shape ([..., S_q, S_k], or its
    transpose): the scores' and values' products and the ops between them (`around`), and in a backward
    graph the gradients' (dP = dO V^T, the softmax gradient, dS K, dS^T Q, P^T dO). At a masked pair P is
    0, so dS = P * (dP - rowsum) is 0 too: none of them needs work there. Contractions end the walk: their
    other operands and results are queries, keys, values and their gradients (which have the scores'
    shape too where head_dim equals the sequence length)."""
    if len(scores_shape) < 2:
        return {op.index for op in around}
    tail = tuple(scores_shape[-2:])
    size = prod(scores_shape)

    def scores_like(tensor: TensorInfo) -> bool:
        shape = tuple(tensor.shape)
        return len(shape) >= 2 and (shape[-2:] == tail or shape[-2:] == tail[::-1]) and prod(shape) <= size

    region = {op.index for op in around}
    pending = [t for t in (*softmax.inputs, *softmax.outputs) if scores_like(t)]  # not the products' operands: q, k, v
    seen: set[int] = set()
    while pending and len(region) < REGION_LIMIT:
        tensor = pending.pop()
        if tensor.id in seen or tensor.constant:
            continue
        seen.add(tensor.id)
        joined = [producers[tensor.id]] if tensor.id in producers else []
        for op in joined + consumers.get(tensor.id, []):
            if op.index in region:
                continue
            region.add(op.index)
            if op.packet not in CONTRACTIONS:  # a product is reached through its scores-shaped operand or result: it ends there
                pending += [t for t in (*op.inputs, *op.outputs) if scores_like(t)]
    return region


def _consumer_product(node: OpNode, consumers: dict[int, list[OpNode]]) -> OpNode | None:
    """The product of the (masked) probabilities with the values, following casts and views."""
    current = node.outputs[0] if node.outputs else None
    for _ in range(6):
        if current is None:
            return None
        users = consumers.get(current.id, [])
        if len(users) != 1:
            return None
        user = users[0]
        if user.packet in CONTRACTIONS:
            return user
        if user.packet not in PASS_THROUGH or not user.outputs:
            return None
        current = user.outputs[0]
    return None


# --- a broadcast multiply and a sum -----------------------------------------------------------------


def _broadcast_contractions(graph: Graph, costs: list[Cost | None], producers: dict[int, OpNode],
                            consumers: dict[int, list[OpNode]]) -> list[str]:
    notes = []
    for node in graph.nodes:
        if node.packet not in ("sum", "mean") or not node.inputs or costs[node.index] is None:
            continue
        product = node.inputs[0]
        mul = producers.get(product.id)
        if mul is None or mul.packet != "mul" or len(mul.inputs) != 2 or consumers.get(product.id) != [node]:
            continue
        a, b = mul.inputs
        shape = product.shape
        rank = len(shape)
        reduced = _reduced(node, rank)
        if not reduced:
            continue
        pa, pb = _padded(a.shape, rank), _padded(b.shape, rank)
        broadcast_a = {i for i in range(rank) if pa[i] == 1 and shape[i] > 1}
        broadcast_b = {i for i in range(rank) if pb[i] == 1 and shape[i] > 1}
        if not broadcast_a or not broadcast_b or reduced & (broadcast_a | broadcast_b):
            continue
        elements = prod(shape)
        k = prod(shape[i] for i in reduced)
        n = prod(shape[i] for i in broadcast_a)  # a lacks the columns
        m = prod(shape[i] for i in broadcast_b)  # b lacks the rows
        batch = max(1, elements // max(1, k * m * n))
        mul_cost, sum_cost = costs[mul.index], costs[node.index]
        if mul_cost is not None:
            mul_cost.flops.clear()
        unit = operand_unit(a, b)
        sum_cost.flops.clear()
        sum_cost.flops[unit] += 2.0 * elements
        sum_cost.einsum = "broadcast multiply and sum: a contraction"
        (a_bytes, a_element), (b_bytes, b_element) = operand_bytes(a), operand_bytes(b)
        out = node.outputs[0]
        sum_cost.contraction = Contraction("gemm", batch, m, n, k, a_bytes, b_bytes, out.unique_bytes, (a_element, b_element, out.element_bits / 8))
        notes.append(f"ops {mul.index}+{node.index}: a broadcast multiply and sum over {k} elements is a contraction, priced on {unit}")
    return notes


def _reduced(node: OpNode, rank: int) -> set[int]:
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dims is None or isinstance(dims, bool):
        return set(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    try:
        return {int(d) % rank for d in dims} if rank else set()
    except (TypeError, ValueError):
        return set()


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)
