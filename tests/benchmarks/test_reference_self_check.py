"""benchmarks/reference_self_check.py: a resumed sweep evaluates again the workloads that ran out of
device memory in an earlier sitting (with --retry-failures, every one that did not pass), and keeps their
traces aside rather than dropping them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.files import append_jsonl
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.loaders import load_traces
from solbench.data.trace import Status

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "reference_self_check.py"
TOO_MUCH = 1 << 62


@pytest.fixture(scope="module")
def self_check():
    spec = importlib.util.spec_from_file_location("reference_self_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _traces(tmp_path: Path) -> list:
    """One trace that ran out of memory (a reference allocating more than any machine has), one that passed
    and one with wrong outputs."""
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path / "cache")
    solution_files = {"k.py": "def run(x):\n    return x * 2\n"}
    hungry = inline_problem("hungry", f"import torch\n\ndef run(x):\n    torch.empty({TOO_MUCH}, dtype=torch.uint8)\n    return x * 2\n",
                            {"x": ([16], "float32")}, {"y": ([16], "float32")})
    modest = inline_problem("modest", "def run(x):\n    return x * 2\n", {"x": ([16], "float32")}, {"y": ([16], "float32")})
    tripled = inline_problem("tripled", "def run(x):\n    return x * 3\n", {"x": ([16], "float32")}, {"y": ([16], "float32")})
    traces = []
    for problem in (hungry, modest, tripled):
        solution = inline_solution("double", problem.name, "pytorch", "k.py::run", solution_files, dps=False)
        traces += evaluate(problem, solution, options)
    assert [t.evaluation.status for t in traces] == [Status.INVALID_REFERENCE, Status.PASSED, Status.INCORRECT_NUMERICAL], [t.evaluation.log for t in traces]
    return traces


def _sweep(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "sweep"
    traces_file, run_traces = out / "traces-seed1-shard0.jsonl", out / "run-seed1-shard0" / "traces.jsonl"
    run_traces.parent.mkdir(parents=True)
    for trace in _traces(tmp_path):
        append_jsonl(traces_file, trace.to_json_dict())
        append_jsonl(run_traces, trace.to_json_dict())
    return out, traces_file, run_traces


def test_memory_failures_are_set_aside_for_the_next_sitting(tmp_path: Path, self_check):
    out, traces_file, run_traces = _sweep(tmp_path)

    self_check.set_failures_aside(out, "seed1-shard0")

    assert [t.definition for t in load_traces(traces_file)] == ["modest", "tripled"]  # a wrong answer stays: it is a result
    assert [t.definition for t in load_traces(run_traces)] == ["modest", "tripled"]
    aside = out / "traces-seed1-shard0.memory-failures.jsonl"
    assert [t.definition for t in load_traces(aside)] == ["hungry"]  # one copy kept, not one per file
    self_check.set_failures_aside(out, "seed1-shard0")  # nothing left to move: nothing changes
    assert len(load_traces(aside)) == 1 and len(load_traces(traces_file)) == 2


def test_after_a_fix_every_failure_is_set_aside(tmp_path: Path, self_check):
    out, traces_file, run_traces = _sweep(tmp_path)

    self_check.set_failures_aside(out, "seed1-shard0", every_failure=True)

    assert [t.definition for t in load_traces(traces_file)] == ["modest"]
    assert [t.definition for t in load_traces(run_traces)] == ["modest"]
    assert [t.definition for t in load_traces(out / "traces-seed1-shard0.earlier-failures.jsonl")] == ["hungry", "tripled"]
    assert not (out / "traces-seed1-shard0.memory-failures.jsonl").exists()


def test_a_crowded_device_counts_as_memory_but_a_wrong_answer_does_not(self_check):
    assert self_check.ran_out_of_memory("worker start failed: AcceleratorError: CUDA error: out of memory")
    assert self_check.ran_out_of_memory("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    assert self_check.ran_out_of_memory("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR")
    assert not self_check.ran_out_of_memory("trial 3/3: output 'out': 12 of 1024 elements (1.2%) outside atol 0.01")


def test_shards_balance_workload_counts(tmp_path: Path, self_check):
    folders = []
    for name, count in (("a", 9), ("b", 5), ("c", 4), ("d", 1)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "workload.jsonl").write_text("".join(json.dumps({"uuid": f"{name}{i}"}) + "\n" for i in range(count)))
        folders.append(folder)
    groups = self_check.shards_of(folders, 2)
    assert sorted(sorted(f.name for f in group) for group in groups) == [["a", "d"], ["b", "c"]]  # 10 and 9 workloads
