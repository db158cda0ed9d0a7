"""Matrix products, convolutions and attention: the ops that run on the matrix units."""

from __future__ import annotations

from dataclasses import dataclass
from math import log2, prod

from solbench.sol.costs.base import Contraction, Cost, letters, live_bytes, operand_bytes, operand_unit, reads_all, rule, vector_unit
from solbench.sol.graph import OpNode, TensorInfo


def _gemm_cost(node: OpNode, a: TensorInfo, b: TensorInfo, batch: int, m: int, n: int, k: int, einsum: str, unit: str | None = None) -> Cost:
    out = node.outputs[0]
    cost = Cost(reads=reads_all(node), writes=[(out, out.unique_bytes)], einsum=einsum)
    cost.flops[unit or operand_unit(a, b)] += 2.0 * batch * m * n * k
    (a_bytes, a_element), (b_bytes, b_element) = operand_bytes(a), operand_bytes(b)
    cost.contraction = Contraction("gemm", batch, m, n, k, a_bytes, b_bytes, out.unique_bytes, (a_element, b_element, out.element_bits / 8))
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


@rule("_grouped_mm")
def _grouped_mm(node: OpNode) -> Cost:
    """Grouped GEMM (MoE experts): A[S, K] rows in groups (offs) times B[E, K, N], each group by its own
    matrix; or a batched A[E, M, K] @ B[E, K, N]; or A[M, K] @ B[K, N] with K split in groups
    (an expert weight gradient, out[E, M, N]). Each product is computed once: 2*S*K*N flops for the
    grouped rows. Of B only the matrices that rows can reach move: at most one per row (as an
    indexed read, never more than B)."""
    a, b = node.inputs[:2]
    out = node.outputs[0]
    if len(a.shape) == 2 and len(b.shape) == 3:  # grouped rows
        rows, k = a.shape
        groups, _, n = b.shape
        cost = _gemm_cost(node, a, b, 1, rows, n, k, "sk,ekn->sn")
        reachable = min(groups, rows) / max(groups, 1)  # the share of B's matrices that the rows can reach
        cost.reads = [(t, int(live_bytes(t) * reachable) if t is b else live_bytes(t)) for t in node.inputs]
        cost.contraction.b_bytes = operand_bytes(b)[0] * reachable
        return cost
    if len(a.shape) == 3 and len(b.shape) == 3:  # one product per group
        groups, m, k = a.shape
        return _gemm_cost(node, a, b, groups, m, b.shape[2], k, "emk,ekn->emn")
    if len(a.shape) == 2 and len(b.shape) == 2 and len(out.shape) == 3:  # K split in groups: out[E, M, N]
        (m, k), n = a.shape, b.shape[1]
        return _gemm_cost(node, a, b, 1, m, n, k, "mk,kn->emn")
    if len(a.shape) == 3 and len(b.shape) == 2:  # A[E, M, K] against B[N_total, K]-grouped columns
        groups, m, k = a.shape
        return _gemm_cost(node, a, b, 1, m, out.shape[-1], k, "emk,kn->mn")
    raise ValueError(f"_grouped_mm with operands of rank {len(a.shape)} and {len(b.shape)}: no cost rule")


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
    cost.flops[operand_unit(x, w)] += flops
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
    (x_bytes, x_element), (w_bytes, w_element) = operand_bytes(x), operand_bytes(w)
    cost.contraction = Contraction("conv", groups, m, n, k, x_bytes, w_bytes, out.unique_bytes, (x_element, w_element, out.element_bits / 8))
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


def masked_pairs(mask: object, s_q: int, s_k: int, pairs: int) -> tuple[int, str]:
    """The (query, key) pairs of one head that a mask depending on no input keeps (a sliding window, packed
    sequences of fixed lengths), with a note for the einsum; other masks leave `pairs` as they are."""
    if not (isinstance(mask, TensorInfo) and mask.constant):
        return pairs, ""
    from solbench.sol.patterns import constant_mask_share

    share = constant_mask_share(mask, (s_q, s_k))
    note = f" (constant mask keeps {share:.3g})" if mask.values is not None else " (constant mask of unknown values: one key per query)"
    return max(s_q, min(pairs, round(s_q * s_k * share))), note


def attention_mask(node: OpNode) -> object:
    """The mask argument of an attention op of ATTENTION_OPS (None where it takes none)."""
    _, mask_index = ATTENTION_OPS[node.packet]
    return node.args[mask_index] if mask_index is not None and len(node.args) > mask_index else node.kwargs.get("attn_mask")


