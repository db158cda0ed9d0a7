"""solbench.bench.verify: the trusted candidates timed in process, the self-check, solutions merged in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions
from solbench.bench.verify import WorkloadCheck, check_problem, ratio_summary, time_trusted
from solbench.cli.workloads import choose_workloads as _choose_workloads
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.workload import Workload
from solbench.sol.hardware import get_hardware

REPO = Path(__file__).resolve().parents[2]
UPCAST = REPO / "tests/legit/problems/matmul_bf16_upcast"
FAST = dict(device="cpu", trials=1, min_iterations=3, budget_s=0.2, warmup=1, verify_timed=1, timeout_s=120.0, hidden=0, seed=1)


def _problem(reference: str, sizes: list[int]) -> Problem:
    definition = Definition.model_validate({
        "name": "scale_add", "op_type": "elementwise", "axes": {"N": {"type": "var"}},
        "inputs": {"x": {"shape": ["N"], "dtype": "float32"}, "y": {"shape": ["N"], "dtype": "float32"}},
        "outputs": {"z": {"shape": ["N"], "dtype": "float32"}},
        "reference": reference,
    })
    workloads = [Workload.model_validate({"uuid": f"n{n}", "axes": {"N": n}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}}})
                 for n in sizes]
    return Problem(definition, workloads)


DETERMINISTIC = "import torch\n\ndef run(x, y):\n    return 2 * x + y\n"
NOISY = "import torch\n\ndef run(x, y):\n    return 2 * x + y + torch.randn_like(x)\n"


def test_trusted_reference_is_timed_bounded_and_matches_itself():
    problem = _problem(DETERMINISTIC, [1024, 1 << 20])
    checks = time_trusted(problem, EvalOptions(**FAST, hardware="H200"), compile_modes=())
    assert [c.workload for c in checks] == ["n1024", "n1048576"]
    for check in checks:
        assert check.self_check == "PASSED"
        assert check.times_ms["reference"] > 0
        assert set(check.times_ms) == {"reference"} and not check.failures
        assert check.sol_ms is None  # no sol_ms callback given
    big = checks[1]
    assert big.ratio is None


def test_compiled_reference_is_checked_against_eager_and_timed_only_where_asked():
    problem = _problem(DETERMINISTIC, [1024, 4096])
    checks = time_trusted(problem, EvalOptions(**FAST), compile_modes=("default",), compile_workloads={"n4096"})
    assert set(checks[0].times_ms) == {"reference"}
    assert set(checks[1].times_ms) == {"reference", "compile-default"} and checks[1].times_ms["compile-default"] > 0


def test_a_reference_that_does_not_match_itself_is_reported():
    (check,) = time_trusted(_problem(NOISY, [4096]), EvalOptions(**FAST), compile_modes=())
    assert check.self_check is not None and check.self_check.startswith("INCORRECT_NUMERICAL (draw 1)")


def test_check_problem_prices_every_workload_and_merges_solutions_timed_by_the_evaluator():
    problem = _problem(DETERMINISTIC, [4096, 65536])
    solution = Solution.model_validate({
        "name": "fused", "definition": "scale_add", "author": "test",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": "import torch\n\ndef run(x, y):\n    return torch.add(y, x, alpha=2)\n"}],
    })
    checks = check_problem(problem, EvalOptions(**FAST, hardware="H200"), [solution], compile_modes=())
    assert len(checks) == 2
    for check, n in zip(checks, [4096, 65536]):
        assert set(check.times_ms) == {"reference", "fused"}, check.failures
        # T_SOL on the H200: two fp32 inputs read at 4.8 TB/s; the output fits in the L2, so its
        # write (at the on-chip rate) hides behind the reads; never below the DRAM latency floor
        floor = get_hardware("H200").dram_latency_floor_s
        assert check.sol_ms == pytest.approx(max(2 * 4 * n / 4.8e12, floor) * 1e3, rel=0.01)
        assert check.ratio is not None and check.ratio > 1  # a CPU is far slower than an H200's bound
        assert not check.violated


def test_a_wrong_solution_is_a_failure_not_a_time():
    problem = _problem(DETERMINISTIC, [4096])
    wrong = Solution.model_validate({
        "name": "wrong", "definition": "scale_add", "author": "test",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": "import torch\n\ndef run(x, y):\n    return x + y\n"}],
    })
    (check,) = check_problem(problem, EvalOptions(**FAST, hardware="H200"), [wrong], compile_modes=())
    assert "wrong" not in check.times_ms
    assert check.failures["wrong"].startswith("INCORRECT_NUMERICAL")


def test_ratio_summary_per_op_class():
    checks = [WorkloadCheck("p", "gemm", "a", 1.0, {"x": 2.0, "y": 1.5}), WorkloadCheck("p", "gemm", "b", 2.0, {"x": 5.0}),
              WorkloadCheck("q", "norm", "c", 1.0, {"x": 0.5}), WorkloadCheck("q", "norm", "d", 1.0, {})]
    assert checks[0].fastest == ("y", 1.5) and checks[2].violated and not checks[0].violated and checks[3].ratio is None
    summary = ratio_summary(checks)
    assert summary == {"gemm": {"workloads": 2, "median": 2.0, "least": 1.5}, "norm": {"workloads": 1, "median": 0.5, "least": 0.5}}


@pytest.mark.parametrize(("which", "expected"), [("smallest:2", ["n1", "n2"]), ("spread:1", ["n5"]), ("spread:2", ["n1", "n5"]),
                                                 ("spread:3", ["n1", "n3", "n5"]), ("spread:9", ["n1", "n2", "n3", "n4", "n5"])])
def test_choose_workloads(which, expected):
    problem = _problem(DETERMINISTIC, [5, 1, 3, 2, 4])
    assert [w.uuid for w in _choose_workloads(problem, which)] == expected


def test_verify_needs_a_gpu_and_says_so(tmp_path):
    if _cuda():
        pytest.skip("a GPU is here")
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "sol", "--verify", str(UPCAST)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "needs a CUDA GPU" in done.stdout + done.stderr and "Traceback" not in done.stderr


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_upcast_matmul_is_never_faster_than_its_bound_on_a_gpu(tmp_path):
    """bf16 operands upcast to fp32 in the reference: cuBLAS bf16 (a legit solution), the eager
    reference and torch.compile all stay above T_SOL, which is priced at the bf16 tensor rate."""
    out = tmp_path / "verify.jsonl"
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "sol", "--verify", str(UPCAST), "-w", "mm-1024", "-w", "mm-4096",
                           "--solutions", str(REPO / "tests/legit/legit_upcast_matmul_cublas.json"), "--compile-workloads", "all",
                           "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["workload"] for row in rows} == {"mm-1024", "mm-4096"}
    for row in rows:
        assert set(row["times_ms"]) == {"reference", "compile-default", "legit-upcast-matmul-cublas"}, row
        assert row["ratio"] >= 1.0 and row["self_check"] == "PASSED"
