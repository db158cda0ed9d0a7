"""Comparison of a solution's outputs with the reference's: statuses, metrics, messages, decoding, speed."""

from __future__ import annotations

import math
import time

import pytest
import torch

from solbench.bench.correctness import Comparison, compare_outputs, decode_fp4, merge
from solbench.data.definition import TensorSpec
from solbench.data.trace import Status
from solbench.data.workload import Tolerance

INF, NAN = math.inf, math.nan


def spec(dtype="float32", shape=("M",)):
    return TensorSpec(shape=None if shape is None else list(shape), dtype=dtype)


def compare(out, ref, dtype="float32", tolerance=None, shape=("M",), **tol):
    """One output 'y'; every element must match unless the test asks for a lower ratio."""
    tolerance = tolerance or Tolerance(**{"required_matched_ratio": 1.0, **tol})
    return compare_outputs({"y": out}, {"y": ref}, {"y": spec(dtype, shape)}, tolerance)


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def up(x: float) -> float:
    """The next float32 above x."""
    return float(torch.nextafter(t([x]), t([INF]))[0])


# --- tolerance boundaries -----------------------------------------------------------------------


def test_identical_outputs_pass_with_zero_errors():
    ref = torch.randn(100, 7)
    c = compare(ref.clone(), ref)
    assert c == Comparison(Status.PASSED, None, "", 0.0, 0.0, 1.0, None)


def test_atol_boundary():
    tol = dict(max_atol=0.25, max_rtol=0.0)
    assert compare(t([1.0, 0.25]), t([1.0, 0.0]), **tol).status == Status.PASSED  # |err| == atol matches
    c = compare(t([1.0, up(0.25)]), t([1.0, 0.0]), **tol)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.output == "y"
    assert c.first_mismatch_index == [1]
    assert c.matched_ratio == 0.5
    assert c.max_absolute_error == up(0.25)
    assert c.message == "output 'y': 1 of 2 elements (50.0%) outside atol 0.25 + rtol 0*|ref|; first at [1]: got 0.25000003, expected 0"


def test_rtol_boundary():
    tol = dict(max_atol=0.0, max_rtol=0.5)
    c = compare(t([6.0, -2.0]), t([4.0, -4.0]), **tol)  # |err| == 0.5 * |ref| on both
    assert c.status == Status.PASSED
    assert c.max_absolute_error == 2.0 and c.max_relative_error == 0.5
    c = compare(t([6.0, up(-2.0)]), t([4.0, -4.0]), **tol)
    assert c.status == Status.INCORRECT_NUMERICAL and c.first_mismatch_index == [1]
    c = compare(t([up(6.0), -2.0]), t([4.0, -4.0]), **tol)
    assert c.status == Status.INCORRECT_NUMERICAL and c.first_mismatch_index == [0]


def test_atol_and_rtol_add():
    # bound = 0.5 + 0.25 * 8 = 2.5
    assert compare(t([10.5]), t([8.0]), max_atol=0.5, max_rtol=0.25).status == Status.PASSED
    assert compare(t([up(10.5)]), t([8.0]), max_atol=0.5, max_rtol=0.25).status == Status.INCORRECT_NUMERICAL


def test_message_of_the_design_example():
    ref = torch.full((64, 64), 0.25)
    out = ref.clone()
    out.view(-1)[3 * 64 + 12 : 3 * 64 + 12 + 17] = 1.5
    c = compare(out, ref)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == (
        "output 'y': 17 of 4096 elements (0.4%) outside atol 0.01 + rtol 0.01*|ref|; first at [3, 12]: got 1.5, expected 0.25"
    )
    assert c.first_mismatch_index == [3, 12]
    assert c.matched_ratio == (4096 - 17) / 4096
    assert c.max_absolute_error == 1.25
    assert c.max_relative_error == 5.0


@pytest.mark.parametrize("bad, required, status", [(3, 0.97, Status.PASSED), (4, 0.97, Status.INCORRECT_NUMERICAL), (3, 0.98, Status.INCORRECT_NUMERICAL)])
def test_required_matched_ratio_boundary(bad, required, status):
    ref = torch.arange(100, dtype=torch.float32)
    out = ref.clone()
    out[[10, 20, 30, 40][:bad]] += 1
    c = compare(out, ref, required_matched_ratio=required, max_atol=0.5, max_rtol=0.0)
    assert c.status == status
    assert c.matched_ratio == (100 - bad) / 100
    assert c.first_mismatch_index == [10]  # also reported when the ratio lets it pass
    assert c.max_absolute_error == 1.0
    if status == Status.PASSED:
        assert c.output is None and c.message == ""
    else:
        assert c.message == (
            f"output 'y': {bad} of 100 elements ({bad}.0%) outside atol 0.5 + rtol 0*|ref|; first at [10]: got 11, expected 10"
            f"; matched ratio {(100 - bad) / 100:g} < required {required:g}"
        )


