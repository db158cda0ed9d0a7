"""The command line, in-process (typer's CliRunner) and as a real subprocess (`python -m solbench.cli`
and the installed `solbench` script): --version, validate, show."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from typer.testing import CliRunner

import solbench
from solbench.cli import app
from solbench.dataset import bundled_problems_path

DATA = Path(__file__).resolve().parent / "fixtures"
PROBLEM = Path("valid") / "problem_with_reference_file"  # relative to DATA: short paths keep table cells whole
DATASET = Path("valid") / "dataset"
SOLUTION = Path("valid") / "solutions" / "vector_add_triton.json"
TRACES = Path("valid") / "traces" / "vector_add.jsonl"
BAD_DTYPE = Path("malformed") / "dtype_unknown"
BAD_SOLUTION = Path("malformed") / "solution_parent_path.json"
ENV = {"COLUMNS": "200"}


def _script() -> str | None:
    installed = Path(sysconfig.get_path("scripts")) / "solbench"
    return str(installed) if installed.is_file() else shutil.which("solbench")


SCRIPT = _script()
MODULE = pytest.param([sys.executable, "-m", "solbench.cli"], id="python-m")
COMMANDS = [
    MODULE,
    pytest.param([SCRIPT], id="script", marks=pytest.mark.skipif(SCRIPT is None, reason="the solbench console script is not installed")),
]


class Result:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.exit_code, self.stdout, self.stderr = code, stdout, stderr

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def in_process(*args: str, columns: int = 200) -> Result:
    result = CliRunner().invoke(app, [str(a) for a in args], env={**ENV, "COLUMNS": str(columns)}, catch_exceptions=False)
    return Result(result.exit_code, result.stdout, result.stderr)


def subprocess_run(command: list[str], *args: str) -> Result:
    done = subprocess.run(
        [*command, *(str(a) for a in args)],
        cwd=DATA,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def in_data(monkeypatch):
    monkeypatch.chdir(DATA)


def bundled_problem_files() -> list[Path]:
    root = bundled_problems_path()
    if not root.is_dir():
        return []
    return [p for p in root.rglob("*") if p.suffix in {".json", ".jsonl", ".py"} and p.name != "__init__.py" and "__pycache__" not in p.parts]


def require_bundled_problems() -> None:
    if not bundled_problem_files():
        pytest.skip(f"no bundled problem yet under {bundled_problems_path()} (the bundled set is being written separately)")


def assert_no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output, result.output


# --- --version ------------------------------------------------------------------------------------


def test_version_in_process():
    result = in_process("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"solbench {solbench.__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_version_subprocess(command):
    result = subprocess_run(command, "--version")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"solbench {solbench.__version__}"
    assert result.stderr == ""


# --- validate -------------------------------------------------------------------------------------


def test_validate_bundled_problems_in_process():
    require_bundled_problems()
    result = in_process("validate")
    assert_no_traceback(result)
    assert result.exit_code == 0, result.output
    assert [line for line in result.error_lines() if ": warning: " not in line] == []
    assert " valid (" in result.stdout


def test_validate_bundled_problems_subprocess():
    require_bundled_problems()
    result = subprocess_run([sys.executable, "-m", "solbench.cli"], "validate")
    assert_no_traceback(result)
    assert result.exit_code == 0, result.output


def test_validate_valid_paths(in_data):
    result = in_process("validate", PROBLEM, DATASET, SOLUTION, TRACES)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert "7 of 7 valid (5 problems, 7 workloads)" in result.stdout
    for path in (PROBLEM, SOLUTION, TRACES, DATASET / "L1" / "vector_add", DATASET / "L2" / "fused_linear_relu.py"):
        assert str(path) in result.stdout


def check_mixed_validation(result: Result) -> None:
    assert_no_traceback(result)
    assert result.exit_code == 1, result.output
    for path in (PROBLEM, BAD_DTYPE, DATASET / "L1" / "row_softmax", DATASET / "L1" / "vector_add", BAD_SOLUTION):
        assert str(path) in result.stdout  # the table lists each path
    results = {row[0]: row[-1] for row in table_rows(result.stdout)}
    assert results == {
        str(PROBLEM): "valid",
        str(BAD_DTYPE): "invalid (1 error)",
        str(DATASET / "L1" / "row_softmax"): "valid",
        str(DATASET / "L1" / "vector_add"): "valid",
        str(BAD_SOLUTION): "invalid (1 error)",
    }
    assert "3 of 5 valid (3 problems, 5 workloads)" in result.stdout
    lines = result.error_lines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith(f"{BAD_DTYPE / 'definition.json'}: inputs.x.dtype: Input should be")
    assert lines[1].startswith(f"{BAD_SOLUTION}: sources.1.path: '../util.py' must be a plain relative path")


def test_validate_mix_of_valid_and_invalid_in_process(in_data):
    check_mixed_validation(in_process("validate", PROBLEM, BAD_DTYPE, DATASET / "L1", BAD_SOLUTION))


@pytest.mark.parametrize("command", COMMANDS)
def test_validate_mix_of_valid_and_invalid_subprocess(command):
    check_mixed_validation(subprocess_run(command, "validate", PROBLEM, BAD_DTYPE, DATASET / "L1", BAD_SOLUTION))


def test_validate_missing_path(in_data):
    result = in_process("validate", "no/such/problem")
    assert result.exit_code == 1
    assert result.error_lines() == ["no/such/problem: does not exist"]


# --- show -----------------------------------------------------------------------------------------


def table_rows(output: str) -> list[list[str]]:
    """The cells of every row of every rich table in the output."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if line.startswith("│")]


def has_row(output: str, *cells: str) -> bool:
    return any(set(cells) <= set(row) for row in table_rows(output))


