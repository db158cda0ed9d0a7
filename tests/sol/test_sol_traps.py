"""The bound-validity traps of DESIGN.md, one test each: a case where a straightforward kernel would
beat the bound if the trap were ignored. Big tensors are fake: nothing of their size is allocated."""

from __future__ import annotations

import pytest

from sol_testkit import make_problem, nonzero_units, sol
from solbench.sol.api import policy_for
from solbench.sol.hardware import get_hardware

BF16, F32 = "bfloat16", "float32"


def _ref(inputs, body: str) -> str:
    return "import torch\nimport torch.nn.functional as F\n\n\ndef run(%s):\n    %s\n" % (", ".join(inputs), body)


# ---- inputs that are not read whole -----------------------------------------------------------


def test_embedding_from_big_table_reads_only_the_rows_looked_up() -> None:
    # 1M x 1024 fp32 table = 4 GiB; 16 token ids touch 16 rows of 4 KiB.
    inputs = {"ids": ([16], "int64"), "table": ([1_000_000, 1024], F32)}
    result = sol(_ref(inputs, "return F.embedding(ids, table)"), inputs, {"out": ([16, 1024], F32)})
    row = 1024 * 4
    assert result.bytes_fused == 16 * row + 16 * 8 + 16 * row
    assert result.bytes_fused < 1_000_000 * 1024 * 4 / 1000


def test_embedding_with_more_ids_than_rows_reads_the_table_once() -> None:
    # 512 ids into a 10-row table: at most the whole table (10 rows), not 512 rows.
    inputs = {"ids": ([512], "int64"), "table": ([10, 64], F32)}
    result = sol(_ref(inputs, "return F.embedding(ids, table)"), inputs, {"out": ([512, 64], F32)})
    assert result.bytes_fused == 10 * 64 * 4 + 512 * 8 + 512 * 64 * 4


def test_gather_from_big_source_reads_only_indexed_elements() -> None:
    # 64 x 1M fp32 source (256 MiB), 64 x 2 indices: 128 elements read.
    inputs = {"src": ([64, 1_000_000], F32), "idx": ([64, 2], "int64")}
    result = sol(_ref(inputs, "return torch.gather(src, 1, idx)"), inputs, {"out": ([64, 2], F32)})
    assert result.bytes_fused == 128 * 4 + 128 * 8 + 128 * 4


def test_paged_kv_pool_read_through_index_select_of_a_few_pages() -> None:
    # Pool of 100k pages x 16 tokens x 8 heads x 128 (bf16): 3.3 GB. A decode step reads 4 pages.
    inputs = {"q": ([1, 8, 1, 128], BF16), "pool": ([100_000, 16, 8, 128], BF16), "page_ids": ([4], "int32")}
    body = (
        "pages = torch.index_select(pool, 0, page_ids)\n"
        "    kv = pages.reshape(1, -1, 8, 128).transpose(1, 2)\n"
        "    return F.scaled_dot_product_attention(q, kv, kv)"
    )
    result = sol(_ref(inputs, body), inputs, {"out": ([1, 8, 1, 128], BF16)})
    page = 16 * 8 * 128 * 2
    q_bytes = out_bytes = 8 * 128 * 2
    assert result.uncovered_ops == []
    assert result.bytes_fused == q_bytes + 4 * page + 4 * 4 + out_bytes
    assert result.bytes_cache_aware == result.bytes_fused
    # 64 keys x 8 heads, QK^T and PV: 2 * 8 * 64 * (128 + 128)
    assert result.flops_by_unit["tensor_bf16"] == 2 * 8 * 64 * 256


def test_paged_kv_pool_index_select_on_a_middle_dim() -> None:
    # Pool laid out [layers, pages, tokens, dim]; pages picked along dim 1: 3 slices of 4 x 16 x 64.
    inputs = {"pool": ([4, 50_000, 16, 64], BF16), "ids": ([3], "int64")}
    result = sol(_ref(inputs, "return torch.index_select(pool, 1, ids)"), inputs, {"out": ([4, 3, 16, 64], BF16)})
    slice_bytes = 4 * 16 * 64 * 2
    assert result.bytes_fused == 3 * slice_bytes + 3 * 8 + 3 * slice_bytes


# ---- in-place updates of large buffers ---------------------------------------------------------

CACHE = [2, 4096, 8, 128]  # bf16 KV cache, 16 MiB
CACHE_BYTES = 2 * 4096 * 8 * 128 * 2


