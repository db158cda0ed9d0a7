from __future__ import annotations

from typing import Iterator

import pytest
from exec_testkit import outcome, quick_options

from solbench.data.trace import Trace
from solbench.exec import Job, RayUnavailable, evaluate_jobs

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
