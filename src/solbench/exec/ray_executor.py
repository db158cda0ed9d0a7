"""The same jobs as Ray tasks, for more than one host: one task per job (num_gpus=1, or num_cpus=1 on
a CPU-only cluster), each running the same isolated evaluator, its traces streamed back as it yields
them. Ray does the scheduling; a task whose worker dies is submitted again once, skipping the
workloads it already reported, as a pool lane's job is. Every node needs solbench installed, and the
problems' folders at the same paths (a shared file system) where workloads read files."""

from __future__ import annotations

import dataclasses
import queue
import threading
from typing import TYPE_CHECKING, Any, Iterator

from solbench.exec.collect import Collector
from solbench.exec.jobs import MAX_ATTEMPTS, Job, evaluate_job, give_up, noting_lane, one_line

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions

_END = object()


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached or used; one line."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--executor ray needs Ray: pip install 'solbench[ray]'") from None
    return ray


def run_on_ray(jobs: list[Job], options: EvalOptions, collector: Collector, address: str | None = None) -> None:
    """Evaluate the jobs on a Ray cluster: the one at `address` (auto: the one this host belongs to;
    HOST:PORT), or a local one started here and stopped after (no address, none connected yet)."""
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 - ray raises several kinds for an unreachable cluster
            raise RayUnavailable(f"--address {address or '(local)'}: Ray could not start or connect: {one_line(exc)}") from None
        started_here = True
    try:
        _run(ray, jobs, _task_options(ray, options), collector)
    finally:
        if started_here:
            ray.shutdown()


def _task_options(ray: Any, options: EvalOptions) -> tuple[EvalOptions, dict[str, Any]]:
    """The options inside a task and the resources it asks for: a whole GPU, or one CPU."""
    gpus = ray.cluster_resources().get("GPU", 0)
    wants_gpu = options.device.startswith("cuda") or (options.device == "auto" and gpus > 0)
    if wants_gpu and gpus < 1:
        raise RayUnavailable(f"--device {options.device}: the Ray cluster has no GPU (use --device cpu on a CPU-only cluster)")
    if wants_gpu:  # Ray sets CUDA_VISIBLE_DEVICES to the task's GPU: it is cuda:0 in there
        return dataclasses.replace(options, device="cuda"), {"num_gpus": 1, "num_cpus": 1}
    return dataclasses.replace(options, device="cpu"), {"num_cpus": 1, "num_gpus": 0}


def _run(ray: Any, jobs: list[Job], task: tuple[EvalOptions, dict[str, Any]], collector: Collector) -> None:
    options, resources = task
    remote = ray.remote(_job_task).options(max_retries=0, **resources)  # retried by us, once, skipping what was reported
    attempts = [0] * len(jobs)
    shipped = [_portable(job) for job in jobs]

    def submit(index: int) -> Any:
        attempts[index] += 1
        return remote.remote(shipped[index], options, collector.done_uuids(index))

    running = {submit(index): index for index in range(len(jobs))}
    while running:
        ready, _ = ray.wait(list(running), num_returns=1)
        generator = ready[0]
        index = running.pop(generator)
        try:
            trace = ray.get(next(generator))
        except StopIteration:
            collector.finish(index)
            continue
        except ray.exceptions.RayError as exc:
            if attempts[index] < MAX_ATTEMPTS:
                running[submit(index)] = index
            else:
                give_up(collector, index, jobs[index], f"the Ray task evaluating this job failed twice ({one_line(exc)}); "
                                                       "it was retried once, skipping the workloads already done")
            continue
        collector.add(index, trace)
        running[generator] = index


def _job_task(job: Job, options: EvalOptions, done: frozenset[str]) -> Iterator[Any]:
    """A Ray task (a generator: each trace goes back as soon as it is known)."""
    import os

    import ray

    traces: queue.Queue[Any] = queue.Queue()
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    lane = f"ray:{ray.util.get_node_ip_address()}" + (f":gpu{gpus}" if options.device.startswith("cuda") else "")

    def work() -> None:
        try:
            evaluate_job(job, options, noting_lane(lane, traces.put), done)
        finally:
            traces.put(_END)

    thread = threading.Thread(target=work, name="solbench-job", daemon=True)
    thread.start()
    while (trace := traces.get()) is not _END:
        yield trace
    thread.join()


def _portable(job: Job) -> Job:
    """The job with absolute folder paths: a task's working directory is not the driver's."""
    problem = job.problem
    absolute = {name: getattr(problem, name).absolute() for name in ("root", "source", "reference_file") if getattr(problem, name) is not None}
    return dataclasses.replace(job, problem=dataclasses.replace(problem, **absolute)) if absolute else job
