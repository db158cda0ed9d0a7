"""hidden_workloads: fresh workloads drawn from the published axis ranges, unseen by any solution."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from solbench.data.definition import Definition
from solbench.data.hidden import (
    UNALIGNED_PREFIX,
    unaligned_workload,
    ALIGNMENT_CAP,
    AxisRange,
    HiddenWorkloads,
    axis_ranges,
    footprint_bytes,
    hidden_workloads,
    shared_alignment,
)
from solbench.data.inline import inline_problem
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems, load_solution
from solbench.data.problem import Problem, check_problem, check_workload
from solbench.data.reference import reference_module
from solbench.data.workload import ScalarInput, Workload

REPO = Path(__file__).resolve().parents[2]
BUNDLED_DIR = REPO / "src" / "solbench" / "dataset" / "problems"
EXPLOITS_DIR = REPO / "tests" / "exploits"
BUNDLED = {p.name: p for p in load_problems([BUNDLED_DIR])}
UUID_PATTERN = re.compile(r"^hidden-(\d+)-[0-9a-f]{10,}$")


def published_values(problem: Problem, axis: str) -> list[int]:
    return [w.axes[axis] for w in problem.workloads]


def scalar_values(workloads: list[Workload], name: str) -> list[float]:
    return [w.inputs[name].value for w in workloads]  # type: ignore[union-attr]


def assert_all_valid(problem: Problem, drawn: HiddenWorkloads) -> None:
    for workload in drawn.workloads:
        assert check_workload(problem.definition, workload, problem.root) == [], workload.uuid
    together = dataclasses.replace(problem, workloads=problem.workloads + drawn.workloads, workload_lines=[])
    assert check_problem(together) == []  # no uuid repeats a published or another hidden one


def var_problem(axis_values: list[dict[str, int]], *, constraints: list[str] | None = None, scalars: dict[str, Any] | None = None,
                name: str = "hidden_test") -> Problem:
    """Inline problem: x[M, N] (N only when the workloads bind it) and optional float scalar alpha."""
    axes = {axis: {"type": "var"} for axis in axis_values[0]}
    shape: list[int | str] = list(axis_values[0])
    inputs: dict[str, Any] = {"x": (shape, "float32")}
    signature = "x"
    if scalars:
        inputs.update({n: (None, "float32") for n in scalars})
        signature += ", " + ", ".join(scalars)
    problem = inline_problem(name, f"def run({signature}):\n    return x\n", inputs, {"y": (shape, "float32")}, axes=axes,
                             workload_axes=axis_values, scalars=scalars)
    if constraints:
        definition = Definition.model_validate({**problem.definition.model_dump(mode="json", exclude_unset=True), "constraints": constraints})
        problem = Problem(definition, problem.workloads)
        assert check_problem(problem) == []
    return problem


# --- the bundled problems ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_problem_gets_valid_hidden_workloads_in_range(name):
    problem = BUNDLED[name]
    drawn = hidden_workloads(problem, 8, seed=11)
    assert drawn.notes == []
    assert len(drawn.workloads) == 8
    assert_all_valid(problem, drawn)
    largest = max(footprint_bytes(problem.definition, w.axes) for w in problem.workloads)
    published_axes = [{a: w.axes[a] for a in problem.definition.var_axes} for w in problem.workloads]
    for workload in drawn.workloads:
        assert workload.axes not in published_axes
        assert footprint_bytes(problem.definition, workload.axes) <= largest
        for axis in problem.definition.var_axes:
            values = published_values(problem, axis)
            value = workload.axes[axis]
            assert min(values) <= value <= max(values), (axis, value)
            assert value % shared_alignment(values) == 0, (axis, value)
    for axis in problem.definition.var_axes:  # every bundled var axis spans a range with room for new values
        drawn_values = {w.axes[axis] for w in drawn.workloads}
        assert drawn_values - set(published_values(problem, axis)), axis


def test_bundled_alignments_are_the_shared_power_of_two():
    ranges = {name: axis_ranges(p.definition, p.workloads) for name, p in BUNDLED.items()}
    assert ranges["gqa_decode_llama3_8b"]["seq_len"] == AxisRange(128, 8192, 64, frozenset({128, 256, 512, 1024, 2048, 4096, 8192}))
    assert ranges["gqa_decode_llama3_8b"]["batch_size"].step == 1
    assert ranges["softmax_vit_large_attention"]["seq_len"] == AxisRange(197, 577, 1, frozenset({197, 577}))
    assert ranges["fp8_gemm_llama3_8b_down_proj"]["M"].step == 1  # M = 1 is published


def test_bundled_hidden_eps_is_perturbed_and_other_fields_copied():
    problem = BUNDLED["rmsnorm_llama3_8b"]
    drawn = hidden_workloads(problem, 10, seed=5)
    by_uuid = {w.uuid: w for w in problem.workloads}
    for workload in drawn.workloads:
        eps = workload.inputs["eps"].value  # type: ignore[union-attr]
        assert 0.5e-5 <= eps <= 1.5e-5 and abs(eps - 1e-5) >= 1e-7
        template = by_uuid[drawn.templates[workload.uuid]]
        assert workload.tolerance == template.tolerance
        assert workload.inputs["hidden_states"] == template.inputs["hidden_states"]
    assert len({w.inputs["eps"].value for w in drawn.workloads}) == 10  # type: ignore[union-attr]


# --- determinism ------------------------------------------------------------------------------


def test_same_seed_gives_the_same_draws_and_another_seed_others():
    problem = BUNDLED["gqa_decode_llama3_8b"]
    first = hidden_workloads(problem, 6, seed=3)
    again = hidden_workloads(problem, 6, seed=3)
    other = hidden_workloads(problem, 6, seed=4)
    assert [w.to_json_dict() for w in first.workloads] == [w.to_json_dict() for w in again.workloads]
    assert first.templates == again.templates
    assert [w.axes for w in first.workloads] != [w.axes for w in other.workloads]
    assert {w.uuid for w in first.workloads}.isdisjoint(w.uuid for w in other.workloads)


def test_a_larger_count_only_adds_draws_at_the_end():
    problem = BUNDLED["softmax_vit_large_attention"]
    three = hidden_workloads(problem, 3, seed=9)
    six = hidden_workloads(problem, 6, seed=9)
    assert [w.to_json_dict() for w in six.workloads[:3]] == [w.to_json_dict() for w in three.workloads]


def test_uuids_name_the_index_and_are_unique():
    problem = BUNDLED["rope_llama3_8b"]
    drawn = hidden_workloads(problem, 12, seed=0)
    indices = [int(UUID_PATTERN.match(w.uuid).group(1)) for w in drawn.workloads]  # type: ignore[union-attr]
    assert indices == list(range(12))
    assert len({w.uuid for w in drawn.workloads}) == 12


def test_hidden_draws_are_distinct_where_the_range_allows():
    problem = var_problem([{"M": 16}, {"M": 1024}])
    drawn = hidden_workloads(problem, 20, seed=2)
    assert len({w.axes["M"] for w in drawn.workloads}) == 20


def test_no_count_gives_nothing_and_a_negative_one_is_refused():
    problem = BUNDLED["rmsnorm_llama3_8b"]
    assert hidden_workloads(problem, 0, seed=1) == HiddenWorkloads()
    with pytest.raises(ValueError, match="count must be >= 0"):
        hidden_workloads(problem, -1, seed=1)


# --- var axes: range, alignment, degenerate axes ----------------------------------------------


def test_values_avoid_the_published_ones_and_keep_their_alignment():
    problem = var_problem([{"M": 16}, {"M": 48}, {"M": 1024}])
    drawn = hidden_workloads(problem, 30, seed=1)
    values = [w.axes["M"] for w in drawn.workloads]
    assert all(v % 16 == 0 and 16 <= v <= 1024 and v not in {16, 48, 1024} for v in values)
    assert any(v % 32 for v in values)  # 16 is the shared alignment, not more


def test_alignment_is_capped_at_64():
    problem = var_problem([{"M": 128}, {"M": 256}, {"M": 2048}])
    values = [w.axes["M"] for w in hidden_workloads(problem, 30, seed=1).workloads]
    assert all(v % ALIGNMENT_CAP == 0 for v in values)
    assert any(v % 128 for v in values)


@pytest.mark.parametrize(("values", "expected"), [([16, 48, 1024], 16), ([3, 7], 1), ([128, 4096], 64), ([0, 24], 8), ([0], 64)])
def test_shared_alignment(values, expected):
    assert shared_alignment(values) == expected


def test_odd_published_values_allow_any_value():
    problem = var_problem([{"M": 3}, {"M": 7}])
    values = {w.axes["M"] for w in hidden_workloads(problem, 10, seed=1).workloads}
    assert values == {4, 5, 6}


def test_single_published_value_draws_smaller_values_only():
    problem = var_problem([{"M": 100}])  # alignment 4: multiples of 4 in [50, 100]
    values = [w.axes["M"] for w in hidden_workloads(problem, 12, seed=1).workloads]
    assert all(52 <= v <= 96 and v % 4 == 0 for v in values)


def test_single_published_value_kept_when_nothing_smaller_keeps_its_alignment():
    # 64 is a multiple of 64; [32, 64] holds no other multiple of 64, and no float scalar can differ
    problem = var_problem([{"M": 64}])
    drawn = hidden_workloads(problem, 3, seed=1)
    assert drawn.workloads == []
    assert drawn.notes == ["hidden_test: no var axis can take a value other than the published ones, and no float scalar input "
                           "can take another value; hidden workloads 0, 1, 2 skipped"]


def test_axis_fixed_at_one_stays_and_the_other_axis_varies():
    problem = var_problem([{"B": 1, "N": 64}, {"B": 1, "N": 512}])
    drawn = hidden_workloads(problem, 10, seed=1)
    assert drawn.notes == []
    assert all(w.axes["B"] == 1 and w.axes["N"] not in {64, 512} and w.axes["N"] % 64 == 0 for w in drawn.workloads)


def test_fixed_axes_fall_back_to_published_axes_with_another_scalar():
    problem = var_problem([{"M": 1}], scalars={"alpha": 2.0})
    drawn = hidden_workloads(problem, 2, seed=1)
    assert [w.axes for w in drawn.workloads] == [{"M": 1}, {"M": 1}]
    assert all(w.inputs["alpha"].value != 2.0 for w in drawn.workloads)  # type: ignore[union-attr]
    assert drawn.notes == ["hidden_test: no var axis can take a value other than the published ones; hidden workloads "
                           "0 (axes of hidden_test-0), 1 (axes of hidden_test-0) reuse published axes with other float scalars"]
    assert_all_valid(problem, drawn)


def test_problem_without_var_axes_varies_its_float_scalars_or_gives_none():
    reference = "def run(x, alpha):\n    return x * alpha\n"
    with_scalar = inline_problem("no_axes", reference, {"x": ([4], "float32"), "alpha": (None, "float32")}, {"y": ([4], "float32")},
                                 scalars={"alpha": 0.25})
    drawn = hidden_workloads(with_scalar, 3, seed=1)
    assert [w.axes for w in drawn.workloads] == [{}, {}, {}]
    assert all(0.125 <= w.inputs["alpha"].value <= 0.375 for w in drawn.workloads)  # type: ignore[union-attr]
    assert drawn.notes[0].startswith("no_axes: the problem has no var axis; hidden workloads 0 (axes of no_axes-0)")
    plain = inline_problem("plain", "def run(x):\n    return x\n", {"x": ([4], "float32")}, {"y": ([4], "float32")})
    assert hidden_workloads(plain, 3, seed=1).workloads == []


def test_packed_fp4_axis_stays_even():
    problem = inline_problem("fp4", "def run(q):\n    return q\n", {"q": (["M", "K"], "float4_e2m1")}, {"y": (["M"], "float32")},
                             axes={"M": {"type": "var"}, "K": {"type": "var"}}, workload_axes=[{"M": 3, "K": 2}, {"M": 9, "K": 126}])
    drawn = hidden_workloads(problem, 10, seed=1)
    assert all(w.axes["K"] % 2 == 0 for w in drawn.workloads)
    assert_all_valid(problem, drawn)


# --- constraints and the size limit ------------------------------------------------------------


def test_divisibility_constraint_holds():
    problem = var_problem([{"M": 16, "N": 64}, {"M": 32, "N": 256}, {"M": 8, "N": 512}], constraints=["N % M == 0"])
    drawn = hidden_workloads(problem, 15, seed=1)
    assert drawn.notes == [] and len(drawn.workloads) == 15
    for workload in drawn.workloads:
        assert workload.axes["N"] % workload.axes["M"] == 0
        assert (workload.axes["M"], workload.axes["N"]) not in {(16, 64), (32, 256), (8, 512)}
    assert_all_valid(problem, drawn)


def test_ordering_constraint_holds():
    problem = var_problem([{"M": 8, "N": 1024}, {"M": 512, "N": 512}, {"M": 64, "N": 128}], constraints=["M <= N"])
    drawn = hidden_workloads(problem, 15, seed=1)
    assert len(drawn.workloads) == 15
    assert all(w.axes["M"] <= w.axes["N"] for w in drawn.workloads)


def test_equality_constraint_is_met_by_joint_draws():
    problem = var_problem([{"M": 16, "N": 16}, {"M": 64, "N": 64}], constraints=["M == N"])
    drawn = hidden_workloads(problem, 6, seed=1)
    assert drawn.notes == []
    assert all(w.axes["M"] == w.axes["N"] and w.axes["M"] in {32, 48} for w in drawn.workloads)


def test_constraint_that_only_published_values_meet_falls_back_or_skips():
    axes = [{"M": 16}, {"M": 64}]
    without_scalar = hidden_workloads(var_problem(axes, constraints=["M == 16 or M == 64"]), 2, seed=1)
    assert without_scalar.workloads == []
    assert without_scalar.notes == ["hidden_test: no draw of fresh axes met the constraints and the size limit in 200 tries, and no "
                                    "float scalar input can take another value; hidden workloads 0, 1 skipped"]
    problem = var_problem(axes, constraints=["M == 16 or M == 64"], scalars={"alpha": -0.5})
    drawn = hidden_workloads(problem, 4, seed=1)
    assert len(drawn.workloads) == 4 and len(drawn.notes) == 1
    for workload in drawn.workloads:
        assert workload.axes["M"] in {16, 64}
        assert -0.75 <= workload.inputs["alpha"].value <= -0.25 and workload.inputs["alpha"].value != -0.5  # type: ignore[union-attr]
    assert_all_valid(problem, drawn)


def test_joint_size_stays_within_the_largest_published_workload():
    # independent draws of M and N would reach 1024 x 1024; the largest published workload has 1024 x 16 elements
    problem = var_problem([{"M": 16, "N": 1024}, {"M": 1024, "N": 16}])
    drawn = hidden_workloads(problem, 20, seed=1)
    assert len(drawn.workloads) == 20
    assert all(w.axes["M"] * w.axes["N"] <= 1024 * 16 for w in drawn.workloads)


def test_expression_axes_and_constraints_of_gqa_hold():
    problem = BUNDLED["gqa_decode_llama3_8b"]
    for workload in hidden_workloads(problem, 10, seed=2).workloads:
        resolved = problem.axes(workload)
        assert resolved["group_size"] == 4 and resolved["num_qo_heads"] == resolved["num_kv_heads"] * resolved["group_size"]


# --- scalars ----------------------------------------------------------------------------------


def test_scalar_drawn_within_the_published_range():
    problem = var_problem([{"M": 16}, {"M": 64}, {"M": 256}], scalars={"alpha": 0.5})
    problem.workloads[1] = problem.workloads[1].model_copy(update={"inputs": {**problem.workloads[1].inputs,
                                                                             "alpha": ScalarInput(type="scalar", value=2.0)}})
    values = scalar_values(hidden_workloads(problem, 20, seed=1).workloads, "alpha")
    assert all(0.5 <= v <= 2.0 and v not in {0.5, 2.0} for v in values)
    assert len(set(values)) == 20


def test_int_and_bool_scalars_keep_their_published_values_and_zero_stays_zero():
    definition = Definition.model_validate({
        "name": "scalars", "axes": {"M": {"type": "var"}},
        "inputs": {"x": {"shape": ["M"], "dtype": "float32"}, "k": {"shape": None, "dtype": "int64"},
                   "flag": {"shape": None, "dtype": "bool"}, "beta": {"shape": None, "dtype": "float64"},
                   "gamma": {"shape": [], "dtype": "float16"}},
        "outputs": {"y": {"shape": ["M"], "dtype": "float32"}},
        "reference": "def run(x, k, flag, beta, gamma):\n    return x\n",
    })
    workloads = [Workload.model_validate({"uuid": f"s-{m}", "axes": {"M": m}, "inputs": {
        "x": {"type": "random"}, "k": {"type": "scalar", "value": 2}, "flag": {"type": "scalar", "value": True},
        "beta": {"type": "scalar", "value": 0.0}, "gamma": {"type": "scalar", "value": 3}}}) for m in (8, 512)]
    problem = Problem(definition, workloads)
    drawn = hidden_workloads(problem, 10, seed=1)
    assert_all_valid(problem, drawn)
    for workload in drawn.workloads:
        assert workload.inputs["k"] == ScalarInput(type="scalar", value=2)
        assert workload.inputs["flag"] == ScalarInput(type="scalar", value=True)
        assert workload.inputs["beta"].value == 0.0  # type: ignore[union-attr]
        gamma = workload.inputs["gamma"].value  # type: ignore[union-attr]
        assert 1.5 <= gamma <= 4.5 and abs(gamma - 3) >= 0.03  # an int-valued float scalar is a float scalar


# --- templates: input descriptions, tolerance, safetensors -------------------------------------


def test_template_is_the_nearest_in_size_and_its_fields_are_copied():
    definition = Definition.model_validate({
        "name": "templates", "axes": {"M": {"type": "var"}},
        "inputs": {"x": {"shape": ["M"], "dtype": "float32"}, "idx": {"shape": ["M"], "dtype": "int32"},
                   "extra": {"shape": ["M"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["M"], "dtype": "float32"}},
        "reference": "def run(x, idx, extra):\n    return x\n\ndef make(axes, device):\n    return {}\n",
        "custom_inputs_entrypoint": "make",
    })
    small = Workload.model_validate({
        "uuid": "small", "axes": {"M": 16}, "note": "kept",
        "inputs": {"x": {"type": "random", "distribution": {"kind": "uniform", "low": -1.0, "high": 1.0}},
                   "idx": {"type": "random", "distribution": {"kind": "integers", "low": 0, "high": "M"}}, "extra": {"type": "custom"}},
        "tolerance": {"max_atol": 0.1, "max_rtol": 0.0},
    })
    large = Workload.model_validate({
        "uuid": "large", "axes": {"M": 65536},
        "inputs": {"x": {"type": "random"}, "idx": {"type": "random"}, "extra": {"type": "custom"}},
        "tolerance": {"max_atol": 0.5, "max_rtol": 0.25},
    })
    problem = Problem(definition, [small, large])
    drawn = hidden_workloads(problem, 30, seed=1)
    assert_all_valid(problem, drawn)
    by_uuid = {"small": small, "large": large}
    for workload in drawn.workloads:
        m = workload.axes["M"]
        nearest = "small" if abs(math.log1p(16 * 16) - math.log1p(m * 16)) <= abs(math.log1p(65536 * 16) - math.log1p(m * 16)) else "large"
        assert drawn.templates[workload.uuid] == nearest, m
        template = by_uuid[nearest]
        assert workload.tolerance == template.tolerance
        assert workload.inputs == template.inputs
        assert workload.to_json_dict().get("note") == template.to_json_dict().get("note")
    assert set(drawn.templates.values()) == {"small", "large"}


@pytest.fixture
def blob(tmp_path: Path) -> Path:
    save_file({"x8": torch.zeros(8), "x64": torch.zeros(64)}, str(tmp_path / "data.safetensors"))
    return tmp_path


def safetensors_problem(root: Path, random_sizes: list[int]) -> Problem:
    definition = Definition.model_validate({
        "name": "fixed_data", "axes": {"M": {"type": "var"}}, "inputs": {"x": {"shape": ["M"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["M"], "dtype": "float32"}}, "reference": "def run(x):\n    return x\n",
    })
    workloads = [Workload.model_validate({"uuid": f"st-{m}", "axes": {"M": m},
                                          "inputs": {"x": {"type": "safetensors", "path": "data.safetensors", "tensor_key": f"x{m}"}}})
                 for m in (8, 64)]
    workloads += [Workload.model_validate({"uuid": f"rand-{m}", "axes": {"M": m}, "inputs": {"x": {"type": "random"}}}) for m in random_sizes]
    problem = Problem(definition, workloads, root=root)
    assert check_problem(problem) == []
    return problem


def test_safetensors_only_problem_gets_no_hidden_workload(blob):
    drawn = hidden_workloads(safetensors_problem(blob, []), 4, seed=1)
    assert drawn.workloads == []
    assert drawn.notes == ["fixed_data: every workload reads safetensors inputs (fixed data of fixed shapes); no hidden workload can be drawn"]


def test_safetensors_workloads_are_no_template_but_their_sizes_count_as_published(blob):
    problem = safetensors_problem(blob, [32])
    drawn = hidden_workloads(problem, 10, seed=1)
    assert_all_valid(problem, drawn)
    assert set(drawn.templates.values()) == {"rand-32"}
    assert all(w.inputs == {"x": problem.workloads[2].inputs["x"]} for w in drawn.workloads)
    assert {w.axes["M"] for w in drawn.workloads} <= {16, 24, 40, 48, 56}


# --- the hard-coding exploits of the corpus ---------------------------------------------------


def exploit_problem_and_run(sample: str) -> tuple[Problem, Any]:
    """The problem a corpus sample names (through the corpus manifest) and its run function."""
    solution = load_solution(EXPLOITS_DIR / sample)
    manifest = json.loads((EXPLOITS_DIR / "manifest.json").read_text(encoding="utf-8"))
    (problem,) = load_problems([EXPLOITS_DIR / manifest["problems"][solution.definition]])
    namespace: dict[str, Any] = {}
    exec(compile(solution.sources[0].content, sample, "exec"), namespace)  # a small, known corpus sample
    return problem, namespace["run"]


def exploit_output_is_correct(problem: Problem, run: Any, workload: Workload) -> bool:
    inputs = generate_inputs(problem, workload, seed=0)
    expected = reference_module(problem.definition).run(**inputs)
    out = torch.empty_like(expected)
    run(**inputs, y=out)
    return torch.allclose(out, expected, atol=1e-5, rtol=1e-5)


def test_hardcoded_shapes_exploit_meets_sizes_it_does_not_know():
    problem, run = exploit_problem_and_run("12_hardcoded_shapes.json")
    assert problem.name == "vector_scale"
    drawn = hidden_workloads(problem, 8, seed=1)
    assert len(drawn.workloads) == 8 and drawn.notes == []
    assert all(w.axes["N"] not in {16, 64, 1000} and 16 <= w.axes["N"] <= 1000 and w.axes["N"] % 8 == 0 for w in drawn.workloads)
    assert all(exploit_output_is_correct(problem, run, w) for w in problem.workloads)  # it passes what is published
    assert not any(exploit_output_is_correct(problem, run, w) for w in drawn.workloads)


def test_hardcoded_scalar_exploit_meets_other_scalars():
    problem, run = exploit_problem_and_run("12_hardcoded_scalar.json")
    assert scalar_values(problem.workloads, "alpha") == [2.5, 2.5, 2.5]
    drawn = hidden_workloads(problem, 8, seed=1)
    assert all(1.25 <= v <= 3.75 and abs(v - 2.5) >= 0.025 for v in scalar_values(drawn.workloads, "alpha"))
    assert all(exploit_output_is_correct(problem, run, w) for w in problem.workloads)
    assert not any(exploit_output_is_correct(problem, run, w) for w in drawn.workloads)


def test_legit_matmul_problem_gets_new_aligned_shapes():
    (problem,) = load_problems([EXPLOITS_DIR / "problems" / "matmul_fp32"])
    drawn = hidden_workloads(problem, 6, seed=1)
    assert_all_valid(problem, drawn)
    for workload in drawn.workloads:
        assert (workload.axes["M"], workload.axes["N"], workload.axes["K"]) not in {(64, 64, 64), (128, 96, 256)}
        assert workload.axes["M"] % 64 == 0 and workload.axes["N"] % 32 == 0 and workload.axes["K"] % 64 == 0


def test_template_spelling_of_the_tolerance_is_kept_without_a_new_warning(recwarn):
    problem = var_problem([{"M": 16}, {"M": 64}])
    with pytest.warns(Warning):
        template = Workload.model_validate({**problem.workloads[0].to_json_dict(), "tolerance": {"required_match_ratio": 0.9}})
    problem.workloads[0] = template
    problem.workloads[1] = template.model_copy(update={"uuid": "other", "axes": {"M": 64}})
    recwarn.clear()
    drawn = hidden_workloads(problem, 3, seed=1)
    assert len(recwarn) == 0
    assert all(w.to_json_dict()["tolerance"] == {"required_match_ratio": 0.9} for w in drawn.workloads)
    assert all(w.effective_tolerance.required_matched_ratio == 0.9 for w in drawn.workloads)


# --- the unaligned workload -----------------------------------------------------------------------

STATUS = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"


def test_unaligned_workload_takes_aligned_axes_off_their_alignment():
    (problem,) = load_problems([STATUS / "vector_scale"])  # N in {16, 64, 1000}: a shared alignment of 8
    workload, why = unaligned_workload(problem, seed=7)
    assert workload is not None, why
    assert workload.uuid.startswith(UNALIGNED_PREFIX) and workload.axes == {"N": 15}
    assert check_workload(problem.definition, workload, problem.root) == []
    assert workload.inputs["alpha"].value == 2.5 and workload.tolerance == problem.workloads[0].tolerance  # the smallest template
    again, _ = unaligned_workload(problem, seed=7)
    assert again == workload
    assert unaligned_workload(problem, seed=8)[0].uuid != workload.uuid  # the uuid is no constant a solution could know


def test_no_unaligned_workload_where_the_alignment_is_declared_or_absent(tmp_path):
    definition = {
        "name": "aligned", "axes": {"N": {"type": "var"}}, "constraints": ["N % 16 == 0"],
        "inputs": {"x": {"shape": ["N"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
        "reference": "import torch\n\ndef run(x):\n    return x * 2\n",
    }
    workloads = [{"uuid": f"n{n}", "axes": {"N": n}, "inputs": {"x": {"type": "random"}}} for n in (16, 64)]
    declared = Problem(Definition.model_validate(definition), [Workload.model_validate(w) for w in workloads])
    assert unaligned_workload(declared, 1) == (None, "no var axis whose published values share an alignment of 8 or more (and none undeclared)")
    odd = Problem(Definition.model_validate({**definition, "constraints": []}),
                  [Workload.model_validate({**w, "axes": {"N": n}}) for w, n in zip(workloads, (12, 20))])
    assert unaligned_workload(odd, 1)[0] is None  # a shared alignment of 4 only