@rule(*ATTENTION_OPS)
def _attention(node: OpNode) -> Cost:
    q, k, v = (a for a in node.args[:3])
    causal_index, _ = ATTENTION_OPS[node.packet]
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
    mask = attention_mask(node)
    pairs, mask_note = masked_pairs(mask, s_q, s_k, causal_pairs(s_q, s_k) if causal else s_q * s_k)
    scores = q_heads * pairs
    out = node.outputs[0]
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs if t.numel > 0])
    cost.flops[operand_unit(q, k)] += 2.0 * scores * (d + d_v)
    cost.flops[vector_unit(None)] += 4.0 * scores  # scale, running max, subtract, sum
    cost.flops["sfu"] += scores  # exp
    cost.einsum = "bhqd,bhkd,bhkv->bhqv" + (" (causal)" if causal else "")
    if isinstance(mask, TensorInfo):
        cost.einsum += mask_note or " (masked)"
    group = max(1, q_heads // max(1, kv_heads))
    (q_bytes, q_element), (k_bytes, k_element), (v_bytes, _) = operand_bytes(q), operand_bytes(k), operand_bytes(v)
    cost.contraction = Contraction("attention", kv_heads, s_q * group, d_v, s_k, q_bytes, k_bytes, out.unique_bytes,
                                   (q_element, k_element, out.element_bits / 8), extra_bytes=v_bytes)
    return cost


@rule("_fft_r2c", "_fft_c2r", "_fft_c2c")
def _fft(node: OpNode) -> Cost:
    """5 N log2 N flops per complex transform of length N (a real transform: half of a complex one),
    over the transformed dims; bytes of the input and the output."""
    source, out = node.inputs[0], node.outputs[0]
    dims = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], (list, tuple)) else [-1]
    logical = out if node.packet == "_fft_c2r" else source  # the real-valued side has the full length
    if node.packet == "_fft_r2c":
        logical = source
    length = prod(logical.shape[d] for d in dims) if logical.shape else 1
    transforms = max(1, logical.numel // max(1, length))
    flops = 5.0 * length * max(1.0, log2(max(2, length))) * transforms
    if node.packet != "_fft_c2c":
        flops /= 2
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum=f"fft over dims {list(dims)}")
    cost.flops[vector_unit(None)] += flops
    return cost


@rule("mkldnn_rnn_layer", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")
def _recurrent(node: OpNode) -> Cost:
    """One recurrent layer: per step and batch row, the input and hidden products with the gate
    weights on the matrix units, and the gate nonlinearities."""
    tensors = node.inputs
    if node.packet == "mkldnn_rnn_layer":  # input [T, B, I], w_ih [G*H, I], w_hh [G*H, H], ...
        x, w_ih, w_hh = tensors[0], tensors[1], tensors[2]
        steps_rows = prod(x.shape[:-1])
        gates, inputs, hidden = w_ih.shape[0], w_ih.shape[1], w_hh.shape[1]
        unit = operand_unit(x, w_ih)
    else:  # a fused cell: gates already computed, or (input, hidden, weights) of one step
        x = tensors[0]
        steps_rows = prod(x.shape[:-1])
        gates, inputs, hidden = x.shape[-1], 0, 0
        unit = vector_unit(x.dtype)
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="recurrent layer")
    if inputs or hidden:
        cost.flops[unit] += 2.0 * steps_rows * gates * (inputs + hidden)
    cost.flops[vector_unit(x.dtype)] += 4.0 * steps_rows * gates
    cost.flops["sfu"] += steps_rows * gates
    return cost


@rule("convolution_backward")
def _convolution_backward(node: OpNode) -> Cost:
    """The input gradient and the weight gradient are each a convolution as large as the forward one
    (as torch.utils.flop_counter counts them), for the outputs asked for; the bias gradient a sum."""
    grad, x, w = node.inputs[:3]
    transposed = bool(node.args[7]) if len(node.args) > 7 else False
    mask = node.args[10] if len(node.args) > 10 and isinstance(node.args[10], (list, tuple)) else (True, True, True)
    spatial = prod((x.shape if transposed else grad.shape)[2:])
    forward = 2.0 * x.shape[0] * spatial * prod(w.shape)
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs], einsum="convolution backward")
    unit = operand_unit(grad, w)
    cost.flops[unit] += forward * (int(bool(mask[0])) + int(bool(mask[1])))
    if len(mask) > 2 and mask[2]:
        cost.flops[vector_unit(grad.dtype)] += grad.numel
    return cost


