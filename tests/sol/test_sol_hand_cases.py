"""FLOPs per execution unit and fused bytes, derived on paper.

Per-element constants (from the cost rules, counted here by hand): add/mul/compare 1; div 1 + 1 SFU
(reciprocal); exp/tanh/rsqrt 1 + 1 SFU; sigmoid 3 + 1 SFU; silu 4 + 1 SFU; gelu 5 + 1 SFU; x**n is
n - 1 multiplies; add with alpha is one FMA (2). Reductions 1 per input element; softmax 4 per
element + 1 SFU per element + 1 SFU per row; layer/group/batch norm 8 per element + one rsqrt per
normalised group; sort n log2(len); topk n log2(k + 1); pooling 1 per output per window element;
nearest 1, bilinear 8 per output. Contractions 2 * M * N * K on the tensor unit of the operand dtype.
Fused bytes: every problem input as far as it is read, plus every output, once.
fp32 = 4 bytes, bf16/fp16 = 2, fp64/int64 = 8, fp8/bool = 1.
"""

from __future__ import annotations

import pytest

from sol_testkit import nonzero_units, sol

F32, BF16, F16, F64 = "float32", "bfloat16", "float16", "float64"


def case(id, body, inputs, outputs, units, fused):  # noqa: A002 - pytest's word
    return pytest.param(body, inputs, outputs, units, fused, id=id)


