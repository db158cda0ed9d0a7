"""Reductions, normalisations, softmax and scans."""

from __future__ import annotations

from math import prod

from solbench.sol.costs.base import Cost, letters, reads_all, rule, vector_unit, writes_all
from solbench.sol.graph import OpNode, TensorInfo


def _reduced_dims(node: OpNode, source: TensorInfo) -> list[int]:
    rank = len(source.shape)
    dims = node.args[1] if len(node.args) > 1 and not isinstance(node.args[1], (bool, TensorInfo)) else node.kwargs.get("dim")
    if dims is None or dims == [] or dims == ():
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % rank for d in dims}) if rank else []


def _reduction_einsum(source: TensorInfo, reduced: list[int]) -> str:
    full = letters(len(source.shape))
    kept = "".join(c for i, c in enumerate(full) if i not in reduced)
    return f"{full}->{kept}"


def _slice_bytes(source: TensorInfo, reduced: list[int]) -> int:
    return prod(source.shape[d] for d in reduced) * source.element_bits // 8


def _reduction(flops_per_element: float, sfu_per_element: float = 0.0, sfu_per_output: float = 0.0):
    def cost(node: OpNode) -> Cost:
        source = node.inputs[0]
        reduced = _reduced_dims(node, source)
        result = Cost(reads=reads_all(node), writes=writes_all(node), einsum=_reduction_einsum(source, reduced))
        unit = vector_unit(source.dtype)
        result.flops[unit] += flops_per_element * source.numel
        outputs = node.outputs[0].numel if node.outputs else 1
        if sfu_per_element or sfu_per_output:
            result.flops["sfu"] += sfu_per_element * source.numel + sfu_per_output * outputs
        return result

    return cost


rule("sum", "mean", "amax", "amin", "max", "min", "prod", "any", "all", "argmax", "argmin", "nansum", "count_nonzero", "aminmax")(_reduction(1))
rule("var", "std", "var_mean", "std_mean")(_reduction(3, sfu_per_output=1))
rule("logsumexp")(_reduction(3, sfu_per_element=1, sfu_per_output=1))
rule("linalg_vector_norm", "norm")(_reduction(2, sfu_per_output=1))


def _last_dim_op(flops: float, sfu: float, sfu_per_row: float = 0.0, two_pass: bool = True):
    """softmax-like ops along one dim: read, exp, sum, scale."""

    def cost(node: OpNode) -> Cost:
        source = node.inputs[0]
        rank = len(source.shape)
        dim = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], int) else -1
        dim = dim % rank if rank else 0
        result = Cost(reads=reads_all(node), writes=writes_all(node))
        full = letters(rank)
        result.einsum = f"{full}->{full}"
        result.flops[vector_unit(source.dtype)] += flops * source.numel
        rows = source.numel // source.shape[dim] if rank and source.shape[dim] else 0
        result.flops["sfu"] += sfu * source.numel + sfu_per_row * rows
        if two_pass:
            result.two_pass_slice = (source, _slice_bytes(source, [dim]) if rank else 0)
        return result

    return cost


rule("_softmax", "softmax", "special_softmax")(_last_dim_op(4, 1, 1))
rule("_log_softmax", "log_softmax")(_last_dim_op(4, 1, 1))
rule("_softmax_backward_data", "_log_softmax_backward_data")(_last_dim_op(4, 0))
rule("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin")(_last_dim_op(1, 0, two_pass=False))


def _normalisation(flops_per_element: float, normalized_dims):
    """layer/group/batch/RMS norm: statistics over some dims, then scale and shift every element."""

    def cost(node: OpNode) -> Cost:
        source = node.inputs[0]
        reduced = normalized_dims(node, source)
        result = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs])
        result.flops[vector_unit(source.dtype)] += flops_per_element * source.numel
        groups = source.numel // max(1, prod(source.shape[d] for d in reduced))
        result.flops["sfu"] += groups  # one rsqrt per normalised group
        full = letters(len(source.shape))
        result.einsum = f"{full}->{full}"
        result.two_pass_slice = (source, _slice_bytes(source, reduced))
        if node.mutated:  # batch norm in training mode updates running statistics in place
            result.writes += [(t, t.unique_bytes) for t in node.mutated]
        return result

    return cost


def _layer_norm_dims(node: OpNode, source: TensorInfo) -> list[int]:
    normalized = node.args[1] if len(node.args) > 1 else [source.shape[-1]]
    rank = len(source.shape)
    return list(range(rank - len(normalized), rank))


def _group_norm_dims(node: OpNode, source: TensorInfo) -> list[int]:
    return list(range(1, len(source.shape)))  # per (sample, group): channels/group x spatial; a slice upper bound


def _batch_norm_dims(node: OpNode, source: TensorInfo) -> list[int]:
    return [0] + list(range(2, len(source.shape)))


rule("native_layer_norm", "layer_norm")(_normalisation(8, _layer_norm_dims))
rule("_fused_rms_norm", "rms_norm")(_normalisation(5, _layer_norm_dims))
rule("native_group_norm")(_normalisation(8, _group_norm_dims))
rule("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
     "batch_norm", "cudnn_batch_norm", "miopen_batch_norm")(_normalisation(8, _batch_norm_dims))
rule("native_layer_norm_backward")(_normalisation(12, _layer_norm_dims))
rule("native_group_norm_backward")(_normalisation(12, _group_norm_dims))
rule("native_batch_norm_backward")(_normalisation(12, _batch_norm_dims))
