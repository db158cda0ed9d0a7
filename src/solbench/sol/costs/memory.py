"""Data movement, indexing, sorting, pooling and interpolation.

Indexed reads count at most what the indices can touch (rows x row size, never more than the
tensor), and in-place indexed writes count only the rows written: a large buffer that is gathered
from or updated in place does not move whole.
"""

from __future__ import annotations

from math import log2, prod

from solbench.sol.costs.base import FREE_OPS, Cost, elementwise_einsum, letters, live_bytes, reads_all, rule, vector_unit, writes_all
from solbench.sol.graph import OpNode, TensorInfo

FREE_OPS.update({"_unsafe_view", "view", "_reshape_alias", "as_strided", "expand", "permute", "transpose", "t",
                 "unsqueeze", "squeeze", "select", "slice", "narrow", "split", "split_with_sizes", "chunk", "unbind",
                 "diagonal", "unfold", "view_as_real", "view_as_complex", "_nested_view_from_buffer", "alias", "detach",
                 # in-place forms that change only the metadata of their tensor
                 "squeeze_", "unsqueeze_", "transpose_", "t_", "as_strided_", "swapaxes_", "swapdims_", "detach_"})


def _touched(table: TensorInfo, rows: int, row_bytes: int) -> int:
    return min(table.unique_bytes, rows * row_bytes)


def _slice_bytes(tensor: TensorInfo, dim: int) -> int:
    """Bytes of one index along dim (a row of an embedding table, a slice of index_select)."""
    others = prod(s for i, s in enumerate(tensor.shape) if i != dim)
    return (others * tensor.element_bits + 7) // 8


@rule("zeros", "ones", "full", "arange", "scalar_tensor", "linspace", "logspace", "eye", "new_zeros", "new_ones", "new_full",
      "randn", "rand", "randint", "randperm", "tril_indices", "triu_indices", "zeros_like", "ones_like", "full_like",
      "rand_like", "randn_like", "randint_like", "bernoulli_p")
def _factory(node: OpNode) -> Cost:
    """A new tensor: its bytes written; values computed per element (arange, random draws), while a
    fill with one value (zeros, ones, full) computes nothing."""
    cost = Cost(writes=[(t, live_bytes(t)) for t in node.outputs], einsum="->" + letters(len(node.outputs[0].shape)))
    if node.packet not in _FILLS:
        cost.flops[vector_unit(node.outputs[0].dtype)] += node.outputs[0].numel
    return cost


_FILLS = {"zeros", "ones", "full", "scalar_tensor", "new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like"}


@rule("cat", "stack", "constant_pad_nd", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
      "replication_pad2d", "replication_pad3d", "repeat", "repeat_interleave", "roll", "flip", "tril", "triu", "im2col",
      "col2im", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "_unsafe_index", "take_along_dim", "tile",
      "native_channel_shuffle", "polar", "complex", "view_copy", "permute_copy", "expand_copy", "transpose_copy",
      "slice_copy", "select_copy", "unsqueeze_copy", "squeeze_copy", "t_copy", "split_with_sizes_copy", "unbind_copy",
      "diagonal_copy", "as_strided_copy", "_unsafe_view_copy", "unfold_copy", "slice_scatter", "select_scatter", "diag", "diag_embed",
      "diagonal_scatter", "as_strided_scatter")
def _copy_like(node: OpNode) -> Cost:
    cost = Cost(reads=reads_all(node), writes=writes_all(node))
    cost.einsum = elementwise_einsum(node) if node.outputs else ""
    return cost


@rule("embedding")
def _embedding(node: OpNode) -> Cost:
    table, indices = node.inputs[:2]
    out = node.outputs[0]
    reads = [(table, _touched(table, indices.numel, _slice_bytes(table, 0))), (indices, indices.unique_bytes)]
    return Cost(reads=reads, writes=[(out, out.unique_bytes)], einsum="vd,t->td")