CASES = [
    # ---- elementwise, fp32: [4, 8] = 32 elements, 128 bytes per fp32 tensor ----
    case("add_fp32", "x + y", {"x": ([4, 8], F32), "y": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32}, 128 + 128 + 128),
    case("add_alpha_is_fma", "torch.add(x, y, alpha=2.0)", {"x": ([4, 8], F32), "y": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 2 * 32}, 3 * 128),
    case("mul_fp32", "x * y", {"x": ([4, 8], F32), "y": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32}, 3 * 128),
    case("div_fp32", "x / y", {"x": ([4, 8], F32), "y": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32, "sfu": 32}, 3 * 128),
    case("exp_fp32", "torch.exp(x)", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32, "sfu": 32}, 2 * 128),
    case("sigmoid_fp32", "torch.sigmoid(x)", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 3 * 32, "sfu": 32}, 2 * 128),
    case("silu_fp32", "F.silu(x)", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 4 * 32, "sfu": 32}, 2 * 128),
    case("gelu_fp32", "F.gelu(x)", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 5 * 32, "sfu": 32}, 2 * 128),
    case("tanh_fp32", "torch.tanh(x)", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32, "sfu": 32}, 2 * 128),
    case("cube_is_two_multiplies", "x ** 3", {"x": ([4, 8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 2 * 32}, 2 * 128),
    case("compare_to_bool", "x > 0", {"x": ([4, 8], F32)}, {"z": ([4, 8], "bool")},
         {"vector_fp32": 32}, 128 + 32),
    case("add_fp64", "x + y", {"x": ([4, 8], F64), "y": ([4, 8], F64)}, {"z": ([4, 8], F64)},
         {"vector_fp64": 32}, 3 * 256),
    case("add_int32", "x + y", {"x": ([4, 8], "int32"), "y": ([4, 8], "int32")}, {"z": ([4, 8], "int32")},
         {"vector_int32": 32}, 3 * 128),
    # ---- elementwise, bf16: 64 bytes per [4, 8] tensor; 16-bit math on vector_fp16 ----
    case("add_bf16", "x + y", {"x": ([4, 8], BF16), "y": ([4, 8], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 32}, 3 * 64),
    case("mul_bf16", "x * y", {"x": ([4, 8], BF16), "y": ([4, 8], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 32}, 3 * 64),
    case("exp_bf16", "torch.exp(x)", {"x": ([4, 8], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 32, "sfu": 32}, 2 * 64),
    case("silu_bf16", "F.silu(x)", {"x": ([4, 8], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 4 * 32, "sfu": 32}, 2 * 64),
    case("gelu_bf16", "F.gelu(x)", {"x": ([4, 8], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 5 * 32, "sfu": 32}, 2 * 64),
    case("div_fp16", "x / y", {"x": ([4, 8], F16), "y": ([4, 8], F16)}, {"z": ([4, 8], F16)},
         {"vector_fp16": 32, "sfu": 32}, 3 * 64),
    # ---- broadcasting: the small operand is read once (its own size) ----
    case("add_broadcast_row", "x + y", {"x": ([4, 8], F32), "y": ([8], F32)}, {"z": ([4, 8], F32)},
         {"vector_fp32": 32}, 128 + 8 * 4 + 128),
    case("add_broadcast_outer", "x + y", {"x": ([4, 1, 8], F32), "y": ([3, 1], F32)}, {"z": ([4, 3, 8], F32)},
         {"vector_fp32": 4 * 3 * 8}, 4 * 8 * 4 + 3 * 4 + 96 * 4),
    # ---- reductions over [4, 8, 16] = 512 elements, 2048 bytes ----
    case("sum_dim1", "x.sum(dim=1)", {"x": ([4, 8, 16], F32)}, {"z": ([4, 16], F32)},
         {"vector_fp32": 512}, 2048 + 64 * 4),
    case("mean_dims_0_2", "x.mean(dim=(0, 2))", {"x": ([4, 8, 16], F32)}, {"z": ([8], F32)},
         {"vector_fp32": 512}, 2048 + 8 * 4),
    case("amax_last_bf16", "x.amax(dim=-1)", {"x": ([4, 8, 16], BF16)}, {"z": ([4, 8], BF16)},
         {"vector_fp16": 512}, 1024 + 32 * 2),
    case("sum_all", "x.sum()", {"x": ([4, 8, 16], F32)}, {"z": ([], F32)},
         {"vector_fp32": 512}, 2048 + 4),
    # ---- softmax-like: 4 per element, 1 SFU per element (exp) + 1 per row ----
    case("softmax_last", "torch.softmax(x, dim=-1)", {"x": ([4, 8, 16], F32)}, {"z": ([4, 8, 16], F32)},
         {"vector_fp32": 4 * 512, "sfu": 512 + 4 * 8}, 2 * 2048),
    case("log_softmax_dim1", "torch.log_softmax(x, dim=1)", {"x": ([4, 8, 16], F32)}, {"z": ([4, 8, 16], F32)},
         {"vector_fp32": 4 * 512, "sfu": 512 + 4 * 16}, 2 * 2048),
    case("cumsum", "torch.cumsum(x, dim=1)", {"x": ([4, 64], F32)}, {"z": ([4, 64], F32)},
         {"vector_fp32": 256}, 2 * 1024),
    # ---- normalisations ----
    case("layer_norm", "F.layer_norm(x, (16,), w, b)", {"x": ([4, 8, 16], F32), "w": ([16], F32), "b": ([16], F32)},
         {"z": ([4, 8, 16], F32)}, {"vector_fp32": 8 * 512, "sfu": 4 * 8}, 2048 + 64 + 64 + 2048),
    case("rms_norm_by_hand", "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w",
         {"x": ([4, 16], F32), "w": ([16], F32)}, {"z": ([4, 16], F32)},
         # pow 64 (x**2: one multiply), mean 64, add 4, rsqrt 4 + 4 SFU, two muls 64 + 64
         {"vector_fp32": 64 + 64 + 4 + 4 + 64 + 64, "sfu": 4}, 256 + 64 + 256),
    case("batch_norm_eval", "F.batch_norm(x, m, v, w, b, training=False)",
         {"x": ([2, 8, 4, 4], F32), "m": ([8], F32), "v": ([8], F32), "w": ([8], F32), "b": ([8], F32)},
         {"z": ([2, 8, 4, 4], F32)}, {"vector_fp32": 8 * 256, "sfu": 8}, 1024 + 4 * 32 + 1024),
    # ---- contractions: 2 * M * N * K = 2 * 4 * 16 * 8 = 1024 ----
    case("mm_fp32", "a @ b", {"a": ([4, 8], F32), "b": ([8, 16], F32)}, {"z": ([4, 16], F32)},
         {"tensor_fp32": 1024}, 128 + 512 + 256),
    case("mm_bf16", "a @ b", {"a": ([4, 8], BF16), "b": ([8, 16], BF16)}, {"z": ([4, 16], BF16)},
         {"tensor_bf16": 1024}, 64 + 256 + 128),
    case("mm_fp16", "a @ b", {"a": ([4, 8], F16), "b": ([8, 16], F16)}, {"z": ([4, 16], F16)},
         {"tensor_fp16": 1024}, 64 + 256 + 128),
    case("mm_fp64", "a @ b", {"a": ([4, 8], F64), "b": ([8, 16], F64)}, {"z": ([4, 16], F64)},
         {"tensor_fp64": 1024}, 256 + 1024 + 512),
    case("linear_bias_bf16", "F.linear(x, w, b)", {"x": ([4, 8], BF16), "w": ([16, 8], BF16), "b": ([16], BF16)},
         {"z": ([4, 16], BF16)}, {"tensor_bf16": 1024, "vector_fp16": 4 * 16}, 64 + 256 + 32 + 128),
    case("bmm_fp32", "torch.bmm(a, b)", {"a": ([3, 4, 8], F32), "b": ([3, 8, 16], F32)}, {"z": ([3, 4, 16], F32)},
         {"tensor_fp32": 3 * 1024}, 3 * (128 + 512 + 256)),
    # grouped GEMM (MoE experts): 2 * S * K * N; of the E expert matrices at most one per row moves
    case("grouped_mm_fewer_rows_than_experts", "torch._grouped_mm(a, b, offs=offs)",
         {"a": ([4, 8], BF16), "b": ([8, 8, 16], BF16), "offs": ([8], "int32")}, {"z": ([4, 16], BF16)},
         {"tensor_bf16": 2 * 4 * 8 * 16}, 64 + 4 * 8 * 16 * 2 + 32 + 128),
    case("grouped_mm_every_expert_reached", "torch._grouped_mm(a, b, offs=offs)",
         {"a": ([16, 8], BF16), "b": ([4, 8, 16], BF16), "offs": ([4], "int32")}, {"z": ([16, 16], BF16)},
         {"tensor_bf16": 2 * 16 * 8 * 16}, 256 + 4 * 8 * 16 * 2 + 16 + 512),
    # fp8 x fp8 -> bf16 with two fp32 scalar scales: 2 * 16 * 16 * 32 on tensor_fp8, scales applied per output
    case("scaled_mm_fp8", "torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
         {"a": ([16, 32], "float8_e4m3fn"), "b": ([16, 32], "float8_e4m3fn"), "sa": ([], F32), "sb": ([], F32)},
         {"z": ([16, 16], BF16)}, {"tensor_fp8": 2 * 16 * 16 * 32, "vector_fp16": 16 * 16}, 512 + 512 + 4 + 4 + 512),
    # ---- indexing: only the rows the indices can touch ----
    case("embedding", "F.embedding(i, w)", {"i": ([3, 5], "int64"), "w": ([100, 16], F32)}, {"z": ([3, 5, 16], F32)},
         {}, 15 * 16 * 4 + 15 * 8 + 15 * 16 * 4),
    case("index_select", "torch.index_select(w, 0, i)", {"w": ([100, 16], F32), "i": ([7], "int64")}, {"z": ([7, 16], F32)},
         {}, 7 * 64 + 7 * 8 + 7 * 64),
    case("index_select_dim1", "torch.index_select(w, 1, i)", {"w": ([16, 100], F32), "i": ([7], "int64")}, {"z": ([16, 7], F32)},
         {}, 7 * 16 * 4 + 7 * 8 + 16 * 7 * 4),
    case("gather", "torch.gather(w, 1, i)", {"w": ([10, 100], F32), "i": ([10, 3], "int64")}, {"z": ([10, 3], F32)},
         {}, 30 * 4 + 30 * 8 + 30 * 4),
    # out of place: the whole target is copied into the output, 30 source elements added
    case("scatter_add", "torch.scatter_add(w, 1, i, s)", {"w": ([10, 100], F32), "i": ([10, 3], "int64"), "s": ([10, 3], F32)},
         {"z": ([10, 100], F32)}, {"vector_fp32": 30}, 4000 + 240 + 120 + 4000),
    # ---- sorting ----
    case("topk", "torch.topk(x, 3, dim=-1)", {"x": ([4, 64], F32)}, {"v": ([4, 3], F32), "i": ([4, 3], "int64")},
         {"vector_fp32": 256 * 2}, 1024 + 12 * 4 + 12 * 8),  # log2(3 + 1) = 2
    case("sort", "torch.sort(x, dim=-1)", {"x": ([4, 64], F32)}, {"v": ([4, 64], F32), "i": ([4, 64], "int64")},
         {"vector_fp32": 256 * 6}, 1024 + 1024 + 2048),  # log2(64) = 6
    # ---- pooling and interpolation over [2, 3, 8, 8] = 384 elements, 1536 bytes ----
    case("max_pool2d", "F.max_pool2d(x, 2)", {"x": ([2, 3, 8, 8], F32)}, {"z": ([2, 3, 4, 4], F32)},
         {"vector_fp32": 96 * 4}, 1536 + 96 * 4),
    case("avg_pool2d", "F.avg_pool2d(x, 3, stride=1, padding=1)", {"x": ([2, 3, 8, 8], F32)}, {"z": ([2, 3, 8, 8], F32)},
         {"vector_fp32": 384 * 9}, 1536 + 1536),
    case("adaptive_avg_pool2d", "F.adaptive_avg_pool2d(x, (2, 2))", {"x": ([2, 3, 8, 8], F32)}, {"z": ([2, 3, 2, 2], F32)},
         {"vector_fp32": 24 * 16}, 1536 + 24 * 4),  # 24 outputs, each a 4 x 4 window
    case("interpolate_nearest", "F.interpolate(x, scale_factor=2, mode='nearest')", {"x": ([2, 3, 8, 8], F32)},
         {"z": ([2, 3, 16, 16], F32)}, {"vector_fp32": 1536}, 1536 + 6144),
    case("interpolate_bilinear", "F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)",
         {"x": ([2, 3, 8, 8], F32)}, {"z": ([2, 3, 16, 16], F32)}, {"vector_fp32": 8 * 1536}, 1536 + 6144),
    # ---- data movement: no arithmetic ----
    case("cat", "torch.cat([a, b], dim=0)", {"a": ([2, 8], F32), "b": ([3, 8], F32)}, {"z": ([5, 8], F32)},
         {}, 64 + 96 + 160),
    case("pad", "F.pad(a, (1, 2))", {"a": ([2, 8], F32)}, {"z": ([2, 11], F32)}, {}, 64 + 88),
    case("cast_fp32_to_bf16", "a.to(torch.bfloat16)", {"a": ([2, 8], F32)}, {"z": ([2, 8], BF16)}, {}, 64 + 32),
    case("transpose_contiguous", "a.t().contiguous()", {"a": ([2, 8], F32)}, {"z": ([8, 2], F32)}, {}, 64 + 64),
    case("transpose_contiguous_3d_bf16", "a.transpose(1, 2).contiguous()", {"a": ([2, 3, 8], BF16)}, {"z": ([2, 8, 3], BF16)},
         {}, 96 + 96),
]


@pytest.mark.parametrize("body, inputs, outputs, units, fused", CASES)
def test_hand_derived(body, inputs, outputs, units, fused) -> None:
    reference = "import torch\nimport torch.nn.functional as F\n\n\ndef run(%s):\n    return %s\n" % (", ".join(inputs), body)
    result = sol(reference, inputs, outputs)
    assert result.uncovered_ops == []
    assert nonzero_units(result) == units
    assert result.bytes_fused == fused


def test_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30


def _ref(inputs, body):
    return "import torch\nimport torch.nn.functional as F\n\n\ndef run(%s):\n    return %s\n" % (", ".join(inputs), body)


def test_group_norm_bytes_and_vector_flops() -> None:
    # [2, 8, 4, 4] = 256 elements: 8 per element; x, weight, bias read once, y written once.
    inputs = {"x": ([2, 8, 4, 4], F32), "w": ([8], F32), "b": ([8], F32)}
    result = sol(_ref(inputs, "F.group_norm(x, 4, w, b)"), inputs, {"z": ([2, 8, 4, 4], F32)})
    assert result.flops_by_unit["vector_fp32"] == 8 * 256
    assert result.bytes_fused == 1024 + 32 + 32 + 1024


def test_group_norm_one_rsqrt_per_group() -> None:
    # 2 samples x 4 groups = 8 normalised groups, so 8 rsqrt on the SFU (the rule gives 2).
    inputs = {"x": ([2, 8, 4, 4], F32), "w": ([8], F32), "b": ([8], F32)}
    result = sol(_ref(inputs, "F.group_norm(x, 4, w, b)"), inputs, {"z": ([2, 8, 4, 4], F32)})
    assert result.flops_by_unit["sfu"] == 2 * 4


def test_unfused_counts_each_op_and_intermediates() -> None:
    # exp then add: exp reads x (128) writes t (128); add reads t and y (256) writes z (128).
    inputs = {"x": ([4, 8], F32), "y": ([4, 8], F32)}
    result = sol(_ref(inputs, "torch.exp(x) + y"), inputs, {"z": ([4, 8], F32)})
    assert result.bytes_unfused == 128 + 128 + 128 + 128 + 128
    assert result.bytes_fused == 3 * 128
    assert nonzero_units(result) == {"vector_fp32": 32 + 32, "sfu": 32}


def test_relaxed_policy_halves_fp32_intermediates_only() -> None:
    inputs = {"x": ([4, 8], F32), "y": ([4, 8], F32)}
    result = sol(_ref(inputs, "torch.exp(x) + y"), inputs, {"z": ([4, 8], F32)}, policy="relaxed")
    # the fp32 intermediate t (written once, read once) is priced at 2 bytes per element
    assert result.bytes_unfused == 128 + 64 + 64 + 128 + 128
    assert result.bytes_fused == 3 * 128


def test_vector_norm_by_hand() -> None:
    # ||x||_2 over dim 1 of [8, 16]: 2 per element (square, add), one sqrt per output row.
    inputs = {"x": ([8, 16], F32)}
    result = sol(_ref(inputs, "torch.linalg.vector_norm(x, 2, dim=1)"), inputs, {"z": ([8], F32)})
    assert nonzero_units(result) == {"vector_fp32": 2 * 128, "sfu": 8}
    assert result.bytes_fused == 512 + 32


def test_vector_norm_einsum_names_the_reduced_dim() -> None:
    inputs = {"x": ([8, 16], F32)}
    result = sol(_ref(inputs, "torch.linalg.vector_norm(x, 2, dim=1)"), inputs, {"z": ([8], F32)})
    norm = next(r for r in result.nodes if r.node.packet == "linalg_vector_norm")
    assert norm.cost.einsum == "ab->a"


def test_normalize_does_not_crash() -> None:
    # norm over dim -1: 2 * 128 + 8 SFU; clamp_min over 8 norms; expand (free); div of 128 (128 + 128 SFU)
    inputs = {"x": ([8, 16], F32)}
    result = sol(_ref(inputs, "F.normalize(x, dim=-1)"), inputs, {"z": ([8, 16], F32)})
    assert result.uncovered_ops == []
    assert nonzero_units(result) == {"vector_fp32": 2 * 128 + 8 + 128, "sfu": 8 + 128}
    assert result.bytes_fused == 512 + 512


@pytest.mark.parametrize("shapes", [([2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 16]), ([4, 16, 8], [4, 32, 8], [4, 32, 8])],
                         ids=["value_dim_16", "three_d"])
def test_bf16_attention_is_priced_on_bf16_tensor_cores(shapes) -> None:
    q, k, v = shapes
    inputs = {"q": (q, BF16), "k": (k, BF16), "v": (v, BF16)}
    out = q[:-1] + [v[-1]]
    result = sol(_ref(inputs, "F.scaled_dot_product_attention(q, k, v)"), inputs, {"o": (out, BF16)})
    heads = q[0] * (q[1] if len(q) == 4 else 1)
    s_q, s_k, d, d_v = q[-2], k[-2], q[-1], v[-1]
    assert result.flops_by_unit.get("tensor_bf16") == 2 * heads * s_q * s_k * (d + d_v)
    assert "tensor_fp32" not in nonzero_units(result)


def test_named_axes_and_python_scalars() -> None:
    # y = x * s + b over [M, N] = [4, 8]: mul 32 + add 32; s is a Python float (no memory), b a 0-d tensor.
    inputs = {"x": (["M", "N"], F32), "s": (None, F32, 0.5), "b": ([], F32)}
    result = sol(_ref(inputs, "x * s + b"), inputs, {"y": (["M", "N"], F32)}, axes={"M": 4, "N": 8})
    assert nonzero_units(result) == {"vector_fp32": 32 + 32}
    assert result.bytes_fused == 128 + 4 + 128
