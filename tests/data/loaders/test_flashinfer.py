"""A tiny FlashInfer-Trace folder (tests/fixtures/flashinfer_trace/): definitions, trace-shaped workload lines,
safetensors blobs referenced relative to the folder root, a solution and traces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solbench.data import DType
from solbench.data.loaders import load_problems, load_solution, load_traces, scan
from solbench.data.trace import Status
from solbench.data.workload import RandomInput, SafetensorsInput

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "flashinfer_trace"
RMSNORM = ROOT / "definitions" / "rmsnorm" / "rmsnorm_h8.json"
GEMM = ROOT / "definitions" / "gemm" / "gemm_n16_k8.json"
RMSNORM_WORKLOADS = ROOT / "workloads" / "rmsnorm" / "rmsnorm_h8.jsonl"
BLOB = ROOT / "blob" / "workloads" / "rmsnorm" / "rmsnorm_h8"
SOLUTION = ROOT / "solutions" / "rmsnorm" / "rmsnorm_h8" / "rmsnorm_h8_torch.json"
TRACES = ROOT / "traces" / "rmsnorm" / "rmsnorm_h8.jsonl"


@pytest.fixture(scope="module")
def loaded():
    return scan(ROOT)


@pytest.fixture(scope="module")
def problems(loaded):
    return {item.problem.name: item.problem for item in loaded if item.problem is not None}


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_scan_lists_definitions_then_solutions_then_traces(loaded):
    assert [(item.path, item.kind) for item in loaded] == [
        (GEMM, "flashinfer"),
        (RMSNORM, "flashinfer"),
        (SOLUTION, "solution"),
        (TRACES, "traces"),
    ]
    assert all(item.issues == [] for item in loaded), [str(i) for item in loaded for i in item.issues]


def test_problems(problems):
    assert set(problems) == {"rmsnorm_h8", "gemm_n16_k8"}
    rmsnorm, gemm = problems["rmsnorm_h8"], problems["gemm_n16_k8"]
    for problem, source in ((rmsnorm, RMSNORM), (gemm, GEMM)):
        assert problem.kind == "flashinfer"
        assert problem.root == ROOT  # safetensors paths resolve against the folder root
        assert problem.source == source
    assert rmsnorm.definition.op_type == "rmsnorm" and gemm.definition.op_type == "gemm"
    assert rmsnorm.definition.var_axes == ["batch_size"]
    assert {n: (s.shape, s.dtype) for n, s in rmsnorm.definition.inputs.items()} == {
        "hidden_states": (["batch_size", "hidden_size"], DType.bfloat16),
        "weight": (["hidden_size"], DType.bfloat16),
    }
    assert list(gemm.definition.outputs) == ["C"]


def test_definition_is_kept_unchanged(problems):
    # unknown keys (here "tags") are kept, and writing gives back what was read
    assert problems["rmsnorm_h8"].definition.to_json_dict() == json.loads(RMSNORM.read_text())
    assert problems["gemm_n16_k8"].definition.to_json_dict() == json.loads(GEMM.read_text())


def test_workloads_from_trace_shaped_lines(problems):
    rmsnorm, gemm = problems["rmsnorm_h8"], problems["gemm_n16_k8"]
    assert [w.axes for w in gemm.workloads] == [{"M": 1}, {"M": 64}, {"M": 7}]
    assert gemm.workload_lines == [1, 2, 3]
    assert rmsnorm.workload_lines == [1, 2]
    rows = lines_of(RMSNORM_WORKLOADS)
    assert [w.to_json_dict() for w in rmsnorm.workloads] == [row["workload"] for row in rows]
    first, second = rmsnorm.workloads
    assert isinstance(first.inputs["hidden_states"], RandomInput)
    assert isinstance(first.inputs["weight"], SafetensorsInput)
    assert first.inputs["weight"].path == "blob/workloads/rmsnorm/rmsnorm_h8/rmsnorm_h8_weight.safetensors"
    assert second.inputs["hidden_states"].path.startswith("./blob/")  # the spelling found in the wild


def test_safetensors_inputs_are_loaded_from_the_blob(problems):
    import torch
    from safetensors.torch import load_file

    from solbench.data.inputs import generate_inputs

    problem = problems["rmsnorm_h8"]
    weight_file = load_file(str(BLOB / "rmsnorm_h8_weight.safetensors"))
    batch_file = load_file(str(BLOB / "rmsnorm_h8_b2.safetensors"))

    first = generate_inputs(problem, problem.workloads[0])
    assert first["hidden_states"].dtype == torch.bfloat16 and first["hidden_states"].shape == (5, 8)
    assert first["weight"].dtype == torch.bfloat16 and torch.equal(first["weight"], weight_file["weight"])

    second = generate_inputs(problem, problem.workloads[1])
    assert torch.equal(second["hidden_states"], batch_file["hidden_states"])
    assert torch.equal(second["weight"], batch_file["weight"])
    again = generate_inputs(problem, problem.workloads[1], trial=1)
    assert torch.equal(again["hidden_states"], second["hidden_states"])  # file data does not change per trial
    assert again["hidden_states"].data_ptr() != second["hidden_states"].data_ptr()  # but each call gets a fresh copy


def test_solution(loaded):
    solution = loaded[2].solution
    assert solution is not None and loaded[2].name == "rmsnorm_h8_torch"
    assert solution.definition == "rmsnorm_h8"
    assert solution.spec.entry_point == "main.py::run" and solution.spec.family == "python"
    assert solution.spec.destination_passing_style is True
    assert [s.path for s in solution.sources] == ["main.py"]
    assert solution.to_json_dict() == json.loads(SOLUTION.read_text())
    assert load_solution(SOLUTION) == solution


def test_traces(loaded, problems):
    traces = loaded[3].traces
    assert [t.evaluation.status for t in traces] == [Status.PASSED, Status.RUNTIME_ERROR]
    assert [t.solution for t in traces] == ["rmsnorm_h8_torch"] * 2
    assert [t.workload.uuid for t in traces] == [w.uuid for w in problems["rmsnorm_h8"].workloads]
    assert traces[0].evaluation.correctness.matched_ratio == 1.0
    assert traces[0].evaluation.performance.latency_ms == 0.0153
    assert "illegal memory access" in traces[1].evaluation.log
    assert [t.to_json_dict() for t in traces] == lines_of(TRACES)  # unknown keys (speedup_factor, libs) kept
    assert load_traces(TRACES) == traces


def test_scan_one_definition_file_finds_the_root_and_its_workloads():
    [item] = scan(RMSNORM)
    assert item.ok and item.kind == "flashinfer"
    assert item.problem.root == ROOT and len(item.problem.workloads) == 2


def test_scan_the_definitions_folder():
    results = scan(ROOT / "definitions")
    assert [(item.path, item.ok) for item in results] == [(GEMM, True), (RMSNORM, True)]
    assert all(item.problem.root == ROOT for item in results)


def test_scan_a_dataset_holding_a_trace_folder(tmp_path):
    shutil.copytree(ROOT, tmp_path / "suite" / "flashinfer_trace")
    results = scan(tmp_path)
    assert [item.kind for item in results] == ["flashinfer", "flashinfer", "solution", "traces"]
    assert all(item.ok for item in results)
    assert results[1].problem.root == tmp_path / "suite" / "flashinfer_trace"


def test_definition_without_workloads_is_a_warning(tmp_path):
    root = shutil.copytree(ROOT, tmp_path / "trace")
    (root / "workloads" / "gemm" / "gemm_n16_k8.jsonl").unlink()
    item = scan(root)[0]
    assert item.ok and item.problem.workloads == []
    [warning] = item.warnings
    assert warning.path == root / "definitions" / "gemm" / "gemm_n16_k8.json"
    assert "no workloads/<op_type>/gemm_n16_k8.jsonl" in warning.message


def test_missing_blob_is_located_at_its_workload_line(tmp_path):
    root = shutil.copytree(ROOT, tmp_path / "trace")
    (root / "blob" / "workloads" / "rmsnorm" / "rmsnorm_h8" / "rmsnorm_h8_weight.safetensors").unlink()
    item = scan(root)[1]
    assert not item.ok and item.problem is None
    [error] = item.errors
    assert (error.path, error.line) == (root / "workloads" / "rmsnorm" / "rmsnorm_h8.jsonl", 1)
    assert "rmsnorm_h8_weight.safetensors' does not exist" in error.message
    assert error.field.endswith("inputs.weight.path")


def test_field_paths_in_trace_shaped_lines_start_with_workload(tmp_path):
    root = shutil.copytree(ROOT, tmp_path / "trace")
    (root / "blob" / "workloads" / "rmsnorm" / "rmsnorm_h8" / "rmsnorm_h8_weight.safetensors").unlink()
    rows = lines_of(root / "workloads" / "rmsnorm" / "rmsnorm_h8.jsonl")
    rows[1]["workload"]["tolerance"] = {"max_atol": -1}
    (root / "workloads" / "rmsnorm" / "rmsnorm_h8.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    errors = scan(root)[1].errors
    assert sorted((e.line, e.field) for e in errors) == [(1, "workload.inputs.weight.path"), (2, "workload.tolerance.max_atol")]


def test_workload_line_naming_another_definition_is_an_error(tmp_path):
    root = shutil.copytree(ROOT, tmp_path / "trace")
    path = root / "workloads" / "rmsnorm" / "rmsnorm_h8.jsonl"
    rows = lines_of(path)
    rows[1]["definition"] = "gemm_n16_k8"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    item = scan(root)[1]
    assert not item.ok
    [error] = item.errors
    assert (error.path, error.line, error.field) == (path, 2, "definition")


def test_load_problems_of_a_trace_folder():
    assert sorted(p.name for p in load_problems([ROOT])) == ["gemm_n16_k8", "rmsnorm_h8"]
