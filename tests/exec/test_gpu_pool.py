"""GPU lanes: one per GPU, each seeing only its own GPU; the same statuses as a serial run."""

from __future__ import annotations

import os
import signal

import pytest
import torch
from exec_testkit import lane_pids, outcome, quick_options, reference_job

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


def test_a_killed_gpu_lane_is_restarted_and_its_job_retried() -> None:
    """The lane of GPU 0 killed (SIGKILL, its workers with it) after its first trace: a fresh lane on the
    same GPU takes the job again and does the two workloads left; nothing is lost or done twice."""
    job = reference_job("rmsnorm_llama3_8b", "smallest:3")
    killed: list[int] = []

    def kill_the_lane_once(trace) -> None:
        if not killed:
            (pid,) = lane_pids()
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    traces = evaluate_jobs([job], quick_options(device="cuda"), executor="pool", lanes=["0"], on_trace=kill_the_lane_once)
    assert len(killed) == 1
    assert [trace.workload.uuid for trace in traces] == [workload.uuid for workload in job.workloads]
    assert [trace.evaluation.status for trace in traces] == [Status.PASSED] * 3, [t.evaluation.log for t in traces]
    assert {trace.evaluation.environment["lane"] for trace in traces} == {"gpu0"}
    assert lane_pids() == set()
