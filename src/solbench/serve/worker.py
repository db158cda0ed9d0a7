"""The worker: claims jobs from the database queue, evaluates them through solbench.exec (serial, a
pool of lanes, or Ray) and stores each job's results under its lease. Started by `solbench serve`
(`python -m solbench.serve.worker --config JSON`), or by hand beside a server on other machines.

It renews its leases from a thread while it evaluates; killed, it leaves them to expire, and another
worker claims the jobs again. Stopped with SIGTERM, it hands its jobs back to the queue at once."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from sqlalchemy import update

from solbench.data.problem import Problem as LoadedProblem
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.serve import catalog, queue, results
from solbench.serve.config import ServeConfig
from solbench.serve.database import make_engine, session_factory, transaction
from solbench.serve.environment import current_key, environment_row, gpu_uuids
from solbench.serve.models import Baseline, Job, Submission

POLL_S = 0.5


class Stopped(BaseException):
    """SIGTERM: unwind the evaluation in flight and hand the jobs back (a BaseException, as KeyboardInterrupt
    is, so that the evaluator's per-job `except Exception` does not take it for the job's own failure)."""


def evaluation_options(config: ServeConfig) -> tuple[Any, str, str]:
    """(EvalOptions, device, workload selection) as `solbench run` would choose them on this device."""
    from solbench.bench.orchestrator import EvalOptions, resolve_device

    settings = config.evaluation
    device = resolve_device(settings.device)
    options = EvalOptions(device=settings.device, trials=settings.trials, hidden=settings.hidden, timeout_s=settings.timeout_s)
    if device == "cpu":
        options = dataclasses.replace(options, budget_s=2.0, min_iterations=5, verify_timed=1)
    if settings.timing_budget_s is not None:
        options = dataclasses.replace(options, budget_s=settings.timing_budget_s, min_iterations=min(options.min_iterations, 5))
    workloads = settings.workloads if settings.workloads != "auto" else ("all" if device.startswith("cuda") else "smallest:2")
    return options, device, workloads


class Worker:
    def __init__(self, config: ServeConfig):
        from solbench.data.selection import choose_workloads
        from solbench.score.run_summary import roofs
        from solbench.sol.cpu_spec import run_hardware

        self.config = config
        self.factory = session_factory(make_engine(config.db_url))
        self.options, self.device, selection = evaluation_options(config)
        hardware, self.spec, note = run_hardware(config.evaluation.hardware, self.device)
        if note:
            print(f"worker: {note}", file=sys.stderr, flush=True)
        self.options = dataclasses.replace(self.options, hardware=hardware)
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.uuids = gpu_uuids()
        key = current_key(self.spec.name if self.spec is not None else hardware, self.device)
        with transaction(self.factory) as session:
            served = catalog.serve_datasets(session, config.datasets)
            self.environment_id = environment_row(session, key, roofs(self.spec)).id
            self.problems: dict[int, LoadedProblem] = {pid: p for dataset in served for pid, p in dataset.problems.items()}
            measured = {pid for (pid,) in session.query(Baseline.problem_id).filter(Baseline.environment_id == self.environment_id).distinct()}
            queue.enqueue_baselines(session, [pid for pid in self.problems if pid not in measured], self.environment_id)
        self.workloads = {pid: choose_workloads(problem, selection) for pid, problem in self.problems.items()}
        self.owner: str | None = None
        self.held: list[Job] = []

    # -- the loop

    def run(self, stop_after_idle_s: float | None = None, parent: int | None = None) -> None:
        print(f"worker {self.name}: serving {len(self.problems)} problems, version key {self.environment_id}", file=sys.stderr, flush=True)
        idle_since = time.monotonic()
        while True:
            with transaction(self.factory) as session:
                self.owner, self.held = queue.claim(session, self.problems, self.environment_id, self.name, self.config.evaluation.batch,
                                                    self.config.lease_s, self.config.max_attempts)
            if parent is not None and os.getppid() != parent:
                print(f"worker {self.name}: the server is gone; stopping", file=sys.stderr, flush=True)
                self.hand_back()
                return
            if not self.held:
                if stop_after_idle_s is not None and time.monotonic() - idle_since > stop_after_idle_s:
                    return
                time.sleep(POLL_S)
                continue
            beat = _Heartbeat(self.factory, self.owner, self.config.lease_s)
            try:
                self.evaluate(self.held)
            finally:
                beat.stop()
            self.held = []
            idle_since = time.monotonic()

    def hand_back(self) -> None:
        """Jobs this worker holds go back to the queue (a clean stop is no lost attempt)."""
        if not self.owner or not self.held:
            return
        with transaction(self.factory) as session:
            session.execute(update(Job).where(Job.lease_owner == self.owner, Job.state == queue.RUNNING)
                            .values(state=queue.QUEUED, lease_owner=None, lease_expires=None, attempts=Job.attempts - 1))

    # -- one batch

    def evaluate(self, held: list[Job]) -> None:
        from solbench.exec.api import evaluate_jobs
        from solbench.exec.jobs import Job as ExecJob
        from solbench.score.baselines import candidate_solutions

        exec_jobs: list[ExecJob] = []
        owner_of: list[tuple[Job, str]] = []  # per exec job: its queue job and candidate name
        first_of_code: dict[str, int] = {}  # code hash -> the exec job evaluating it in this batch
        copies: dict[int, list[Job]] = {}  # exec job -> queue jobs of the same code, stored from its traces
        for job in held:
            problem, chosen = self.problems[job.problem_id], self.workloads[job.problem_id]
            if job.kind == queue.BASELINE:
                for name, solution, trusted in candidate_solutions(problem, self.device):
                    exec_jobs.append(ExecJob(problem, solution, workloads=chosen, trusted=trusted, tag=name))
                    owner_of.append((job, name))
                continue
            with self.factory() as session:
                submission = session.get(Submission, job.submission_id)
                stored = results.stored_evaluation(session, submission.code_hash, job.problem_id, self.environment_id)
            if stored is not None:
                self.store(job, {"": stored[1]}, reused_from=stored[0])
            elif submission.code_hash in first_of_code:
                copies.setdefault(first_of_code[submission.code_hash], []).append(job)
            else:
                first_of_code[submission.code_hash] = len(exec_jobs)
                exec_jobs.append(ExecJob(problem, Solution.model_validate(json.loads(submission.body)), workloads=chosen, held_out=True))
                owner_of.append((job, ""))
        traces: dict[int, list[Trace]] = {index: [] for index in range(len(exec_jobs))}
        remaining = {job.id: sum(1 for j, _ in owner_of if j.id == job.id) for job in held}

        def finished(index: int) -> None:
            job = owner_of[index][0]
            remaining[job.id] -= 1
            if remaining[job.id] == 0:
                self.store(job, {owner_of[i][1]: traces[i] for i in range(len(exec_jobs)) if owner_of[i][0].id == job.id})
                for other in copies.get(index, []):
                    self.store(other, {"": traces[index]}, reused_from=job.submission_id)

        settings = self.config.evaluation
        evaluate_jobs(exec_jobs, self.options, executor=settings.executor, lanes=settings.lanes, address=settings.address,
                      on_job_trace=lambda index, trace: traces[index].append(trace), on_job_finished=finished)

    def store(self, job: Job, by_candidate: dict[str, list[Trace]], reused_from: int | None = None) -> None:
        problem = self.problems[job.problem_id]
        sol = results.sol_breakdown(problem, self.workloads[job.problem_id], self.spec) if job.kind == queue.BASELINE else {}
        with transaction(self.factory) as session:
            if not queue.complete(session, job.id, self.owner or ""):
                print(f"worker {self.name}: job {job.id}: its lease was lost (claimed again or cancelled); results not stored", file=sys.stderr, flush=True)
                return
            if job.kind == queue.BASELINE:
                results.store_baselines(session, job, self.environment_id, problem, by_candidate, sol)
            else:
                results.store_submission(session, job, self.environment_id, by_candidate[""], self.gpu_of, reused_from)
        self.held = [held for held in self.held if held.id != job.id]

    def gpu_of(self, trace: Trace) -> str:
        lane = str((trace.evaluation.environment or {}).get("lane", ""))
        if not self.uuids:
            return ""
        index = int(lane[3:]) if lane.startswith("gpu") and lane[3:].isdigit() else 0
        return self.uuids[index] if index < len(self.uuids) else ""


class _Heartbeat:
    """Renews a claim's leases every third of the lease until stopped."""

    def __init__(self, factory: Any, owner: str, lease_s: float):
        self.factory, self.owner, self.lease_s = factory, owner, lease_s
        self.event = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="solbench-serve-lease", daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.event.wait(self.lease_s / 3):
            try:
                with transaction(self.factory) as session:
                    queue.renew(session, self.owner, self.lease_s)
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; the lease is three beats long
                print(f"worker: lease renewal failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self.event.set()
        self.thread.join(timeout=5)


def _stop(_signum: int, _frame: Any) -> None:
    raise Stopped()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solbench.serve.worker", description="Evaluate the service's queued jobs.")
    parser.add_argument("--config", required=True, help="the ServeConfig as JSON (what solbench serve passes)")
    parser.add_argument("--parent", type=int, default=None, help="stop when this process (the server) is gone")
    parser.add_argument("--exit-when-idle", type=float, default=None, help="stop after this many seconds with nothing to do")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    worker = None
    try:
        worker = Worker(ServeConfig.from_json(args.config))
        worker.run(args.exit_when_idle, args.parent)
    except (Stopped, KeyboardInterrupt):
        if worker is not None:
            worker.hand_back()
        return 0
    except Exception as exc:  # noqa: BLE001 - one line for the log, never a traceback
        print(f"worker: stopped: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}", file=sys.stderr, flush=True)
        if worker is not None:
            worker.hand_back()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
