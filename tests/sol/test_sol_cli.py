"""`solbench sol` on KernelBench-style files, problem folders and datasets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solbench.cli import app

KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
LINEAR = KERNELBENCH / "01_linear.py"
ENV = {"COLUMNS": "250", "SOLBENCH_HARDWARE": "H200"}

REQUIRED_KEYS = {
    "problem", "workload", "flops", "flops_by_unit", "bytes_fused", "bytes_unfused", "t_unfused_ms", "t_fused_ms",
    "t_cache_aware_ms", "t_sol_ms", "bottleneck", "uncovered_ops",
}


def _write_problem(folder: Path, name: str, reference: str, workloads: list[dict], inputs=None, outputs=None, axes=None) -> Path:
    folder.mkdir(parents=True)
    definition = {
        "name": name,
        "axes": axes if axes is not None else {"N": {"type": "var"}},
        "inputs": inputs or {"a": {"shape": ["N"], "dtype": "float32"}, "b": {"shape": ["N"], "dtype": "float32"}},
        "outputs": outputs or {"c": {"shape": ["N"], "dtype": "float32"}},
        "reference": reference,
    }
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in workloads))
    return folder


def _add_workload(uuid: str, n: int) -> dict:
    return {"uuid": uuid, "axes": {"N": n}, "inputs": {"a": {"type": "random"}, "b": {"type": "random"}}}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def add_problem(tmp_path: Path) -> Path:
    return _write_problem(tmp_path / "vec_add", "vec_add", "def run(a, b):\n    return a + b\n",
                          [_add_workload("add-n1024-aaaa", 1024), _add_workload("add-n4096-bbbb", 4096)])


def _json(result) -> list[dict]:
    """--json prints one JSON object per line (JSON lines), each as soon as it is known."""
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert all(line.startswith("{") for line in lines), result.output
    return [json.loads(line) for line in lines]


def test_sol_json_on_a_kernelbench_file(runner: CliRunner) -> None:
    result = runner.invoke(app, ["sol", str(LINEAR), "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = _json(result)
    assert len(rows) == 1
    row = rows[0]
    assert REQUIRED_KEYS <= row.keys()
    assert row["problem"] == "01_linear"  # the file stem
    # x [32, 512] @ W^T [512, 256] + b: 2 * 32 * 256 * 512 on the fp32 tensor unit, 32 * 256 bias adds
    assert row["flops_by_unit"] == {"tensor_fp32": 2 * 32 * 256 * 512, "vector_fp32": 32 * 256}
    assert row["flops"] == 2 * 32 * 256 * 512 + 32 * 256
    assert row["bytes_fused"] == (32 * 512 + 256 * 512 + 256 + 32 * 256) * 4
    assert row["bytes_unfused"] >= row["bytes_fused"]
    assert row["t_roofline_ms"] == row["t_cache_aware_ms"] >= row["t_fused_ms"] > 0
    assert row["t_sol_ms"] == max(row["t_roofline_ms"], row["t_floor_ms"]) == row["t_floor_ms"]  # 624 kB: below the H200's DRAM latency floor
    assert row["t_unfused_ms"] >= row["t_fused_ms"]
    assert row["uncovered_ops"] == []
    assert row["bottleneck"] == "memory"
    assert row["hardware"] == "H200"


def test_sol_json_on_a_problem_folder(runner: CliRunner, add_problem: Path) -> None:
    result = runner.invoke(app, ["sol", str(add_problem), "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = _json(result)
    assert [r["workload"] for r in rows] == ["add-n1024-aaaa", "add-n4096-bbbb"]
    for row, n in zip(rows, (1024, 4096)):
        assert REQUIRED_KEYS <= row.keys()
        assert row["problem"] == "vec_add"
        assert row["flops_by_unit"] == {"vector_fp32": n}
        assert row["bytes_fused"] == 3 * 4 * n
        # a, b read from DRAM; c (small) written into the L2 at the on-chip rate (2.5 x DRAM by default)
        assert row["bytes_on_chip"] == 4 * n
        assert row["t_fused_ms"] == pytest.approx(max(2 * 4 * n / 4.8e12, 4 * n / (2.5 * 4.8e12)) * 1e3)
        assert row["policy"] == "relaxed"  # the default for every problem


def test_sol_table_and_explain(runner: CliRunner) -> None:
    plain = runner.invoke(app, ["sol", str(LINEAR)], env=ENV)
    assert plain.exit_code == 0, plain.output
    assert "01_linear" in plain.stdout
    assert "per-op breakdown" not in plain.stdout
    explained = runner.invoke(app, ["sol", str(LINEAR), "--explain"], env=ENV)
    assert explained.exit_code == 0, explained.output
    assert "per-op breakdown" in explained.stdout
    assert "aten.addmm.default" in explained.stdout
    assert "mk,kn,n->mn" in explained.stdout  # the op's einsum


def test_sol_explain_lists_every_costed_op(runner: CliRunner) -> None:
    result = runner.invoke(app, ["sol", str(KERNELBENCH / "09_elementwise_chain.py"), "--explain"], env=ENV)
    assert result.exit_code == 0, result.output
    for op in ("aten.sigmoid.default", "aten.mul.Tensor", "aten.tanh.default", "aten.clamp.default", "aten.add.Tensor"):
        assert op in result.stdout


def test_sol_workload_filter(runner: CliRunner, add_problem: Path) -> None:
    result = runner.invoke(app, ["sol", str(add_problem), "--json", "--workload", "add-n4096-bbbb"], env=ENV)
    assert result.exit_code == 0, result.output
    assert [r["workload"] for r in _json(result)] == ["add-n4096-bbbb"]
    prefix = runner.invoke(app, ["sol", str(add_problem), "--json", "-w", "add-n1024"], env=ENV)
    assert prefix.exit_code == 0, prefix.output
    assert [r["workload"] for r in _json(prefix)] == ["add-n1024-aaaa"]
    both = runner.invoke(app, ["sol", str(add_problem), "--json", "-w", "add-n1024", "-w", "add-n4096"], env=ENV)
    assert len(_json(both)) == 2


def test_sol_workload_filter_matching_nothing(runner: CliRunner, add_problem: Path) -> None:
    result = runner.invoke(app, ["sol", str(add_problem), "--json", "-w", "no-such-workload"], env=ENV)
    assert result.exit_code == 1
    assert _json(result) == []
    assert "no workload matches no-such-workload" in result.stderr


def test_sol_broken_problem_among_good_ones(runner: CliRunner, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    _write_problem(dataset / "a_good", "a_good", "def run(a, b):\n    return a + b\n", [_add_workload("good-1", 64)])
    _write_problem(dataset / "b_broken", "b_broken", "def run(a, b):\n    raise ValueError('boom')\n", [_add_workload("broken-1", 64)])
    _write_problem(dataset / "c_good", "c_good", "def run(a, b):\n    return a * b\n", [_add_workload("good-2", 64)])
    result = runner.invoke(app, ["sol", str(dataset), "--json"], env=ENV)
    assert result.exit_code == 1
    assert sorted(r["problem"] for r in _json(result)) == ["a_good", "c_good"]
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1
    assert "b_broken" in errors[0] and "boom" in errors[0]
    assert "Traceback" not in result.output

    table = runner.invoke(app, ["sol", str(dataset)], env=ENV)
    assert table.exit_code == 1
    assert "a_good" in table.stdout and "c_good" in table.stdout


def test_sol_invalid_problem_folder_among_good_ones(runner: CliRunner, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    _write_problem(dataset / "good", "good", "def run(a, b):\n    return a + b\n", [_add_workload("good-1", 64)])
    bad = dataset / "bad"
    bad.mkdir()
    (bad / "definition.json").write_text("{ not json")
    (bad / "workload.jsonl").write_text(json.dumps(_add_workload("bad-1", 64)) + "\n")
    result = runner.invoke(app, ["sol", str(dataset), "--json"], env=ENV)
    assert result.exit_code == 1
    assert [r["problem"] for r in _json(result)] == ["good"]
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "invalid JSON" in errors[0]


def test_sol_several_paths_in_one_call(runner: CliRunner, add_problem: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    _write_problem(dataset / "L1" / "scale", "scale", "def run(a, b):\n    return a * 2.0 - b\n", [_add_workload("scale-1", 128)])
    _write_problem(dataset / "L1" / "mul", "mul", "def run(a, b):\n    return a * b\n", [_add_workload("mul-1", 128)])
    paths = [str(LINEAR), str(KERNELBENCH / "13_embedding.py"), str(dataset), str(add_problem)]
    result = runner.invoke(app, ["sol", *paths, "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = _json(result)
    assert sorted(r["problem"] for r in rows) == ["01_linear", "13_embedding", "mul", "scale", "vec_add", "vec_add"]
    for row in rows:
        assert REQUIRED_KEYS <= row.keys()
        assert row["uncovered_ops"] == []


def test_sol_hardware_and_policy_options(runner: CliRunner) -> None:
    strict = _json(runner.invoke(app, ["sol", str(LINEAR), "--json", "-H", "a100-sxm", "--policy", "strict"], env=ENV))[0]
    relaxed = _json(runner.invoke(app, ["sol", str(LINEAR), "--json", "-H", "A100-SXM"], env=ENV))[0]  # relaxed: the default
    assert strict["hardware"] == relaxed["hardware"] == "A100-SXM"
    assert strict["policy"] == "strict" and relaxed["policy"] == "relaxed"
    assert relaxed["t_compute_ms"] < strict["t_compute_ms"]
    bad = runner.invoke(app, ["sol", str(LINEAR), "--policy", "sloppy"], env=ENV)
    assert bad.exit_code != 0
    unknown = runner.invoke(app, ["sol", str(LINEAR), "-H", "nope"], env=ENV)
    assert unknown.exit_code == 1
    assert "unknown hardware" in unknown.stderr


def _sleeping(seconds: float) -> str:
    return f"import time\n\ndef run(a, b):\n    time.sleep({seconds})\n    return a + b\n"


def _dataset_with(root: Path, **slow: str) -> Path:
    """The given problems (name -> reference) first in the paths' order, then two fast ones."""
    for name, reference in slow.items():
        _write_problem(root / name, name, reference, [_add_workload(f"{name}-1", 64)])
    _write_problem(root / "y_fast", "y_fast", "def run(a, b):\n    return a + b\n", [_add_workload("fast-1", 64), _add_workload("fast-2", 128)])
    _write_problem(root / "z_fast", "z_fast", "def run(a, b):\n    return a * b\n", [_add_workload("fast-3", 64)])
    return root


