"""Compiles ahead: a run's torch.compile candidates compiled in processes of their own on the host's
cores, problem after problem ahead of the evaluation, into the run's shared compile cache (inductor's
FX graph and autotune caches, Triton's kernels). When the evaluator reaches a compiled candidate, its
worker finds the graphs compiled and loads them instead of compiling.

Only trusted code runs here (the problems' references). The processes share the GPU with the
evaluation's correctness checks, never with timing. While a timed request is in flight
(solbench.bench.exclusive) each compile process is held: told by a signal, it waits for its own device
work to finish (torch.cuda.synchronize), says so in a file, and launches nothing until the timed request
has ended. Only the process that drives the device is held: inductor's compile workers (its child
processes, which build Triton and C++ kernels and never touch the device) go on compiling, where until
2026-12-08 the whole process group was stopped (SIGSTOP) and the cores idled through every timed
request (19% of a cold run's wall on an H100 host). A process that cannot take the signal in time
(starting, or inside one long C call) is stopped with SIGSTOP instead. The compile processes run at a
lower CPU priority (NICENESS) than the evaluation. On a CPU, where the compile workers' cores are the
timed device, the whole process groups are stopped as before.

Nor do they share the device with a workload evaluated again after running out of memory: the compiles
in flight are ended (their processes hold device memory: inputs, autotuning buffers; an H100's 80 GB ran
out beside 8 of them, 2026-12-07), queued again at their end of the queue, and no compile starts until
that evaluation is over. A compile that runs out of device memory itself is queued again at the other
end of the queue, in a fresh process, up to OUT_OF_MEMORY_TRIES in all (on an H100, 2026-12-07, 8 of 188
compiles ran out beside the others; their candidates were then compiled by their own workers, in the
run's path).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solbench.bench.exclusive import register, unregister
from solbench.bench.memory import says_out_of_memory
from solbench.data.files import write_atomically
from solbench.data.problem import Problem
from solbench.data.workload import Workload

RESULT_KEY = "solbench-compile-result"  # marks a compile process's result line among whatever else reaches its stdout
ENDED = "the compile process ended"  # the start of the error of a compile whose process died
COMPILES_PER_PROCESS = 24  # then a fresh process: what one reference leaves behind (memory, state) never piles up
OUT_OF_MEMORY_TRIES = 3  # a compile that ran out of device memory (beside the others and the evaluation) is tried this often in all
HOLD_SIGNAL = signal.SIGUSR1  # asks a compile process to hold (see _hold_while_paused)
PAUSE_FILE_ENV = "SOLBENCH_COMPILE_PAUSE_FILE"  # the file that exists, holding the pause's number, while a timed request is in flight
PAUSE_SCOPE_ENV = "SOLBENCH_COMPILE_PAUSE"  # "group": stop whole process groups instead, as before 2026-12-08 (for measuring side by side)
HOLD_TIMEOUT_S = 1.0  # a process that has not said it holds by then (inside one long C call) is stopped with SIGSTOP
NICENESS = 10  # the compile processes' (and their compile workers') CPU priority below the evaluation's


def default_processes(device: str) -> int:
    """Half the cores this process may use, up to 8, on a GPU; none on a CPU (compiling there would slow the timed calls)."""
    from solbench.cores import usable_cores

    return max(1, min(8, usable_cores() // 2)) if device.startswith("cuda") else 0


def compile_threads(processes: int) -> int:
    """Inductor's parallel compile workers per compile process: the host's cores shared among the
    processes. Left alone, each process starts one worker per core, so 8 processes put 8 x cores
    compilers on the cores at once."""
    from solbench.cores import usable_cores

    return max(1, usable_cores() // max(1, processes))


@dataclass
class AheadOutcome:
    compiled: int = 0
    failed: list[str] = field(default_factory=list)  # "problem compile-MODE: first line of the error"
    seconds: float = 0.0  # summed over the processes
    pauses: int = 0  # timed requests the compile processes were paused for
    pause_wait_s: float = 0.0  # the timed requests' wait for the compile processes to hold (their device work to drain)
    stopped: int = 0  # processes (or, pausing whole groups, process groups) stopped with SIGSTOP instead of held


@dataclass
class _Queued:
    name: str  # "problem compile-MODE"
    payload: dict[str, Any]
    future: Future
    tries: int = 0


class Precompiler:
    """Compile processes, `processes` at a time; `submit` queues one problem's candidate in one mode.

    The queue is taken from both ends: even-numbered threads take the first compile queued (the run
    plans the problems that look quickest to compile first, so the first problems are scored at once),
    odd-numbered ones the last (the costliest start early, so that none of them is left to run alone at
    the end). Each thread keeps a compile process (`python -m solbench.exec.precompile`: a payload per
    line on stdin, a marked result line on stdout, see serve) for COMPILES_PER_PROCESS compiles: a fresh interpreter
    costs about 20 s on an H200 host (importing torch and inductor, and leaving) where a default-mode
    compile takes 1-4 s. It is a plain interpreter started as the evaluator's workers are started: a
    child of a multiprocessing pool keys inductor's caches differently, so the workers would find
    nothing. Each process leads a process group of its own (its inductor compile workers are in it):
    pausing, continuing and ending it reaches them too. With `log`, a JSON line per finished compile
    (problem, mode, seconds, error, and ended_s: seconds since the Precompiler started) is appended there,
    and at close a line of the pauses (their count, the wait for the processes to hold, the SIGSTOPs, the scope)."""

    def __init__(self, cache: Path, device: str, processes: int, *, seed: int = 0, input_profile: str = "auto", log: Path | None = None,
                 pause_scope: str | None = None):
        """pause_scope: "process" (held, their compile workers go on) or "group" (the whole process groups
        stopped); by default "group" on a CPU, where the compile workers' cores are the timed device,
        and on a GPU "process" unless SOLBENCH_COMPILE_PAUSE says "group"."""
        from solbench.bench.workers import compile_cache_environment

        threads = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS") or str(compile_threads(processes))  # not part of inductor's cache keys
        self.environment = {**os.environ, **compile_cache_environment(cache), "TORCHINDUCTOR_COMPILE_THREADS": threads}
        self.device, self.seed, self.input_profile, self.processes, self.log = device, seed, input_profile, processes, log
        self.control = Path(tempfile.mkdtemp(prefix="solbench-compile-ahead-"))  # the pause file, and the processes' ready and held files
        self.pause_file = self.control / "paused"
        self.environment[PAUSE_FILE_ENV] = str(self.pause_file)
        if pause_scope is None:  # the variable is a measuring switch: anything but "group" is the default
            pause_scope = ("group" if os.environ.get(PAUSE_SCOPE_ENV) == "group" else "process") if device.startswith("cuda") else "group"
        self.whole_groups = pause_scope == "group"
        self.stopped: set[int] = set()  # processes stopped with SIGSTOP in the current pause
        self.running: dict[int, subprocess.Popen] = {}
        self.lock = threading.RLock()
        self.wakeup = threading.Condition(self.lock)
        self.pending: deque[_Queued] = deque()
        self.closed = False
        self.paused = False
        self.held = False  # no compile starts (a workload evaluated again needs the device's memory)
        self.in_flight: set[int] = set()  # the processes running a compile now
        self.evicted: set[int] = set()  # processes ended by _make_room: their compiles are queued again
        self.started = time.monotonic()
        self.futures: list[tuple[str, Future]] = []
        self.by_key: dict[object, Future] = {}
        self.outcome = AheadOutcome()
        self.threads = [threading.Thread(target=self._serve, args=(number % 2 == 1,), name=f"compile-ahead-{number}", daemon=True)
                        for number in range(processes)]
        register(self._pause, self._make_room)
        for thread in self.threads:
            thread.start()

    def wait_for(self, key: object, timeout_s: float) -> None:
        """Block until the compile queued under `key` (see submit) has ended, at most timeout_s: the
        candidate's worker then loads its graphs instead of compiling them a second time beside it."""
        future = self.by_key.get(key)
        if future is not None:
            try:
                future.result(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - a compile that fails or lags here is compiled by the worker itself
                pass

    def submit(self, problem: Problem, workloads: list[Workload], mode: str, key: object = None) -> Future:
        payload = {"definition": problem.definition.to_json_dict(), "workloads": [w.to_json_dict() for w in workloads],
                   "root": str(problem.root) if problem.root else None, "kind": problem.kind, "profile": problem.input_profile,
                   "synthesize": problem.synthesize_missing_blobs, "mode": mode, "device": self.device, "seed": self.seed,
                   "input_profile": self.input_profile}
        queued = _Queued(f"{problem.name} compile-{mode}", payload, Future())
        with self.wakeup:
            self.pending.append(queued)
            self.futures.append((queued.name, queued.future))
            if key is not None:
                self.by_key[key] = queued.future
            self.wakeup.notify()
        return queued.future

    def _serve(self, from_the_end: bool) -> None:
        """A thread's loop: the next compile from its end of the queue, in its compile process."""
        process: subprocess.Popen | None = None
        compiles = 0
        while True:
            with self.wakeup:
                while (not self.pending or self.held) and not self.closed:
                    self.wakeup.wait()
                if self.closed:
                    return
                queued = self.pending.pop() if from_the_end else self.pending.popleft()
                if not (queued.future.running() or queued.future.set_running_or_notify_cancel()):  # running: queued again by _make_room
                    continue
                if process is None or process.poll() is not None or compiles >= COMPILES_PER_PROCESS:
                    if process is not None:
                        self._retire(process)
                    process = subprocess.Popen([sys.executable, "-m", "solbench.exec.precompile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=subprocess.DEVNULL, text=True, env=self.environment, start_new_session=True)
                    compiles = 0
                    self.running[process.pid] = process
                    if self.paused:  # starting: nothing on the device yet, and it cannot take the hold signal
                        self._stop(process.pid)
                compiles += 1
                queued.tries += 1
                self.in_flight.add(process.pid)
            result = self._compile(process, queued.payload)
            with self.wakeup:
                self.in_flight.discard(process.pid)
                evicted = process.pid in self.evicted
                out_of_memory = result[1] is not None and says_out_of_memory(result[1]) and queued.tries < OUT_OF_MEMORY_TRIES
                if (evicted or out_of_memory) and not self.closed:  # compiled again later, in a fresh process
                    self.evicted.discard(process.pid)
                    self._retire(process)
                    process = None
                    if evicted:  # ended to free the device's memory: not its own failure, back at its end of the queue
                        queued.tries -= 1
                    to_the_back = from_the_end if evicted else not from_the_end  # ran out itself: to the other end, after what is there
                    if to_the_back:
                        self.pending.append(queued)
                    else:
                        self.pending.appendleft(queued)
                    self.wakeup.notify()
                    continue
            if result[1] is not None and result[1].startswith(ENDED):
                process = None  # retired in _compile
                if self.closed:  # killed by close(): not a failure of the reference
                    result = (result[0], "not finished: the run ended")
            if not self.closed:
                self._record(queued, result)
            queued.future.set_result(result)

    def _compile(self, process: subprocess.Popen, payload: dict[str, Any]) -> tuple[float, str | None]:
        """The payload to the process, then its result: the first line that is a result (RESULT_KEY),
        so that what a reference writes to the process's stdout itself is passed over."""
        started = time.perf_counter()
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(payload) + "\n")
            process.stdin.flush()
            for line in process.stdout:
                found = _result(line)
                if found is not None:
                    return found
        except (OSError, ValueError):
            pass
        with self.lock:
            self._retire(process)
        return time.perf_counter() - started, f"{ENDED} with exit code {process.poll()} and no result"

    def _record(self, queued: _Queued, result: tuple[float, str | None]) -> None:
        problem, mode = queued.name.rsplit(" compile-", 1)
        self._append_log({"problem": problem, "mode": mode, "seconds": round(result[0], 3), "error": result[1],
                          "ended_s": round(time.monotonic() - self.started, 3)})

    def _append_log(self, row: dict[str, Any]) -> None:
        """A line of the log, where there is one: a finished compile, and (last, at close) the pauses."""
        if self.log is None:
            return
        from solbench.data.files import append_jsonl

        with self.lock:
            try:
                append_jsonl(self.log, row)
            except OSError:  # the log is for reading afterwards; the compile counts all the same
                pass

    def _retire(self, process: subprocess.Popen) -> None:
        """End a compile process and its group (under the lock): continued first, then killed; one
        already reaped is left alone (its pid, and so its group's id, may be another's by now)."""
        self.running.pop(process.pid, None)
        self.stopped.discard(process.pid)
        for said in ("ready", "held"):  # a later process given the same pid must not be taken as ready
            (self.control / f"{said}-{process.pid}").unlink(missing_ok=True)
        if process.returncode is not None:
            return
        _signal_group(process.pid, signal.SIGCONT)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()

    def _make_room(self, held: bool) -> None:
        """A workload is evaluated again after running out of memory (held=True): the compiles in flight
        are ended, to be queued again by their threads, and none starts until held=False."""
        with self.wakeup:
            self.held = held
            if held:
                for pid in list(self.in_flight):
                    process = self.running.get(pid)  # none: it has just died, and its thread handles that
                    if process is not None:
                        self.evicted.add(pid)
                        self._retire(process)
            self.wakeup.notify_all()

    def _pause(self, paused: bool) -> None:
        """A timed request starts (True) or ended (False). At its start every compile process that is
        ready is asked to hold (HOLD_SIGNAL), and the start waits, HOLD_TIMEOUT_S at most, until each says
        it holds with its device work drained; the others are stopped (SIGSTOP of the process alone: its
        compile workers go on). At the end the pause file goes (the held ones go on) and the stopped ones
        are continued."""
        if not paused:
            with self.lock:
                self.paused = False
                self.pause_file.unlink(missing_ok=True)
                for pid in list(self.running) if self.whole_groups else ():
                    _signal_group(pid, signal.SIGCONT)
                for pid in self.stopped:
                    _signal(pid, signal.SIGCONT)
                self.stopped.clear()
            return
        started = time.monotonic()
        with self.lock:
            self.paused = True
            self.outcome.pauses += 1
            number = str(self.outcome.pauses)  # in the pause file: a held process says it holds in this pause
            write_atomically(self.pause_file, number)
            asked = []
            for pid, process in list(self.running.items()):
                if self.whole_groups:
                    _signal_group(pid, signal.SIGSTOP)
                    self.outcome.stopped += 1
                elif (self.control / f"ready-{pid}").exists() and _signal(pid, HOLD_SIGNAL):
                    asked.append(process)
                else:
                    self._stop(pid)
        late = self._wait_until_held(asked, number)
        with self.lock:
            if self.paused and str(self.outcome.pauses) == number:
                for process in late:
                    if process.pid in self.running:
                        self._stop(process.pid)
            self.outcome.pause_wait_s += time.monotonic() - started

    def _wait_until_held(self, processes: list[subprocess.Popen], number: str) -> list[subprocess.Popen]:
        """The processes that have not said they hold in pause `number` within HOLD_TIMEOUT_S (those
        that ended meanwhile are left out)."""
        deadline = time.monotonic() + HOLD_TIMEOUT_S
        waiting = list(processes)
        while waiting:
            waiting = [process for process in waiting if _read(self.control / f"held-{process.pid}") != number and process.poll() is None]
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        return waiting

    def _stop(self, pid: int) -> None:
        """SIGSTOP for one compile process (under the lock), continued when the pause ends."""
        if _signal(pid, signal.SIGSTOP):
            self.stopped.add(pid)
            self.outcome.stopped += 1

    def close(self) -> AheadOutcome:
        """Stop: what was not started is dropped, what runs is killed; the outcome of what finished."""
        unregister(self._pause, self._make_room)
        with self.wakeup:
            self.closed = True
            for queued in self.pending:
                if not queued.future.cancel():  # running: queued again after _make_room ended its process
                    queued.future.set_result((0.0, "not finished: the run ended"))
            self.pending.clear()
            self.wakeup.notify_all()
            for process in list(self.running.values()):
                self._retire(process)  # continued (if paused), then killed
        for thread in self.threads:
            thread.join()
        self._append_log({"pauses": self.outcome.pauses, "pause_wait_s": round(self.outcome.pause_wait_s, 3), "stopped": self.outcome.stopped,
                          "scope": "group" if self.whole_groups else "process", "ended_s": round(time.monotonic() - self.started, 3)})
        shutil.rmtree(self.control, ignore_errors=True)
        for name, future in self.futures:
            if future.done() and not future.cancelled() and future.exception() is None:
                seconds, error = future.result()
                self.outcome.seconds += seconds
                if error is None:
                    self.outcome.compiled += 1
                elif not error.startswith("not finished"):
                    self.outcome.failed.append(f"{name}: {error}")
        return self.outcome


def _result(line: str) -> tuple[float, str | None] | None:
    """A compile process's result line ({RESULT_KEY: [seconds, error or null]}), or None for any other line."""
    try:
        seconds, error = json.loads(line)[RESULT_KEY]
        return float(seconds), None if error is None else str(error)
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def _signal(pid: int, number: int) -> bool:
    """Signal one process; False where it is gone."""
    try:
        os.kill(pid, number)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _signal_group(pid: int, number: int) -> None:
    """Signal a compile process's group (the process and the compile workers it started)."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


def compile_ahead(payload: dict[str, Any]) -> tuple[float, str | None]:
    """In a compile process: the compiled candidate's module (the reference under torch.compile(mode,
    dynamic=False)), called once on each workload's inputs, as the candidate's worker calls it; (seconds, None) or (seconds, the error's first line)."""
    started = time.perf_counter()
    try:
        import torch

        from solbench.bench.compile_limits import compiled_run
        from solbench.data.definition import Definition
        from solbench.data.inputs import generate_inputs

        problem = Problem(Definition.model_validate(payload["definition"]), [Workload.model_validate(w) for w in payload["workloads"]],
                          Path(payload["root"]) if payload["root"] else None, kind=payload["kind"], input_profile=payload["profile"],
                          synthesize_missing_blobs=payload["synthesize"])
        compiled = compiled_run(problem.definition, payload["mode"])  # the graphs the candidate's worker will look up
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


def serve(lines: Any, results: Any) -> None:
    """A compile process: one payload per line in, {RESULT_KEY: [seconds, error or null]} per line out.
    What the references print goes to stderr; what they write to file descriptor 1 themselves is
    passed over by the reader (Precompiler._compile)."""
    import contextlib

    for line in lines:
        if not line.strip():
            continue
        with contextlib.redirect_stdout(sys.stderr):
            outcome = compile_ahead(json.loads(line))
            _forget_compiled()
        results.write(json.dumps({RESULT_KEY: outcome}) + "\n")
        results.flush()


def _forget_compiled() -> None:
    """Between compiles: dynamo's frames and guards dropped, cached device memory handed back."""
    import gc

    import torch

    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


_parent = 0  # in a compile process: the run's process, whose death ends a hold


def _hold_while_paused(signum: int, frame: object) -> None:
    """In a compile process, on HOLD_SIGNAL (a timed request is in flight): its device work drained,
    it says so (held-PID holds the pause's number) and waits while the pause file is there, saying so
    again for each new pause. It runs in the main thread between two bytecodes, so nothing is launched
    meanwhile; the process's compile workers, other processes, go on."""
    pause = Path(os.environ[PAUSE_FILE_ENV])
    number = _read(pause)
    if number is None:  # the timed request has ended already
        return
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized() and not torch.cuda.is_current_stream_capturing():
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a broken device fails the compile itself; the hold goes on
        pass
    held = pause.with_name(f"held-{os.getpid()}")
    said = None
    while number is not None and os.getppid() == _parent:  # a run that died leaves its pause file: then nothing would end the hold
        if number != said:
            write_atomically(held, number)
            said = number
        time.sleep(0.002)
        number = _read(pause)


def _prepare_compile_process() -> None:
    """A compile process's first steps: a lower CPU priority than the evaluation (inherited by its
    compile workers), the hold signal's handler, and then the file that says it can take that signal."""
    global _parent
    _parent = os.getppid()
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    pause_file = os.environ.get(PAUSE_FILE_ENV)
    if pause_file:
        signal.signal(HOLD_SIGNAL, _hold_while_paused)
        (Path(pause_file).parent / f"ready-{os.getpid()}").touch()


if __name__ == "__main__":
    _prepare_compile_process()
    serve(sys.stdin, sys.stdout)
