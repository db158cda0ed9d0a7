"""exec/slots.py: the serial executor with several evaluations in flight on one device gives the
serial run's statuses, in job order, keeps a problem's jobs in one slot, and never lets a timed
section overlap another evaluation's worker requests."""

from __future__ import annotations

import threading

import pytest
import torch

from exec_testkit import outcome, quick_options, reference_job

from solbench.bench import exclusive
from solbench.data.trace import Status, Trace
from solbench.exec import Job, evaluate_jobs
from solbench.exec.slots import problem_groups


def test_three_slots_give_the_serial_statuses_in_job_order(cheap_jobs: list[Job], serial_traces: list[Trace]) -> None:
    seen: list[Trace] = []
    traces = evaluate_jobs(cheap_jobs, quick_options(), concurrent=3, on_trace=seen.append, ordered=True)
    assert outcome(traces) == outcome(serial_traces)
    assert all(trace.evaluation.status == Status.PASSED for trace in traces)
    assert seen == traces


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")])])
def test_timed_sections_of_concurrent_evaluations_run_alone(device: str) -> None:
    """Timing on: at every timed section's start no other evaluation's request or comparison is in
    flight (the hook runs once the section holds the device), and the sections never overlap."""
    jobs = [reference_job(name) for name in ("rmsnorm_llama3_8b", "silu_and_mul_llama3_8b", "fused_add_rmsnorm_llama3_8b")]
    starts: list[tuple[int, str | None]] = []
    inside = threading.Lock()

    def hook(started: bool) -> None:
        if started:
            starts.append((exclusive._share._readers, threading.current_thread().name if inside.acquire(blocking=False) else "overlap"))
        else:
            inside.release()

    most_shared = [0]
    finished = threading.Event()

    def watch() -> None:  # how many evaluations' shared work was in flight at once
        while not finished.wait(0.002):
            most_shared[0] = max(most_shared[0], exclusive._share._readers)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    exclusive.register(hook)
    try:
        traces = evaluate_jobs(jobs, quick_options(device=device, timing=True, warmup=1, min_iterations=3, max_iterations=5, budget_s=0.2), concurrent=3)
    finally:
        exclusive.unregister(hook)
        finished.set()
        watcher.join(5)
    assert most_shared[0] >= 2  # correctness work of two evaluations did run side by side
    assert [trace.evaluation.status for trace in traces] == [Status.PASSED] * 3, [trace.evaluation.log for trace in traces]
    assert len(starts) == 3 and all(readers == 0 for readers, _ in starts), starts
    assert "overlap" not in {name for _, name in starts}
    assert len({name for _, name in starts}) >= 2  # the slots did share the work


def test_a_problems_jobs_form_one_group_in_order() -> None:
    a, b = reference_job("rmsnorm_llama3_8b"), reference_job("silu_and_mul_llama3_8b")
    again = Job(a.problem, a.solution, a.workloads, tag="second")
    assert problem_groups([a, again, b, Job(a.problem, a.solution, a.workloads)]) == [[0, 1], [2], [3]]