def test_max_error_cap_fails_whatever_the_ratio():
    ref = torch.zeros(10)
    out = ref.clone()
    out[2], out[7] = 0.25, 0.5  # near-misses (25x and 50x the tolerance), forgiven by the ratio alone
    tol = dict(max_atol=0.01, max_rtol=0.0, required_matched_ratio=0.5)
    assert compare(out, ref, **tol).status == Status.PASSED
    c = compare(out, ref, max_error_cap=0.3, **tol)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y': absolute error 0.5 at [7] exceeds max_error_cap 0.3 (got 0.5, expected 0)"
    assert c.first_mismatch_index == [2]  # the first mismatch, not the first error over the cap
    assert c.matched_ratio == 0.8
    assert compare(out, ref, max_error_cap=0.5, **tol).status == Status.PASSED  # equal to the cap is allowed


def test_gross_errors_fail_whatever_the_matched_ratio():
    """A Triton kernel without a bounds mask leaves the tail of a large output unwritten: 4,095 of
    1,048,575 elements (0.4%) far off, a matched ratio of 0.996 >= 0.99. The ratio forgives near-misses
    only; beyond GROSS_FACTOR x the tolerance an element fails the output."""
    from solbench.bench.correctness import GROSS_FACTOR

    n, tail = 1_048_575, 4_095
    torch.manual_seed(0)
    ref = torch.randn(n) * 0.01
    out = ref.clone()
    out[n - tail:] = 10.5
    tol = dict(max_atol=1e-5, max_rtol=1e-5, required_matched_ratio=0.99)
    c = compare(out, ref, **tol)
    assert c.status == Status.INCORRECT_NUMERICAL and c.matched_ratio == pytest.approx((n - tail) / n)
    assert c.message.startswith(f"output 'y': {tail} of {n} elements (0.4%) are gross errors (beyond 100x atol 1e-05 + rtol 1e-05*|ref|")
    assert f"first at [{n - tail}]: got 10.5" in c.message
    # near-misses of the same count stay the ratio's business
    near = ref.clone()
    near[n - tail:] += (1e-5 + 1e-5 * ref[n - tail:].abs()) * (GROSS_FACTOR / 2)
    assert compare(near, ref, **tol).status == Status.PASSED
    # one NaN or inf where the reference is finite fails too; an inf the reference has does not count as gross
    for bad in (NAN, INF):
        poisoned = ref.clone()
        poisoned[3] = bad
        assert "gross errors" in compare(poisoned, ref, **tol).message
    both = t([1.0, INF, 2.0]), t([1.0, INF, 2.0])
    assert compare(*both).status == Status.PASSED


