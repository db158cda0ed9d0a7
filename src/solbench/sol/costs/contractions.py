"""Matrix products, convolutions and attention: the ops that run on the matrix units."""

from __future__ import annotations

from math import prod

from solbench.sol.costs.base import Contraction, Cost, letters, reads_all, rule, tensor_unit, vector_unit
from solbench.sol.graph import OpNode, TensorInfo


def _gemm_cost(node: OpNode, a: TensorInfo, b: TensorInfo, batch: int, m: int, n: int, k: int, einsum: str, unit: str | None = None) -> Cost:
    out = node.outputs[0]
    cost = Cost(reads=reads_all(node), writes=[(out, out.unique_bytes)], einsum=einsum)
    cost.flops[unit or tensor_unit(a.dtype, b.dtype)] += 2.0 * batch * m * n * k
    cost.contraction = Contraction(
        "gemm", batch, m, n, k, a.unique_bytes, b.unique_bytes, out.unique_bytes,
        (a.element_bits / 8, b.element_bits / 8, out.element_bits / 8),
    )
    return cost


@rule("mm", "_int_mm")
def _mm(node: OpNode) -> Cost:
    a, b = node.inputs[:2]
    (m, k), n = a.shape, b.shape[1]
    return _gemm_cost(node, a, b, 1, m, n, k, "mk,kn->mn")


@rule("addmm")
def _addmm(node: OpNode) -> Cost:
    bias, a, b = node.inputs[:3]
    (m, k), n = a.shape, b.shape[1]
    cost = _gemm_cost(node, a, b, 1, m, n, k, "mk,kn,n->mn")
    cost.flops[vector_unit(node.outputs[0].dtype)] += m * n  # the bias add
    return cost


@rule("bmm")
def _bmm(node: OpNode) -> Cost:
    a, b = node.inputs[:2]
    batch, m, k = a.shape
    return _gemm_cost(node, a, b, batch, m, b.shape[2], k, "bmk,bkn->bmn")


@rule("baddbmm")
def _baddbmm(node: OpNode) -> Cost:
    bias, a, b = node.inputs[:3]
    batch, m, k = a.shape
    cost = _gemm_cost(node, a, b, batch, m, b.shape[2], k, "bmk,bkn,bmn->bmn")
    cost.flops[vector_unit(node.outputs[0].dtype)] += batch * m * b.shape[2]
    return cost


@rule("_scaled_mm")
def _scaled_mm(node: OpNode) -> Cost:
    a, b = node.inputs[:2]
    (m, k), n = a.shape, b.shape[1]
    cost = _gemm_cost(node, a, b, 1, m, n, k, "mk,kn,?,?->mn")
    cost.flops[vector_unit(node.outputs[0].dtype)] += m * n  # applying the scales to the result
    return cost


@rule("mv", "addmv", "dot", "vdot")
def _matrix_vector(node: OpNode) -> Cost:
    """Matrix-vector work is memory bound and runs on the vector units."""
    tensors = node.inputs[-2:]
    matrix = max(tensors, key=lambda t: t.numel)
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs])
    cost.flops[vector_unit(matrix.dtype)] += 2.0 * matrix.numel
    cost.einsum = "mk,k->m" if len(matrix.shape) == 2 else "k,k->"
    return cost


@rule("_cdist_forward")
def _cdist(node: OpNode) -> Cost:
    """Pairwise distances of [.., P, M] and [.., R, M]: a difference, a multiply-add per pair and feature."""
    x1, x2 = node.inputs[:2]
    pairs = prod(x1.shape[:-1]) * x2.shape[-2]
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="bpm,brm->bpr")
    cost.flops[vector_unit(x1.dtype)] += 3.0 * pairs * x1.shape[-1]
    cost.flops["sfu"] += pairs  # the root of each distance
    return cost


@rule("convolution", "_convolution", "convolution_overrideable", "cudnn_convolution", "mkldnn_convolution",
      "_slow_conv2d_forward", "slow_conv3d_forward", "slow_conv_dilated2d", "slow_conv_dilated3d",
      "cudnn_convolution_transpose", "slow_conv_transpose2d", "slow_conv_transpose3d", "_nnpack_spatial_convolution")