def test_kv_cache_index_copy_moves_only_the_written_rows() -> None:
    inputs = {"cache": (CACHE, BF16), "pos": ([1], "int64"), "new": ([2, 1, 8, 128], BF16)}
    result = sol(_ref(inputs, "cache.index_copy_(1, pos, new)\n    return cache"), inputs, {"out": (CACHE, BF16)})
    token = 2 * 8 * 128 * 2  # one position across batch, heads and head dim
    # read: new (one token) and pos; written: one token of the cache; the output aliases the cache
    assert result.bytes_fused == token + 8 + token
    assert result.bytes_fused < CACHE_BYTES / 100


def test_kv_cache_slice_assignment_at_an_int_position() -> None:
    inputs = {"cache": (CACHE, BF16), "pos": (None, "int64", 7), "new": ([2, 8, 128], BF16)}
    result = sol(_ref(inputs, "cache[:, pos] = new\n    return cache"), inputs, {"out": (CACHE, BF16)})
    token = 2 * 8 * 128 * 2
    assert result.bytes_fused == token + token


def test_kv_cache_slice_assignment_of_a_range() -> None:
    inputs = {"cache": (CACHE, BF16), "new": ([2, 4, 8, 128], BF16)}
    result = sol(_ref(inputs, "cache[:, 100:104] = new\n    return cache"), inputs, {"out": (CACHE, BF16)})
    tokens = 2 * 4 * 8 * 128 * 2
    assert result.bytes_fused == tokens + tokens


def test_in_place_update_leading_dim_index_put() -> None:
    inputs = {"cache": ([4096, 8, 128], BF16), "pos": ([3], "int64"), "new": ([3, 8, 128], BF16)}
    result = sol(_ref(inputs, "cache.index_put_((pos,), new)\n    return cache"), inputs, {"out": ([4096, 8, 128], BF16)})
    rows = 3 * 8 * 128 * 2
    assert result.bytes_fused == 3 * 8 + rows + rows


def test_kv_cache_slice_assignment_at_tensor_positions() -> None:
    inputs = {"cache": (CACHE, BF16), "pos": ([3], "int64"), "new": ([2, 3, 8, 128], BF16)}
    result = sol(_ref(inputs, "cache[:, pos] = new\n    return cache"), inputs, {"out": (CACHE, BF16)})
    tokens = 2 * 3 * 8 * 128 * 2  # 3 positions across batch, heads and head dim
    assert result.bytes_fused == 3 * 8 + tokens + tokens


def test_scatter_add_into_an_input_in_place() -> None:
    # 10 elements accumulated into a 100k-element buffer: 10 read-modify-writes, no full pass.
    inputs = {"x": ([100_000], F32), "idx": ([10], "int64"), "src": ([10], F32)}
    result = sol(_ref(inputs, "x.scatter_add_(0, idx, src)\n    return x"), inputs, {"out": ([100_000], F32)})
    assert result.bytes_fused == 10 * 8 + 10 * 4 + 10 * 4 + 10 * 4  # idx, src, x read and written where touched
    assert nonzero_units(result) == {"vector_fp32": 10}


# ---- broadcast inputs --------------------------------------------------------------------------


def test_expanded_input_counts_its_storage() -> None:
    # bias [1024] expanded to [4096, 1024] (stride 0) and reduced: the kernel reads 4 KiB, not 16 MiB.
    inputs = {"bias": ([1024], F32)}
    result = sol(_ref(inputs, "return bias.expand(4096, 1024).sum(0)"), inputs, {"out": ([1024], F32)})
    assert result.bytes_fused == 1024 * 4 + 1024 * 4
    assert result.flops_by_unit["vector_fp32"] == 4096 * 1024  # the arithmetic stays logical


def test_expanded_input_through_elementwise_ops() -> None:
    inputs = {"row": ([1, 1024], F32)}
    result = sol(_ref(inputs, "return (row.expand(4096, 1024) * 2.0).sum(1)"), inputs, {"out": ([4096], F32)})
    assert result.bytes_fused == 1024 * 4 + 4096 * 4
    mul = next(r for r in result.nodes if r.node.packet == "mul")
    assert mul.cost.bytes_read == 1024 * 4  # the stride-0 operand of the unfused op, too


# ---- fp32 accuracy on tensor cores, and the precision policy -----------------------------------

MM_INPUTS = {"a": ([4096, 4096], F32), "b": ([4096, 4096], F32)}
MM_FLOPS = 2 * 4096**3


