"""Precision oracle (issue 5): real fp32 computations against their fp64 oracle, on CPU.

Every scenario runs a reference function on fp32 inputs, the same function on ``oracle_arguments``
(the fp64 oracle) and a solution: a legit fp32 one (another summation order or algorithm), which must
not be flagged, or a downgrade (computed in bf16, fp16 or emulated tf32 and cast back), which must be.
Run this file as a script to print the calibration table behind the thresholds:

    python3 tests/bench/test_precision.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F

from solbench.bench.precision import (
    FLOOR_UNITS,
    RATIO_LIMIT,
    PrecisionAssessment,
    applies,
    assess,
    judge,
    oracle_arguments,
    outputs_to_assess,
)
from solbench.data.definition import TensorSpec

U32 = 2.0**-24  # unit roundoff of float32


# --- building blocks ---------------------------------------------------------------------------------


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """Round float32 to TF32 (10 stored mantissa bits), to nearest with ties to even, via the bits."""
    bits = x.contiguous().view(torch.int32)
    lowest_kept = (bits >> 13) & 1
    rounded = (bits + 0x0FFF + lowest_kept) & ~0x1FFF
    return rounded.view(torch.float32)


def in_dtype(function: Callable[..., torch.Tensor], dtype: torch.dtype) -> Callable[..., torch.Tensor]:
    """The downgrade: cast the floating inputs to ``dtype``, compute there, cast the result to float32."""

    def downgraded(*arguments):
        cast = [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in arguments]
        return function(*cast).to(torch.float32)

    return downgraded


def tf32_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """What a TF32 tensor core does: inputs rounded to 10 mantissa bits, products accumulated in fp32."""
    return round_to_tf32(a) @ round_to_tf32(b)


# legit fp32 variants ---------------------------------------------------------------------------------


def matmul_split_k(a: torch.Tensor, b: torch.Tensor, splits: int = 4) -> torch.Tensor:
    step = a.shape[1] // splits
    partials = [a[:, k : k + step] @ b[k : k + step] for k in range(0, a.shape[1], step)]
    total = partials[0]
    for partial in partials[1:]:
        total = total + partial
    return total


def matmul_tiled_loop(a: torch.Tensor, b: torch.Tensor, tile: int = 64) -> torch.Tensor:
    """A Python-level tiled GEMM: output tiles, each accumulating K-slices in order."""
    m, k = a.shape
    n = b.shape[1]
    out = torch.empty(m, n)
    for i in range(0, m, tile):
        for j in range(0, n, tile):
            accumulator = torch.zeros(min(tile, m - i), min(tile, n - j))
            for kk in range(0, k, tile):
                accumulator += a[i : i + tile, kk : kk + tile] @ b[kk : kk + tile, j : j + tile]
            out[i : i + tile, j : j + tile] = accumulator
    return out


def matmul_sequential_k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """One running sum per output over k = 0..K-1, as a SIMT thread accumulates its dot product."""
    accumulator = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        accumulator.addr_(a[:, k], b[k])
    return accumulator


def softmax_chunked_sum(x: torch.Tensor) -> torch.Tensor:
    shifted = torch.exp(x - x.max(-1, keepdim=True).values)
    total = torch.zeros(*x.shape[:-1], 1)
    for start in range(0, x.shape[-1], 128):
        total = total + shifted[..., start : start + 128].sum(-1, keepdim=True)
    return shifted / total


def softmax_online(x: torch.Tensor) -> torch.Tensor:
    """Flash-style online softmax: running max and rescaled running sum over blocks of 256."""
    running_max = torch.full((*x.shape[:-1], 1), -math.inf)
    running_sum = torch.zeros(*x.shape[:-1], 1)
    for start in range(0, x.shape[-1], 256):
        block = x[..., start : start + 256]
        new_max = torch.maximum(running_max, block.max(-1, keepdim=True).values)
        running_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max).sum(-1, keepdim=True)
        running_max = new_max
    return torch.exp(x - running_max) / running_sum


def layernorm_reference(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)


def layernorm_two_pass(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + 1e-5) * weight + bias


def layernorm_one_pass(x, weight, bias):
    """Sum and sum of squares in one sweep; fine in fp32 for inputs whose mean is not far above their spread."""
    n = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / n
    variance = (x * x).sum(-1, keepdim=True) / n - mean * mean
    return (x - mean) * torch.rsqrt(variance + 1e-5) * weight + bias


def rmsnorm_reference(x, weight):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * weight


def rmsnorm_chunked(x, weight):
    sum_of_squares = torch.zeros(*x.shape[:-1], 1)
    for start in range(0, x.shape[-1], 512):
        sum_of_squares += (x[..., start : start + 512] ** 2).sum(-1, keepdim=True)
    return x / torch.sqrt(sum_of_squares / x.shape[-1] + 1e-6) * weight


def cumsum_blocked(x: torch.Tensor, block: int = 1024) -> torch.Tensor:
    """Scan within blocks, scan the block totals, add the offsets (a GPU-style two-level scan)."""
    rows, n = x.shape
    within = x.view(rows, n // block, block).cumsum(-1)
    totals = within[..., -1].cumsum(-1)
    offsets = torch.cat([torch.zeros(rows, 1), totals[:, :-1]], -1)
    return (within + offsets[..., None]).view(rows, n)


def cumsum_sequential(x: torch.Tensor) -> torch.Tensor:
    """A plain fp32 running sum (torch's CPU cumsum accumulates in double: far more accurate)."""
    out = torch.empty_like(x)
    running = torch.zeros(x.shape[0])
    for i in range(x.shape[1]):
        running = running + x[:, i]
        out[:, i] = running
    return out


def sum_sequential_chunks(x: torch.Tensor, chunk: int = 1000) -> torch.Tensor:
    """Add the chunks of a 1e6-long row one after the other (element i of every chunk in one lane)."""
    lanes = torch.zeros(x.shape[0], chunk)
    for start in range(0, x.shape[1], chunk):
        lanes += x[:, start : start + chunk]
    return lanes.sum(-1)


def sum_pairwise_chunks(x: torch.Tensor) -> torch.Tensor:
    return x.view(x.shape[0], 1000, -1).sum(-1).sum(-1)


def difference_of_matmuls(x, w1, w2):
    """Ill-conditioned on purpose: two nearly equal products subtracted (cancellation ~1000x)."""
    return x @ w1 - x @ w2


# --- scenarios ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    make_inputs: Callable[[], list]
    reference: Callable[..., torch.Tensor]
    solution: Callable[..., torch.Tensor]
    downgrade: str | None  # expected apparent precision of a downgrade; None for a legit solution


def matmul_inputs(m: int, k: int, n: int, seed: int, positive: bool = False) -> Callable[[], list]:
    def make():
        g = generator(seed)
        draw = torch.rand if positive else torch.randn
        return [draw(m, k, generator=g), draw(k, n, generator=g)]

    return make


def softmax_inputs():
    return [torch.randn(256, 4096, generator=generator(1)) * 4]


def norm_inputs():
    g = generator(2)
    return [torch.randn(512, 4096, generator=g) * 3 + 2, torch.randn(4096, generator=g), torch.randn(4096, generator=g)]


def rmsnorm_inputs():
    g = generator(3)
    return [torch.randn(512, 4096, generator=g) * 3, torch.randn(4096, generator=g)]


def cumsum_inputs():
    return [torch.randn(16, 65536, generator=generator(4))]


def elementwise_inputs():
    return [torch.randn(1_000_000, generator=generator(5)) * 100]


def wide_range_inputs():
    """Log-normal values over ~20 decades, every 7th one exactly zero."""
    y = torch.exp(torch.randn(1_000_000, generator=generator(6)) * 10)
    y[::7] = 0
    return [y]


def reduction_inputs():
    return [torch.randn(8, 1_000_000, generator=generator(7))]


def cancellation_inputs():
    g = generator(8)
    w1 = torch.randn(1024, 256, generator=g)
    return [torch.randn(256, 1024, generator=g), w1, w1 + 1e-3 * torch.randn(1024, 256, generator=g)]


MM = matmul_inputs(256, 1024, 256, seed=10)
MM_LONG_K = matmul_inputs(256, 8192, 256, seed=11)
MM_POSITIVE = matmul_inputs(256, 8192, 256, seed=12, positive=True)
mm = torch.mm

LEGIT = [
    Scenario("mm K=1024 split-K x4", MM, mm, matmul_split_k, None),
    Scenario("mm K=1024 tiled Python loop", MM, mm, matmul_tiled_loop, None),
    Scenario("mm K=1024 einsum", MM, mm, lambda a, b: torch.einsum("mk,kn->mn", a, b), None),
    Scenario("mm K=1024 sequential K", MM, mm, matmul_sequential_k, None),
    Scenario("mm K=8192 split-K x8", MM_LONG_K, mm, lambda a, b: matmul_split_k(a, b, 8), None),
    Scenario("mm K=8192 sequential K", MM_LONG_K, mm, matmul_sequential_k, None),
    Scenario("mm K=8192 positive, sequential K", MM_POSITIVE, mm, matmul_sequential_k, None),
    Scenario("softmax chunked sum", softmax_inputs, lambda x: torch.softmax(x, -1), softmax_chunked_sum, None),
    Scenario("softmax online", softmax_inputs, lambda x: torch.softmax(x, -1), softmax_online, None),
    Scenario("layernorm two-pass", norm_inputs, layernorm_reference, layernorm_two_pass, None),
    Scenario("layernorm one-pass", norm_inputs, layernorm_reference, layernorm_one_pass, None),
    Scenario("rmsnorm chunked", rmsnorm_inputs, rmsnorm_reference, rmsnorm_chunked, None),
    Scenario("cumsum two-level scan", cumsum_inputs, lambda x: torch.cumsum(x, -1), cumsum_blocked, None),
    Scenario("cumsum sequential 64K", cumsum_inputs, lambda x: torch.cumsum(x, -1), cumsum_sequential, None),
    Scenario("elementwise x*2+1 as (x+0.5)*2", elementwise_inputs, lambda x: x * 2 + 1, lambda x: (x + 0.5) * 2, None),
    Scenario("sigmoid as 1/(1+exp(-x))", elementwise_inputs, lambda x: torch.sigmoid(x / 50), lambda x: 1 / (1 + torch.exp(-x / 50)), None),
    Scenario("wide range with zeros: sqrt(9y)", wide_range_inputs, lambda y: torch.sqrt(y) * 3, lambda y: torch.sqrt(y * 9), None),
    Scenario("sum 1e6 pairwise chunks", reduction_inputs, lambda x: x.sum(-1), sum_pairwise_chunks, None),
    Scenario("sum 1e6 sequential chunks", reduction_inputs, lambda x: x.sum(-1), sum_sequential_chunks, None),
    Scenario("sum|x| 1e6 sequential chunks", reduction_inputs, lambda x: x.abs().sum(-1), lambda x: sum_sequential_chunks(x.abs()), None),
    Scenario("cancelling matmuls, split-K", cancellation_inputs, difference_of_matmuls,
             lambda x, w1, w2: matmul_split_k(x, w1) - matmul_split_k(x, w2), None),
]

DOWNGRADES = [
    Scenario("mm K=1024 bf16", MM, mm, in_dtype(mm, torch.bfloat16), "bfloat16"),
    Scenario("mm K=1024 fp16", MM, mm, in_dtype(mm, torch.float16), "tf32/float16"),
    Scenario("mm K=1024 tf32 (emulated)", MM, mm, tf32_matmul, "tf32/float16"),
    Scenario("mm K=8192 bf16", MM_LONG_K, mm, in_dtype(mm, torch.bfloat16), "bfloat16"),
    Scenario("mm K=8192 tf32 (emulated)", MM_LONG_K, mm, tf32_matmul, "tf32/float16"),
    Scenario("mm K=1024 bf16 inputs, fp32 accumulate", MM, mm, lambda a, b: a.bfloat16().float() @ b.bfloat16().float(), "bfloat16"),
    Scenario("mm K=1024 fp16 inputs, fp32 accumulate", MM, mm, lambda a, b: a.half().float() @ b.half().float(), "tf32/float16"),
    Scenario("softmax bf16", softmax_inputs, lambda x: torch.softmax(x, -1), in_dtype(lambda x: torch.softmax(x, -1), torch.bfloat16), "bfloat16"),
    Scenario("softmax fp16", softmax_inputs, lambda x: torch.softmax(x, -1), in_dtype(lambda x: torch.softmax(x, -1), torch.float16), "tf32/float16"),
    Scenario("layernorm fp16", norm_inputs, layernorm_reference, in_dtype(layernorm_reference, torch.float16), "tf32/float16"),
    Scenario("rmsnorm fp16", rmsnorm_inputs, rmsnorm_reference, in_dtype(rmsnorm_reference, torch.float16), "tf32/float16"),
    Scenario("rmsnorm bf16", rmsnorm_inputs, rmsnorm_reference, in_dtype(rmsnorm_reference, torch.bfloat16), "bfloat16"),
    Scenario("cumsum bf16", cumsum_inputs, lambda x: torch.cumsum(x, -1), in_dtype(lambda x: torch.cumsum(x, -1), torch.bfloat16), "bfloat16"),
    Scenario("elementwise x*2+1 bf16", elementwise_inputs, lambda x: x * 2 + 1, in_dtype(lambda x: x * 2 + 1, torch.bfloat16), "bfloat16"),
    Scenario("elementwise x*2+1 fp16", elementwise_inputs, lambda x: x * 2 + 1, in_dtype(lambda x: x * 2 + 1, torch.float16), "tf32/float16"),
    Scenario("wide range with zeros bf16", wide_range_inputs, lambda y: torch.sqrt(y) * 3, in_dtype(lambda y: torch.sqrt(y) * 3, torch.bfloat16), "bfloat16"),
    Scenario("cancelling matmuls tf32", cancellation_inputs, difference_of_matmuls,
             lambda x, w1, w2: tf32_matmul(x, w1) - tf32_matmul(x, w2), "tf32/float16"),
]

# Measured, not flagged, and not expected to be: the rounding errors of positive data average out
# over K, leaving an error inside the range of legit fp32 reorderings (see the module docstring).
BLIND_SPOTS = [
    Scenario("mm K=8192 positive, tf32 (emulated)", MM_POSITIVE, mm, tf32_matmul, "tf32/float16"),
    Scenario("mm K=8192 positive, bf16 inputs, fp32 acc", MM_POSITIVE, mm, lambda a, b: a.bfloat16().float() @ b.bfloat16().float(), "bfloat16"),
]


def run(scenario: Scenario) -> PrecisionAssessment:
    arguments = scenario.make_inputs()
    reference = scenario.reference(*arguments)
    oracle = scenario.reference(*oracle_arguments(arguments))
    assert oracle.dtype == torch.float64
    solution = scenario.solution(*arguments)
    assert solution.dtype == torch.float32 and reference.dtype == torch.float32
    return assess(solution, reference, oracle)


_cache: dict[str, PrecisionAssessment] = {}


def measured(scenario: Scenario) -> PrecisionAssessment:
    """Each scenario is computed once per session (the margin test reuses them)."""
    if scenario.name not in _cache:
        _cache[scenario.name] = run(scenario)
    return _cache[scenario.name]


# --- the calibration: legit fp32 passes, downgrades are flagged -------------------------------------


@pytest.mark.parametrize("scenario", LEGIT, ids=lambda s: s.name)
def test_legit_fp32_variants_are_not_flagged(scenario: Scenario):
    result = measured(scenario)
    assert not result.downgraded, result.describe("out")
    assert result.apparent_precision == "float32"
    assert result.solution_error * 4 < result.threshold  # at least 4x below its own limit
    assert judge({"out": result}, "strict")[0]


@pytest.mark.parametrize("scenario", DOWNGRADES, ids=lambda s: s.name)
def test_downgrades_are_flagged_under_strict(scenario: Scenario):
    result = measured(scenario)
    assert result.downgraded, result.describe("out")
    assert result.ratio > RATIO_LIMIT and result.solution_error > FLOOR_UNITS * U32
    assert result.solution_error > 2 * result.threshold  # at least 2x beyond its own limit
    passed, message = judge({"out": result}, "strict")
    assert not passed
    assert message.startswith("precision downgrade under strict policy: output 'out' appears computed in ")
    assert scenario.downgrade in message


@pytest.mark.parametrize("scenario", DOWNGRADES, ids=lambda s: s.name)
def test_downgrades_pass_under_relaxed_with_their_apparent_precision(scenario: Scenario):
    result = measured(scenario)
    assert result.apparent_precision == scenario.downgrade, result.describe("out")
    passed, note = judge({"out": result}, "relaxed")
    assert passed
    assert f"apparent precision 'out' {scenario.downgrade}" in note


def floor_binds(assessment: PrecisionAssessment) -> bool:
    """The floor, not the ratio, sets the limit: the reference is accurate (a well-conditioned problem)."""
    return RATIO_LIMIT * assessment.reference_error < FLOOR_UNITS * U32


def test_margins_between_legit_and_downgraded_errors():
    """Each criterion sits well inside the measured gap on the scenarios where it is the binding one."""
    legit = [measured(s) for s in LEGIT]
    downgrades = [measured(s) for s in DOWNGRADES]
    worst_legit_error = max(a.solution_error for a in legit if floor_binds(a))
    mildest_downgrade_error = min(a.solution_error for a in downgrades if floor_binds(a))
    assert worst_legit_error * 4 < FLOOR_UNITS * U32 < mildest_downgrade_error / 4
    worst_legit_ratio = max(a.ratio for a in legit if not floor_binds(a))
    mildest_downgrade_ratio = min(a.ratio for a in downgrades if not floor_binds(a))
    assert worst_legit_ratio * 4 < RATIO_LIMIT < mildest_downgrade_ratio / 2
    # and over all scenarios, whichever criterion binds
    assert max(a.ratio for a in legit) < RATIO_LIMIT < min(a.ratio for a in downgrades)


def test_the_grid_names_the_precision_of_a_cast_back_result():
    arguments = softmax_inputs()
    reference = torch.softmax(arguments[0], -1)
    oracle = torch.softmax(oracle_arguments(arguments)[0], -1)
    bf16 = assess(torch.softmax(arguments[0].bfloat16(), -1).float(), reference, oracle)
    fp16 = assess(torch.softmax(arguments[0].half(), -1).float(), reference, oracle)
    assert (bf16.grid_bits, bf16.apparent_precision) == (8, "bfloat16")
    assert (fp16.grid_bits, fp16.apparent_precision) == (11, "tf32/float16")
    # accumulated in fp32, the output has no grid: the label comes from the error's size
    assert measured(DOWNGRADES[2]).grid_bits is None


def test_the_ill_conditioned_case_needs_the_ratio_not_only_the_floor():
    legit = measured(next(s for s in LEGIT if s.name.startswith("cancelling")))
    downgrade = measured(next(s for s in DOWNGRADES if s.name.startswith("cancelling")))
    assert legit.reference_error > FLOOR_UNITS * U32 / RATIO_LIMIT  # the reference is far from exact
    assert legit.solution_error > FLOOR_UNITS * U32  # above the floor: only the ratio keeps it legit
    assert downgrade.threshold == RATIO_LIMIT * downgrade.reference_error


# --- exact references, special values -------------------------------------------------------------


def test_an_exact_reference_is_judged_by_the_floor():
    x = torch.randn(10_000, generator=generator(20))
    reference = x * 4  # exact in fp32: the reference's error is 0
    oracle = x.double() * 4
    same = assess(reference.clone(), reference, oracle)
    assert (same.solution_error, same.reference_error, same.ratio, same.downgraded) == (0.0, 0.0, 1.0, False)
    one_ulp_off = assess(torch.nextafter(reference, torch.tensor(math.inf)), reference, oracle)
    assert one_ulp_off.ratio == math.inf and not one_ulp_off.downgraded  # infinitely worse, yet fp32-grade
    bf16 = assess((x.bfloat16() * 4).float(), reference, oracle)
    assert bf16.downgraded and bf16.apparent_precision == "bfloat16"


def test_non_finite_oracle_positions_are_ignored():
    x = torch.randn(4096, generator=generator(21))
    reference, oracle = x.clone(), x.double()
    oracle[:10] = math.nan
    oracle[10:20] = math.inf
    oracle[20:30] = 1e300  # beyond float32: the declared precision cannot hold it
    reference[10:20] = math.inf
    reference[20:30] = math.inf
    solution = x.clone()
    solution[:30] = math.nan  # garbage exactly where nothing can be judged
    result = assess(solution, reference, oracle)
    assert result.compared == 4096 - 30
    assert result.solution_error == 0.0 and not result.downgraded


def test_a_non_finite_solution_value_is_an_infinite_error():
    x = torch.randn(4096, generator=generator(22))
    solution = x.clone()
    solution[5] = math.nan
    result = assess(solution, x, x.double())
    assert result.solution_error == math.inf and result.downgraded
    assert result.apparent_precision == "lower"


def test_an_all_zero_oracle_is_not_assessed():
    zeros = torch.zeros(100)
    result = assess(torch.full((100,), 1e-30), zeros, zeros.double())
    assert math.isnan(result.solution_error) and not result.downgraded
    assert judge({"y": result}, "strict")[0]
    assert "not assessed" in result.describe("y")


def test_exact_zeros_do_not_dilute_the_error():
    x = torch.randn(10_000, generator=generator(23))
    dense = assess((x.bfloat16() * 3).float(), x * 3, x.double() * 3)
    padded_x = torch.cat([x, torch.zeros(990_000)])
    padded = assess((padded_x.bfloat16() * 3).float(), padded_x * 3, padded_x.double() * 3)
    assert padded.solution_error == pytest.approx(dense.solution_error, rel=1e-12)
    assert padded.downgraded


def test_float64_outputs_flag_a_float32_computation():
    g = generator(24)
    a, b = torch.randn(128, 512, generator=g, dtype=torch.float64), torch.randn(512, 128, generator=g, dtype=torch.float64)
    reference = a @ b
    oracle = a @ b  # the oracle of an fp64 problem is the reference itself
    legit = assess(matmul_split_k(a, b), reference, oracle)
    downgrade = assess((a.float() @ b.float()).double(), reference, oracle)
    assert not legit.downgraded and legit.apparent_precision == "float64"
    assert downgrade.downgraded and downgrade.apparent_precision == "float32"
    assert downgrade.grid_bits == 24  # every value cast back from fp32 has 24 significant bits at most


def test_a_reference_that_ignores_the_fp64_inputs_still_catches_a_downgrade():
    """A reference that casts to float32 itself gives an oracle equal to it (error 0): the floor decides."""
    x = torch.randn(256, 1024, generator=generator(25))
    w = torch.randn(1024, 256, generator=generator(26))
    reference_function = lambda x, w: x.float() @ w.float()  # noqa: E731
    reference = reference_function(x, w)
    oracle = reference_function(*oracle_arguments([x, w])).double()
    assert torch.equal(oracle, reference.double())
    assert not assess(matmul_split_k(x, w), reference, oracle).downgraded
    assert assess(tf32_matmul(x, w), reference, oracle).downgraded


# --- inputs, applicability, verdicts ----------------------------------------------------------------


def test_oracle_arguments_upcast_floating_tensors_of_32_bits_or_fewer():
    fp8 = torch.zeros(4, dtype=torch.float8_e4m3fn)
    ints = torch.arange(4)
    fp64 = torch.zeros(4, dtype=torch.float64)
    arguments = [torch.zeros(4), torch.zeros(4, dtype=torch.float16), torch.zeros(4, dtype=torch.bfloat16),
                 fp8, ints, fp64, 3, 0.5, "mode", [torch.zeros(2)], {"scale": torch.ones(2, dtype=torch.float16)}]
    converted = oracle_arguments(arguments)
    assert [c.dtype for c in converted[:3]] == [torch.float64] * 3
    assert converted[3] is fp8 and converted[4] is ints and converted[5] is fp64
    assert converted[6:9] == [3, 0.5, "mode"]
    assert converted[9][0].dtype == torch.float64 and converted[10]["scale"].dtype == torch.float64
    assert arguments[0].dtype == torch.float32  # the originals are untouched


def test_applies_to_float32_and_float64_outputs_only():
    assert applies("float32") and applies("float64") and applies(torch.float32)
    for dtype in ("float16", "bfloat16", "float8_e4m3fn", "float4_e2m1", "int32", "bool"):
        assert not applies(dtype)
    declared = {"y": TensorSpec(shape=["M"], dtype="float32"), "h": TensorSpec(shape=["M"], dtype="bfloat16"),
                "loss": TensorSpec(shape=None, dtype="float64"), "idx": TensorSpec(shape=["M"], dtype="int64")}
    assert outputs_to_assess(declared) == ["y", "loss"]


def test_assess_rejects_what_it_cannot_judge():
    with pytest.raises(ValueError, match="float32/float64"):
        assess(torch.zeros(3, dtype=torch.float16), torch.zeros(3, dtype=torch.float16), torch.zeros(3))
    with pytest.raises(ValueError, match="shapes differ"):
        assess(torch.zeros(3), torch.zeros(4), torch.zeros(4))
    with pytest.raises(TypeError, match="0-d tensor"):
        assess(1.0, torch.tensor(1.0), torch.tensor(1.0))  # type: ignore[arg-type]


def test_judge_messages():
    x = torch.randn(10_000, generator=generator(27))
    fine = assess(x * 2 + 1, x * 2 + 1, x.double() * 2 + 1)
    coarse = assess(((x.bfloat16() * 2) + 1).float(), x * 2 + 1, x.double() * 2 + 1)
    assert judge({}, "strict") == (True, "")
    assert judge({"a": fine}, "strict") == (True, "precision: outputs consistent with their declared float32")
    passed, message = judge({"a": fine, "b": coarse}, "strict")
    assert not passed
    assert "\n" not in message
    assert message.startswith("precision downgrade under strict policy: output 'b' appears computed in bfloat16 (declared float32): error vs fp64 oracle ")
    assert f"ratio {coarse.ratio:.3g}x" in message or "ratio inf" in message
    passed, note = judge({"a": fine, "b": coarse}, "relaxed")
    assert passed and note.startswith("precision (relaxed, accepted): apparent precision 'b' bfloat16; output 'b' appears computed in bfloat16")
    with pytest.raises(ValueError, match="unknown precision policy"):
        judge({"a": fine}, "auto")


# --- the calibration table -----------------------------------------------------------------------------


def calibration_table() -> str:
    lines = [f"{'scenario':44s} {'kind':9s} {'sol err/u':>10s} {'ref err/u':>10s} {'ratio':>9s} {'flag':>5s}  apparent"]
    for kind, scenarios in (("legit", LEGIT), ("downgrade", DOWNGRADES), ("blind", BLIND_SPOTS)):
        for scenario in scenarios:
            a = measured(scenario)
            ratio = "inf" if math.isinf(a.ratio) else f"{a.ratio:.3g}"
            lines.append(f"{scenario.name:44s} {kind:9s} {a.solution_error / U32:10.1f} {a.reference_error / U32:10.2f}"
                         f" {ratio:>9s} {str(a.downgraded):>5s}  {a.apparent_precision}")
    legit = [measured(s) for s in LEGIT]
    downgrades = [measured(s) for s in DOWNGRADES]
    for binds, criterion in ((True, "floor binds (K x ref err < floor)"), (False, "ratio binds (K x ref err >= floor)")):
        lg = [a for a in legit if floor_binds(a) == binds]
        dg = [a for a in downgrades if floor_binds(a) == binds]
        lines.append(f"{criterion}: {len(lg)} legit, {len(dg)} downgrades")
        lines.append(f"  error/u: legit max {max(a.solution_error for a in lg) / U32:.1f} | floor {FLOOR_UNITS:g}"
                     f" | downgrade min {min(a.solution_error for a in dg) / U32:.1f}")
        lines.append(f"  ratio:   legit max {max(a.ratio for a in lg):.3g} | K {RATIO_LIMIT:g}"
                     f" | downgrade min {min(a.ratio for a in dg):.3g}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(calibration_table())
