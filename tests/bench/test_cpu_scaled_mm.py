"""bench/cpu_scaled_mm.py: CPU fp8 `torch._scaled_mm` through PyTorch's own kernel (oneDNN off for the
call alone), in both workers of a CPU evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.cpu_scaled_mm import route_cpu_scaled_mm
from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status
from solbench.data.workload import Workload

CALL = "torch._scaled_mm(a, b.t(), scale_a=a_scale, scale_b=b_scale, out_dtype=torch.bfloat16)"


def fp8_operands(rows: int = 8, inner: int = 512, columns: int = 96) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(3)
    a = (torch.randn(rows, inner, generator=generator) * 3).to(torch.float8_e4m3fn)
    b = (torch.randn(columns, inner, generator=generator) * 3).to(torch.float8_e4m3fn)
    return a, b, torch.tensor(0.031), torch.tensor(0.017)


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch):
    original = torch._scaled_mm
    monkeypatch.setattr(torch, "_scaled_mm", original)  # put back after the test: this test process goes on
    route_cpu_scaled_mm(torch)
    return original


def test_the_routed_call_is_pytorchs_own_cpu_kernel_and_leaves_onednn_on(routed) -> None:
    a, b, a_scale, b_scale = fp8_operands()
    assert torch._scaled_mm is not routed and torch.backends.mkldnn.enabled
    result = eval(CALL)
    assert torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        own = routed(a, b.t(), scale_a=a_scale, scale_b=b_scale, out_dtype=torch.bfloat16)
    finally:
        torch.backends.mkldnn.enabled = True
    assert result.dtype == torch.bfloat16 and result.shape == (8, 96) and torch.equal(result, own)
    widened = (a.float() * a_scale) @ (b.float() * b_scale).t()  # what the kernel computes, rounded once to bf16
    assert torch.equal(result, widened.to(torch.bfloat16))

    with pytest.raises(RuntimeError):  # a call PyTorch refuses is refused the same, and oneDNN is on again after it
        torch._scaled_mm(a, b, scale_a=a_scale, scale_b=b_scale, out_dtype=torch.bfloat16)
    assert torch.backends.mkldnn.enabled

    once = torch._scaled_mm
    route_cpu_scaled_mm(torch)
    assert torch._scaled_mm is once  # routed once, however often asked


def test_an_untrusted_cpu_solution_that_calls_scaled_mm_passes_against_the_reference(tmp_path: Path) -> None:
    """Both workers call the routed function: the solution's integrity check accepts the worker's own
    rebinding, and the outputs agree."""
    definition = Definition.model_validate({
        "name": "tiny_fp8_gemm", "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 96}, "K": {"type": "const", "value": 512}},
        "inputs": {"a": {"shape": ["M", "K"], "dtype": "float8_e4m3fn"}, "b": {"shape": ["N", "K"], "dtype": "float8_e4m3fn"},
                   "a_scale": {"shape": [], "dtype": "float32", "distribution": {"kind": "uniform", "low": 0.01, "high": 0.05}},
                   "b_scale": {"shape": [], "dtype": "float32", "distribution": {"kind": "uniform", "low": 0.01, "high": 0.05}}},
        "outputs": {"out": {"shape": ["M", "N"], "dtype": "bfloat16"}},
        "reference": f"import torch\n\n\ndef run(a, b, a_scale, b_scale):\n    return {CALL}\n"})
    workload = Workload.model_validate({"uuid": "m8", "axes": {"M": 8}, "inputs": {name: {"type": "random"} for name in ("a", "b", "a_scale", "b_scale")}})
    problem = Problem(definition, [workload])
    solution = Solution.model_validate({
        "name": "own_fp8_gemm", "definition": "tiny_fp8_gemm", "author": "test",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": f"import torch\n\n\ndef run(a, b, a_scale, b_scale):\n    out = {CALL}\n    return out.clone()\n"}]})
    options = EvalOptions(device="cpu", trials=1, timing=False, hidden=0, seed=2, cache_root=tmp_path)
    (trace,) = evaluate(problem, solution, options)
    assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
