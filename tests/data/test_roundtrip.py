"""Files are read and written unchanged: unknown keys kept, spellings kept, nothing added."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from solbench.dataset import bundled_problems_path
from solbench.data.definition import Definition
from solbench.data.errors import SpecError
from solbench.data.files import parse_model
from solbench.data.loaders import scan, write_problem_folder
from solbench.data.loaders.problem_folder import DEFINITION_FILE, REFERENCE_FILE, WORKLOAD_FILE, load_definition, load_problem_folder
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.data.workload import Workload


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text: also tells 1 from 1.0 and true from 1, which == does not."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


DEFINITION = {
    "name": "rms_norm.fused-v1",
    "op_type": "norm",
    "description": "RMS norm with a learned scale",
    "hf_id": "meta-llama/Llama-3.1-8B",
    "axes": {
        "B": {"type": "var", "description": "batch", "x-range": [1, 64]},
        "H": {"type": "const", "value": 4096, "source": "config.hidden_size"},
        "T": {"type": "expr", "expression": "B * 2", "note": {"deep": [1, {"deeper": True}]}},
        "V": {"type": "var"},
    },
    "constraints": ["H % 128 == 0", "B <= 1024"],
    "inputs": {
        "x": {"shape": ["B", "H"], "dtype": "bfloat16", "layout": "row-major"},
        "weight": {"shape": ["H"], "dtype": "bfloat16", "distribution": {"kind": "uniform", "low": 0.5, "high": 1.5, "why": "positive"}},
        "ids": {"shape": ["T"], "dtype": "int64", "distribution": {"kind": "integers", "low": 0, "high": "V"}},
        "eps": {"shape": None, "dtype": "float32"},
        "step": {"shape": [], "dtype": "int32"},
        "fixed": {"shape": [2, "H"], "dtype": "float8_e4m3fn"},
    },
    "outputs": {"y": {"shape": ["B", "H"], "dtype": "bfloat16", "aliases": None}},
    "reference": (
        "import torch\n\n"
        "def run(x, weight, ids, eps, step, fixed):\n"
        "    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight\n\n"
        "def make_inputs(axes, device):\n"
        "    return {}\n"
    ),
    "custom_inputs_entrypoint": "make_inputs",
    "tags": ["status:verified", "model:llama"],
    "metadata": {"created": "2025-01-01", "counts": {"flops": 123, "ratio": 0.5}},
}

WORKLOADS = [
    {
        "uuid": "6b1f0d3e-0000-4000-8000-000000000001",
        "axes": {"B": 8, "V": 32000},
        "inputs": {
            "x": {"type": "random"},
            "weight": {"type": "random", "distribution": {"kind": "normal", "mean": 1, "std": 0.25}},
            "ids": {"type": "custom", "hint": "sorted"},
            "eps": {"type": "scalar", "value": 1e-06},
            "step": {"type": "scalar", "value": 3},
            "fixed": {"type": "safetensors", "path": "blob/fixed.safetensors", "tensor_key": "fixed", "sha256": "ab"},
        },
        "tolerance": {"max_atol": 0.01, "max_rtol": 0.02, "required_matched_ratio": 0.99, "max_error_cap": 10.0, "allow_negative_inf": True, "why": "bf16"},
        "source": {"trace": "llama-3", "count": 12},
    },
    {
        "uuid": "alias-spelling",
        "axes": {"B": 1, "V": 2},
        "inputs": {"x": {"type": "random"}},
        "tolerance": {"required_match_ratio": 0.95, "max_atol": 0.001},
    },
    {"uuid": "bare"},
    {"uuid": "const-given", "axes": {"B": 2, "H": 4096, "V": 7}, "inputs": {}, "tolerance": {}},
]

SOLUTIONS = [
    {
        "name": "rms_norm_triton",
        "definition": "rms_norm.fused-v1",
        "author": "someone",
        "description": "one pass",
        "spec": {
            "languages": ["triton", "pytorch"],
            "target_hardware": ["H100", "LOCAL"],
            "entry_point": "kernels/rms.py::run",
            "dependencies": ["triton>=3"],
            "destination_passing_style": False,
            "compile_options": {"num_warps": 4, "flags": ["-O3"]},
            "x-autotune": {"BLOCK": [64, 128]},
        },
        "sources": [
            {"path": "kernels/rms.py", "content": "def run(x, weight, ids, eps, step, fixed):\n    pass\n", "executable": False},
            {"path": "README.md", "content": "# notes ✓\n"},
        ],
        "version": 2,
        "provenance": {"agent": "x", "steps": [1, 2, 3]},
    },
    {
        "name": "rms_norm_cuda",
        "definition": "rms_norm.fused-v1",
        "spec": {"languages": "cuda_cpp", "entry_point": "rms.cu::launch"},
        "sources": [{"path": "rms.cu", "content": "// cuda"}],
    },
]

TRACES = [
    {
        "definition": "rms_norm.fused-v1",
        "workload": copy.deepcopy(WORKLOADS[0]),
        "solution": "rms_norm_triton",
        "evaluation": {
            "status": "PASSED",
            "correctness": {"max_absolute_error": 0.001, "max_relative_error": 0.01, "matched_ratio": 1.0, "trials": 3, "per_output": {"y": 0.001}},
            "performance": {"latency_ms": 0.02, "latency_iqr_ms": 0.001, "reference_latency_ms": 0.1, "sol_ms": 0.01, "score": 0.8, "timing_method": "cupti", "iterations": 100, "p99_ms": 0.03},
            "environment": {"gpu": "H100", "nested": {"a": [1, 2]}},
            "log": "ok",
            "timestamp": "2025-01-01T00:00:00Z",
            "worker_pid": 1234,
        },
        "run": {"id": "r1", "host": "h"},
    },
    {
        "definition": "rms_norm.fused-v1",
        "workload": copy.deepcopy(WORKLOADS[1]),
        "evaluation": {"status": "INCORRECT_NUMERICAL", "correctness": {"max_absolute_error": float("inf"), "first_mismatch_index": [0, 5]}},
    },
    {"definition": "rms_norm.fused-v1", "workload": {"uuid": "bare"}},
]


def validated(model: type, data: dict[str, Any]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the alias warning is tested in test_workload.py
        return model.model_validate(data)


def test_definition_round_trip():
    definition = validated(Definition, DEFINITION)
    assert definition.to_json_dict() == DEFINITION
    assert same_json(definition.to_json_dict(), DEFINITION)
    assert definition.model_extra == {"tags": DEFINITION["tags"], "metadata": DEFINITION["metadata"]}
    assert definition.axes["T"].model_extra == {"note": {"deep": [1, {"deeper": True}]}}
    # using the model (cached axis order, resolution) adds nothing to what is written
    assert definition.axes_for({"B": 8, "V": 10}) == {"B": 8, "H": 4096, "V": 10, "T": 16}
    assert definition.to_json_dict() == DEFINITION
    # and a second pass through JSON text gives the same object again
    assert validated(Definition, json.loads(definition.to_json())).to_json_dict() == DEFINITION


@pytest.mark.parametrize("index", range(len(WORKLOADS)))
def test_workload_round_trip(index):
    data = WORKLOADS[index]
    workload = validated(Workload, data)
    assert same_json(workload.to_json_dict(), data)
    assert same_json(validated(Workload, json.loads(workload.to_json())).to_json_dict(), data)


@pytest.mark.parametrize("index", range(len(SOLUTIONS)))
def test_solution_round_trip(index):
    data = SOLUTIONS[index]
    solution = validated(Solution, data)
    assert same_json(solution.to_json_dict(), data)
    assert same_json(validated(Solution, json.loads(solution.to_json())).to_json_dict(), data)


@pytest.mark.parametrize("index", range(len(TRACES)))
def test_trace_round_trip(index):
    data = TRACES[index]
    trace = validated(Trace, data)
    assert same_json(trace.to_json_dict(), data)
    assert same_json(validated(Trace, json.loads(trace.to_json())).to_json_dict(), data)


def test_defaults_are_not_written():
    definition = validated(Definition, {"name": "n", "inputs": {}, "outputs": {"y": {"shape": [], "dtype": "float32"}}, "reference": "def run():\n    pass\n"})
    assert definition.to_json_dict() == {"name": "n", "inputs": {}, "outputs": {"y": {"shape": [], "dtype": "float32"}}, "reference": "def run():\n    pass\n"}
    # a default that was written out explicitly is written back
    explicit = {"name": "n", "description": "", "axes": {}, "constraints": [], "inputs": {}, "outputs": {"y": {"shape": [], "dtype": "float32", "distribution": None}}, "reference": "def run():\n    pass\n", "op_type": None}
    assert validated(Definition, explicit).to_json_dict() == explicit


def test_integer_valued_floats_keep_their_value():
    # documented behaviour: a float field read as 1 is written as 1.0, the same JSON number
    tolerance = validated(Workload, {"uuid": "u", "tolerance": {"max_atol": 1}}).to_json_dict()["tolerance"]
    assert tolerance == {"max_atol": 1}


# --- problem folders --------------------------------------------------------------------------


def folder_json(folder: Path) -> dict[str, Any]:
    """The JSON content of a problem folder's files (and reference.py's text)."""
    content: dict[str, Any] = {DEFINITION_FILE: json.loads((folder / DEFINITION_FILE).read_text(encoding="utf-8"))}
    lines = (folder / WORKLOAD_FILE).read_text(encoding="utf-8").splitlines()
    content[WORKLOAD_FILE] = [json.loads(line) for line in lines if line.strip()]
    if (folder / REFERENCE_FILE).is_file():
        content[REFERENCE_FILE] = (folder / REFERENCE_FILE).read_text(encoding="utf-8")
    return content


def write_source_folder(folder: Path, definition: dict[str, Any], workloads: list[dict[str, Any]], reference_file: bool) -> None:
    folder.mkdir(parents=True)
    definition = copy.deepcopy(definition)
    if reference_file:
        (folder / REFERENCE_FILE).write_text(definition.pop("reference"), encoding="utf-8")
    (folder / DEFINITION_FILE).write_text(json.dumps(definition, indent=2), encoding="utf-8")
    (folder / WORKLOAD_FILE).write_text("".join(json.dumps(w) + "\n" for w in workloads), encoding="utf-8")


SIMPLE_DEFINITION = {
    "name": "scale_rows",
    "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 8, "x": 1}},
    "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"}, "alpha": {"shape": None, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["M", "N"], "dtype": "float32"}},
    "reference": "def run(x, alpha):\n    return x * alpha\n",
    "extra_top": {"kept": True},
}
SIMPLE_WORKLOADS = [
    {"uuid": "w1", "axes": {"M": 4}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 2.0}}, "note": "first"},
    {"uuid": "w2", "axes": {"M": 16}, "inputs": {"x": {"type": "random", "distribution": {"kind": "uniform", "low": -1, "high": 1}}, "alpha": {"type": "scalar", "value": 3}}, "tolerance": {"required_match_ratio": 0.5}},
]


@pytest.mark.parametrize("reference_file", [False, True], ids=["inline-reference", "reference.py"])
def test_write_problem_folder_round_trip(tmp_path, reference_file):
    source = tmp_path / "source"
    write_source_folder(source, SIMPLE_DEFINITION, SIMPLE_WORKLOADS, reference_file)
    loaded = load_problem_folder(source)
    assert loaded.ok, [str(i) for i in loaded.issues]
    assert [i.severity for i in loaded.issues] == ["warning"]  # the ratio alias
    problem = loaded.problem
    assert (problem.reference_file is not None) == reference_file

    target = tmp_path / "target"
    write_problem_folder(problem, target)
    assert folder_json(target) == folder_json(source)
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in source.iterdir())  # no temporary files left
    again = load_problem_folder(target)
    assert again.ok and again.problem.definition.to_json_dict() == problem.definition.to_json_dict()
    assert [w.to_json_dict() for w in again.problem.workloads] == SIMPLE_WORKLOADS


def test_write_problem_folder_refuses_to_overwrite(tmp_path):
    source = tmp_path / "source"
    write_source_folder(source, SIMPLE_DEFINITION, SIMPLE_WORKLOADS, reference_file=True)
    problem = load_problem_folder(source).problem
    target = tmp_path / "target"
    target.mkdir()
    (target / WORKLOAD_FILE).write_text("old\n", encoding="utf-8")
    with pytest.raises(SpecError, match="refusing to overwrite"):
        write_problem_folder(problem, target)
    assert (target / WORKLOAD_FILE).read_text(encoding="utf-8") == "old\n"  # untouched
    assert not (target / DEFINITION_FILE).exists() and not (target / REFERENCE_FILE).exists()  # nothing half-written

    (target / WORKLOAD_FILE).unlink()
    (target / REFERENCE_FILE).write_text("old reference\n", encoding="utf-8")
    with pytest.raises(SpecError, match="refusing to overwrite"):
        write_problem_folder(problem, target)
    assert (target / REFERENCE_FILE).read_text(encoding="utf-8") == "old reference\n"

    write_problem_folder(problem, target, overwrite=True)
    assert folder_json(target) == folder_json(source)
    # writing the same problem a second time needs overwrite as well
    with pytest.raises(SpecError):
        write_problem_folder(problem, target)
    write_problem_folder(problem, target, overwrite=True)
    assert folder_json(target) == folder_json(source)


def test_overwrite_does_not_leave_a_stale_reference_file(tmp_path):
    source = tmp_path / "source"
    write_source_folder(source, SIMPLE_DEFINITION, SIMPLE_WORKLOADS, reference_file=True)
    write_problem_folder(load_problem_folder(source).problem, tmp_path / "target")
    changed = copy.deepcopy(SIMPLE_DEFINITION)
    changed["reference"] = "def run(x, alpha):\n    return x * alpha * 1\n"
    definition = validated(Definition, changed)
    workloads = [validated(Workload, w) for w in SIMPLE_WORKLOADS]
    write_problem_folder(Problem(definition, workloads), tmp_path / "target", overwrite=True)
    reloaded = load_problem_folder(tmp_path / "target")
    assert reloaded.ok, [str(i) for i in reloaded.errors]
    assert reloaded.problem.definition.reference == changed["reference"]


# --- the bundled problem set ------------------------------------------------------------------


def bundled_definition_files() -> list[Path]:
    root = bundled_problems_path()
    if not root.is_dir():
        return []
    return sorted(root.rglob(DEFINITION_FILE))


BUNDLED = bundled_definition_files()
NO_BUNDLED = pytest.mark.skipif(not BUNDLED, reason=f"the bundled problem set at {bundled_problems_path()} holds no problem yet (no {DEFINITION_FILE} found)")


def bundled_ids() -> list[str]:
    root = bundled_problems_path()
    return [str(p.parent.relative_to(root)) for p in BUNDLED] or ["none"]


@NO_BUNDLED
@pytest.mark.parametrize("definition_file", BUNDLED or [None], ids=bundled_ids())
def test_bundled_definition_and_workloads_round_trip(definition_file: Path):
    folder = definition_file.parent
    data = json.loads(definition_file.read_text(encoding="utf-8"))
    definition, issues, from_file = load_definition(definition_file, reference_file=folder / REFERENCE_FILE)
    assert definition is not None, [str(i) for i in issues]
    dumped = definition.to_json_dict()
    if from_file:
        assert dumped.pop("reference") == (folder / REFERENCE_FILE).read_text(encoding="utf-8")
    assert dumped == data

    workload_file = folder / WORKLOAD_FILE
    lines = [(n, line) for n, line in enumerate(workload_file.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    assert lines, f"{workload_file} holds no workload"
    for number, line in lines:
        row = json.loads(line)
        model_type = Trace if "workload" in row and "uuid" not in row else Workload
        model, found = parse_model(model_type, row, path=workload_file, line=number)
        assert model is not None, [str(i) for i in found]
        assert model.to_json_dict() == row, f"{workload_file}:{number}"


@NO_BUNDLED
def test_bundled_problems_load_and_rewrite_identically(tmp_path):
    root = bundled_problems_path()
    loaded = scan(root)
    errors = [str(i) for item in loaded for i in item.errors]
    assert errors == []
    problems = [item.problem for item in loaded if item.problem is not None and item.kind == "problem"]
    assert len(problems) == len(BUNDLED)
    for index, problem in enumerate(problems):
        target = tmp_path / str(index)
        write_problem_folder(problem, target)
        assert folder_json(target) == folder_json(problem.source), problem.name


def test_workload_with_a_unicode_line_separator_survives_a_folder_round_trip(tmp_path):
    source = tmp_path / "source"
    workloads = copy.deepcopy(SIMPLE_WORKLOADS)
    workloads[0]["note"] = "line\u2028separator"
    write_source_folder(source, SIMPLE_DEFINITION, workloads, reference_file=False)
    loaded = load_problem_folder(source)  # json.dumps escapes it (ensure_ascii): this reads fine
    assert loaded.ok
    write_problem_folder(loaded.problem, tmp_path / "target")
    again = load_problem_folder(tmp_path / "target")
    assert again.ok, [str(i) for i in again.errors]
    assert [w.to_json_dict() for w in again.problem.workloads] == workloads


def test_written_files_follow_the_umask(tmp_path):
    import os
    import stat

    source = tmp_path / "source"
    write_source_folder(source, SIMPLE_DEFINITION, SIMPLE_WORKLOADS, reference_file=False)
    previous = os.umask(0o022)
    try:
        write_problem_folder(load_problem_folder(source).problem, tmp_path / "target")
    finally:
        os.umask(previous)
    for name in (DEFINITION_FILE, WORKLOAD_FILE):
        assert stat.S_IMODE((tmp_path / "target" / name).stat().st_mode) == 0o644, name
