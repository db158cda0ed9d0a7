"""exec/slots.py: the serial executor with several evaluations in flight on one device gives the
serial run's statuses, in job order, keeps a problem's jobs in one slot, and never lets a timed
section overlap another evaluation's worker requests."""

from __future__ import annotations

import threading

import pytest
import torch

from exec_testkit import child_pids, outcome, quick_options, reference_job

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


def _sleepy_job(name: str, workloads: int) -> Job:
    """A trusted reference that sleeps 0.5 s per call, on `workloads` workloads: an evaluation long enough to be cut."""
    from solbench.bench.orchestrator import reference_solution
    from solbench.data.definition import Definition
    from solbench.data.problem import Problem
    from solbench.data.workload import Workload

    definition = Definition.model_validate({
        "name": name, "axes": {"N": {"type": "var"}}, "inputs": {"x": {"shape": ["N"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
        "reference": "import time\n\n\ndef run(x):\n    time.sleep(0.5)\n    return x * 2.0\n"})
    problem = Problem(definition, [Workload.model_validate({"uuid": f"n{n}", "axes": {"N": n}, "inputs": {"x": {"type": "random"}}})
                                   for n in range(8, 8 + workloads)])
    return Job(problem, reference_solution(problem), trusted=True)


def test_ctrl_c_ends_every_slot_kills_its_workers_and_records_nothing_cut_short() -> None:
    """A KeyboardInterrupt in the main thread while three slots evaluate: evaluate_jobs raises it once
    every slot thread has ended (none is left in a worker or torch call as the interpreter ends), no
    worker process is left, and no trace of a job cut short (its workers killed) was handed on."""
    import _thread
    import time

    jobs = [_sleepy_job(f"sleepy_{n}", 8) for n in range(3)]
    seen: list[Trace] = []
    timer: list[threading.Timer] = []

    def on_trace(trace: Trace) -> None:
        seen.append(trace)
        if not timer:
            timer.append(threading.Timer(0.3, _thread.interrupt_main))
            timer[0].start()

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        try:
            evaluate_jobs(jobs, quick_options(), concurrent=3, on_trace=on_trace)
        finally:
            if timer:
                timer[0].cancel()
    assert time.monotonic() - started < 60
    assert not [thread.name for thread in threading.enumerate() if thread.name.startswith("slot-")]
    assert child_pids("solbench.bench.worker", living=True) == set()
    assert 1 <= len(seen) < 24 and all(trace.evaluation.status == Status.PASSED for trace in seen), [t.evaluation.log for t in seen]
