"""scan() and load_problems() over every layout in tests/fixtures/valid/: a problem folder (with reference.py),
its definition.json and workload.jsonl, a dataset with subset folders, a KernelBench-style file, a solution
and a traces file; plus empty and missing paths, duplicate names and the reference.py rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solbench.data import DType, SpecError
from solbench.data.definition import ConstAxis, ExprAxis, VarAxis
from solbench.data.loaders import load_problems, load_solution, load_traces, scan
from solbench.data.trace import Status
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput

DATA = Path(__file__).resolve().parents[2] / "fixtures"
VALID = DATA / "valid"
PROBLEM = VALID / "problem_with_reference_file"
DATASET = VALID / "dataset"
KERNELBENCH = DATASET / "L2" / "fused_linear_relu.py"
SOLUTION = VALID / "solutions" / "vector_add_triton.json"
TRACES = VALID / "traces" / "vector_add.jsonl"


def only(results):
    assert len(results) == 1, results
    return results[0]


def copy_problem(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


# --- a problem folder -------------------------------------------------------------------------------


def test_scan_problem_folder():
    loaded = only(scan(PROBLEM))
    assert loaded.issues == []
    assert loaded.ok and loaded.kind == "problem" and loaded.path == PROBLEM
    problem = loaded.problem
    assert problem is not None and loaded.name == problem.name == "gqa_scores_mixed_inputs"
    assert problem.kind == "problem"
    assert problem.root == problem.source == PROBLEM
    assert problem.subset is None
    assert problem.workload_lines == [1, 2]
    assert [w.uuid[:8] for w in problem.workloads] == ["3f9a6c21", "b84e0d57"]

    definition = problem.definition
    assert definition.op_type == "attention" and definition.hf_id == "solbench/test-model"
    assert isinstance(definition.axes["B"], VarAxis) and isinstance(definition.axes["D"], ConstAxis)
    assert isinstance(definition.axes["H_q"], ExprAxis) and definition.axes["H_q"].expression == "H_kv * G"
    assert definition.var_axes == ["B", "N"]
    assert definition.constraints == ["H_q == H_kv * G", "N <= 4 * B"]
    assert list(definition.inputs) == ["x", "w", "x_fp8", "x_fp4", "idx", "scale"]
    assert definition.inputs["x_fp8"].dtype is DType.float8_e4m3fn
    assert definition.inputs["x_fp4"].dtype is DType.float4_e2m1
    assert definition.inputs["scale"].is_scalar
    assert definition.custom_inputs_entrypoint == "make_indices"
    assert problem.axes(problem.workloads[0]) == {"B": 3, "N": 5, "H_kv": 2, "G": 2, "H_q": 4, "D": 8, "D_half": 4}

    first = problem.workloads[0]
    assert isinstance(first.inputs["x"], RandomInput)
    assert isinstance(first.inputs["w"], SafetensorsInput) and first.inputs["w"].path == "weights.safetensors"
    assert isinstance(first.inputs["idx"], CustomInput)
    assert isinstance(first.inputs["scale"], ScalarInput) and first.inputs["scale"].value == 0.125
    assert problem.workloads[1].effective_tolerance.required_matched_ratio == 0.99


def test_unknown_keys_are_kept_and_written_back_unchanged():
    problem = only(scan(PROBLEM)).problem
    written = problem.definition.to_json_dict()
    on_disk = json.loads((PROBLEM / "definition.json").read_text())
    assert written.pop("reference") == (PROBLEM / "reference.py").read_text()
    assert written == on_disk  # x_unknown_key included
    lines = (PROBLEM / "workload.jsonl").read_text().splitlines()
    assert [w.to_json_dict() for w in problem.workloads] == [json.loads(line) for line in lines]


def test_inputs_of_the_valid_problem_fp8_fp4_safetensors_custom_and_scalar():
    import torch
    from safetensors.torch import load_file

    from solbench.data.inputs import generate_inputs
    from solbench.data.reference import reference_module

    problem = only(scan(PROBLEM)).problem
    stored = load_file(str(PROBLEM / "weights.safetensors"))["w"]
    run = reference_module(problem.definition).run
    for workload in problem.workloads:
        axes = problem.axes(workload)
        inputs = generate_inputs(problem, workload, seed=1)
        assert list(inputs) == list(problem.definition.inputs)
        assert inputs["x"].dtype == torch.float32 and inputs["x"].shape == (axes["B"], 4, 8)
        assert inputs["x_fp8"].dtype == torch.float8_e4m3fn and inputs["x_fp8"].shape == (axes["B"], 8)
        assert inputs["x_fp4"].dtype == torch.float4_e2m1fn_x2 and inputs["x_fp4"].shape == (axes["B"], 4)  # packed
        assert torch.equal(inputs["w"], stored)
        assert inputs["idx"].dtype == torch.int64 and inputs["idx"].shape == (axes["N"],)
        assert int(inputs["idx"].min()) >= 0 and int(inputs["idx"].max()) < axes["B"]
        assert isinstance(inputs["scale"], float) and inputs["scale"] == float(workload.inputs["scale"].value)
        scores, side = run(*inputs.values())
        assert scores.shape == (axes["N"], axes["H_q"]) and side.shape == (axes["B"], axes["D_half"])
        again = generate_inputs(problem, workload, seed=1)  # same seed, same values (compared bit for bit)
        for name, value in inputs.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value.view(torch.uint8), again[name].view(torch.uint8)), name


@pytest.mark.parametrize("file", ["definition.json", "workload.jsonl"])
def test_scan_a_file_of_a_problem_folder_loads_the_folder(file):
    loaded = only(scan(PROBLEM / file))
    assert loaded.ok and loaded.kind == "problem" and loaded.path == PROBLEM
    assert loaded.problem.name == "gqa_scores_mixed_inputs" and len(loaded.problem.workloads) == 2


# --- reference.py -----------------------------------------------------------------------------------


def test_reference_py_is_honoured():
    problem = only(scan(PROBLEM)).problem
    assert "reference" not in json.loads((PROBLEM / "definition.json").read_text())
    assert problem.reference_file == PROBLEM / "reference.py"
    assert problem.definition.reference == (PROBLEM / "reference.py").read_text()


def test_inline_reference_that_differs_from_reference_py_is_an_error(tmp_path):
    folder = copy_problem(PROBLEM, tmp_path / "p")
    data = json.loads((folder / "definition.json").read_text())
    data["reference"] = (folder / "reference.py").read_text().replace("* scale", "* scale * 2")
    (folder / "definition.json").write_text(json.dumps(data))
    loaded = only(scan(folder))
    assert not loaded.ok and loaded.problem is None
    [error] = loaded.errors
    assert (error.path, error.line, error.field) == (folder / "definition.json", None, "reference")
    assert "differs from reference.py" in error.message


def test_inline_reference_equal_to_reference_py_is_accepted(tmp_path):
    folder = copy_problem(PROBLEM, tmp_path / "p")
    data = json.loads((folder / "definition.json").read_text())
    data["reference"] = (folder / "reference.py").read_text()
    (folder / "definition.json").write_text(json.dumps(data))
    loaded = only(scan(folder))
    assert loaded.ok and loaded.issues == []
    assert loaded.problem.definition.reference == data["reference"]


def test_syntax_error_in_reference_py_names_reference_py_and_its_line(tmp_path):
    folder = copy_problem(PROBLEM, tmp_path / "p")
    (folder / "reference.py").write_text("import torch\n\ndef run(x, w, x_fp8, x_fp4, idx, scale)\n    return x\n")
    loaded = only(scan(folder))
    [error] = loaded.errors
    assert "does not parse" in error.message
    assert (error.path, error.line) == (folder / "reference.py", 3)


# --- a dataset with subset folders --------------------------------------------------------------------


def test_scan_dataset_with_subsets():
    results = scan(DATASET)
    assert all(loaded.ok for loaded in results), [str(i) for loaded in results for i in loaded.issues]
    found = {loaded.problem.name: loaded for loaded in results}
    assert set(found) == {"row_softmax", "vector_add", "fused_linear_relu", "scale_shift"}
    assert {name: loaded.problem.subset for name, loaded in found.items()} == {
        "row_softmax": "L1",
        "vector_add": "L1",
        "fused_linear_relu": "L2",
        "scale_shift": None,  # a problem folder at the top of the dataset belongs to no subset
    }
    assert found["fused_linear_relu"].kind == found["fused_linear_relu"].problem.kind == "kernelbench"
    assert found["vector_add"].problem.source == DATASET / "L1" / "vector_add"
    assert [len(found[n].problem.workloads) for n in ("row_softmax", "vector_add", "scale_shift")] == [1, 2, 1]
    scale_shift = found["scale_shift"].problem.definition.inputs
    assert scale_shift["scale"].shape is None and scale_shift["shift"].shape == []


def test_subset_names_are_relative_to_the_scanned_folder():
    subsets = {loaded.problem.name: loaded.problem.subset for loaded in scan(VALID) if loaded.problem}
    assert subsets["vector_add"] == "dataset/L1"
    assert subsets["gqa_scores_mixed_inputs"] is None
    assert {loaded.kind for loaded in scan(VALID)} == {"problem", "kernelbench", "solution", "traces"}


def test_hidden_and_cache_folders_are_skipped(tmp_path):
    copy_problem(DATASET / "L1" / "vector_add", tmp_path / "L1" / "vector_add")
    copy_problem(DATASET / "L1" / "vector_add", tmp_path / ".hidden" / "vector_add")
    copy_problem(DATASET / "L1" / "vector_add", tmp_path / "__pycache__" / "vector_add")
    loaded = only(scan(tmp_path))
    assert loaded.ok and loaded.problem.subset == "L1"


def test_duplicate_problem_names_in_a_dataset(tmp_path):
    first = copy_problem(DATASET / "L1" / "vector_add", tmp_path / "L1" / "vector_add")
    second = copy_problem(DATASET / "L1" / "vector_add", tmp_path / "L2" / "vector_add_again")
    results = scan(tmp_path)
    assert [loaded.path for loaded in results] == [first, second]
    assert results[0].ok and results[0].problem is not None
    assert not results[1].ok and results[1].problem is None
    [error] = results[1].errors
    assert error.field == "name" and error.path in (second, second / "definition.json")
    assert "'vector_add' is taken already by" in error.message and str(first) in error.message
    with pytest.raises(SpecError) as raised:
        load_problems([tmp_path])
    assert [str(i) for i in raised.value.issues] == [str(error)]


# --- a KernelBench-style file, a solution, traces ------------------------------------------------------


def test_scan_kernelbench_file():
    loaded = only(scan(KERNELBENCH))
    assert loaded.ok and loaded.kind == "kernelbench" and loaded.name == "fused_linear_relu"
    problem = loaded.problem
    assert problem.kind == "kernelbench" and problem.source == KERNELBENCH and problem.subset is None
    definition = problem.definition
    assert definition.description == "Linear layer followed by ReLU."
    assert {n: (s.shape, s.dtype.value) for n, s in definition.inputs.items()} == {
        "x": ([2, 8], "float32"),
        "linear_weight": ([4, 8], "float32"),
        "linear_bias": ([4], "float32"),
    }
    assert {n: s.shape for n, s in definition.outputs.items()} == {"output": [2, 4]}
    [workload] = problem.workloads
    assert set(workload.inputs) == set(definition.inputs)


def test_scan_solution():
    loaded = only(scan(SOLUTION))
    assert loaded.ok and loaded.kind == "solution" and loaded.name == "vector_add_triton"
    solution = loaded.solution
    assert solution.definition == "vector_add"
    assert solution.spec.family == "python" and solution.spec.entry_file == "kernel.py" and solution.spec.entry_symbol == "run"
    assert [s.path for s in solution.sources] == ["kernel.py", "helpers.py"]
    assert solution.source("helpers.py") == "BLOCK = 1024\n"
    assert solution.to_json_dict() == json.loads(SOLUTION.read_text())  # x_extra kept
    assert load_solution(SOLUTION) == solution


def test_scan_traces():
    loaded = only(scan(TRACES))
    assert loaded.ok and loaded.kind == "traces" and loaded.issues == []
    traces = loaded.traces
    assert [t.evaluation.status if t.evaluation else None for t in traces] == [Status.PASSED, Status.INCORRECT_NUMERICAL, None]
    assert traces[0].evaluation.performance.score == 0.61
    assert traces[0].workload.uuid == "vector-add-n16" and traces[2].solution is None
    rows = [json.loads(line) for line in TRACES.read_text().splitlines() if line.strip()]
    assert [t.to_json_dict() for t in traces] == rows
    assert load_traces(TRACES) == traces


def test_load_problems_refuses_a_solution_or_traces_file():
    with pytest.raises(SpecError) as raised:
        load_problems([SOLUTION, TRACES])
    assert [(i.path, i.message) for i in raised.value.issues] == [
        (SOLUTION, "is a solution file, not a problem"),
        (TRACES, "is a traces file, not a problem"),
    ]


# --- empty and missing paths, load_problems ------------------------------------------------------------


def test_scan_empty_folder(tmp_path):
    loaded = only(scan(tmp_path))
    assert not loaded.ok and loaded.kind == "unknown"
    [error] = loaded.errors
    assert error.path == tmp_path and "holds no problem folder" in error.message


def test_scan_missing_path(tmp_path):
    missing = tmp_path / "nowhere"
    loaded = only(scan(missing))
    assert not loaded.ok and loaded.problem is None
    [error] = loaded.errors
    assert error.path == missing and error.message == "does not exist"
    assert str(error) == f"{missing}: does not exist"


def test_problem_folder_without_workloads(tmp_path):
    folder = copy_problem(DATASET / "L1" / "vector_add", tmp_path / "p")
    (folder / "workload.jsonl").write_text("\n")
    [error] = only(scan(folder)).errors
    assert error.path == folder / "workload.jsonl" and "holds no workload" in error.message
    (folder / "workload.jsonl").unlink()
    [error] = only(scan(folder)).errors
    assert error.path == folder and "missing workload.jsonl" in error.message


def test_load_problems_returns_every_problem():
    problems = load_problems([PROBLEM, DATASET])
    assert [p.name for p in problems] == ["gqa_scores_mixed_inputs", "row_softmax", "vector_add", "fused_linear_relu", "scale_shift"]


def test_load_problems_raises_one_spec_error_listing_all_errors(tmp_path):
    malformed = DATA / "malformed"
    paths = [
        PROBLEM,
        malformed / "dtype_unknown",
        malformed / "workload_missing_var_axis",
        malformed / "solution_parent_path.json",
        tmp_path / "nowhere",
    ]
    with pytest.raises(SpecError) as raised:
        load_problems(paths)
    issues = raised.value.issues
    assert [(i.path, i.line, i.field) for i in issues] == [
        (malformed / "dtype_unknown" / "definition.json", None, "inputs.x.dtype"),
        (malformed / "workload_missing_var_axis" / "workload.jsonl", 2, "axes.B"),
        (malformed / "solution_parent_path.json", None, "sources.1.path"),
        (tmp_path / "nowhere", None, None),
    ]
    assert str(raised.value).splitlines() == [str(i) for i in issues]


STATUS = DATA / "solutions" / "status"


def _solution_for(definition: str, content: str = "import torch\n\n\ndef run(x, alpha):\n    return x * alpha\n") -> dict:
    data = json.loads((STATUS / "pytorch_returning.json").read_text())
    data["definition"] = definition
    data["sources"][0]["content"] = content
    return data


def test_solutions_kept_in_a_problem_folder_are_validated_against_it(tmp_path):
    folder = tmp_path / "vector_scale"
    shutil.copytree(STATUS / "vector_scale", folder)
    (folder / "solution.json").write_text(json.dumps(_solution_for("vector_scale")))
    (folder / "solutions").mkdir()
    (folder / "solutions" / "foreign.json").write_text(json.dumps(_solution_for("matmul_fp32")))
    (folder / "solutions" / "no_entry.json").write_text(json.dumps(_solution_for("vector_scale", "def forward(x, alpha):\n    return x\n")))
    for results in (scan(folder), scan(tmp_path)):
        by_path = {loaded.path.relative_to(folder).as_posix() if loaded.path != folder else ".": loaded for loaded in results}
        assert set(by_path) == {".", "solution.json", "solutions/foreign.json", "solutions/no_entry.json"}
        assert by_path["."].ok and by_path["solution.json"].ok and by_path["solution.json"].kind == "solution"
        (foreign,) = by_path["solutions/foreign.json"].errors
        assert foreign.field == "definition" and "names the definition 'matmul_fp32'" in foreign.message and "'vector_scale'" in foreign.message
        (missing,) = by_path["solutions/no_entry.json"].errors
        assert missing.field == "spec.entry_point" and "defines no top-level 'run'" in missing.message
    # a bad solution beside a problem does not stop the problem from loading for a run
    assert [p.name for p in load_problems([folder])] == ["vector_scale"]


@pytest.mark.parametrize("content", ["from kernels import run\n", "import torch\nrun = torch.compile(lambda x, alpha: x * alpha)\n",
                                     "class run:\n    pass\n", "def __getattr__(name):\n    return print\n"])
def test_entry_symbols_bound_any_static_way_are_accepted(tmp_path, content):
    path = tmp_path / "solution.json"
    path.write_text(json.dumps(_solution_for("vector_scale", content)))
    (loaded,) = scan(path)
    assert loaded.ok, loaded.issues


def test_the_catalog_index_beside_a_datasets_problems_is_no_problem_of_its_own(tmp_path: Path):
    """`solbench dataset characterise DIR` writes DIR/index.json: scanning DIR still finds only the problems;
    a JSON that merely mentions that format deeper inside is not skipped."""
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET, dataset)
    before = sorted(loaded.name for loaded in scan(dataset) if loaded.problem is not None)
    (dataset / "index.json").write_text(json.dumps({"format": "solbench-catalog-index", "version": 1, "problems": []}, indent=2))
    results = scan(dataset)
    assert sorted(loaded.name for loaded in results if loaded.problem is not None) == before
    assert all(not loaded.issues for loaded in results), [loaded.issues for loaded in results if loaded.issues]
    (dataset / "stray.json").write_text(json.dumps({"note": "x" * 600 + '"format": "solbench-catalog-index"'}))
    assert any(loaded.issues for loaded in scan(dataset))  # not an index: reported as the unknown file it is