def _error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_sol_streams_as_problems_finish_and_stops_one_past_its_time_budget(tmp_path: Path) -> None:
    dataset = _dataset_with(tmp_path / "dataset", a_hangs=_sleeping(600), b_slow=_sleeping(2))
    started = time.monotonic()
    kept = tmp_path / "results.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "solbench.cli", "sol", str(dataset), "--json", "-o", str(kept), "--jobs", "2", "--problem-timeout", "6"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **ENV})
    arrivals = [(time.monotonic() - started, json.loads(line)) for line in process.stdout]  # type: ignore[union-attr]
    assert process.wait() == 1
    ended = time.monotonic() - started
    problems = [row["problem"] for _, row in arrivals]
    assert sorted(problems) == ["b_slow", "y_fast", "y_fast", "z_fast"]
    assert problems.index("z_fast") < problems.index("b_slow")  # a fast one first, not the paths' order
    assert problems[problems.index("y_fast"):][:2] == ["y_fast", "y_fast"]  # a problem's workloads come together
    slow_at = next(at for at, row in arrivals if row["problem"] == "b_slow")
    assert ended - slow_at > 1  # printed while a_hangs (first in the paths' order) still ran, not held back for it
    assert next(row for _, row in arrivals if row["problem"] == "b_slow")["problem_analysis_s"] >= 2
    assert [json.loads(line) for line in kept.read_text().splitlines()] == [row for _, row in arrivals]  # -o: the same lines, appended as known
    errors = [line for line in process.stderr.read().splitlines() if line.strip()]  # type: ignore[union-attr]
    assert len(errors) == 1, errors
    assert "problem a_hangs" in errors[0] and "time budget of 6 s" in errors[0] and "capture of workload 1/1" in errors[0]
    assert "Traceback" not in errors[0]