def check_problem_details(result: Result) -> None:
    assert_no_traceback(result)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "gqa_scores_mixed_inputs" in out and str(PROBLEM) in out
    assert "op_type: attention" in out and "model: solbench/test-model" in out
    # axes (var, const, expr) and the constraints
    assert has_row(out, "B", "var") and has_row(out, "N", "var")
    assert has_row(out, "D", "const", "8") and has_row(out, "H_q", "expr", "H_kv * G")
    assert has_row(out, "constraint", "N <= 4 * B")
    # inputs and outputs, with shapes and dtypes
    for role, name, shape, dtype in (
        ("in", "x", "[B, H_q, D]", "float32"),
        ("in", "w", "[H_q, D]", "float32"),
        ("in", "x_fp8", "[B, D]", "float8_e4m3fn"),
        ("in", "x_fp4", "[B, D]", "float4_e2m1"),
        ("in", "idx", "[N]", "int64"),
        ("in", "scale", "scalar", "float32"),
        ("out", "scores", "[N, H_q]", "float32"),
        ("out", "side", "[B, D_half]", "float32"),
    ):
        assert has_row(out, role, name, shape, dtype), (name, table_rows(out))
    # one row per workload: uuid prefix, axis values, tolerance
    assert "workloads (2)" in out
    assert any("3f9a6c21" in row[0] and "B=3 N=5" in row and "1e-05 / 1e-05 / 1" in row for row in table_rows(out))
    assert any("b84e0d57" in row[0] and "B=1 N=4" in row and "0.0001 / 0.0001 / 0.99" in row for row in table_rows(out))


def test_show_problem_folder_in_process(in_data):
    check_problem_details(in_process("show", PROBLEM))


def test_show_problem_folder_subprocess():
    check_problem_details(subprocess_run([sys.executable, "-m", "solbench.cli"], "show", PROBLEM))


def test_show_several_problems(in_data):
    result = in_process("show", DATASET)
    assert result.exit_code == 0, result.output
    for name in ("row_softmax", "vector_add", "fused_linear_relu", "scale_shift"):
        assert name in result.stdout


def test_show_bundled_problems_summary():
    require_bundled_problems()
    from solbench.data.loaders import load_problems

    names = [p.name for p in load_problems([bundled_problems_path()])]
    result = in_process("show", columns=1000)  # wide enough that no name is folded over two lines
    assert_no_traceback(result)
    assert result.exit_code == 0, result.output
    assert f"{len(names)} problems" in result.stdout
    for name in names:
        assert name in result.stdout


def check_missing_path(result: Result) -> None:
    assert_no_traceback(result)
    assert result.exit_code == 1
    assert result.error_lines() == ["no/such/problem: does not exist"]
    assert result.stdout == ""


def test_show_missing_path_in_process(in_data):
    check_missing_path(in_process("show", "no/such/problem"))


@pytest.mark.parametrize("command", COMMANDS)
def test_show_missing_path_subprocess(command):
    check_missing_path(subprocess_run(command, "show", "no/such/problem"))


def test_show_flashinfer_trace_folder(in_data):
    result = in_process("show", "flashinfer_trace")
    assert result.exit_code == 0, result.output
    assert "rmsnorm_h8" in result.stdout and "gemm_n16_k8" in result.stdout


# --- audit ------------------------------------------------------------------------------------------

LEGIT = DATA.parent / "legit"
EXPLOITS = DATA.parent / "exploits"


def test_audit_json_lists_each_solution_with_its_findings():
    import json

    honest, cheat = LEGIT / "legit_env_tuning_variables.json", EXPLOITS / "11_environ_call_counter.json"
    result = CliRunner().invoke(app, ["audit", "--json", str(honest), str(cheat)], env=ENV)
    assert result.exit_code == 1, result.output  # one of them is refused
    report = json.loads(result.output)
    assert [entry["path"] for entry in report] == [str(honest), str(cheat)]
    assert [entry["refused"] for entry in report] == [False, True]
    assert {f["rule"] for f in report[0]["findings"]} == {"PY-ENV-TUNING"}
    assert all(f["severity"] == "warn" and f["file"] == "main.py" and f["line"] >= 1 for f in report[0]["findings"])
    env = [f for f in report[1]["findings"] if f["rule"] == "PY-ENV"]
    assert env and env[0]["severity"] == "reject" and env[0]["message"]


def test_audit_accepts_honest_solutions_with_exit_code_zero():
    import json

    result = CliRunner().invoke(app, ["audit", "--json", str(LEGIT / "legit_importlib_own_module.json")], env=ENV)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"path": str(LEGIT / "legit_importlib_own_module.json"), "refused": False, "findings": []}]


def test_validate_warns_about_a_problem_whose_outputs_depend_on_no_input(tmp_path: Path):
    from solbench.data.inline import inline_problem
    from solbench.data.loaders import write_problem_folder

    constant = inline_problem("ones_like_nothing", "import torch\n\ndef run(x):\n    return torch.ones(8)\n",
                              {"x": ([8], "float32")}, {"y": ([8], "float32")})
    honest = inline_problem("doubles", "import torch\n\ndef run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    write_problem_folder(constant, tmp_path / "constant")
    write_problem_folder(honest, tmp_path / "honest")
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "validate", str(tmp_path / "constant"), str(tmp_path / "honest")],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not a refusal
    warnings = [line for line in done.stdout.splitlines() if "degenerate" in line]
    assert len(warnings) == 1 and "constant" in warnings[0] and "output(s) y" in warnings[0] and "perturbed: x" in warnings[0], done.stdout
    quiet = subprocess.run([sys.executable, "-m", "solbench.cli", "validate", "--no-degenerate", str(tmp_path / "constant")],
                           capture_output=True, text=True)
    assert quiet.returncode == 0 and "degenerate" not in quiet.stdout
