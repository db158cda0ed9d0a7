from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Iterator

import pytest
from exec_testkit import outcome, quick_options, reference_job

from solbench.data.trace import Status, Trace
from solbench.exec import LANE_DIED_FLAG, Job, RayUnavailable, evaluate_jobs
from solbench.exec.jobs import evaluate_job
from solbench.exec.ray_executor import _KeptPair

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray cluster of 2 CPUs (evaluate_jobs uses the one connected, and leaves it running)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_tasks_give_the_serial_statuses(local_ray: None, cheap_jobs: list[Job], serial_traces: list[Trace]) -> None:
    seen: list[Trace] = []
    traces = evaluate_jobs(cheap_jobs, quick_options(), executor="ray", on_trace=seen.append)
    assert outcome(traces) == outcome(serial_traces)
    assert sorted(outcome(seen)) == sorted(outcome(traces))  # each streamed back as it came
    assert ray.is_initialized()


def test_resumed_jobs_skip_what_is_done_and_a_gpu_request_without_gpus_is_one_line(local_ray: None, cheap_jobs: list[Job]) -> None:
    done = cheap_jobs[0]
    resumed = Job(done.problem, done.solution, done.workloads, frozenset(w.uuid for w in done.workloads))
    assert evaluate_jobs([resumed], quick_options(), executor="ray") == []
    with pytest.raises(RayUnavailable, match="--device cuda: the Ray cluster has no GPU"):
        evaluate_jobs(cheap_jobs, quick_options(device="cuda"), executor="ray")


def _task_pids() -> set[int]:
    """The Ray worker processes of this test's cluster running a job task now (Ray names a worker's
    process after its task). The cluster's processes descend from this one (ray.init started it here);
    another test process may run a cluster of its own beside it. A child the task is forking (a sandboxed
    worker between fork and exec) carries the task's name for a moment: it is left out by its parent."""
    parents: dict[int, int] = {}
    named: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if (entry / "cmdline").read_bytes().startswith(b"ray::_job_task"):
                    named.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue

    def ours(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return {pid for pid in named if parents.get(pid) not in named and ours(pid)}


def _slow_job(job: Job, sleep_s: float) -> Job:
    """The job's solution with a sleep before each call (its traces then come at least sleep_s apart)."""
    source = job.solution.sources[0].content + (
        f"\n\nimport time as _time\n_unslowed_run = run\n\n\ndef run(*args, **kwargs):\n    _time.sleep({sleep_s})\n"
        "    return _unslowed_run(*args, **kwargs)\n")
    slow = job.solution.model_copy(update={"name": f"{job.solution.name}-slow", "author": "test",
                                           "sources": [job.solution.sources[0].model_copy(update={"content": source})]})
    return Job(job.problem, slow, job.workloads)


def test_a_killed_task_is_retried_once_skipping_what_it_reported_then_failed(local_ray: None, capsys: pytest.CaptureFixture) -> None:
    """The Ray worker running the job is killed after the first and after the second trace: the
    retry skips the first workload and does the second; after the second death the third is failed.
    Each call of the solution sleeps, so a task is still on its next workload when the kill lands."""
    job = _slow_job(reference_job("rmsnorm_llama3_8b", "smallest:3"), sleep_s=0.5)
    killed: list[int] = []

    def kill_the_task(trace: Trace) -> None:
        if len(killed) < 2:
            (pid,) = _task_pids() - set(killed)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    traces = evaluate_jobs([job], quick_options(), executor="ray", on_trace=kill_the_task)
    assert len(killed) == 2 and killed[0] != killed[1]
    assert [trace.workload.uuid for trace in traces] == [workload.uuid for workload in job.workloads]
    assert [trace.evaluation.status for trace in traces] == [Status.PASSED, Status.PASSED, Status.RUNTIME_ERROR]
    failed = traces[2].evaluation
    assert failed.flags == [LANE_DIED_FLAG]
    assert failed.log.startswith("the Ray task evaluating this job failed twice")
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("the Ray task died (")]  # each death, as a pool lane's
    assert len(said) == 2
    assert said[0].endswith("while evaluating rmsnorm_llama3_8b; the job is retried, skipping the workloads already done")
    assert said[1].endswith("while evaluating rmsnorm_llama3_8b; its workloads not yet done are recorded as failed")


def test_a_ray_worker_keeps_its_reference_worker_for_the_next_task_until_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Ray worker process keeps between tasks (no Ray needed to see it): the same pair for the next
    job of the same options and GPUs, a new one for other GPUs (the old one closed), none after the idle time."""
    kept, options, traces = _KeptPair(), quick_options(), []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    first = kept.take(options)
    evaluate_job(reference_job("rmsnorm_llama3_8b"), options, traces.append, workers=first)
    reference = first.reference.process
    kept.release()
    assert kept.take(options) is first  # the next task: the same pair, its reference worker still running
    evaluate_job(reference_job("silu_and_mul_llama3_8b"), options, traces.append, workers=first)
    assert first.reference.process is reference and reference.poll() is None
    kept.release()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # a task given another GPU
    other = kept.take(options)
    assert other is not first and reference.wait(10) is not None
    evaluate_job(reference_job("rmsnorm_llama3_8b"), options, traces.append, workers=other)
    assert [trace.evaluation.status for trace in traces] == [Status.PASSED] * 3, [t.evaluation.log for t in traces]
    second = other.reference.process
    kept.release(idle_s=0.2)
    time.sleep(1.0)
    assert kept.pair is None and second.wait(10) is not None  # idle: closed, its reference worker ended
