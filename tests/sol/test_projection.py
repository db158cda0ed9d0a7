"""`solbench sol --project TRACES --to SPEC`: measured times projected to another spec by efficiency
against the bottleneck, on traces validated by the Trace model (T_SOL priced by the real analysis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solbench.cli import app
from solbench.data.inline import inline_problem
from solbench.data.loaders import load_problems
from solbench.data.loaders.problem_folder import write_problem_folder
from solbench.data.trace import Trace
from solbench.dataset import bundled_problems_path
from solbench.sol.api import sol_times
from solbench.sol.projection import ASSUMPTION, project

BUNDLED = "silu_and_mul_llama3_8b"


def _trace(problem, workload, latency_ms: float, spec: str = "H200", status: str = "PASSED", solution: str = "mine") -> Trace:
    times = sol_times(problem, workload, spec)
    return Trace.model_validate({
        "definition": problem.name, "workload": workload.to_json_dict(), "solution": solution,
        "evaluation": {"status": status, "environment": {"hardware": spec, "precision_policy": "relaxed"},
                       "performance": {"latency_ms": latency_ms, "sol_ms": times.sol_ms, "sol_roofline_ms": times.roofline_ms,
                                       "sol_floor_ms": times.floor_ms, "sol_floor_applied": times.floor_applied}},
    })


@pytest.fixture
def bundled():
    return next(p for p in load_problems([bundled_problems_path()]) if p.name == BUNDLED)


def _write(path: Path, traces: list[Trace]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t.to_json_dict()) + "\n" for t in traces))
    return path


def test_projection_keeps_the_efficiency_against_the_bound(bundled, tmp_path: Path) -> None:
    workloads = bundled.workloads[:2]
    traces = [_trace(bundled, w, latency_ms=(i + 2) * sol_times(bundled, w, "H200").sol_ms) for i, w in enumerate(workloads)]
    traces.append(_trace(bundled, workloads[0], 1.0, status="INCORRECT_NUMERICAL"))  # not projected: not correct
    path = _write(tmp_path / "run" / "traces.jsonl", traces)
    result = CliRunner().invoke(app, ["sol", "--project", str(tmp_path / "run"), "--to", "B200", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 2
    for i, (row, workload) in enumerate(zip(rows, workloads)):
        target = sol_times(bundled, workload, "B200").sol_ms
        measured = sol_times(bundled, workload, "H200").sol_ms
        assert row["target_sol_ms"] == pytest.approx(target) and row["sol_ms"] == pytest.approx(measured)
        assert row["efficiency"] == pytest.approx(1 / (i + 2))
        assert row["projected_ms"] == pytest.approx(target / (measured / row["latency_ms"]))
        assert row["projected_ms"] == pytest.approx((i + 2) * target)
        assert row["assumption"] == ASSUMPTION and row["measured_hardware"] == "H200" and row["target"] == "B200"
    table = CliRunner().invoke(app, ["sol", "--project", str(path), "--to", "B200"])
    assert table.exit_code == 0 and "assumption: the kernel reaches the same fraction" in table.output
    assert "2 of 3 traces projected" in table.output


def test_projection_from_a_named_spec_and_a_dataset_given(tmp_path: Path) -> None:
    problem = inline_problem("proj_add", "def run(a, b):\n    return a + b\n", {"a": (["N"], "float32"), "b": (["N"], "float32")},
                             {"c": (["N"], "float32")}, axes={"N": {"type": "var"}}, workload_axes=[{"N": 1 << 20}])
    write_problem_folder(problem, tmp_path / "data" / "proj_add")
    trace = _trace(problem, problem.workloads[0], 0.5, spec="A100-SXM")
    [item] = list(project([trace], {problem.name: problem}, _spec("H100-SXM"), source=_spec("A100-SXM")))
    assert item.projected_ms == pytest.approx(0.5 * sol_times(problem, problem.workloads[0], "H100-SXM").sol_ms
                                              / sol_times(problem, problem.workloads[0], "A100-SXM").sol_ms)
    path = _write(tmp_path / "t.jsonl", [trace])
    result = CliRunner().invoke(app, ["sol", str(tmp_path / "data"), "--project", str(path), "--to", "H100-SXM", "--from", "A100-SXM", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["projected_ms"] == pytest.approx(item.projected_ms)


def _spec(name: str):
    from solbench.sol.hardware import get_hardware

    return get_hardware(name)


def _one_line(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["sol", *args])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_bad_inputs_are_one_line_errors(bundled, tmp_path: Path) -> None:
    good = _write(tmp_path / "good.jsonl", [_trace(bundled, bundled.workloads[0], 0.1)])
    assert "does not exist" in _one_line(["--project", str(tmp_path / "missing.jsonl"), "--to", "B200"])
    (tmp_path / "empty").mkdir()
    assert "holds no traces.jsonl" in _one_line(["--project", str(tmp_path / "empty"), "--to", "B200"])
    assert "unknown hardware 'Z9000'" in _one_line(["--project", str(good), "--to", "Z9000"])
    assert "go together" in _one_line(["--project", str(good)])
    other = tmp_path / "elsewhere"
    write_problem_folder(inline_problem("unrelated", "def run(a):\n    return a\n", {"a": (["N"], "float32")}, {"b": (["N"], "float32")},
                                        axes={"N": {"type": "var"}}, workload_axes=[{"N": 8}]), other)
    line = _one_line([str(other), "--project", str(good), "--to", "B200", "--json"])
    assert f"problem {BUNDLED!r} is not among the problems given" in line