def test_fp32_contraction_priced_by_3xtf32_under_strict() -> None:
    h200 = get_hardware("H200")
    rate, how = h200.rate("tensor_fp32", "strict")
    assert rate == pytest.approx(494.7e12 / 3)
    assert "3xTF32" in how
    assert rate > h200.peak("vector_fp32")  # 164.9 > 66.9 TFLOP/s
    result = sol(_ref(MM_INPUTS, "return a @ b"), MM_INPUTS, {"c": ([4096, 4096], F32)})
    assert result.flops_by_unit == {"tensor_fp32": MM_FLOPS}
    assert result.t_compute_s == pytest.approx(MM_FLOPS / (494.7e12 / 3))
    assert result.t_sol_s == pytest.approx(MM_FLOPS / (494.7e12 / 3))  # compute-bound at 4096^3
    assert result.t_sol_s < MM_FLOPS / 66.9e12  # a 3xTF32 kernel beats the vector-rate bound
    assert result.bottleneck == "tensor_fp32"


def test_fp32_contraction_priced_at_bf16_rate_under_relaxed() -> None:
    result = sol(_ref(MM_INPUTS, "return a @ b"), MM_INPUTS, {"c": ([4096, 4096], F32)}, policy="relaxed")
    assert get_hardware("H200").rate("tensor_fp32", "relaxed")[0] == pytest.approx(989.4e12)
    assert result.t_compute_s == pytest.approx(MM_FLOPS / 989.4e12)
    assert "relaxed" in result.rate_notes["tensor_fp32"]


def test_fp32_contraction_takes_the_fastest_fp32_accurate_method() -> None:
    # MI300X has fp32 matrix units (163.4) and TF32 (653.7 / 3 = 217.9): the faster wins.
    mi300x = get_hardware("MI300X")
    assert mi300x.rate("tensor_fp32", "strict")[0] == pytest.approx(653.7e12 / 3)


def _problem(kind: str = "problem", **extra):
    return make_problem(_ref({"x": 0}, "return x"), {"x": ([4], F32)}, {"y": ([4], F32)}, kind=kind, **extra)


def test_policy_for_is_relaxed_by_default_whatever_the_origin() -> None:
    # the benchmark's convention (issue 10): lower precision is allowed where the tolerance is met
    assert policy_for(_problem("flashinfer")) == "relaxed"
    assert policy_for(_problem("problem")) == "relaxed"
    assert policy_for(_problem("kernelbench")) == "relaxed"


def test_policy_for_honours_the_definition_key() -> None:
    assert policy_for(_problem("problem", precision_policy="strict")) == "strict"
    assert policy_for(_problem("flashinfer", precision_policy="strict")) == "strict"
    assert policy_for(_problem("kernelbench", precision_policy="relaxed")) == "relaxed"
    assert policy_for(_problem("problem", precision_policy="bogus")) == "relaxed"  # unknown values are ignored


def test_policy_for_caller_request_wins() -> None:
    assert policy_for(_problem("flashinfer"), "strict") == "strict"
    assert policy_for(_problem("problem", precision_policy="strict"), "relaxed") == "relaxed"
    assert policy_for(_problem("flashinfer"), "auto") == "relaxed"


# ---- partial views of one input ----------------------------------------------------------------


def test_disjoint_halves_of_one_input_count_once() -> None:
    # silu-and-mul style: the two halves of gate_up are read, together exactly the whole input.
    inputs = {"gate_up": ([16, 2048], BF16)}
    result = sol(_ref(inputs, "return F.silu(gate_up[:, :1024]) * gate_up[:, 1024:]"), inputs, {"out": ([16, 1024], BF16)})
    assert result.bytes_fused == 16 * 2048 * 2 + 16 * 1024 * 2


def test_a_slice_of_a_big_input_counts_the_slice() -> None:
    inputs = {"x": ([1_000_000, 64], F32)}
    result = sol(_ref(inputs, "return x[:10].sum(0)"), inputs, {"out": ([64], F32)})
    assert result.bytes_fused == 10 * 64 * 4 + 64 * 4


def test_overlapping_views_of_one_input_count_their_union() -> None:
    inputs = {"x": ([2000], F32)}
    result = sol(_ref(inputs, "return x[0:600] + x[400:1000]"), inputs, {"out": ([600], F32)})
    assert result.bytes_fused == 1000 * 4 + 600 * 4


@pytest.mark.parametrize("body, shape", [("x.t()", [64, 64]), ("x[:, :4]", [64, 4])])
def test_output_that_is_a_view_of_an_input_moves_nothing(body, shape) -> None:
    """Returning a view of an unmodified input needs no kernel at all (a value-returning solution
    may return the same view), so no bytes are charged: a valid, if trivial, bound."""
    inputs = {"x": ([64, 64], F32)}
    result = sol(_ref(inputs, f"return {body}"), inputs, {"out": (shape, F32)})
    assert result.bytes_fused == 0 and result.t_sol_s == 0
