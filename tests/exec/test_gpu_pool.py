"""GPU lanes: one per GPU, each seeing only its own GPU; the same statuses as a serial run."""

from __future__ import annotations

import pytest
import torch
from exec_testkit import outcome, quick_options, reference_job

from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status
from solbench.exec import Job, evaluate_jobs

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

ONE_GPU_ADD = """import torch

def add(a, b, c):
    if torch.cuda.device_count() != 1:
        raise RuntimeError(f"this lane sees {torch.cuda.device_count()} GPUs")
    torch.add(a, b, out=c)
"""


def test_each_gpu_lane_sees_one_gpu_and_statuses_match_serial() -> None:
    problem = inline_problem("add_one_gpu", "import torch\n\ndef run(a, b):\n    return a + b\n", {"a": ([1 << 16], "float32"), "b": ([1 << 16], "float32")},
                             {"c": ([1 << 16], "float32")})
    solution = inline_solution("add-one-gpu", problem.name, "pytorch", "k.py::add", {"k.py": ONE_GPU_ADD})
    jobs = [Job(problem, solution)] * max(2, torch.cuda.device_count()) + [reference_job("rmsnorm_llama3_8b")]
    options = quick_options(device="cuda", timing=True, budget_s=0.5)
    pooled = evaluate_jobs(jobs, options, executor="pool", lanes="all")
    assert all(trace.evaluation.status == Status.PASSED for trace in pooled), [t.evaluation.log for t in pooled]
    serial = evaluate_jobs(jobs, options, executor="serial")
    assert outcome(pooled) == outcome(serial)
    lanes = {trace.evaluation.environment["lane"] for trace in pooled}
    assert lanes <= {f"gpu{index}" for index in range(torch.cuda.device_count())}
    if torch.cuda.device_count() > 1:
        assert len(lanes) > 1  # the jobs were spread over the GPUs
