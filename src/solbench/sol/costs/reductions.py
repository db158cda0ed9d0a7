"""Reductions, normalisations, softmax and scans."""

from __future__ import annotations

from math import prod

from solbench.sol.costs.base import Cost, letters, reads_all, rule, vector_unit, writes_all
from solbench.sol.graph import OpNode, TensorInfo


# Where the `dim` argument sits, for ops whose second argument is something else (the norm's order).
_DIM_ARGUMENT = {"linalg_vector_norm": 2, "norm": 2}


def _reduced_dims(node: OpNode, source: TensorInfo) -> list[int]:
    rank = len(source.shape)
    index = _DIM_ARGUMENT.get(node.packet, 1)
    dims = node.args[index] if len(node.args) > index and not isinstance(node.args[index], (bool, TensorInfo, float)) else node.kwargs.get("dim")
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


def _normalisation(flops_per_element: float, slice_elements, two_pass=lambda node: True):
    """layer/group/batch/RMS norm: statistics over a slice, then scale and shift every element.
    `slice_elements(node, source)` is the size of one normalised slice; ops that are given their
    statistics (batch norm in eval mode) make one pass."""

    def cost(node: OpNode) -> Cost:
        source = node.inputs[0]
        per_slice = max(1, slice_elements(node, source))
        result = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs])
        result.flops[vector_unit(source.dtype)] += flops_per_element * source.numel
        result.flops["sfu"] += source.numel // per_slice  # one rsqrt per normalised slice
        full = letters(len(source.shape))
        result.einsum = f"{full}->{full}"
        if two_pass(node):
            result.two_pass_slice = (source, per_slice * source.element_bits // 8)
        if node.mutated:  # batch norm in training mode updates running statistics in place
            result.writes += [(t, t.unique_bytes) for t in node.mutated]
        return result

    return cost


def _layer_norm_slice(node: OpNode, source: TensorInfo) -> int:
    normalized = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], (list, tuple)) else [source.shape[-1]]
    return prod(normalized)


def _group_norm_slice(node: OpNode, source: TensorInfo) -> int:
    """native_group_norm(input, weight, bias, N, C, HxW, group, eps): one group is C/group x HxW."""
    if len(node.args) > 6 and all(isinstance(a, int) for a in node.args[3:7]):
        _, channels, spatial, groups = node.args[3:7]
        return channels // max(1, groups) * spatial
    return prod(source.shape[1:])


def _batch_norm_slice(node: OpNode, source: TensorInfo) -> int:
    return source.numel // max(1, source.shape[1]) if len(source.shape) > 1 else source.numel


def _batch_norm_trains(node: OpNode) -> bool:
    """Training computes the statistics (two passes); eval mode is given them (one pass)."""
    if node.packet == "_native_batch_norm_legit_no_training":
        return False
    # The `training` flag is the first bool after (input, weight, bias) in every overload.
    return next((a for a in node.args[3:] if isinstance(a, bool)), True)


rule("native_layer_norm", "layer_norm")(_normalisation(8, _layer_norm_slice))
rule("_fused_rms_norm", "rms_norm")(_normalisation(5, _layer_norm_slice))
rule("native_group_norm")(_normalisation(8, _group_norm_slice))
rule("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
     "batch_norm", "cudnn_batch_norm", "miopen_batch_norm")(_normalisation(8, _batch_norm_slice, _batch_norm_trains))
rule("native_layer_norm_backward")(_normalisation(12, lambda node, source: prod(node.args[2]) if len(node.args) > 2 and isinstance(node.args[2], (list, tuple)) else source.shape[-1]))
rule("native_group_norm_backward")(_normalisation(12, lambda node, source: prod(source.shape[1:])))
rule("native_batch_norm_backward")(_normalisation(12, _batch_norm_slice))