def _router(tokens: int = 1024, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A top-2 router's reference outputs: weights (float32) and expert indices (int64) per token."""
    torch.manual_seed(seed)
    weights, indices = torch.softmax(torch.randn(tokens, 8), -1).topk(2)
    return weights / weights.sum(-1, keepdim=True), indices


ROUTER = {"topk_weights": spec("float32", ("T", "K")), "topk_indices": spec("int64", ("T", "K"))}
ROUTER_TOLERANCE = Tolerance(max_atol=1e-4, max_rtol=1e-4, required_matched_ratio=0.999)


def test_an_index_that_selects_a_tying_candidate_is_no_gross_error():
    """qwen3_235b_a22b_moe_router's compiled baseline on an H100: 1 index of 1024 differs where two experts
    tie, every weight matches; the index, off by a category, had been a gross error (REWARD_HACK on a
    timed call). Beside matching weights it is a mismatch the matched ratio forgives."""
    weights, indices = _router(512)
    out_indices = indices.clone()
    out_indices[7, 1] = (indices[7, 1] + 3) % 8  # the other expert of a tie at rank 2
    c = compare_outputs({"topk_weights": weights.clone(), "topk_indices": out_indices},
                        {"topk_weights": weights, "topk_indices": indices}, ROUTER, ROUTER_TOLERANCE)
    assert c.status == Status.PASSED and c.gross_errors == 0
    assert c.matched_ratio == pytest.approx(1023 / 1024) and c.first_mismatch_index == [7, 1]


def test_an_index_beside_a_wrong_weight_is_still_a_gross_error():
    weights, indices = _router(512)
    out_weights, out_indices = weights.clone(), indices.clone()
    out_indices[7, 1] = (indices[7, 1] + 3) % 8
    out_weights[7, 1] += 0.1  # its weight is not the reference's: no tie
    c = compare_outputs({"topk_weights": out_weights, "topk_indices": out_indices},
                        {"topk_weights": weights, "topk_indices": indices}, ROUTER, ROUTER_TOLERANCE)
    assert c.status == Status.INCORRECT_NUMERICAL and c.output == "topk_weights"
    assert c.gross_errors == 2  # the weight and the index
    only_index = compare_outputs({"topk_weights": weights.clone(), "topk_indices": out_indices},
                                 {"topk_weights": weights, "topk_indices": indices},
                                 {**ROUTER, "topk_weights": spec("float32", ("T", "W"))}, ROUTER_TOLERANCE)
    assert only_index.status == Status.INCORRECT_NUMERICAL and only_index.output == "topk_indices"  # no value of its shape beside it
    assert "gross errors" in only_index.message


def test_indices_wrong_beyond_the_ratio_fail_even_beside_matching_weights():
    """Every index off by one with the right weights (a bug in the index arithmetic): the ratio fails it."""
    weights, indices = _router(512)
    c = compare_outputs({"topk_weights": weights.clone(), "topk_indices": (indices + 1) % 8},
                        {"topk_weights": weights, "topk_indices": indices}, ROUTER, ROUTER_TOLERANCE)
    assert c.status == Status.INCORRECT_NUMERICAL and c.output == "topk_indices" and c.near_miss
    assert c.matched_ratio == 0.0 and "matched ratio 0 < required 0.999" in c.message


def test_max_error_cap_counts_non_finite_errors_as_inf():
    ref, out = torch.zeros(10), torch.zeros(10)
    ref[0] = 1.0
    out[0], out[3] = 1.0, NAN
    c = compare(out, ref, required_matched_ratio=0.5, max_error_cap=100.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y': absolute error inf at [3] exceeds max_error_cap 100 (got nan, expected 0)"


# --- NaN and infinities -------------------------------------------------------------------------


def test_nan_in_output_never_matches():
    ref = t([1.0, 2.0, 3.0])
    out = t([1.0, NAN, 3.0])
    c = compare(out, ref)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.first_mismatch_index == [1]
    assert c.max_absolute_error == INF and c.max_relative_error == INF
    assert c.message.endswith("first at [1]: got nan, expected 2")
    loose = compare(out, ref, max_atol=1e30, max_rtol=1e30, required_matched_ratio=0.6)  # NaN where the reference is finite: gross
    assert loose.status == Status.INCORRECT_NUMERICAL and loose.matched_ratio == 2 / 3 and "gross errors" in loose.message


def test_nan_in_reference_is_invalid_reference():
    ref = t([1.0, NAN, 3.0])
    c = compare(ref.clone(), ref)
    assert c.status == Status.INVALID_REFERENCE
    assert c.output == "y"
    assert c.message == "reference output 'y' contains NaN (the reference must be defined everywhere)"
    # the reference is checked before the solution's outputs
    assert compare(torch.zeros(5, dtype=torch.float16), ref).status == Status.INVALID_REFERENCE
    assert compare(1.0, NAN, shape=None).status == Status.INVALID_REFERENCE


def test_nan_in_an_fp8_reference():
    ref = t([1.0, NAN]).to(torch.float8_e4m3fn)
    assert compare(ref.clone(), ref, dtype="float8_e4m3fn").status == Status.INVALID_REFERENCE


@pytest.mark.parametrize(
    "out, ref, allow, status",
    [
        (INF, INF, False, Status.PASSED),
        (INF, 1e30, False, Status.INCORRECT_NUMERICAL),
        (1.0, INF, False, Status.INCORRECT_NUMERICAL),  # atol + rtol*|inf| is inf: must still fail
        (-1.0, -INF, True, Status.INCORRECT_NUMERICAL),
        (INF, -INF, True, Status.INCORRECT_NUMERICAL),
        (-INF, INF, True, Status.INCORRECT_NUMERICAL),
        (-INF, -INF, False, Status.INCORRECT_NUMERICAL),
        (-INF, -INF, True, Status.PASSED),
        (-INF, -1e30, True, Status.INCORRECT_NUMERICAL),
        (-INF, 0.0, True, Status.INCORRECT_NUMERICAL),
    ],
)
def test_infinities(out, ref, allow, status):
    c = compare(t([2.0, out]), t([2.0, ref]), max_atol=1.0, max_rtol=1.0, allow_negative_inf=allow)
    assert c.status == status
    if status == Status.PASSED:
        assert (c.max_absolute_error, c.max_relative_error, c.matched_ratio) == (0.0, 0.0, 1.0)
    else:
        assert c.first_mismatch_index == [1]
        assert c.max_absolute_error == INF and c.max_relative_error == INF
        assert c.matched_ratio == 0.5


def test_finite_errors_are_reported_beside_matching_infinities():
    c = compare(t([INF, 1.5, -INF]), t([INF, 1.0, -INF]), max_atol=1.0, allow_negative_inf=True)
    assert c.status == Status.PASSED
    assert c.max_absolute_error == 0.5 and c.max_relative_error == 0.5


# --- all zeros ----------------------------------------------------------------------------------


def test_all_zero_output_fails_whatever_the_tolerance():
    ref = torch.full((8,), 1e-4)
    c = compare(torch.zeros(8), ref, max_atol=1.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y' is all zeros, the reference is not"
    assert c.matched_ratio == 1.0 and c.first_mismatch_index is None
    assert compare(torch.zeros(8), torch.zeros(8)).status == Status.PASSED
    assert compare(-torch.zeros(8), torch.zeros(8)).status == Status.PASSED


def test_all_zero_check_spans_chunks():
    import solbench.bench.correctness as correctness

    ref = torch.zeros(3 * correctness.CHUNK + 5)
    ref[-1] = 1.0
    c = compare(torch.zeros_like(ref), ref, max_atol=2.0)
    assert c.message == "output 'y' is all zeros, the reference is not"
    out = torch.zeros_like(ref)
    out[-2] = 1e-3
    assert compare(out, ref, max_atol=2.0).status == Status.PASSED


# --- identical chunks (compared bytewise, not decoded) ---------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn, torch.int32, torch.bool])
def test_identical_chunks_of_every_dtype_pass_with_zero_errors(dtype):
    import solbench.bench.correctness as correctness

    ref = (torch.randn(2 * correctness.CHUNK + 7) * 4).to(dtype)
    c = compare(ref.clone(), ref, dtype=str(dtype).removeprefix("torch."))
    assert (c.status, c.max_absolute_error, c.max_relative_error, c.matched_ratio, c.first_mismatch_index) == (Status.PASSED, 0.0, 0.0, 1.0, None)


def test_identical_chunks_beside_a_differing_one_keep_the_metrics_index_and_ratio():
    import solbench.bench.correctness as correctness

    n = 3 * correctness.CHUNK
    ref = torch.randn(n)
    out = ref.clone()
    out[correctness.CHUNK + 10] += 0.01  # only the second chunk differs, by 10x the tolerance (a near-miss, not gross)
    c = compare(out, ref, max_atol=1e-3, max_rtol=0.0, required_matched_ratio=0.99)
    assert c.status == Status.PASSED and c.first_mismatch_index == [correctness.CHUNK + 10]
    assert c.matched_ratio == (n - 1) / n and c.max_absolute_error == pytest.approx(0.01, rel=1e-4)


def test_identical_non_finite_values_go_by_the_element_rules():
    """A chunk holding an inf or a NaN is compared element by element even where the bytes are equal: an
    identical -inf fails unless allowed, a NaN output never matches (a NaN reference is invalid first)."""
    import solbench.bench.correctness as correctness

    ref = torch.ones(correctness.CHUNK + 3)
    ref[-1] = -INF
    assert compare(ref.clone(), ref, max_atol=1.0).status == Status.INCORRECT_NUMERICAL
    assert compare(ref.clone(), ref, max_atol=1.0, allow_negative_inf=True).status == Status.PASSED
    ref[-1] = NAN
    assert compare(ref.clone(), ref, max_atol=1.0).status == Status.INVALID_REFERENCE


def test_identical_zero_chunks_do_not_hide_an_all_zero_output():
    import solbench.bench.correctness as correctness

    ref = torch.zeros(2 * correctness.CHUNK)
    ref[-1] = 3.0  # the reference's only nonzero value is in the second chunk, where the output has a zero
    c = compare(torch.zeros_like(ref), ref, max_atol=10.0)
    assert c.message == "output 'y' is all zeros, the reference is not"
    minus_zero_codes = torch.full((4, 8), 0x88, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)  # -0 in both nibbles
    assert compare(minus_zero_codes.clone(), minus_zero_codes, dtype="float4_e2m1fn_x2", shape=("M", "N")).status == Status.PASSED
    one_codes = torch.full((4, 8), 0x22, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)  # 1.0 in both nibbles
    c = compare(minus_zero_codes.clone(), one_codes, dtype="float4_e2m1fn_x2", shape=("M", "N"), max_atol=5.0)
    assert c.message == "output 'y' is all zeros, the reference is not"


# --- structure ----------------------------------------------------------------------------------


def test_wrong_shape():
    c = compare(torch.zeros(4, 9), torch.zeros(4, 8))
    assert c.status == Status.INCORRECT_SHAPE
    assert c.message == "output 'y' has shape [4, 9], the reference has [4, 8]"
    assert (c.max_absolute_error, c.max_relative_error, c.matched_ratio, c.first_mismatch_index) == (INF, INF, 0.0, None)
    assert compare(torch.zeros(32), torch.zeros(4, 8)).status == Status.INCORRECT_SHAPE
    assert compare(torch.zeros(()), torch.zeros(1)).status == Status.INCORRECT_SHAPE


def test_wrong_dtype():
    ref = torch.randn(16)
    c = compare(ref.to(torch.float16), ref, dtype="bfloat16")
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' has dtype float16, declared bfloat16"
    assert compare(ref, ref.double(), dtype="float64").message == "output 'y' has dtype float32, declared float64"
    assert compare(torch.zeros(4, dtype=torch.int64), torch.zeros(4, dtype=torch.int32), dtype="int32").status == Status.INCORRECT_DTYPE


def test_dtype_is_checked_before_shape():
    c = compare(torch.zeros(5, dtype=torch.float16), torch.zeros(4))
    assert c.status == Status.INCORRECT_DTYPE


def test_missing_output():
    c = compare_outputs({}, {"y": torch.zeros(2)}, {"y": spec()}, Tolerance())
    assert c.status == Status.INCORRECT_SHAPE and c.output == "y"
    assert c.message == "output 'y' is missing"


def test_extra_output():
    c = compare_outputs({"y": torch.zeros(2), "z": torch.zeros(2)}, {"y": torch.zeros(2)}, {"y": spec()}, Tolerance())
    assert c.status == Status.INCORRECT_SHAPE and c.output == "z"
    assert c.message == "unexpected output 'z' (declared: y)"


def test_missing_reference_is_invalid_reference():
    c = compare_outputs({"y": torch.zeros(2)}, {}, {"y": spec()}, Tolerance())
    assert c.status == Status.INVALID_REFERENCE and c.message == "reference output 'y' is missing"


@pytest.mark.parametrize("value, name", [([1.0, 2.0], "list"), (None, "NoneType"), (3.0, "float")])
def test_a_tensor_output_that_is_not_a_tensor(value, name):
    c = compare(value, torch.zeros(2))
    assert c.status == Status.INCORRECT_SHAPE
    assert c.message == f"output 'y' is a {name}, not a tensor"


class Sneaky(torch.Tensor):
    pass


def test_tensor_subclass_output():
    ref = torch.ones(4)
    c = compare(ref.clone().as_subclass(Sneaky), ref)
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' is a Sneaky, not a plain tensor"
    c = compare(torch.nn.Parameter(ref.clone()), ref)
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' is a Parameter, not a plain tensor"


def test_fake_tensor_output():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.ones(4)
    c = compare(fake, torch.ones(4))
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' is a FakeTensor, not a plain tensor"


def test_meta_tensor_output():
    c = compare(torch.empty(4, device="meta"), torch.ones(4))
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' is a meta tensor, not a plain tensor"


def test_sparse_tensor_output():
    c = compare(torch.ones(4).to_sparse(), torch.ones(4))
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' is a sparse_coo tensor, not a plain tensor"


def test_a_subclassed_reference_is_invalid():
    c = compare(torch.ones(4), torch.ones(4).as_subclass(Sneaky))
    assert c.status == Status.INVALID_REFERENCE
    assert c.message == "reference output 'y' is a Sneaky, not a plain tensor"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_tensors_compare_on_their_device_and_mixed_devices_are_a_caller_error():
    reference = torch.randn(3000, device="cuda")
    assert compare(reference.clone(), reference).status == Status.PASSED
    wrong = reference.clone()
    wrong[7] += 1
    c = compare(wrong, reference)
    assert c.status == Status.INCORRECT_NUMERICAL and c.first_mismatch_index == [7]
    with pytest.raises(ValueError, match="output 'y' is on cuda"):
        compare(torch.ones(4, device="cuda"), torch.ones(4))
    with pytest.raises(ValueError, match="output 'y' is on cpu, its reference on cuda"):
        compare(torch.ones(4), torch.ones(4, device="cuda"))


def test_outputs_that_require_grad_are_compared():
    ref = torch.ones(4)
    assert compare(ref.clone().requires_grad_(), ref).status == Status.PASSED


# --- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, step", [("float8_e4m3fn", 2.0**-3), ("float8_e5m2", 2.0**-2)])
def test_fp8_outputs(dtype, step):
    torch.manual_seed(0)
    ref = torch.randn(1000) * 3
    out = ref.to(getattr(torch, dtype))
    expected_abs = float((out.double() - ref.double()).abs().max())
    # rounding to nearest: relative error at most half a step (e4m3: 3 mantissa bits, e5m2: 2)
    c = compare(out, ref, dtype=dtype, max_atol=2.0**-9 * 3, max_rtol=step / 2)  # atol covers subnormals
    assert c.status == Status.PASSED
    assert c.max_absolute_error == expected_abs
    assert 0 < c.max_relative_error
    tight = compare(out, ref, dtype=dtype, max_atol=0.0, max_rtol=step / 8)
    assert tight.status == Status.INCORRECT_NUMERICAL
    assert tight.max_absolute_error == expected_abs


def test_fp8_values_are_decoded_exactly():
    values = t([0.0, 1.0, -1.5, 448.0, 0.001953125])  # 2**-9 is the least e4m3fn subnormal
    out = values.to(torch.float8_e4m3fn)
    c = compare(out, values, dtype="float8_e4m3fn", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.PASSED
    bad = out.clone()
    bad.view(torch.uint8)[3] -= 1  # 448 -> 416
    c = compare(bad, values, dtype="float8_e4m3fn", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message.endswith("first at [3]: got 416, expected 448")


FP4_CODES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def fp4(byte_values, shape=None):
    packed = torch.tensor(byte_values, dtype=torch.uint8)
    if shape is not None:
        packed = packed.reshape(shape)
    return packed.view(torch.float4_e2m1fn_x2)


def test_fp4_decoding_of_all_sixteen_codes():
    packed = fp4([(2 * i + 1) << 4 | 2 * i for i in range(8)])  # low nibble first: codes 0, 1, 2, ..., 15
    assert packed.shape == (8,)
    decoded = decode_fp4(packed)
    assert decoded.dtype == torch.float64 and decoded.shape == (16,)
    assert decoded.tolist() == FP4_CODES
    assert [math.copysign(1, v) for v in decoded.tolist()] == [1] * 8 + [-1] * 8  # code 8 is -0
    ref = t(FP4_CODES)
    c = compare(packed, ref, dtype="float4_e2m1", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.PASSED
    # the high nibble is the second element: swapping the nibbles of byte 1 (codes 2, 3) is caught
    swapped = fp4([0x10, 0x23] + [(2 * i + 1) << 4 | 2 * i for i in range(2, 8)])
    c = compare(swapped, ref, dtype="float4_e2m1", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.first_mismatch_index == [2]
    assert c.message.endswith("first at [2]: got 1.5, expected 1")


def test_fp4_every_code_in_either_nibble():
    for code, value in enumerate(FP4_CODES):
        assert decode_fp4(fp4([code])).tolist() == [value, 0.0]
        assert decode_fp4(fp4([code << 4])).tolist() == [0.0, value]


def test_fp4_against_an_fp4_reference_with_logical_indices():
    rows = [[0x21, 0x43, 0x65, 0x07], [0x10, 0x32, 0x54, 0x76]]
    ref = fp4(rows)  # storage [2, 4], logical [2, 8]
    out_rows = [row[:] for row in rows]
    out_rows[1][3] = 0x7E  # low nibble 6 (4.0) -> 14 (-4.0): element [1, 6]
    c = compare(fp4(out_rows), ref, dtype="float4_e2m1", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.first_mismatch_index == [1, 6]
    assert c.message == "output 'y': 1 of 16 elements (6.2%) outside atol 0 + rtol 0*|ref|; first at [1, 6]: got -4, expected 4"
    assert c.max_absolute_error == 8.0


def test_fp4_shape_is_logical():
    ref = torch.zeros(2, 8)
    ref[0, 0] = 1
    out = fp4([[0x02, 0, 0, 0], [0, 0, 0, 0]])
    assert compare(out, ref, dtype="float4_e2m1", shape=("M", 8)).status == Status.PASSED
    c = compare(out, torch.ones(2, 4), dtype="float4_e2m1")
    assert c.status == Status.INCORRECT_SHAPE
    assert c.message == "output 'y' has shape [2, 8], the reference has [2, 4]"


def test_fp4_output_with_a_wrong_dtype():
    c = compare(torch.zeros(2, 4, dtype=torch.uint8), torch.zeros(2, 8), dtype="float4_e2m1")
    assert c.status == Status.INCORRECT_DTYPE
    assert c.message == "output 'y' has dtype uint8, declared float4_e2m1"


def test_bf16_output_with_realistic_rounding_passes_at_1e_2():
    torch.manual_seed(1)
    a = torch.randn(128, 512).to(torch.bfloat16)
    b = torch.randn(512, 96).to(torch.bfloat16)
    ref = a.double() @ b.double()
    out = a @ b  # bf16 matmul: fp32 accumulation, one rounding to bf16
    c = compare(out, ref, dtype="bfloat16", max_atol=1e-2, max_rtol=1e-2)
    assert c.status == Status.PASSED
    assert c.matched_ratio == 1.0
    assert 0 < c.max_absolute_error < 0.5
    assert compare(out, ref, dtype="bfloat16", max_atol=1e-5, max_rtol=1e-5).status == Status.INCORRECT_NUMERICAL


def test_float16_and_float64_outputs():
    ref = torch.linspace(-3, 3, 50, dtype=torch.float64)
    assert compare(ref.half(), ref, dtype="float16", max_atol=1e-3, max_rtol=1e-3).status == Status.PASSED
    assert compare(ref + 1e-12, ref, dtype="float64", max_atol=1e-11, max_rtol=0.0).status == Status.PASSED


def test_integer_outputs():
    ref = torch.arange(-50, 50, dtype=torch.int32).reshape(10, 10)
    assert compare(ref.clone(), ref, dtype="int32", max_atol=0.0, max_rtol=0.0).status == Status.PASSED
    out = ref.clone()
    out[4, 7] += 1
    c = compare(out, ref, dtype="int32", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y': 1 of 100 elements (1.0%) outside atol 0 + rtol 0*|ref|; first at [4, 7]: got -2, expected -3"
    assert c.max_absolute_error == 1.0
    # tolerance still applies to integers
    assert compare(out, ref, dtype="int32", max_atol=1.0, max_rtol=0.0).status == Status.PASSED
    big = torch.tensor([2**40, -(2**40)], dtype=torch.int64)
    assert compare(big.clone(), big, dtype="int64", max_atol=0.0, max_rtol=0.0).status == Status.PASSED
    assert compare(torch.tensor([255, 0], dtype=torch.uint8), torch.tensor([255, 0], dtype=torch.uint8), dtype="uint8").passed


def test_bool_outputs():
    ref = torch.tensor([True, False, True, True])
    assert compare(ref.clone(), ref, dtype="bool", max_atol=0.0).status == Status.PASSED
    c = compare(torch.tensor([True, True, True, True]), ref, dtype="bool", max_atol=0.0, max_rtol=0.0)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y': 1 of 4 elements (25.0%) outside atol 0 + rtol 0*|ref|; first at [1]: got 1, expected 0"
    c = compare(torch.zeros(4, dtype=torch.bool), ref, dtype="bool", max_atol=0.0, max_rtol=0.0)
    assert c.message == "output 'y' is all zeros, the reference is not"
    assert compare(ref.to(torch.uint8), ref, dtype="bool").status == Status.INCORRECT_DTYPE


# --- Python scalar outputs ----------------------------------------------------------------------


def test_python_scalar_outputs():
    assert compare(1.005, 1.0, dtype="float32", shape=None).status == Status.PASSED
    c = compare(1.5, 0.25, dtype="float32", shape=None)
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.message == "output 'y': got 1.5, expected 0.25, outside atol 0.01 + rtol 0.01*|ref|"
    assert c.first_mismatch_index == []
    assert c.max_absolute_error == 1.25 and c.max_relative_error == 5.0 and c.matched_ratio == 0.0
    assert compare(3, 3.0, dtype="float64", shape=None).status == Status.PASSED  # an int is a fine float
    assert compare(7, 7, dtype="int64", shape=None, max_atol=0.0, max_rtol=0.0).status == Status.PASSED
    assert compare(True, True, dtype="bool", shape=None).status == Status.PASSED
    assert compare(INF, INF, dtype="float32", shape=None).status == Status.PASSED
    assert compare(NAN, 1.0, dtype="float32", shape=None).status == Status.INCORRECT_NUMERICAL
    assert compare(0.0, 1.0, dtype="float32", shape=None).message == "output 'y' is all zeros, the reference is not"
    assert compare(2.0, torch.tensor(2.0), dtype="float32", shape=None).status == Status.PASSED  # 0-d reference
    assert compare(10**400, 10**400, dtype="int64", shape=None).status == Status.PASSED  # beyond float64: inf == inf
    assert compare(-(10**400), 10**400, dtype="int64", shape=None).status == Status.INCORRECT_NUMERICAL


@pytest.mark.parametrize(
    "value, dtype, status, message",
    [
        (1.0, "int64", Status.INCORRECT_DTYPE, "output 'y' is a Python float, declared int64"),
        (True, "int32", Status.INCORRECT_DTYPE, "output 'y' is a Python bool, declared int32"),
        (1, "bool", Status.INCORRECT_DTYPE, "output 'y' is a Python int, declared bool"),
        (True, "float32", Status.INCORRECT_DTYPE, "output 'y' is a Python bool, declared float32"),
        (torch.tensor(1.0), "float32", Status.INCORRECT_SHAPE, "output 'y' is a Tensor, not a Python number"),
        ("1.0", "float32", Status.INCORRECT_SHAPE, "output 'y' is a str, not a Python number"),
    ],
)
def test_python_scalar_output_of_the_wrong_kind(value, dtype, status, message):
    c = compare(value, 1, dtype=dtype, shape=None)
    assert (c.status, c.message) == (status, message)


# --- several outputs, indices, empties ----------------------------------------------------------


def test_multiple_outputs_where_the_second_fails():
    declared = {"a": spec(), "b": spec("int32")}
    ref = {"a": t([1.0, 2.0, 4.0, 8.0]), "b": torch.tensor([1, 2, 3], dtype=torch.int32)}
    out = {"a": t([1.0, 2.0, 4.0, 8.05]), "b": torch.tensor([1, 5, 3], dtype=torch.int32)}
    c = compare_outputs(out, ref, declared, Tolerance(max_atol=0.0, max_rtol=0.01, required_matched_ratio=1.0))
    assert c.status == Status.INCORRECT_NUMERICAL
    assert c.output == "b"
    assert c.message == "output 'b': 1 of 3 elements (33.3%) outside atol 0 + rtol 0.01*|ref|; first at [1]: got 5, expected 2"
    assert c.first_mismatch_index == [1]
    assert c.max_absolute_error == 3.0  # the max over outputs
    assert c.max_relative_error == 1.5
    assert c.matched_ratio == 2 / 3  # the lowest over outputs
    # a failing first output wins, and the second's metrics still count
    out["a"] = t([1.0, 3.0, 4.0, 8.0])
    c = compare_outputs(out, ref, declared, Tolerance(max_atol=0.0, max_rtol=0.01, required_matched_ratio=1.0))
    assert c.output == "a" and c.first_mismatch_index == [1]
    assert c.max_absolute_error == 3.0 and c.matched_ratio == 2 / 3


def test_structure_errors_come_before_values():
    declared = {"a": spec(), "b": spec()}
    ref = {"a": t([1.0]), "b": t([1.0])}
    c = compare_outputs({"a": t([9.0]), "b": t([1.0, 2.0])}, ref, declared, Tolerance(required_matched_ratio=1.0))
    assert c.status == Status.INCORRECT_SHAPE and c.output == "b"


def test_first_mismatch_index_on_a_3d_tensor():
    ref = torch.zeros(3, 4, 5)
    out = ref.clone()
    out[2, 0, 1] = 1.0
    out[1, 3, 4] = 1.0
    out[2, 3, 0] = 1.0
    c = compare(out, ref, max_atol=0.5)
    assert c.first_mismatch_index == [1, 3, 4]
    assert c.matched_ratio == 57 / 60
    # the index is in the tensor's own (logical, row-major) order, whatever its strides
    c = compare(out.permute(2, 1, 0).contiguous().permute(2, 1, 0), ref, max_atol=0.5)
    assert c.first_mismatch_index == [1, 3, 4]
    c = compare(out.transpose(0, 2), ref.transpose(0, 2), max_atol=0.5)
    assert c.first_mismatch_index == [0, 3, 2]  # [2, 3, 0] -> [0, 3, 2] comes first in the transposed order


def test_first_mismatch_index_beyond_the_first_chunk():
    import solbench.bench.correctness as correctness

    ref = torch.zeros(4, correctness.CHUNK)
    out = ref.clone()
    out[2, 17] = 1.0
    out[3, 0] = 1.0
    c = compare(out, ref)
    assert c.first_mismatch_index == [2, 17]
    assert c.message.startswith(f"output 'y': 2 of {4 * correctness.CHUNK} elements (0.00019%)")


@pytest.mark.parametrize("dtype, make", [("float32", lambda: torch.zeros(0, 4)), ("float4_e2m1", lambda: fp4([], shape=(0, 2)))])
def test_empty_tensors(dtype, make):
    c = compare(make(), make(), dtype=dtype)
    assert c == Comparison(Status.PASSED, None, "", 0.0, 0.0, 1.0, None)


def test_empty_against_non_empty():
    assert compare(torch.zeros(0), torch.zeros(1)).status == Status.INCORRECT_SHAPE


# --- merge --------------------------------------------------------------------------------------


def test_merge_over_trials():
    passed = Comparison(Status.PASSED, None, "", 0.01, 0.02, 0.999, [5])
    numerical = Comparison(Status.INCORRECT_NUMERICAL, "y", "output 'y': ...", 0.5, 0.1, 0.9, [3])
    shape = Comparison(Status.INCORRECT_SHAPE, "z", "output 'z' is missing", INF, INF, 0.0, None)
    assert merge([passed, numerical, shape]) == Comparison(Status.INCORRECT_NUMERICAL, "y", "output 'y': ...", INF, INF, 0.0, [3])
    assert merge([shape, numerical]).status == Status.INCORRECT_SHAPE
    assert merge([shape, numerical]).first_mismatch_index is None
    clean = Comparison(Status.PASSED, None, "", 0.0, 0.0, 1.0, None)
    assert merge([clean, passed, clean]) == Comparison(Status.PASSED, None, "", 0.01, 0.02, 0.999, [5])
    assert merge([clean]) == clean
    with pytest.raises(ValueError):
        merge([])


def test_merge_of_real_trials():
    ref = torch.arange(8, dtype=torch.float32)
    trials = [compare(ref.clone(), ref), compare(ref + 0.5, ref), compare(ref + 0.25, ref)]
    m = merge(trials)
    assert m.status == Status.INCORRECT_NUMERICAL
    assert m.message == trials[1].message
    assert m.max_absolute_error == 0.5
    assert m.matched_ratio == 0.0


# --- speed --------------------------------------------------------------------------------------


def test_a_256_mb_comparison_is_fast():
    n = 64 * 1024 * 1024  # 256 MB of float32 on each side
    torch.manual_seed(2)
    ref = torch.randn(n)
    out = ref.clone()
    out.add_(1e-3)
    out[n - 3] = ref[n - 3] + 0.5  # a near-miss (at most 50x the tolerance), which the ratio forgives
    threads = torch.get_num_threads()
    start = time.perf_counter()
    c = compare(out, ref, required_matched_ratio=0.999)
    elapsed = time.perf_counter() - start
    assert c.status == Status.PASSED
    assert c.first_mismatch_index == [n - 3]
    assert c.matched_ratio == (n - 1) / n
    assert torch.get_num_threads() == threads  # restored
    assert elapsed < 10, f"took {elapsed:.1f} s"


def test_at_a_loose_rtol_a_zero_in_place_of_a_value_is_still_gross():
    """At rtol 1e-2, 100 x (atol + rtol |ref|) alone would never call a zero written in place of a value gross
    (its error is 100% of |ref|): the relative part is capped at half the value. Honest near-misses (a few
    per cent off, as bf16 split-K sums are) stay near-misses, forgiven by the matched ratio."""
    torch.manual_seed(0)
    ref = torch.randn(100_000) * 10
    tol = dict(max_atol=1e-2, max_rtol=1e-2, required_matched_ratio=0.99)
    holes = ref.clone()
    holes[:500] = 0.0  # 0.5% of the outputs never computed
    c = compare(holes, ref, **tol)
    assert c.status == Status.INCORRECT_NUMERICAL and c.gross_errors > 0
    assert "gross errors (beyond 100x atol 0.01 + 0.5*|ref| (rtol 0.01, its part capped)" in c.message
    near = ref.clone()
    near[:500] *= 1.04  # 4% off: outside the tolerance, forgiven by the ratio
    passed = compare(near, ref, **tol)
    assert passed.status == Status.PASSED and passed.gross_errors == 0 and passed.matched_ratio < 1
