"""`solbench profile`, `eval --memcheck`, `run --memcheck` and `run --profile` where the NVIDIA tools or a
GPU are missing, and on bad input: one line on stderr naming what is missing, a non-zero exit code,
never a traceback, and nothing run or written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.dataset import bundled_problems_path
from solbench.profile.tools import NCU, SANITIZER, ToolMissing, find_tool

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "examples" / "silu_and_mul_pytorch" / "solution.json"
PROBLEM = bundled_problems_path() / "silu_and_mul_llama3_8b"
MISSING = "/nonexistent/bin/tool"


def solbench(tmp_path: Path, *args: object, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("SOLBENCH_DEBUG", "SOLBENCH_NCU", "SOLBENCH_COMPUTE_SANITIZER")}
    environment.update(COLUMNS="200", SOLBENCH_BUILD_CACHE=str(tmp_path / "builds"), **env)
    return subprocess.run([sys.executable, "-m", "solbench.cli", *map(str, args)], env=environment, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


def test_profile_without_ncu(tmp_path: Path):
    result = solbench(tmp_path, "profile", "silu_and_mul_llama3_8b", "--solution", SOLUTION, SOLBENCH_NCU=MISSING)
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("error: solbench profile: ncu (Nsight Compute") and MISSING in line and "$SOLBENCH_NCU" in line
    assert result.stdout == ""


def test_eval_memcheck_without_compute_sanitizer(tmp_path: Path):
    result = solbench(tmp_path, "eval", PROBLEM, "--solution", SOLUTION, "--memcheck", "--device", "cpu", SOLBENCH_COMPUTE_SANITIZER=MISSING)
    assert result.returncode == 2
    assert one_line(result).startswith("error: --memcheck: compute-sanitizer (for --memcheck) not found")
    assert result.stdout == ""  # nothing was evaluated


@pytest.mark.parametrize("flag, variable, tool", [("--memcheck", "SOLBENCH_COMPUTE_SANITIZER", "compute-sanitizer"), ("--profile", "SOLBENCH_NCU", "ncu")])
def test_run_without_the_tool_runs_nothing(tmp_path: Path, flag: str, variable: str, tool: str):
    result = solbench(tmp_path, "run", PROBLEM, flag, "--device", "cpu", "--run-dir", tmp_path / "run", "--baselines", tmp_path / "baselines",
                      **{variable: MISSING})
    assert result.returncode == 2
    assert one_line(result).startswith(f"error: {flag}: {tool} ")
    assert not (tmp_path / "run").exists() and not (tmp_path / "baselines").exists()


@pytest.mark.parametrize("command", [["profile", "silu_and_mul_llama3_8b"], ["eval", str(PROBLEM), "--memcheck"]])
def test_a_tool_without_a_gpu(tmp_path: Path, command: list[str]):
    true = shutil.which("true")
    result = solbench(tmp_path, *command, "--solution", SOLUTION, "--device", "cpu", SOLBENCH_NCU=true, SOLBENCH_COMPUTE_SANITIZER=true)
    assert result.returncode == 2
    assert "needs a CUDA device" in one_line(result) and "the device here is cpu" in one_line(result)


@pytest.mark.parametrize("args, expected", [
    (["profile", "silu_and_mul_llama3_8b", "--solution", "missing.json"], "missing.json: cannot read"),
    (["profile", "no_such_problem", "--solution", str(SOLUTION)], "is neither a path nor a bundled problem"),
    (["profile", "rmsnorm_llama3_8b", "--solution", str(SOLUTION)], "the solution is for 'silu_and_mul_llama3_8b'"),
    (["profile", "silu_and_mul_llama3_8b", "--solution", str(SOLUTION), "--workload", "zzzzzzzz"], "has no workload 'zzzzzzzz'"),
])
def test_bad_input_is_one_line_and_exit_code_1(tmp_path: Path, args: list[str], expected: str):
    result = solbench(tmp_path, *args)
    assert result.returncode == 1
    assert expected in one_line(result)


@pytest.mark.skipif(any(shutil.which(t.name) or Path("/usr/local/cuda/bin", t.name).exists() for t in (NCU, SANITIZER)),
                    reason="the tools are installed here")
@pytest.mark.parametrize("tool", [NCU, SANITIZER], ids=lambda t: t.name)
def test_the_search_names_every_place_looked_in(tool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv(tool.variable, raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    with pytest.raises(ToolMissing) as caught:
        find_tool(tool)
    message = str(caught.value)
    assert message.startswith(f"{tool.name} (") and "PATH" in message and str(tmp_path / "cuda" / "bin") in message and "/usr/local/cuda/bin" in message
    assert "\n" not in message


def test_an_override_is_used_as_given(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(NCU.variable, shutil.which("true"))
    assert find_tool(NCU) == Path(shutil.which("true"))