@rule("index_select")
def _index_select(node: OpNode) -> Cost:
    source, index = node.inputs[:2]
    dim = node.args[1] % max(1, len(source.shape))
    out = node.outputs[0]
    reads = [(source, _touched(source, index.numel, _slice_bytes(source, dim))), (index, index.unique_bytes)]
    return Cost(reads=reads, writes=[(out, out.unique_bytes)], einsum="gather")


@rule("gather")
def _gather(node: OpNode) -> Cost:
    source, index = node.inputs[:2]
    out = node.outputs[0]
    reads = [(source, _touched(source, index.numel, source.element_bits // 8 or 1)), (index, index.unique_bytes)]
    return Cost(reads=reads, writes=[(out, out.unique_bytes)], einsum="gather")


@rule("index", "_index_put_impl", "masked_select", "nonzero", "nonzero_static", "argwhere", "_unique2", "unique_dim", "unique_consecutive")
def _advanced_index(node: OpNode) -> Cost:
    source = node.inputs[0]
    indices = node.inputs[1:]
    reads = [(t, t.unique_bytes) for t in indices]
    if node.packet == "index":
        reads.insert(0, (source, min(source.unique_bytes, node.outputs[0].unique_bytes)))
    else:
        reads.insert(0, (source, source.unique_bytes))
    cost = Cost(reads=reads, writes=[(t, t.unique_bytes) for t in node.outputs], einsum="gather")
    if node.packet.startswith("_unique") or node.packet.startswith("unique"):
        cost.flops[vector_unit(source.dtype)] += source.numel * max(1.0, log2(max(2, source.numel)))
    return cost


def _indexed_update(node: OpNode, written_rows: int, row_bytes: int, source: TensorInfo | None, accumulate: bool) -> Cost:
    """scatter / index_add / index_copy / index_put: in place, only the touched rows move."""
    target = node.mutated[0] if node.mutated else node.inputs[0]
    touched = min(target.unique_bytes, written_rows * row_bytes)
    indices = [t for t in node.inputs[1:] if t is not source and t is not target]
    reads = [(t, t.unique_bytes) for t in indices]
    if source is not None:
        reads.append((source, source.unique_bytes))
    if node.mutated:
        writes = [(target, touched)]
        if accumulate:
            reads.append((target, touched))
    else:  # out of place: a full copy of the target with the update applied
        out = node.outputs[0]
        reads.append((target, target.unique_bytes))
        writes = [(out, out.unique_bytes)]
    cost = Cost(reads=reads, writes=writes, einsum="scatter")
    if accumulate and source is not None:
        cost.flops[vector_unit(target.dtype)] += min(source.numel, target.numel)
    return cost


@rule("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_")
def _scatter(node: OpNode) -> Cost:
    target, index = node.inputs[:2]
    source = node.inputs[2] if len(node.inputs) > 2 else None
    element = max(1, target.element_bits // 8)
    accumulate = node.packet.startswith(("scatter_add", "scatter_reduce"))
    return _indexed_update(node, index.numel, element, source, accumulate)


@rule("index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_", "index_reduce", "index_reduce_")
def _index_update(node: OpNode) -> Cost:
    target, index = node.inputs[:2]
    source = node.inputs[2] if len(node.inputs) > 2 else None
    dim = node.args[1] % max(1, len(target.shape))
    accumulate = node.packet.startswith(("index_add", "index_reduce"))
    return _indexed_update(node, index.numel, _slice_bytes(target, dim), source, accumulate)


@rule("index_put", "index_put_")
def _index_put(node: OpNode) -> Cost:
    """target[indices] = values: the assigned elements are the indices' broadcast shape times the
    sizes of the dims they leave unindexed (None slots and trailing dims)."""
    target = node.inputs[0]
    values = node.inputs[-1]
    accumulate = bool(node.args[3]) if len(node.args) > 3 else bool(node.kwargs.get("accumulate", False))
    slots = list(node.args[1]) if len(node.args) > 1 and isinstance(node.args[1], (list, tuple)) else []
    index_tensors = [a for a in slots if isinstance(a, TensorInfo)]
    indexed = prod(_broadcast_shape([t.shape for t in index_tensors])) if index_tensors else 1
    free = prod(size for position, size in enumerate(target.shape) if position >= len(slots) or not isinstance(slots[position], TensorInfo))
    element = max(1, target.element_bits // 8)
    return _indexed_update(node, indexed * free, element, values, accumulate)


def _broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for position in range(rank):
        sizes = [s[position - rank + len(s)] for s in shapes if position - rank + len(s) >= 0]
        result.append(max(sizes) if sizes else 1)
    return tuple(result)


@rule("sort", "argsort", "msort")
def _sort(node: OpNode) -> Cost:
    source = node.inputs[0]
    dim = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], int) else -1
    length = source.shape[dim] if source.shape else 1
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="sort")
    cost.flops[vector_unit(source.dtype)] += source.numel * max(1.0, log2(max(2, length)))
    return cost


@rule("topk", "kthvalue", "median", "nanmedian", "mode")
def _topk(node: OpNode) -> Cost:
    source = node.inputs[0]
    k = node.args[1] if node.packet in {"topk", "kthvalue"} and len(node.args) > 1 else 1
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="topk")
    cost.flops[vector_unit(source.dtype)] += source.numel * max(1.0, log2(max(2, int(k) + 1)))
    return cost


@rule("searchsorted", "bucketize", "histc", "bincount", "histogram")
def _search(node: OpNode) -> Cost:
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="search")
    biggest = max(node.inputs, key=lambda t: t.numel)
    cost.flops[vector_unit(biggest.dtype)] += sum(t.numel for t in node.inputs) * max(1.0, log2(max(2, biggest.numel)))
    return cost