ATTENTION_BACKWARD = {
    # packet -> index of is_causal in args
    "_scaled_dot_product_flash_attention_for_cpu_backward": 7,
    "_scaled_dot_product_flash_attention_backward": 11,
    "_scaled_dot_product_efficient_attention_backward": 11,
    "_scaled_dot_product_cudnn_attention_backward": 14,
    "_flash_attention_backward": 10,
    "_efficient_attention_backward": None,
}


@dataclass(frozen=True)
class BackwardGeometry:
    """What pricing an attention backward op needs: its sizes, causality and own mask argument."""

    s_q: int
    s_k: int
    heads: int
    d: int
    d_v: int
    causal: bool
    mask: object

    @property
    def head_pairs(self) -> int:
        """(query, key) pairs of one head before any mask: all, or the causal ones."""
        return causal_pairs(self.s_q, self.s_k) if self.causal else self.s_q * self.s_k


def attention_backward_geometry(node: OpNode) -> BackwardGeometry:
    q, k, v = node.args[1:4]
    causal_index = ATTENTION_BACKWARD[node.packet]
    causal = bool(node.args[causal_index]) if causal_index is not None and len(node.args) > causal_index else bool(node.kwargs.get("is_causal", False))
    if node.packet in {"_flash_attention_backward", "_efficient_attention_backward"}:  # [B, S, H, D]
        (b, s_q, h_q, d), s_k, d_v = q.shape, k.shape[1], v.shape[-1]
        heads = b * h_q
    else:
        s_q, d, s_k, d_v = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        heads = prod(q.shape[:-2])
    mask = node.args[4] if node.packet == "_scaled_dot_product_efficient_attention_backward" and len(node.args) > 4 else node.kwargs.get("attn_mask")
    return BackwardGeometry(s_q, s_k, heads, d, d_v, causal, mask)


@rule(*ATTENTION_BACKWARD)
def _attention_backward(node: OpNode) -> Cost:
    """Five products per (query, key) pair against the forward's two (scores recomputed, dV, dP, dQ,
    dK: flash attention's backward), and the softmax gradient's vector work and exp."""
    q, k = node.args[1:3]
    shape = attention_backward_geometry(node)
    s_q, s_k, heads, d, d_v, causal = shape.s_q, shape.s_k, shape.heads, shape.d, shape.d_v, shape.causal
    head_pairs, mask_note = masked_pairs(shape.mask, s_q, s_k, shape.head_pairs)
    pairs = heads * head_pairs
    cost = Cost(reads=reads_all(node), writes=[(t, t.unique_bytes) for t in node.outputs if t.numel > 0],
                einsum="attention backward" + (" (causal)" if causal else "") + mask_note)
    cost.flops[operand_unit(q, k)] += 2.0 * pairs * (3 * d + 2 * d_v)
    cost.flops[vector_unit(None)] += 6.0 * pairs
    cost.flops["sfu"] += pairs
    return cost


@rule("einsum")
def _einsum(node: OpNode) -> Cost:
    """A two-operand einsum recorded whole: a multiply-add per combination of its indices, on the
    matrix units when both operands bring free indices (a matrix product), else on the vector units."""
    from solbench.sol.einsum import roles

    equation = node.args[0]
    a, b = node.inputs[:2]
    out = node.outputs[0]
    sizes = roles(equation, a.shape, b.shape)
    cost = Cost(reads=reads_all(node), writes=[(out, out.unique_bytes)], einsum=equation)
    if sizes is None:
        cost.flops[vector_unit(out.dtype)] += 2.0 * out.numel
        return cost
    summed = sizes["k"] > 1
    if summed and sizes["m"] > 1 and sizes["n"] > 1:
        cost.flops[operand_unit(a, b)] += 2.0 * sizes["all"]
        (a_bytes, a_element), (b_bytes, b_element) = operand_bytes(a), operand_bytes(b)
        cost.contraction = Contraction("gemm", sizes["batch"], sizes["m"], sizes["n"], sizes["k"], a_bytes, b_bytes, out.unique_bytes,
                                       (a_element, b_element, out.element_bits / 8))
    else:  # a matrix-vector product, an outer or elementwise product: memory-bound vector work
        cost.flops[vector_unit(out.dtype)] += (2.0 if summed else 1.0) * sizes["all"]
    return cost
