"""`solbench optimize` from the command line: the built-in proposer offline on a tiny problem, and
one-line errors for bad inputs (none of which evaluates anything)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solbench.cli import app
from solbench.data.inline import inline_solution
from solbench.data.loaders.problem_folder import write_problem_folder

from optimize_testkit import ChatServer, make_problem

SMALL = ["--device", "cpu", "--hardware", "H200", "--trials", "1", "--timing-budget", "0.2", "--hidden", "1"]


@pytest.fixture
def problem_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "opt_scale"
    write_problem_folder(make_problem(), folder)
    return folder


def _solution_files(folder: Path) -> Path:
    folder.mkdir()
    sources = {"plain": "import torch\n\n\ndef run(x, alpha, y):\n    torch.mul(x, alpha, out=y)\n",
               "returning": "import torch\n\n\ndef run(x, alpha):\n    return torch.mul(x, alpha)\n"}
    for name, source in sources.items():
        solution = inline_solution(name, "opt_scale", "pytorch", "main.py::run", {"main.py": source}, dps="y" in source.split(":")[0])
        (folder / f"{name}.json").write_text(solution.to_json(indent=1))
    return folder


def test_builtin_proposer_runs_offline(problem_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["optimize", str(problem_dir), "--proposer", "builtin", "--compile-modes", "none",
                                      "--solutions", str(_solution_files(tmp_path / "sols")), "--iterations", "2", "--run-dir", str(run), *SMALL])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    assert [r["proposal"]["candidate"] for r in records] == ["registered:plain", "registered:returning"]
    assert all(r["feedback"]["status"] == "PASSED" and r["eligible"] for r in records)
    assert (run / "best" / "solution.json").is_file() and (run / "score.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((run / "optimize.json").read_text())["proposer"] == "builtin"
    assert "best: attempt" in result.output


def _one_line_error(args: list[str], code: int = 1) -> str:
    result = CliRunner().invoke(app, ["optimize", *args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_bad_inputs_are_one_line_errors(problem_dir: Path, tmp_path: Path) -> None:
    assert "neither a path nor a bundled problem" in _one_line_error(["no_such_problem_anywhere"])
    assert "http(s)://" in _one_line_error([str(problem_dir), "--proposer", "ftp://example", *SMALL])
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "file").write_text("x")
    assert "not empty" in _one_line_error([str(problem_dir), "--run-dir", str(occupied), *SMALL])
    assert "nothing to resume" in _one_line_error([str(problem_dir), "--run-dir", str(occupied), "--resume", *SMALL])


def test_unreachable_or_broken_endpoint_stops_before_any_evaluation(problem_dir: Path, tmp_path: Path) -> None:
    server = ChatServer([])  # answers 400 to every chat request
    try:
        line = _one_line_error([str(problem_dir), "--proposer", server.url, "--run-dir", str(tmp_path / "a"), *SMALL], code=2)
        assert "HTTP 400: the script has no more replies" in line
        assert server.requests[0]["model"] == "scripted"  # the first model the server lists
    finally:
        server.close()
    line = _one_line_error([str(problem_dir), "--proposer", server.url, "--model", "m", "--run-dir", str(tmp_path / "b"), *SMALL], code=2)
    assert "cannot reach" in line
    assert not (tmp_path / "b" / "baseline.json").exists()
