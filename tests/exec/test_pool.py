from __future__ import annotations

import os
import signal

from exec_testkit import lane_pids, outcome, quick_options, reference_job

from solbench.data.trace import Status, Trace
from solbench.exec import LANE_DIED_FLAG, Job, evaluate_jobs


def test_two_cpu_lanes_give_the_serial_statuses_in_job_order(cheap_jobs: list[Job], serial_traces: list[Trace]) -> None:
    seen: list[Trace] = []
    traces = evaluate_jobs(cheap_jobs, quick_options(), executor="pool", lanes=2, on_trace=seen.append, ordered=True)
    assert outcome(traces) == outcome(serial_traces)
    assert all(trace.evaluation.status == Status.PASSED for trace in traces)
    assert seen == traces  # ordered: streamed in job order, as serial writes them
    assert lane_pids() == set()  # the lanes are gone


def test_a_killed_lane_is_restarted_its_job_retried_once_then_failed(capsys) -> None:
    """One lane, one job of three workloads; the lane process is killed after the first and after
    the second trace: the retry (in a fresh lane) skips the first workload and does the second;
    after the second death the third is recorded as failed, with the reason."""
    job = reference_job("rmsnorm_llama3_8b", "smallest:3")
    killed: list[int] = []

    def kill_the_lane(trace: Trace) -> None:
        if len(killed) < 2:
            (pid,) = lane_pids() - set(killed)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    traces = evaluate_jobs([job], quick_options(), executor="pool", lanes=1, on_trace=kill_the_lane)
    assert len(killed) == 2 and killed[0] != killed[1]  # the second lane is a new process
    assert [trace.workload.uuid for trace in traces] == [workload.uuid for workload in job.workloads]
    assert [trace.evaluation.status for trace in traces] == [Status.PASSED, Status.PASSED, Status.RUNTIME_ERROR]
    failed = traces[2].evaluation
    assert failed.flags == [LANE_DIED_FLAG]
    assert failed.log.startswith("evaluation lane cpu0 died twice while evaluating this job (exit code -9)")
    said = capsys.readouterr().err.splitlines()  # each death is said as it happens, not only in the traces
    assert [line for line in said if line.startswith("evaluation lane")] == [
        "evaluation lane cpu0 died (exit code -9) while evaluating rmsnorm_llama3_8b; the job is retried, skipping the workloads already done",
        "evaluation lane cpu0 died (exit code -9) while evaluating rmsnorm_llama3_8b; its workloads not yet done are recorded as failed"]


def test_a_failing_on_trace_stops_the_lanes_at_once() -> None:
    def full_disk(trace: Trace) -> None:
        raise OSError("no space left on device")

    jobs = [reference_job("silu_and_mul_llama3_8b", "smallest:2")]
    try:
        evaluate_jobs(jobs, quick_options(), executor="pool", lanes=1, on_trace=full_disk)
    except OSError as error:
        assert "no space left" in str(error)
    else:
        raise AssertionError("the sink's error was swallowed")
    assert lane_pids() == set()


def _pool_with_jobs_sent_ahead(jobs: list[Job], lanes: int, on_trace) -> list[Trace]:
    """run_pool with one job sent ahead to each lane (what GPU lanes get), here on CPU lanes."""
    from solbench.exec.collect import Collector
    from solbench.exec.lanes import plan_lanes
    from solbench.exec.pool import run_pool

    collector = Collector(len(jobs), on_trace, ordered=False)
    run_pool(jobs, quick_options(), plan_lanes(lanes, "cpu"), collector, ahead=1)
    return collector.results()


def test_jobs_sent_ahead_give_the_serial_statuses(cheap_jobs: list[Job], serial_traces: list[Trace]) -> None:
    traces = _pool_with_jobs_sent_ahead(cheap_jobs, 2, None)
    assert outcome(traces) == outcome(serial_traces)
    assert lane_pids() == set()


def test_a_job_held_ahead_by_a_lane_that_dies_is_queued_again_without_counting_a_try() -> None:
    """One lane holding job B ahead while it evaluates A dies twice during A (A is retried once, then
    failed) and once during B: B, sent ahead twice but never started then, still has its one retry."""
    first, second = reference_job("rmsnorm_llama3_8b", "smallest:3"), reference_job("silu_and_mul_llama3_8b", "smallest:2")
    killed: list[int] = []

    def kill_the_lane(index: int, trace: Trace) -> None:
        if len(killed) < 2 or (len(killed) == 2 and index == 1):
            (pid,) = lane_pids() - set(killed)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    traces = _pool_with_jobs_sent_ahead([first, second], 1, kill_the_lane)
    assert len(killed) == 3
    statuses = {(trace.definition, trace.workload.uuid): trace.evaluation.status for trace in traces}
    assert [statuses[(first.problem.name, w.uuid)] for w in first.workloads] == [Status.PASSED, Status.PASSED, Status.RUNTIME_ERROR]
    assert [statuses[(second.problem.name, w.uuid)] for w in second.workloads] == [Status.PASSED, Status.PASSED]
    assert lane_pids() == set()
