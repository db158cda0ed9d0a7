"""benchmarks/reference_self_check.py: a resumed sweep evaluates again the workloads that ran out of
device memory in an earlier sitting (with --retry-failures, every one that did not pass), and keeps their
traces aside rather than dropping them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.files import append_jsonl
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.loaders import load_traces
from solbench.data.trace import Status

TOO_MUCH = 1 << 62


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


def _problem_folder(root: Path, name: str, uuids: list[str]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps({"name": name}))
    (folder / "workload.jsonl").write_text("".join(json.dumps({"uuid": uuid}) + "\n" for uuid in uuids))
    return folder


def test_a_dataset_path_that_does_not_exist_stops_the_sweep(tmp_path: Path, self_check):
    _problem_folder(tmp_path / "set", "a", ["a0"])
    with pytest.raises(SystemExit, match="nowhere: no such dataset folder"):
        self_check.problem_folders([tmp_path / "set", tmp_path / "nowhere"])


def test_a_sweep_resumes_only_with_the_shards_it_began_with(tmp_path: Path, self_check):
    folders = [_problem_folder(tmp_path / "set", name, [f"{name}{i}" for i in range(3)]) for name in "abc"]
    out = tmp_path / "out"
    out.mkdir()
    self_check.same_plan_or_exit(out, self_check.shards_of(folders, 2), resume=False)
    self_check.same_plan_or_exit(out, self_check.shards_of(folders, 2), resume=True)  # the same split: goes on
    with pytest.raises(SystemExit, match="sweep-plan.json: this sweep was split into other shards"):
        self_check.same_plan_or_exit(out, self_check.shards_of(folders[:2], 2), resume=True)  # a dataset left out
    with pytest.raises(SystemExit, match="other shards"):
        self_check.same_plan_or_exit(out, self_check.shards_of(folders, 3), resume=True)
    self_check.same_plan_or_exit(out, self_check.shards_of(folders, 3), resume=False)  # a new sweep replaces the plan
    assert len(json.loads((out / "sweep-plan.json").read_text())["shards"]) == 3


def test_workloads_missing_from_a_reached_problem_fail_the_sweep(tmp_path: Path, self_check, capsys):
    """A problem with traces for some of its workloads only (others set aside and not run again) is not complete."""
    traces = _traces(tmp_path)
    modest = _problem_folder(tmp_path / "set", "modest", [traces[1].workload.uuid, "never-run"])
    out = tmp_path / "out"
    out.mkdir()
    append_jsonl(out / "traces-seed1.jsonl", traces[1].to_json_dict())
    args = self_check.argparse.Namespace(datasets=[tmp_path / "set"], parallel=1, seeds=[1], out=out, workloads="all")

    code = self_check.report(args, [modest], {"seed1": (1, 0, out / "traces-seed1.jsonl", False)}, [], 1.0)

    assert code == 1
    printed = capsys.readouterr().out
    assert "{'PASSED': 1}, 0 refused, 1 workloads of 1 problems not reached" in printed and "not reached: 1 workloads of modest" in printed
    assert json.loads((out / "self-check.json").read_text())["seeds"]["1"]["workloads_not_reached"] == {"modest": 1}
    args.workloads = "smallest:1"  # a chosen part of the workloads: the rest is not missing
    assert self_check.report(args, [modest], {"seed1": (1, 0, out / "traces-seed1.jsonl", False)}, [], 1.0) == 0
