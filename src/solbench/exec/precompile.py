"""Compiles ahead: a run's torch.compile candidates compiled in processes of their own on the host's
cores, problem after problem ahead of the evaluation, into the run's shared compile cache (inductor's
FX graph and autotune caches, Triton's kernels). When the evaluator reaches a compiled candidate, its
worker finds the graphs compiled and loads them instead of compiling.

Only trusted code runs here (the problems' references). The processes share the GPU with the
evaluation's correctness checks, never with timing: they are stopped (SIGSTOP) while a timed request
is in flight (solbench.bench.exclusive) and continued after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solbench.bench.exclusive import register, unregister
from solbench.data.problem import Problem
from solbench.data.workload import Workload

def default_processes(device: str) -> int:
    """Half the host's cores, up to 8, on a GPU; none on a CPU (compiling there would slow the timed calls)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2)) if device.startswith("cuda") else 0


@dataclass
class AheadOutcome:
    compiled: int = 0
    failed: list[str] = field(default_factory=list)  # "problem compile-MODE: first line of the error"
    seconds: float = 0.0  # summed over the processes


class Precompiler:
    """Compile processes, `processes` at a time; `submit` queues one problem's candidate in one mode.

    Each compile is a fresh interpreter (`python -m solbench.exec.precompile`, the payload on stdin, the
    result as one JSON line on stdout), started as the evaluator's workers are started: a child of a
    multiprocessing pool keys inductor's caches differently, so the workers would find nothing."""

    def __init__(self, cache: Path, device: str, processes: int, *, seed: int = 0, input_profile: str = "auto"):
        from solbench.bench.workers import compile_cache_environment

        self.environment = {**os.environ, **compile_cache_environment(cache)}  # nothing else: inductor's settings are part of its keys
        self.device, self.seed, self.input_profile, self.processes = device, seed, input_profile, processes
        self.pool = ThreadPoolExecutor(max_workers=processes, thread_name_prefix="compile-ahead")
        self.running: dict[int, subprocess.Popen] = {}
        self.lock = threading.Lock()
        self.closed = False
        self.paused = False
        self.futures: list[tuple[str, Future]] = []
        self.by_key: dict[object, Future] = {}
        self.outcome = AheadOutcome()
        register(self._pause)

    def wait_for(self, key: object, timeout_s: float) -> None:
        """Block until the compile queued under `key` (see submit) has ended, at most timeout_s: the
        candidate's worker then loads its graphs instead of compiling them a second time beside it."""
        future = self.by_key.get(key)
        if future is not None:
            try:
                future.result(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - a compile that fails or lags here is compiled by the worker itself
                pass

    def submit(self, problem: Problem, workloads: list[Workload], mode: str, key: object = None) -> None:
        payload = {"definition": problem.definition.to_json_dict(), "workloads": [w.to_json_dict() for w in workloads],
                   "root": str(problem.root) if problem.root else None, "kind": problem.kind, "profile": problem.input_profile,
                   "synthesize": problem.synthesize_missing_blobs, "mode": mode, "device": self.device, "seed": self.seed,
                   "input_profile": self.input_profile}
        future = self.pool.submit(self._compile, payload)
        self.futures.append((f"{problem.name} compile-{mode}", future))
        if key is not None:
            self.by_key[key] = future

    def _compile(self, payload: dict[str, Any]) -> tuple[float, str | None]:
        started = time.perf_counter()
        with self.lock:
            if self.closed:
                return 0.0, "not started: the run ended"
            process = subprocess.Popen([sys.executable, "-m", "solbench.exec.precompile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True, env=self.environment, start_new_session=True)
            self.running[process.pid] = process
            if self.paused:
                os.kill(process.pid, signal.SIGSTOP)
        try:
            out, _ = process.communicate(json.dumps(payload))
        finally:
            with self.lock:
                self.running.pop(process.pid, None)
        try:
            seconds, error = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return time.perf_counter() - started, f"the compile process ended with exit code {process.returncode} and no result"
        return float(seconds), error

    def _pause(self, paused: bool) -> None:
        with self.lock:
            self.paused = paused
            for pid in list(self.running):
                try:
                    os.kill(pid, signal.SIGSTOP if paused else signal.SIGCONT)
                except (ProcessLookupError, PermissionError):
                    pass

    def close(self) -> AheadOutcome:
        """Stop: what was not started is dropped, what runs is killed; the outcome of what finished."""
        unregister(self._pause)
        with self.lock:
            self.closed = True
        self._pause(False)
        with self.lock:
            for process in self.running.values():
                process.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for name, future in self.futures:
            if future.done() and not future.cancelled() and future.exception() is None:
                seconds, error = future.result()
                self.outcome.seconds += seconds
                if error is None:
                    self.outcome.compiled += 1
                elif not error.startswith("not started"):
                    self.outcome.failed.append(f"{name}: {error}")
        return self.outcome


def compile_ahead(payload: dict[str, Any]) -> tuple[float, str | None]:
    """In a compile process: the reference under torch.compile(mode, dynamic=False), called once on each
    workload's inputs, as the candidate's worker calls it; (seconds, None) or (seconds, the error's first line)."""
    started = time.perf_counter()
    try:
        import torch

        from solbench.data.definition import Definition
        from solbench.data.inputs import generate_inputs
        from solbench.data.reference import reference_module

        problem = Problem(Definition.model_validate(payload["definition"]), [Workload.model_validate(w) for w in payload["workloads"]],
                          Path(payload["root"]) if payload["root"] else None, kind=payload["kind"], input_profile=payload["profile"],
                          synthesize_missing_blobs=payload["synthesize"])
        compiled = torch.compile(reference_module(problem.definition).run, mode=payload["mode"], dynamic=False)
        for workload in problem.workloads:
            inputs = generate_inputs(problem, workload, seed=payload["seed"], trial=0, device=payload["device"], profile=payload["input_profile"])
            compiled(*inputs.values())
            del inputs
        if payload["device"].startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        return time.perf_counter() - started, None
    except Exception as exc:  # noqa: BLE001 - the candidate's own evaluation says what is wrong; here it only costs the head start
        text = str(exc).strip().splitlines()
        return time.perf_counter() - started, f"{type(exc).__name__}: {text[0][:200] if text else ''}"


if __name__ == "__main__":  # one compile: the payload on stdin, [seconds, error or null] on stdout
    print(json.dumps(compile_ahead(json.loads(sys.stdin.read()))), flush=True)