def _window_cost(flops_per_output: float):
    def cost(node: OpNode) -> Cost:
        source = node.inputs[0]
        out = node.outputs[0]
        window = _window_size(node, source, out)
        result = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs])
        result.flops[vector_unit(source.dtype)] += flops_per_output * out.numel * window
        rank = len(source.shape)
        result.einsum = f"{letters(rank)}->{letters(rank)} (window {window})"
        return result

    return cost


def _window_size(node: OpNode, source: TensorInfo, out: TensorInfo) -> int:
    if node.packet.startswith("adaptive") or node.packet.startswith("_adaptive"):
        return max(1, source.numel // max(1, out.numel))
    kernel = node.args[1] if len(node.args) > 1 else None
    if isinstance(kernel, (list, tuple)) and kernel:
        spatial = len(source.shape) - 2 if node.packet.endswith(("2d", "3d", "1d", "2d_with_indices", "3d_with_indices")) else len(kernel)
        sizes = list(kernel) * (spatial if len(kernel) == 1 else 1)
        return prod(sizes[: max(1, spatial)])
    if isinstance(kernel, int):
        return kernel
    return 1


for _packet in ("max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d",
                "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
                "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "_low_memory_max_pool2d_with_offsets",
                "_low_memory_max_pool_with_offsets", "mkldnn_max_pool2d"):
    rule(_packet)(_window_cost(1.0))

_INTERPOLATION = {"nearest": 1.0, "linear": 4.0, "bilinear": 8.0, "trilinear": 16.0, "bicubic": 32.0}


@rule("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
      "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d",
      "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator")
def _interpolate(node: OpNode) -> Cost:
    source = node.inputs[0]
    out = node.outputs[0]
    mode = next((m for m in ("nearest", "trilinear", "bilinear", "bicubic", "linear") if m in node.packet), "bilinear")
    cost = Cost(reads=reads_all(node), writes=[(out, out.unique_bytes)])
    cost.flops[vector_unit(source.dtype)] += _INTERPOLATION[mode] * out.numel
    cost.einsum = f"{letters(len(source.shape))}->{letters(len(out.shape))} ({mode})"
    return cost
