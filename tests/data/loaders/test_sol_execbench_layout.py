"""The public SOL-ExecBench layout, read unchanged: the conformance fixture in
tests/fixtures/sol_execbench_layout (a dataset of subset folders L1, L2, Quant, FlashInfer-Bench), one
problem per convention of that data:

- 001: integer literals written as strings of digits in shapes ("1");
- 002: a non-deterministic reference (index_add in bf16) and the default tolerance (ratio 0.99);
- 003: Python scalars given as {type: random} and {type: custom} (a 0-d tensor from the entry point);
- 004-008: the input profile's name rules (causal attention_mask, cos/sin, masks, statistics, SSM
  decays, softmax outputs, weight matrices, integer ranges);
- 009: workloads naming inputs and an axis the definition lacks, and the required_match_ratio alias;
- 010: a tolerance that gives only allow_negative_inf;
- 011/012: the packed dtype float4_e2m1fn_x2 (physical shapes) as input and as output;
- 013: fp8 inputs, a Python scalar and a 0-d tensor scale; 014: solbench's logical float4_e2m1;
- 015: safetensors inputs whose blobs are absent (an error, or --synthesize-missing-blobs);
- 016: a backward problem that differentiates inside run (torch.autograd.grad).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.dtypes import DType
from solbench.data.loaders import load_problems, scan, write_problem_folder
from solbench.data.problem import check_problem
from solbench.data.profiles import resolve_profile

LAYOUT = Path(__file__).resolve().parents[2] / "fixtures" / "sol_execbench_layout"
BLOBS_ABSENT = "015_paged_decode_blobs_published_separately"
SUBSETS = {"L1": 8, "L2": 3, "Quant": 4, "FlashInfer-Bench": 1}


@pytest.fixture(scope="module")
def loaded():
    return {item.path.name: item for item in scan(LAYOUT)}


@pytest.fixture(scope="module")
def problems(loaded):
    return {name: item.problem for name, item in loaded.items() if item.problem is not None}


def test_every_problem_but_the_one_without_its_blobs_loads(loaded):
    assert len(loaded) == sum(SUBSETS.values())
    refused = {name for name, item in loaded.items() if not item.ok}
    assert refused == {BLOBS_ABSENT}
    counts = {subset: sum(1 for item in loaded.values() if item.subset == subset) for subset in SUBSETS}
    assert counts == SUBSETS


def test_missing_blobs_name_the_file_and_the_flag(loaded):
    errors = loaded[BLOBS_ABSENT].errors
    assert len(errors) == 6  # three blob inputs on two workload lines
    first = errors[0]
    assert first.line == 1 and first.field == "inputs.kv_indptr.path"
    assert "blob/workloads/paged_decode/015/kv_indptr_0.safetensors' does not exist" in first.message
    assert "--synthesize-missing-blobs" in first.message


def test_with_synthesis_every_problem_loads_and_the_blobs_are_warnings():
    found = scan(LAYOUT, synthesize_missing_blobs=True)
    assert all(item.ok for item in found), [str(i) for item in found for i in item.errors]
    blob = next(item for item in found if item.path.name == BLOBS_ABSENT)
    assert blob.problem.synthesize_missing_blobs
    assert {i.severity for i in blob.issues} == {"warning"}
    assert all("synthesized from the definition" in i.message for i in blob.issues)


def test_string_digits_in_shapes_are_integers(problems):
    definition = problems["001_rmsnorm_string_literal_shapes"].definition
    hidden = definition.inputs["hidden_states"]
    assert hidden.shape == ["batch_size", "1", "hidden_size"]  # the file's spelling is kept
    assert hidden.dims == ["batch_size", 1, "hidden_size"]
    assert hidden.resolve_shape({"batch_size": 3, "hidden_size": 256}) == (3, 1, 256)
    assert definition.inputs["norm_weight"].axis_names == ["hidden_size"]


def test_the_layout_gets_the_sol_execbench_profile_and_relaxed_policy(problems):
    from solbench.sol.api import policy_for

    for problem in problems.values():
        assert resolve_profile(problem) == "sol-execbench", problem.name
        assert policy_for(problem) == "relaxed", problem.name


def test_quirks_are_warnings_given_once_per_problem(loaded):
    item = loaded["009_linear_gelu_with_data_quirks"]
    assert item.ok and item.errors == []
    warnings = [(i.line, i.field, i.message) for i in item.warnings]
    assert len(warnings) == 4, warnings  # alias, unknown axis, two unknown inputs: each once, at its first line
    assert all(line == 1 for line, _, _ in warnings)
    assert {field for _, field, _ in warnings} == {None, "axes.is_joint_block", "inputs.bias1", "inputs.bias2"}
    assert all(message.endswith("(and on 2 more lines)") for _, _, message in warnings)
    assert any("required_match_ratio read as required_matched_ratio" in message for _, _, message in warnings)


def test_quirky_workloads_still_give_the_right_axes_and_tolerance(problems):
    problem = problems["009_linear_gelu_with_data_quirks"]
    workload = problem.workloads[0]
    assert problem.axes(workload) == {"tokens": 16, "in_features": 128, "out_features": 256}
    assert workload.effective_tolerance.required_matched_ratio == 0.99
    assert check_problem(problem) != []  # only warnings
    assert all(i.severity == "warning" for i in check_problem(problem))


@pytest.mark.parametrize(("problem", "index", "expected"), [
    ("001_rmsnorm_string_literal_shapes", 0, (1e-2, 1e-2, 0.99, False)),  # no tolerance at all
    ("001_rmsnorm_string_literal_shapes", 1, (1e-2, 1e-2, 0.99, False)),  # only allow_negative_inf
    ("001_rmsnorm_string_literal_shapes", 2, (1e-2, 1e-2, 0.999, False)),
    ("010_masked_log_softmax_negative_inf", 0, (1e-2, 1e-2, 0.99, True)),
    ("004_attention_with_causal_mask_and_rope", 1, (1e-3, 1e-3, 0.99, False)),  # the ratio omitted
])
def test_tolerance_defaults_of_the_layout(problems, problem, index, expected):
    tolerance = problems[problem].workloads[index].effective_tolerance
    assert (tolerance.max_atol, tolerance.max_rtol, tolerance.required_matched_ratio, tolerance.allow_negative_inf) == expected


def test_packed_fp4_dtype_keeps_physical_shapes(problems):
    gemm = problems["011_nvfp4_block_scaled_gemm"]
    a = gemm.definition.inputs["a"]
    assert a.dtype == DType.float4_e2m1fn_x2
    axes = gemm.axes(gemm.workloads[0])
    assert axes["K_half"] == 128 and a.resolve_shape(axes) == (16, 128)
    logical = problems["014_fp4_logical_shapes"].definition.inputs["x"]
    assert logical.dtype == DType.float4_e2m1  # both spellings are first-class


def test_scalar_inputs_may_be_random_or_custom(problems):
    problem = problems["003_scalar_inputs_random_and_custom"]
    kinds = {name: spec.type for name, spec in problem.workloads[0].inputs.items()}
    assert kinds == {"x": "random", "scale": "random", "offset": "custom", "steps": "random", "clip": "scalar"}


def test_files_are_written_back_unchanged(problems, tmp_path):
    for name in ("001_rmsnorm_string_literal_shapes", "009_linear_gelu_with_data_quirks", "011_nvfp4_block_scaled_gemm"):
        problem = problems[name]
        target = tmp_path / name
        write_problem_folder(problem, target)
        assert json.loads((target / "definition.json").read_text()) == json.loads((problem.source / "definition.json").read_text())
        assert _lines(target / "workload.jsonl") == _lines(problem.source / "workload.jsonl")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_load_problems_with_synthesis_returns_all():
    assert len(load_problems([LAYOUT], synthesize_missing_blobs=True)) == sum(SUBSETS.values())


def _validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solbench.cli", "validate", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})


def test_validate_prints_a_line_per_subset_and_per_refused_problem():
    done = _validate(str(LAYOUT))
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "L1: 8 of 8 valid (20 workloads)" in lines
    assert "L2: 3 of 3 valid (7 workloads); 1 with warnings" in lines
    assert "Quant: 4 of 4 valid (8 workloads)" in lines
    assert "FlashInfer-Bench: 0 of 1 valid (0 workloads)" in lines
    refused = [line for line in lines if line.startswith("refused: ")]
    (line,) = refused  # its six missing blobs counted in one line, with the flag
    assert "6 safetensors files named by 2 workload lines do not exist" in line and "--synthesize-missing-blobs" in line and "more error" not in line
    # stderr: one line per error, the warnings once per problem
    assert sum("does not exist" in line for line in done.stderr.splitlines()) == 6
    assert sum("required_match_ratio" in line for line in done.stderr.splitlines()) == 1


def test_validate_with_synthesis_accepts_the_whole_layout():
    done = _validate(str(LAYOUT), "--synthesize-missing-blobs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FlashInfer-Bench: 1 of 1 valid (2 workloads); 1 with warnings" in done.stdout.splitlines()