def test_sol_time_budget_in_one_process(runner: CliRunner, tmp_path: Path) -> None:
    dataset = _dataset_with(tmp_path / "dataset", a_hangs=_sleeping(600))
    result = runner.invoke(app, ["sol", str(dataset), "--json", "--jobs", "1", "--problem-timeout", "1"], env=ENV)
    assert result.exit_code == 1
    assert [r["problem"] for r in _json(result)] == ["y_fast", "y_fast", "z_fast"]  # one process: the paths' order
    errors = _error_lines(result)
    assert len(errors) == 1 and "problem a_hangs" in errors[0] and "time budget of 1 s" in errors[0], errors


def test_sol_problem_over_the_memory_cap_and_one_whose_worker_dies(runner: CliRunner, tmp_path: Path) -> None:
    # 1 GiB of real bytes held during the capture (fake tensors do not help): the worker is over 0.5 GB
    hog = "import time\n\ndef run(a, b):\n    hog = b'x' * (1 << 30)\n    time.sleep(600)\n    return a + b\n"
    dataset = _dataset_with(tmp_path / "dataset", a_hog=hog, b_dies="import os\n\ndef run(a, b):\n    os._exit(3)\n")
    result = runner.invoke(app, ["sol", str(dataset), "--json", "--jobs", "2", "--max-memory-gb", "0.5"], env=ENV)
    assert result.exit_code == 1
    assert sorted(r["problem"] for r in _json(result)) == ["y_fast", "y_fast", "z_fast"]
    errors = sorted(_error_lines(result))
    assert len(errors) == 2, errors
    assert "problem a_hog" in errors[0] and "memory cap of 0.50 GB" in errors[0] and "capture of workload 1/1" in errors[0]
    assert float(errors[0].split("peak ")[1].split(" GB")[0]) >= 0.5  # killed as it crossed the cap (printed to 2 decimals)
    assert "problem b_dies" in errors[1] and "worker process died (exit code 3)" in errors[1]
    assert "Traceback" not in result.output