def _convolution(node: OpNode) -> Cost:
    x, w = node.inputs[:2]
    out = node.outputs[0]
    transposed = _conv_transposed(node)
    groups = _conv_groups(node)
    batch = x.shape[0]
    conv_spatial = prod((x.shape if transposed else out.shape)[2:])
    flops = 2.0 * batch * conv_spatial * prod(w.shape)  # as torch.utils.flop_counter counts it
    cost = Cost(reads=reads_all(node), writes=[(out, out.unique_bytes)])
    cost.flops[tensor_unit(x.dtype, w.dtype)] += flops
    has_bias = len(node.inputs) > 2 and node.args[2] is not None
    if has_bias:
        cost.flops[vector_unit(out.dtype)] += out.numel
    spatial = len(x.shape) - 2
    dims = letters(spatial, 8)  # i, j, k... for spatial positions
    kernel = letters(spatial, 16)  # q, r, s... for kernel offsets
    cost.einsum = f"nc{dims},oc{kernel}->no{dims}" + (" (transposed)" if transposed else "") + (f" (groups={groups})" if groups > 1 else "")
    # Implicit GEMM per group: M = batch x spatial positions, N = out channels, K = in channels x kernel.
    n = (w.shape[1] * prod(w.shape[2:])) if transposed else w.shape[0] // groups
    k = w.shape[0] // groups if transposed else w.shape[1] * prod(w.shape[2:])
    m = batch * conv_spatial
    cost.contraction = Contraction(
        "conv", groups, m, n, k, x.unique_bytes, w.unique_bytes, out.unique_bytes,
        (x.element_bits / 8, w.element_bits / 8, out.element_bits / 8),
    )
    return cost


def _conv_transposed(node: OpNode) -> bool:
    if node.packet in {"cudnn_convolution_transpose", "slow_conv_transpose2d", "slow_conv_transpose3d"}:
        return True
    if node.packet in {"convolution", "_convolution", "convolution_overrideable"} and len(node.args) > 6:
        return bool(node.args[6])
    return False


def _conv_groups(node: OpNode) -> int:
    if node.packet in {"convolution", "_convolution", "convolution_overrideable"} and len(node.args) > 8:
        return int(node.args[8])
    if node.packet in {"cudnn_convolution", "mkldnn_convolution"} and len(node.args) > 6:
        return int(node.args[-1]) if isinstance(node.args[-1], int) else 1
    return 1


ATTENTION_OPS = {
    # packet -> (index of is_causal in args, index of the attention mask or bias in args, or None)
    "_scaled_dot_product_flash_attention_for_cpu": (4, None),
    "_scaled_dot_product_flash_attention": (4, None),
    "_scaled_dot_product_efficient_attention": (6, 3),
    "_scaled_dot_product_cudnn_attention": (6, 3),
    "_flash_attention_forward": (6, None),
    "_efficient_attention_forward": (None, 3),
    "_scaled_dot_product_fused_attention_overrideable": (6, 3),
    "scaled_dot_product_attention": (5, 3),  # recorded whole: (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
}


def causal_pairs(s_q: int, s_k: int) -> int:
    """(query, key) pairs left by a causal mask aligned at the top left, as torch's is_causal does."""
    full_rows = max(0, min(s_q, s_k))  # row i keeps keys 0..i
    kept = full_rows * (full_rows + 1) // 2
    return kept + max(0, s_q - s_k) * s_k


@rule(*ATTENTION_OPS)
def _attention(node: OpNode) -> Cost:
    q, k, v = (a for a in node.args[:3])
    causal_index, mask_index = ATTENTION_OPS[node.packet]
    causal = bool(node.args[causal_index]) if causal_index is not None and len(node.args) > causal_index else bool(node.kwargs.get("is_causal", False))
    if node.packet == "_efficient_attention_forward":
        causal = bool(node.kwargs.get("custom_mask_type", 0))
    layout_bshd = node.packet in {"_flash_attention_forward", "_efficient_attention_forward"}
    if layout_bshd:  # [B, S, H, D]
        (b, s_q, h_q, d), (_, s_k, h_kv, _), d_v = q.shape, k.shape, v.shape[-1]
        q_heads, kv_heads = b * h_q, b * h_kv
    else:  # [..., S, D]: every leading dim (batch, heads) is independent
        s_q, d, s_k, d_v = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        q_heads, kv_heads = prod(q.shape[:-2]), prod(k.shape[:-2])
    pairs = causal_pairs(s_q, s_k) if causal else s_q * s_k
    scores = q_heads * pairs
    out = node.outputs[0]
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs if t.numel > 0])
    cost.flops[tensor_unit(q.dtype, k.dtype)] += 2.0 * scores * (d + d_v)
    cost.flops[vector_unit(None)] += 4.0 * scores  # scale, running max, subtract, sum
    cost.flops["sfu"] += scores  # exp
    cost.einsum = "bhqd,bhkd,bhkv->bhqv" + (" (causal)" if causal else "")
    if mask_index is not None and len(node.args) > mask_index and isinstance(node.args[mask_index], TensorInfo):
        cost.einsum += " (masked)"
    group = max(1, q_heads // max(1, kv_heads))
    cost.contraction = Contraction(
        "attention", kv_heads, s_q * group, d_v, s_k, q.unique_bytes, k.unique_bytes, out.unique_bytes,
        (q.element_bits / 8, k.element_bits / 8, out.element_bits / 8), extra_bytes=v.unique_bytes,
    )
    return cost
