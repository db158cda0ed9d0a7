"""The same jobs as Ray tasks, for more than one host: one task per job (num_gpus=1, or num_cpus=1 on
a CPU-only cluster), each running the same isolated evaluator, its traces streamed back as it yields
them. Ray does the scheduling; a task whose worker dies is submitted again once, skipping the
workloads it already reported, as a pool lane's job is. A Ray worker process keeps its evaluator's
reference worker from task to task, as a pool lane does (its start-up is paid once per process, not
once per job), and closes it after KEEP_IDLE_S without a task. Every node needs solbench installed,
and the problems' folders at the same paths (a shared file system) where workloads read files."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Iterator

from solbench.exec.collect import Collector
from solbench.exec.jobs import Job, evaluate_job, give_up, kept_workers, noting_lane, one_line, retried_after_death

if TYPE_CHECKING:
    from solbench.bench.orchestrator import EvalOptions
    from solbench.bench.workers import WorkerPair

_END = object()
KEEP_IDLE_S = 60.0  # an idle Ray worker of a long-lived cluster does not hold a reference worker (and its GPU memory) for long


class _KeptPair:
    """In a Ray worker process: the worker pair of its last task, kept for the next task of the same options
    on the same GPUs (Ray gives each task its GPU through CUDA_VISIBLE_DEVICES), closed when idle."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key: tuple[Any, str | None] | None = None
        self.stack: contextlib.ExitStack | None = None
        self.pair: WorkerPair | None = None
        self.timer: threading.Timer | None = None
        self.generation = 0  # a timer that fires after a task took the pair again does nothing
        atexit.register(self.close)

    def take(self, options: EvalOptions) -> WorkerPair | None:
        key = (options, os.environ.get("CUDA_VISIBLE_DEVICES"))
        with self.lock:
            self.generation += 1
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.stack is None or self.key != key:
                self._close()
                stack = contextlib.ExitStack()
                try:
                    pair = stack.enter_context(kept_workers(options))
                except BaseException:
                    stack.close()
                    raise
                self.stack, self.pair, self.key = stack, pair, key
            return self.pair

    def release(self, idle_s: float = KEEP_IDLE_S) -> None:
        """The task is over: the pair stays for idle_s more seconds."""
        with self.lock:
            self.generation += 1
            self.timer = threading.Timer(idle_s, self._expire, args=(self.generation,))
            self.timer.daemon = True
            self.timer.start()

    def _expire(self, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self._close()

    def close(self) -> None:
        with self.lock:
            self._close()

    def _close(self) -> None:
        if self.stack is not None:
            stack, self.stack, self.pair, self.key = self.stack, None, None, None
            stack.close()


_KEPT = _KeptPair()
# One thread of the Ray worker process runs every task's evaluation: a sandboxed worker ends with the thread
# that started it (bench/sandbox.py), so the kept reference worker must be started from a thread that outlives the task.
_RUNNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="solbench-job")


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
            if retried_after_death(jobs[index], attempts[index], f"the Ray task died ({one_line(exc)})"):
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
            try:
                workers = _KEPT.take(options)
            except Exception:  # noqa: BLE001 - the evaluation starts its own workers, and says in its traces if they fail too
                workers = None
            evaluate_job(job, options, noting_lane(lane, traces.put), done, workers=workers)
        finally:
            _KEPT.release()
            traces.put(_END)

    finished = _RUNNER.submit(work)
    while (trace := traces.get()) is not _END:
        yield trace
    finished.result()


def _portable(job: Job) -> Job:
    """The job with absolute folder paths: a task's working directory is not the driver's."""
    problem = job.problem
    absolute = {name: getattr(problem, name).absolute() for name in ("root", "source", "reference_file") if getattr(problem, name) is not None}
    return dataclasses.replace(job, problem=dataclasses.replace(problem, **absolute)) if absolute else job
