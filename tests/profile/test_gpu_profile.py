"""On a GPU with Nsight Compute and compute-sanitizer: the profile of a kernel whose DRAM traffic is
known, and --memcheck on kernels that read out of bounds although their outputs are right."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status
from solbench.dataset import bundled_problems_path
from solbench.profile.tools import NCU, SANITIZER, ToolMissing, find_tool


def _has(tool) -> bool:
    try:
        find_tool(tool)
        return True
    except ToolMissing:
        return False


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
ROOT = Path(__file__).resolve().parents[2]
N_COPY = 1 << 27  # 512 MiB in, 512 MiB out: what stays in the 60 MiB L2 at the end is a few percent of the traffic


def scale_problem(n: int):
    return inline_problem("scale_fp32", "import torch\n\ndef run(x):\n    return x * 2.0\n", {"x": (["N"], "float32")}, {"y": (["N"], "float32")},
                          axes={"N": {"type": "var"}}, workload_axes=[{"N": n}], tolerance={"max_atol": 0, "max_rtol": 0})


@pytest.mark.skipif(not _has(NCU), reason="needs Nsight Compute (ncu)")
def test_the_profile_of_a_scale_measures_its_dram_traffic():
    from solbench.profile.runner import profile_solution
    from solbench.sol.calibrate import spec_for_run

    problem = scale_problem(N_COPY)
    solution = inline_solution("scale-torch", problem.name, "pytorch", "k.py::run", {"k.py": "import torch\n\ndef run(x, y):\n    torch.mul(x, 2.0, out=y)\n"})
    options = EvalOptions(device="cuda", trials=1, hidden=0, budget_s=2.0)
    report = profile_solution(problem, solution, problem.workloads[0], options, spec=spec_for_run(None, "cuda"), ncu=find_tool(NCU))
    assert report.status == "PASSED", report.status_message
    assert report.totals.kernels >= 1 and report.kernels[0].duration_ms > 0
    expected = 8 * N_COPY  # 4 bytes read and 4 written per element
    assert report.totals.dram_bytes == pytest.approx(expected, rel=0.10), report.kernels
    assert report.sol.compulsory_bytes == pytest.approx(expected, rel=1e-6) and report.sol.bottleneck == "memory"
    assert report.timeline is not None and report.timeline.busy_ms > 0
    factors = report.decomposition.factors
    assert [f.name for f in factors] == ["gaps", "extra_bytes", "bandwidth", "remainder"]
    assert math.prod(f.value for f in factors) == pytest.approx(report.decomposition.t_over_t_sol, rel=1e-9)
    assert report.gap["extra_bytes"] == pytest.approx(1.0, rel=0.10)
    assert 1.0 <= report.gap["bandwidth"] < 3.0  # a plain copy reaches a good share of the DRAM bandwidth
    print(json.dumps({"dram_bytes": report.totals.dram_bytes, "gap": report.gap, "seconds": report.seconds}))


CUDA_UNMASKED_READ = r'''
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scale_unmasked_read(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    float v = *((const volatile float*)&x[i]);  // no bounds mask on the read: the last block reads past the end of x
    if (i < n) y[i] = v * 2.0f;
}

void run(torch::Tensor x, torch::Tensor y) {
    int64_t n = x.numel();
    scale_unmasked_read<<<(n + 255) / 256, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
}
'''
TRITON_UNMASKED_READ = '''
import triton
import triton.language as tl


@triton.jit
def _scale(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = tl.load(x + offsets)  # no mask on the load: the last block reads past the end of x
    tl.store(y + offsets, value * 2.0, mask=offsets < n)


def run(x, y):
    n = x.numel()
    _scale[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
'''


@pytest.mark.skipif(not _has(SANITIZER), reason="needs compute-sanitizer")
@pytest.mark.parametrize("language, entry, source", [("cuda_cpp", "k.cu::run", CUDA_UNMASKED_READ), ("triton", "k.py::run", TRITON_UNMASKED_READ)],
                         ids=["cuda", "triton"])
def test_memcheck_finds_an_out_of_bounds_read_whose_outputs_are_right(language: str, entry: str, source: str):
    problem = scale_problem(1000)  # 1000 elements; the grid covers 1024
    solution = inline_solution(f"scale-unmasked-{language}", problem.name, language, entry, {entry.split("::")[0]: source})
    options = EvalOptions(device="cuda", trials=2, hidden=0, timing=False)
    (plain,) = evaluate(problem, solution, options)
    assert plain.evaluation.status == Status.PASSED, plain.evaluation.log  # its outputs are right
    (checked,) = evaluate(problem, solution, EvalOptions(device="cuda", trials=2, hidden=0, timing=False, memcheck=True))
    evaluation = checked.evaluation
    assert evaluation.status == Status.INCORRECT_NUMERICAL, evaluation.log
    first = evaluation.log.splitlines()[0]
    assert first.startswith("INCORRECT [memcheck]: compute-sanitizer memcheck on workload") and "Invalid __global__ read" in first
    assert "out of bounds" in first and evaluation.flags == ["memcheck"]
    record = evaluation.environment["memcheck"]
    assert record["result"] == "errors" and record["seconds"]["memcheck"] > 0 and evaluation.phases["memcheck"] > 0
    print(json.dumps({language: record}))


@pytest.mark.skipif(not _has(SANITIZER), reason="needs compute-sanitizer")
def test_eval_memcheck_of_a_clean_example(tmp_path: Path):
    result = subprocess.run([sys.executable, "-m", "solbench.cli", "eval", str(bundled_problems_path() / "silu_and_mul_llama3_8b"), "--solution",
                             str(ROOT / "examples" / "silu_and_mul_pytorch" / "solution.json"), "--workload", "f2f3faa3", "--memcheck", "--hidden", "0",
                             "--no-timing", "--trials", "1", "--json"], capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (trace,) = json.loads(result.stdout)
    assert trace["evaluation"]["status"] == "PASSED" and trace["evaluation"]["environment"]["memcheck"]["result"] == "clean"
    assert "memcheck: clean" in trace["evaluation"]["log"]


@pytest.mark.skipif(not _has(NCU), reason="needs Nsight Compute (ncu)")
def test_run_profile_stores_the_profile_and_the_report_draws_its_gap_decomposition(tmp_path: Path):
    run_dir = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "solbench.cli", "run", str(bundled_problems_path() / "silu_and_mul_llama3_8b"), "--solutions",
                             str(ROOT / "examples" / "silu_and_mul_triton" / "solution.json"), "--workloads", "smallest:1", "--compile-modes", "none",
                             "--trials", "1", "--profile", "--run-dir", str(run_dir), "--baselines", str(tmp_path / "baselines")],
                            capture_output=True, text=True, timeout=400, cwd=tmp_path, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    stored = sorted((run_dir / "profiles").rglob("*.json"))
    assert len(stored) == 1, stored
    profile = json.loads(stored[0].read_text())
    assert profile["status"] == "PASSED" and profile["kernels"] and profile["kernels"][0]["duration_ms"] > 0
    assert profile["decomposition"]["t_over_t_sol"] > 1.0
    html = (run_dir / "report.html").read_text()
    assert 'data-plot="gap-decomposition"' in html and 'data-solution="silu_and_mul_triton"' in html and "<svg" in html
    print(json.dumps({"run_profile": {"stored": stored[0].name, "t_over_t_sol": profile["decomposition"]["t_over_t_sol"]}}))
