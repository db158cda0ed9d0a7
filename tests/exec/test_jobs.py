from __future__ import annotations

import pytest
import torch

from solbench.data.trace import Status, Trace
from solbench.exec import STOPPED_FLAG, evaluate_jobs

from exec_testkit import quick_options, reference_job


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA, where asking for it fails")
def test_a_job_that_cannot_start_fails_its_workloads_and_the_next_job_still_runs() -> None:
    broken, fine = reference_job("rmsnorm_llama3_8b", "smallest:2"), reference_job("silu_and_mul_llama3_8b")
    seen: list[Trace] = []
    traces = evaluate_jobs([broken, fine], quick_options(device="cuda"), on_trace=seen.append)
    assert [trace.workload.uuid for trace in traces[:2]] == [w.uuid for w in broken.workloads]
    assert all(t.evaluation.status == Status.RUNTIME_ERROR and t.evaluation.flags == [STOPPED_FLAG] for t in traces)
    assert traces[0].evaluation.log.startswith("evaluation stopped: RuntimeError: --device cuda was asked for")
    assert seen == traces and len(traces) == 3


def test_skip_leaves_workloads_out() -> None:
    job = reference_job("silu_and_mul_llama3_8b", "smallest:2")
    assert job.remaining(set()) == job.workloads
    assert job.remaining({job.workloads[0].uuid}) == job.workloads[1:]
    resumed = type(job)(job.problem, job.solution, job.workloads, frozenset({job.workloads[1].uuid}))
    assert resumed.remaining(set()) == job.workloads[:1]


def test_unknown_executor_is_one_line() -> None:
    with pytest.raises(ValueError, match="--executor: expected one of serial, pool, ray, got 'threads'"):
        evaluate_jobs([], quick_options(), executor="threads")
