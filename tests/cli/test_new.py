"""`solbench new`: skeletons for every language audit clean, the Python ones pass `solbench eval` on
the CPU as written, and bad input is one line and a non-zero exit (never an overwrite)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solbench.bench.guards.static import analyze_solution
from solbench.cli import app
from solbench.data.loaders import load_problems, load_solution
from solbench.data.skeletons import LANGUAGES, skeleton
from solbench.dataset import bundled_problems_path

DPS_PROBLEM = "fused_add_rmsnorm_llama3_8b"  # two outputs: destination-passing
RETURNING_PROBLEM = "silu_and_mul_llama3_8b"  # one output: returned
SMALLEST = {DPS_PROBLEM: "077b0858", RETURNING_PROBLEM: "f2f3faa3"}  # their num_tokens = 1 workloads
STYLE = {DPS_PROBLEM: "dps", RETURNING_PROBLEM: "returning"}


def _new(folder: Path, problem: str, language: str, *extra: str):
    return CliRunner().invoke(app, ["new", problem, "--language", language, "-o", str(folder), "--style", STYLE.get(problem, "auto"), *extra],
                              env={"COLUMNS": "200"})


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("problem", [DPS_PROBLEM, RETURNING_PROBLEM])
def test_skeleton_files_match_the_solution_and_audit_clean(tmp_path: Path, problem: str, language: str) -> None:
    result = _new(tmp_path / "s", problem, language)
    assert result.exit_code == 0, result.output
    solution = load_solution(tmp_path / "s" / "solution.json")
    assert solution.definition == problem
    assert solution.spec.destination_passing_style is (STYLE[problem] == "dps")
    for source in solution.sources:
        assert (tmp_path / "s" / source.path).read_text() == source.content
    findings = analyze_solution(solution, "relaxed")
    assert [f for f in findings if f.severity == "reject"] == []
    assert findings == []  # not even a warning for a starting point
    assert "next: solbench eval" in result.output


def test_signatures_follow_the_definition() -> None:
    problems = {p.name: p for p in load_problems([bundled_problems_path()])}
    dps = skeleton(problems[DPS_PROBLEM], "pytorch", "dps").solution.source("main.py")
    assert "def run(hidden_states, residual, weight, eps, output, residual_out):" in dps
    returning = skeleton(problems[RETURNING_PROBLEM], "triton", "returning").solution.source("main.py")
    assert "def run(gate_up):" in returning and "@triton.jit" in returning and "return output" in returning
    cuda = skeleton(problems[DPS_PROBLEM], "cuda_cpp", "dps").solution.source("kernel.cu")
    assert ("void run(torch::Tensor hidden_states, torch::Tensor residual, torch::Tensor weight, double eps, "
            "torch::Tensor output, torch::Tensor residual_out)") in cuda
    cuda_returning = skeleton(problems[RETURNING_PROBLEM], "cuda_cpp", "returning").solution.source("kernel.cu")
    assert "torch::Tensor run(torch::Tensor gate_up)" in cuda_returning
    assert "torch::empty({gate_up.size(0), 14336}" in cuda_returning
    assert skeleton(problems[DPS_PROBLEM], "pytorch").solution.spec.destination_passing_style  # auto: dps for tensor outputs


def _eval(tmp_path: Path, problem: str, solution: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("SOLBENCH_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # no GPU here: Triton kernels run in its interpreter
    result = CliRunner().invoke(app, ["eval", str(bundled_problems_path() / problem), "--solution", str(solution), "--workload", SMALLEST[problem],
                                      "--no-timing", "--trials", "2", "--hidden", "0", "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    traces = json.loads(result.stdout[result.stdout.index("["):])
    assert len(traces) == 1
    return traces[0]["evaluation"]


@pytest.mark.parametrize(("problem", "language"), [(DPS_PROBLEM, "pytorch"), (RETURNING_PROBLEM, "triton")])
def test_python_skeletons_pass_eval_as_written(tmp_path: Path, problem: str, language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _new(tmp_path / "s", problem, language).exit_code == 0
    evaluation = _eval(tmp_path, problem, tmp_path / "s" / "solution.json", monkeypatch)
    assert evaluation["status"] == "PASSED", evaluation["log"][-2000:]


def test_never_overwrites(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "main.py").write_text("# mine\n")
    result = _new(folder, DPS_PROBLEM, "pytorch")
    assert result.exit_code == 1
    assert "main.py: exists already" in result.output
    assert (folder / "main.py").read_text() == "# mine\n"
    assert not (folder / "solution.json").exists()  # nothing written when anything would be overwritten


def test_problem_as_folder_or_definition_file(tmp_path: Path) -> None:
    folder = bundled_problems_path() / DPS_PROBLEM
    for given, out in ((folder, "a"), (folder / "definition.json", "b")):
        result = CliRunner().invoke(app, ["new", str(given), "-o", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
        assert load_solution(tmp_path / out / "solution.json").definition == DPS_PROBLEM


@pytest.mark.parametrize(("arguments", "message"), [
    (["no_such_problem"], "no_such_problem: is neither a path nor a bundled problem"),
    ([DPS_PROBLEM, "--language", "rust"], "expected one of pytorch, triton, cuda_cpp"),
    ([DPS_PROBLEM, "--style", "sideways"], "expected one of auto, dps, returning"),
])
def test_bad_input_is_an_error_line(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["new", *arguments, "-o", str(tmp_path / "s")])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not (tmp_path / "s").exists()


def test_dataset_path_must_name_one_problem(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["new", str(bundled_problems_path()), "-o", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert re.search(r"holds \d+ problems", result.output)
