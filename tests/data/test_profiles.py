"""Input profiles: the sol-execbench rules, one by one, checked on the values drawn (distribution
checks on large draws, with bounds that a wrong rule would miss by far), and how a profile is chosen."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from solbench.bench.correctness import decode_fp4
from solbench.data.definition import Definition
from solbench.data.dtypes import DType
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
from solbench.data.problem import Problem
from solbench.data.profiles import E2M1_VALUES, integer_range, name_rule, pack_e2m1, pairing_key, resolve_profile, sol_execbench_tensor
from solbench.data.workload import Workload

LAYOUT = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench_layout"
E2M1 = sorted({*E2M1_VALUES, *(-v for v in E2M1_VALUES)})


def draw(name: str, dtype: DType, shape: tuple[int, ...], description: str = "", seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return sol_execbench_tensor(name, dtype, shape, description, generator, torch.device("cpu"))


# --- which rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype", "shape", "rule"), [
    ("norm_weight", DType.bfloat16, (64,), "ones"),
    ("q_norm_weight", DType.float32, (64,), "ones"),
    ("input_layernorm_weight", DType.float32, (64,), "ones"),
    ("post_attention_layernorm_weight2", DType.float32, (64,), "ones"),
    ("norm_weight_1", DType.float32, (64,), "ones"),
    ("layer_norm_bias", DType.float32, (64,), "zeros"),
    ("final_layernorm_bias", DType.float32, (64,), "zeros"),
    ("attention_mask", DType.float32, (2, 1, 8, 8), "causal-mask"),
    ("causal_mask", DType.bool, (8, 8), "causal-mask"),
    ("attention_mask", DType.float32, (2, 8), "binary"),  # not square: a padding mask
    ("text_mask", DType.float32, (4, 5), "binary"),
    ("x_mask", DType.int64, (4, 5), "binary"),
    ("drop_mask", DType.bool, (4,), "binary"),
    ("keep_mask", DType.bool, (4,), None),  # *_mask only with a description that says binary
    ("cos", DType.float32, (8, 4), "cos"),
    ("sin_cached", DType.float32, (8, 4), "sin"),
    ("rope_cos", DType.bfloat16, (8, 4), "cos"),
    ("rstd", DType.float32, (8,), "positive"),
    ("ln_variance", DType.float32, (8,), "positive"),
    ("A", DType.float32, (8,), "uniform-by-name"),
    ("A_log", DType.float32, (8,), "uniform-by-name"),
    ("g", DType.float32, (8,), "uniform-by-name"),
    ("A_cumsum", DType.float32, (2, 8), "decay-cumsum"),
    ("attn_weights", DType.float32, (2, 4, 4), "softmax"),
    ("routing_weights", DType.bfloat16, (8, 2), "softmax"),
    ("weight", DType.bfloat16, (16, 32), "weight-matrix"),
    ("gate_proj", DType.bfloat16, (16, 32), "weight-matrix"),
    ("q_proj_weight", DType.float32, (16, 32), "weight-matrix"),
    ("expert_weights", DType.float32, (4, 16, 32), "weight-matrix"),
    ("weight", DType.float32, (32,), None),  # 1-D: not a matrix
    ("hidden_states", DType.bfloat16, (16, 32), None),
    ("norm_weight", DType.int32, (8,), None),  # name rules for values apply to floats only
])
def test_name_rules(name, dtype, shape, rule):
    assert name_rule(name, dtype, shape) == rule


def test_a_mask_described_as_binary_is_binary():
    for description in ("binary keep mask", "values in {0, 1}", "1 to keep, 0 or 1 elsewhere"):
        assert name_rule("keep_mask", DType.bool, (4,), description) == "binary"
    assert name_rule("keep_mask", DType.bool, (4,), "which rows to keep") is None


# --- what each rule draws -------------------------------------------------------------------------


def test_dtype_defaults_floats_standard_normal():
    values = draw("x", DType.float32, (200_000,))
    assert abs(values.mean().item()) < 0.01 and abs(values.std().item() - 1) < 0.01


def test_fp8_is_normal_clipped_to_two():
    for dtype in (DType.float8_e4m3fn, DType.float8_e5m2):
        values = draw("x", dtype, (100_000,)).to(torch.float32)
        assert values.abs().max().item() == 2.0
        assert 0.03 < (values.abs() == 2.0).float().mean().item() < 0.07  # P(|z| >= 2) = 4.6 %
        assert abs(values.std().item() - 0.95) < 0.05


@pytest.mark.parametrize(("dtype", "shape"), [(DType.float4_e2m1, (64, 512)), (DType.float4_e2m1fn_x2, (64, 256))])
def test_fp4_is_normal_rounded_to_e2m1(dtype, shape):
    packed = draw("x", dtype, shape)
    assert packed.dtype is torch.float4_e2m1fn_x2 and tuple(packed.shape) == (64, 256)
    values = decode_fp4(packed)
    assert set(values.unique().tolist()) <= set(E2M1)
    # nearest e2m1 value of a standard normal: P(0) = P(|z| < 0.25) = 19.7 %, P(+-6) = P(|z| > 5) ~ 0
    zero = (values == 0).double().mean().item()
    assert 0.17 < zero < 0.23
    assert (values.abs() == 1.0).double().mean().item() == pytest.approx(0.2417, abs=0.02)  # 0.75 < |z| < 1.25
    assert abs(values.mean().item()) < 0.02


def test_pack_e2m1_rounds_to_the_nearest_value_low_nibble_first():
    values = torch.tensor([[0.2, 0.3, -1.3, 2.6, 7.0, -0.1, 5.1, -4.9]])
    codes = pack_e2m1(values).view(torch.uint8)
    assert decode_fp4(pack_e2m1(values)).tolist() == [[0.0, 0.5, -1.5, 3.0, 6.0, 0.0, 6.0, -4.0]]
    assert codes[0, 0].item() == 0 | (1 << 4)  # 0.2 -> code 0 (low nibble), 0.3 -> code 1 (high nibble)


@pytest.mark.parametrize(("dtype", "low", "high"), [(DType.int8, -128, 128), (DType.int32, -1024, 1024), (DType.int64, -1024, 1024),
                                                     (DType.int16, -1024, 1024), (DType.uint8, 0, 256)])
def test_integers_are_uniform_in_the_harness_range(dtype, low, high):
    assert integer_range(dtype) == (low, high)
    values = draw("ids", dtype, (200_000,)).to(torch.int64)
    assert values.min().item() == low and values.max().item() == high - 1
    assert abs(values.double().mean().item() - (low + high - 1) / 2) < (high - low) * 0.01


def test_bool_is_a_fair_coin():
    values = draw("flag", DType.bool, (100_000,))
    assert values.dtype is torch.bool and abs(values.float().mean().item() - 0.5) < 0.01


def test_norm_weights_ones_and_biases_zeros():
    assert torch.equal(draw("norm_weight", DType.bfloat16, (7,)), torch.ones(7, dtype=torch.bfloat16))
    assert torch.equal(draw("input_layernorm_weight", DType.float32, (7,)), torch.ones(7))
    assert torch.equal(draw("layernorm_bias", DType.float32, (7,)), torch.zeros(7))


@pytest.mark.parametrize("dtype", [DType.float32, DType.bfloat16, DType.float16])
def test_causal_attention_mask_is_additive(dtype):
    mask = draw("attention_mask", dtype, (2, 1, 5, 5))
    lowest = torch.finfo(dtype.torch_dtype()).min
    for batch in range(2):
        square = mask[batch, 0]
        assert torch.equal(square.tril(), torch.zeros(5, 5, dtype=square.dtype))
        assert (square.triu(1)[torch.ones(5, 5, dtype=torch.bool).triu(1)] == lowest).all()


def test_causal_mask_of_bool_and_int_marks_allowed_positions():
    assert torch.equal(draw("causal_mask", DType.bool, (4, 4)), torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.equal(draw("attention_mask", DType.int64, (3, 3)), torch.ones(3, 3, dtype=torch.int64).tril())


def test_binary_masks_are_zero_or_one():
    for name, dtype in (("text_mask", DType.float32), ("x_mask", DType.int32), ("attention_mask", DType.bfloat16)):
        values = draw(name, dtype, (400, 50)).to(torch.float32)
        assert set(values.unique().tolist()) == {0.0, 1.0}
        assert abs(values.mean().item() - 0.5) < 0.02


def test_cos_and_sin_share_their_angles_when_drawn_as_inputs():
    assert pairing_key("cos") == pairing_key("sin") == "cos|sin"
    assert pairing_key("cos_cached") == pairing_key("sin_cached")
    assert pairing_key("rope_cos") == pairing_key("rope_sin") != pairing_key("cos")
    cos, sin = draw("cos", DType.float32, (4096,), seed=5), draw("sin", DType.float32, (4096,), seed=5)
    assert torch.allclose(cos**2 + sin**2, torch.ones(4096), atol=1e-6)
    angles = torch.atan2(sin, cos)
    assert angles.abs().max().item() <= math.pi + 1e-6
    assert abs(angles.std().item() - 0.99) < 0.05  # normal, clipped at +-pi


def test_positive_statistics():
    values = draw("rstd", DType.float32, (100_000,))
    assert values.min().item() >= 0.1
    assert values.mean().item() == pytest.approx(math.sqrt(2 / math.pi) + 0.1, abs=0.01)  # E|z| + 0.1


@pytest.mark.parametrize(("name", "low", "high"), [("A", -1.0, -0.001), ("A_log", -5.0, -1.0), ("g", -5.0, 0.0)])
def test_ssm_decays_are_uniform_in_their_ranges(name, low, high):
    values = draw(name, DType.float32, (100_000,))
    assert values.min().item() >= low and values.max().item() < high
    assert values.mean().item() == pytest.approx((low + high) / 2, abs=(high - low) * 0.01)


def test_a_cumsum_is_a_cumulative_sum_of_small_negative_steps():
    values = draw("A_cumsum", DType.float32, (64, 256))
    steps = torch.diff(values, dim=-1)
    assert (steps <= 1e-6).all() and (steps >= -0.1 - 1e-6).all()
    assert values[:, 0].max().item() <= 0 and values[:, 0].min().item() >= -0.1
    assert values[:, -1].mean().item() == pytest.approx(-0.05 * 256, rel=0.05)


def test_softmax_outputs_are_rows_of_probabilities():
    values = draw("attn_weights", DType.float32, (8, 16, 32))
    assert (values > 0).all()
    assert torch.allclose(values.sum(-1), torch.ones(8, 16), atol=1e-5)
    assert values.std().item() > 0.01  # softmax of normal logits, not uniform


@pytest.mark.parametrize(("name", "shape"), [("weight", (256, 1024)), ("up_proj", (512, 256)), ("experts_weights", (4, 64, 4096))])
def test_weight_matrices_are_scaled_by_the_fan_in(name, shape):
    values = draw(name, DType.float32, shape)
    assert values.std().item() == pytest.approx(1 / math.sqrt(shape[-1]), rel=0.02)


# --- choosing the profile -------------------------------------------------------------------------


def _problem(**definition_extra) -> Problem:
    definition = Definition.model_validate({
        "name": "profile_test", "axes": {"M": {"type": "var"}},
        "inputs": {"x": {"shape": ["M"], "dtype": "float32", **definition_extra.pop("x", {})}},
        "outputs": {"y": {"shape": ["M"], "dtype": "float32"}}, "reference": "def run(x):\n    return x\n", **definition_extra,
    })
    return Problem(definition, [Workload.model_validate({"uuid": "w", "axes": {"M": 4}, "inputs": {"x": {"type": "random"}}})])


def test_profile_by_origin():
    assert resolve_profile(_problem()) == "sol-execbench"
    assert resolve_profile(_problem(x={"distribution": {"kind": "normal"}})) == "plain"  # solbench's own conventions
    kernelbench = _problem()
    kernelbench.kind = "kernelbench"
    assert resolve_profile(kernelbench) == "plain"


def test_profile_by_definition_key_and_by_request():
    assert resolve_profile(_problem(input_profile="plain")) == "plain"
    assert resolve_profile(_problem(input_profile="plain"), "sol-execbench") == "sol-execbench"
    assert resolve_profile(_problem(), "plain") == "plain"
    assert resolve_profile(_problem(), "auto") == "sol-execbench"
    with pytest.raises(ValueError, match="unknown input profile 'fancy'"):
        resolve_profile(_problem(), "fancy")


def test_the_bundled_problems_that_declare_distributions_stay_plain():
    from solbench.dataset import bundled_problems_path

    problems = {p.name: p for p in load_problems([bundled_problems_path()])}
    assert resolve_profile(problems["embedding_llama3_8b"]) == "plain"  # its token ids declare their range


# --- through generate_inputs, on the layout's own problems -----------------------------------------


@pytest.fixture(scope="module")
def layout():
    return {p.name: p for p in load_problems([LAYOUT], synthesize_missing_blobs=True)}


def test_generated_inputs_follow_the_rules(layout):
    problem = layout["005_masks_and_statistics"]
    values = generate_inputs(problem, problem.workloads[1], seed=1)
    assert set(values["text_mask"].unique().tolist()) == {0.0, 1.0}
    assert values["keep_mask"].dtype is torch.bool and 0.45 < values["keep_mask"].float().mean().item() < 0.55
    assert values["rstd"].min().item() >= 0.1 and values["variance"].min().item() >= 0.1
    assert torch.equal(values["input_layernorm_weight"], torch.ones(64)) and torch.equal(values["layer_norm_bias"], torch.zeros(64))
    attention = layout["004_attention_with_causal_mask_and_rope"]
    inputs = generate_inputs(attention, attention.workloads[1], seed=1)
    assert torch.allclose(inputs["cos"] ** 2 + inputs["sin"] ** 2, torch.ones(512, 32), atol=1e-6)
    assert inputs["attention_mask"][0, 0, 0, 1].item() == torch.finfo(torch.float32).min and inputs["attention_mask"][0, 0, 1, 0].item() == 0


def test_a_random_python_scalar_is_one_draw_of_its_dtype(layout):
    problem = layout["003_scalar_inputs_random_and_custom"]
    workload = problem.workloads[0]
    first = generate_inputs(problem, workload, seed=2)
    assert isinstance(first["scale"], float) and isinstance(first["steps"], int)
    assert -1024 <= first["steps"] < 1024
    assert isinstance(first["offset"], float)  # the entry point's 0-d tensor, as a number
    assert isinstance(first["clip"], float) and first["clip"] == 3.0
    again = generate_inputs(problem, workload, seed=2)
    assert (again["scale"], again["steps"], again["offset"]) == (first["scale"], first["steps"], first["offset"])
    scales = {generate_inputs(problem, workload, seed=2, trial=t)["scale"] for t in range(8)}
    assert len(scales) == 8  # a fresh draw per trial


def test_a_profile_can_be_asked_for(layout):
    problem = layout["008_integer_and_bool_inputs"]
    harness = generate_inputs(problem, problem.workloads[1])["b"]
    plain = generate_inputs(problem, problem.workloads[1], profile="plain")["b"]
    assert harness.min().item() == -1024 and plain.min().item() == 0 and plain.max().item() == 127
