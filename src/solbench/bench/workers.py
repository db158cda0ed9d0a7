"""The two worker processes of an evaluation as one object: the trusted reference worker and the
untrusted solution worker (spawn, IPC probe, restart, typed requests with the failure mapping, close).

The reference worker is loaded with one problem at a time and can serve several problems in turn
(`load_problem`); a solution worker belongs to one solution and is never reused for another
(`attach` starts a fresh one). A caller that knows the next solutions says so (`plan_next`): their
worker processes (up to SPARES_AHEAD) are started as soon as the current one is built, so that the
interpreter, torch and the CUDA context load while the current solutions are evaluated; each belongs
to one solution and runs no code of any solution until it is attached to its own.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Sequence, TypeVar

from solbench.bench.exclusive import device_shared
from solbench.bench.ipc import probe_fails
from solbench.bench.memory import says_out_of_memory
from solbench.bench.messages import (
    Answer, BuildAnswer, BuildRequest, HelloAnswer, HelloRequest, LoadProblemAnswer, LoadProblemRequest, MalformedMessage, Request, REQUESTS,
    parse_answer, to_wire,
)
from solbench.bench.processes import Launcher, WorkerCrashed, WorkerFailed, WorkerForged, WorkerProcess, WorkerTimeout
from solbench.bench.shm import Session
from solbench.bench.verdicts import Outcome
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status

STARTUP_TIMEOUT_S = 120.0
# solution workers started ahead: a worker takes ~4 s to start on the H200 (interpreter, torch, CUDA
# context) and a small problem ~1.5 s to evaluate, so one ahead hides too little of it
SPARES_AHEAD = 3
COMMANDS = {model: command for command, model in REQUESTS.items()}
A = TypeVar("A", bound=Answer)


class WorkerPair:
    """The reference worker and the solution worker of one device, sharing one blob session."""

    def __init__(self, device: str, session: Session, *, sandbox: str = "auto", cache_root: Path, compile_timeout_s: float = 600.0,
                 log_limit: int = 16_000, compile_cache: Path | None = None):
        self.device, self.session, self.sandbox, self.cache_root = device, session, sandbox, Path(cache_root)
        self.compile_timeout_s, self.log_limit = compile_timeout_s, log_limit
        self.reference: WorkerProcess | None = None
        self.worker: WorkerProcess | None = None
        self.solution: Solution | None = None
        self.problem_payload: dict[str, Any] | None = None
        self.environment: dict[str, Any] = {}
        self.ipc = device.startswith("cuda")  # tensors stay on the GPU between processes
        self.started_workers = 0
        self.reference_hello: HelloAnswer | None = None
        self.initial_precision: dict[str, Any] = {}
        self.build_precision_changes: dict[str, Any] = {}
        self.worker_output: list[str] = []
        self.solution_failure: tuple[Status, str] | None = None  # why the current solution worker did not start (status, message)
        self._groups = 0
        self._to_release: dict[str, list[str]] = {"reference": [], "solution": []}
        # start the next solution's worker ahead (plan_next); on a CPU its start-up would compete with the timed calls
        self.start_ahead = device.startswith("cuda")
        self.spares_ahead = SPARES_AHEAD
        self.upcoming: list[Solution] = []
        self.spares: list[tuple[Solution, WorkerProcess]] = []
        self.spares_taken = 0
        self.compile_cache = Path(compile_cache) if compile_cache is not None else None
        self._trusted: list[Solution] = []  # solutions (by identity) whose workers share compile_cache
        self._kept_trusted: WorkerProcess | None = None  # a trusted solution's worker, kept for the next trusted solution
        self._launchers: list[tuple[Solution, Launcher]] = []  # solutions (by identity) whose workers start under a launcher
        self.launched: list[WorkerProcess] = []  # the workers started under a launcher since the last launch_under

    @classmethod
    def for_options(cls, device: str, options: Any) -> WorkerPair:
        """A pair in a new blob session, as EvalOptions say (sandbox, build cache, compile timeout, log limit)."""
        return cls(device, Session.create(), sandbox=options.sandbox, cache_root=options.cache_root,
                   compile_timeout_s=options.compile_timeout_s, log_limit=options.log_limit, compile_cache=getattr(options, "compile_cache", None))

    def trust(self, solution: Solution) -> None:
        """`solution` is trusted code (the reference under torch.compile): its worker may write the shared
        compile cache. Untrusted solutions never get it (a poisoned cache would change the baselines)."""
        if not self.trusts(solution):
            self._trusted.append(solution)

    def trusts(self, solution: Solution) -> bool:
        return any(known is solution for known in self._trusted)

    def launch_under(self, solution: Solution, launcher: Launcher | None) -> None:
        """The solution's next workers start under `launcher` (a profiler, a sanitizer; None: as usual).
        A worker started ahead for it the other way is dropped, so the next attach starts the right one."""
        self._launchers = [(known, given) for known, given in self._launchers if known is not solution]
        if launcher is not None:
            self._launchers.append((solution, launcher))
        self.launched = []
        for _, process in [spare for spare in self.spares if spare[0] is solution]:
            process.kill()
        self.spares = [spare for spare in self.spares if spare[0] is not solution]

    def _launcher_for(self, solution: Solution | None) -> Launcher | None:
        return next((given for known, given in self._launchers if known is solution), None)

    def __enter__(self) -> WorkerPair:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.close()
        finally:
            self.session.close()  # the blobs go even where a worker would not stop

    # --- lifecycle -----------------------------------------------------------------------------

    def load_problem(self, problem: Problem, policy: str, input_profile: str) -> None:
        """Load a problem into the reference worker (started on first use; kept across problems)."""
        self.problem_payload = {
            "definition": problem.definition.to_json_dict(), "root": str(problem.root) if problem.root else None, "kind": problem.kind,
            "policy": policy, "input_profile": input_profile, "synthesize_missing_blobs": problem.synthesize_missing_blobs,
        }
        if self.reference is None or not self.reference.alive:
            self._start_reference()
        else:
            request = self._with_releases("reference", LoadProblemRequest(**self.problem_payload))  # the last problem's shared tensors go
            self._typed(self.reference, request, STARTUP_TIMEOUT_S, LoadProblemAnswer)

    def attach(self, solution: Solution) -> tuple[Status, str] | None:
        """A solution worker for `solution`, loaded and built; the failure as (status, message), or None.
        Submitted code always gets a fresh worker; trusted code (references, their torch.compile
        candidates) gets the worker the last trusted solution left (detach), where there is one."""
        self.solution = solution
        if self.worker is not None:
            self.stop_solution_worker()
        self._prune_solution_folders(solution)
        kept, self._kept_trusted = self._kept_trusted, None
        if kept is not None and not (self.trusts(solution) and kept.alive and self._launcher_for(solution) is None):
            kept.kill()
            kept = None
            self._to_release["solution"] = []
        failure = self._start_solution_worker(kept or self._take_spare(solution))
        self._start_upcoming()
        return failure

    def detach(self) -> None:
        """The current solution's evaluation is over: its worker stops, except a trusted solution's
        healthy worker, which is kept for the next trusted solution (a worker start and torch's first
        calls saved per problem; submitted code never shares a process with anything)."""
        worker, solution = self.worker, self.solution
        if (worker is not None and solution is not None and self.trusts(solution) and worker.alive and self.solution_failure is None
                and worker.launcher is None):  # a worker under a profiler or sanitizer is never kept
            self.collect_output()
            self.worker = None
            if self._kept_trusted is not None:
                self._kept_trusted.kill()
            self._kept_trusted = worker
            return
        self.stop_solution_worker()

    def plan_next(self, upcoming: Sequence[Solution] | None) -> None:
        """The solutions that the next attaches will be for, in order (None: not known): their workers
        are started once the current solution is built (where start_ahead is on)."""
        self.upcoming = list(upcoming or ())

    def expect(self, solution: Solution) -> None:
        """The solution that the next attach is for: where no worker was started ahead for it, one
        starts now (so that it loads while the reference worker starts or loads the problem)."""
        if self._reuses_a_worker(solution):
            return
        if self.start_ahead and not any(planned is solution for planned, _ in self.spares):
            self.spares.append((solution, self._spawn("solution", solution)))

    def _reuses_a_worker(self, solution: Solution) -> bool:
        """Whether `solution` will get a trusted worker kept from before (so none is started ahead for it)."""
        if not self.trusts(solution):
            return False
        kept = self._kept_trusted is not None and self._kept_trusted.alive
        current = self.worker is not None and self.solution is not None and self.trusts(self.solution)
        return kept or current

    def restart_solution_worker(self) -> tuple[Status, str] | None:
        self.stop_solution_worker()
        return self._start_solution_worker(None)

    def stop_solution_worker(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.collect_output()
            self.worker = None
        self.solution_failure = None
        self._to_release["solution"] = []

    def kill_processes(self) -> None:
        """Kill every worker process of the pair, from another thread (an interrupted run): the thread
        that uses the pair finds its workers gone and ends; the pair's state stays that thread's."""
        for process in (self.worker, self.reference, self._kept_trusted, *(started for _, started in list(self.spares))):
            if process is not None:
                process.kill_processes()

    def close(self) -> None:
        self._drop_spares()
        if self._kept_trusted is not None:
            self._kept_trusted.kill()
            self._kept_trusted = None
        for process in (self.worker, self.reference):
            if process is not None:
                process.close()
        self.worker = self.reference = None

    def _spawn(self, role: str, solution: Solution | None = None) -> WorkerProcess:
        """A worker process; the (untrusted) solution worker runs in the OS sandbox of `sandbox`,
        writing only in its own build folder of the cache and its own folder of the session (output_folder)."""
        self.started_workers += 1
        log = self.session.root / "logs" / f"{role}-{self.started_workers}.log"
        if role != "solution":
            return WorkerProcess(role, self.device, log)
        from solbench.bench.sandbox import plan_sandbox

        trusted = solution is not None and self.trusts(solution)  # its worker may be kept for the next trusted solutions' builds
        folder = self.folder_for(solution)
        writable, extra, compiles = [self.cache_root if trusted else self._build_folder(solution), folder], None, False
        if self.compile_cache is not None and trusted:
            extra, compiles = compile_cache_environment(self.compile_cache), True
            writable.append(self.compile_cache)
        plan = plan_sandbox(self.sandbox, writable=writable, device=self.device, home=folder / "home")
        self.environment["sandbox"] = plan.level
        launcher = self._launcher_for(solution)
        process = WorkerProcess(role, self.device, log, env=extra, sandbox=plan, preload_compiler=compiles, launcher=launcher)
        process.output_folder = folder
        if launcher is not None:
            self.launched.append(process)
        return process

    def _prune_solution_folders(self, solution: Solution) -> None:
        """Remove the session folders of submitted solutions whose evaluation is over (all but `solution`'s and
        those of the workers started ahead): a pair lives as long as a run's lane or a `serve` worker, and each
        folder holds a HOME with JIT caches, in /dev/shm (memory) where it exists."""
        keep = {self.folder_for(solution), *(started.output_folder for _, started in self.spares)}
        for folder in (self.session.root / "solutions").glob("*"):
            if folder not in keep:
                shutil.rmtree(folder, ignore_errors=True)

    def folder_for(self, solution: Solution | None) -> Path:
        """The one folder of the session that the worker of `solution` may write (see output_folder)."""
        if solution is not None and self.trusts(solution):
            return self.session.root
        return self.session.root / "solutions" / self._build_folder(solution).name

    @property
    def output_folder(self) -> Path:
        """Where the current solution worker writes its outputs' blobs, and the only folder of the session it
        may write: a submitted solution's own folder (`solutions/<build key>`: its blobs and its HOME with TMPDIR,
        user site-packages and JIT caches), kept for its later workers only; trusted code writes the session
        folder itself. With the whole session writable, a solution could rewrite the reference's blobs and logs,
        plant a usercustomize.py or poisoned Triton and Inductor caches in the HOME of the next solution or of
        the trusted workers, or forge the session's owner file."""
        return (self.worker.output_folder if self.worker is not None else None) or self.session.root

    def _build_folder(self, solution: Solution | None) -> Path:
        """The one folder of the build cache that this solution's build may write."""
        from solbench.bench.builders import key_folder

        try:
            return key_folder(self.cache_root, solution, self.device)
        except Exception:  # noqa: BLE001 - options the key cannot take: the build reports them; meanwhile a folder of its own
            return self.cache_root.absolute() / f"unkeyed-{self.session.root.name}-{self.started_workers}"

    def _start_upcoming(self) -> None:
        """Start the workers of the planned next solutions now (they only load the interpreter, torch
        and the device context); spares of solutions no longer planned are killed."""
        upcoming = [solution for solution in self.upcoming[:self.spares_ahead]
                    if solution is not self.solution and not self._reuses_a_worker(solution)] if self.start_ahead else []
        for planned, process in self.spares:
            if not any(planned is solution for solution in upcoming):
                process.kill()
        self.spares = [(planned, process) for planned, process in self.spares if any(planned is solution for solution in upcoming)]
        for solution in upcoming:
            if not any(planned is solution for planned, _ in self.spares):
                self.spares.append((solution, self._spawn("solution", solution)))

    def _take_spare(self, solution: Solution) -> WorkerProcess | None:
        """The worker started ahead for exactly this solution, if it is still alive (the others are kept for theirs)."""
        for position, (planned, process) in enumerate(self.spares):
            if planned is solution:
                del self.spares[position]
                if process.alive:
                    self.spares_taken += 1
                    return process
                process.kill()
                return None
        return None

    def _drop_spares(self) -> None:
        for _, process in self.spares:
            process.kill()
        self.spares = []

    def _start_reference(self) -> None:
        assert self.problem_payload is not None, "load_problem first"
        self.reference = self._spawn("reference")
        self.reference_hello = self._typed(self.reference, HelloRequest(), STARTUP_TIMEOUT_S, HelloAnswer)
        self._typed(self.reference, LoadProblemRequest(**self.problem_payload), STARTUP_TIMEOUT_S, LoadProblemAnswer)
        self._to_release["reference"] = []

    def _start_solution_worker(self, started: WorkerProcess | None) -> tuple[Status, str] | None:
        """Load and build the current solution in `started` (a worker started ahead for it) or in a new worker."""
        self.solution_failure = self._start_and_build(started)
        return self.solution_failure

    def _start_and_build(self, started: WorkerProcess | None) -> tuple[Status, str] | None:
        assert self.solution is not None and self.problem_payload is not None
        self.worker = started or self._spawn("solution", self.solution)
        try:
            hello = self._typed(self.worker, HelloRequest(ipc_probe=self.ipc, group="ipc-probe"), STARTUP_TIMEOUT_S, HelloAnswer)
            if self.ipc:
                self._probe_ipc(hello.ipc_probe)
            else:
                self.environment.setdefault("transfer", "host-memory files")
            loaded = self._typed(self.worker, LoadProblemRequest(**self.problem_payload), STARTUP_TIMEOUT_S, LoadProblemAnswer)
            self.initial_precision = dict(loaded.precision)
            built = self._typed(self.worker, BuildRequest(solution=self.solution.to_json_dict(), cache_root=str(self.cache_root)),
                                self.compile_timeout_s, BuildAnswer)
            self.build_precision_changes = dict(built.precision_changes)
            return None
        except WorkerTimeout as exc:
            return Status.TIMEOUT, f"build: {exc}"
        except WorkerCrashed as exc:
            return Status.RUNTIME_ERROR, f"build: {exc}"
        except WorkerForged as exc:
            return Status.REWARD_HACK, f"REWARD_HACK [forged-answer]: build: {exc}"
        except MalformedMessage as exc:
            return Status.RUNTIME_ERROR, f"build: the solution worker's answer is malformed: {exc}"
        except WorkerFailed as exc:
            if exc.kind == "reward_hack":
                return Status.REWARD_HACK, f"REWARD_HACK [{exc.rule}]: while loading the solution: {exc.error}"
            status = Status.COMPILE_ERROR if exc.kind == "compile" else Status.RUNTIME_ERROR
            return status, exc.detail or exc.error

    def _probe_ipc(self, description: Any) -> None:
        """Outputs cross by CUDA IPC only where the orchestrator can map the worker's memory (the
        probe is exported before any solution code is loaded)."""
        failure = probe_fails(description)
        self._to_release["solution"].append("ipc-probe")
        if failure is not None:
            self.ipc = False
            self.environment["transfer"] = f"host-memory files (CUDA IPC from the solution worker failed: {failure})"
        else:
            self.environment["transfer"] = "CUDA IPC"

    def collect_output(self) -> None:
        """What the solution worker printed since the last look (called before it is replaced, too)."""
        if self.worker is not None:
            text = self.worker.new_log(self.log_limit)
            if text:
                self.worker_output.append(text)

    # --- requests ------------------------------------------------------------------------------

    def group(self) -> str:
        self._groups += 1
        return f"g{self._groups}"

    def release_later(self, role: str, group: str) -> None:
        """Shared tensors of `group` that the process may free with its next request."""
        self._to_release[role].append(group)

    def ask_solution(self, request: Request, deadline: float, answer: type[A]) -> A:
        """A request to the solution worker; every failure becomes an Outcome (the worker is replaced
        where it can no longer be trusted or has died)."""
        request = self._with_releases("solution", request)
        try:
            return self._typed(self.worker, request, _remaining(deadline), answer)
        except WorkerTimeout as exc:
            self.restart_solution_worker()
            raise Outcome(Status.TIMEOUT, f"{exc} (what was left of the workload's time limit, --timeout)") from None
        except WorkerCrashed as exc:
            self.restart_solution_worker()
            raise Outcome(Status.RUNTIME_ERROR, str(exc)) from None
        except WorkerForged as exc:
            self.restart_solution_worker()
            raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [forged-answer]: {exc}") from None
        except MalformedMessage as exc:
            self.restart_solution_worker()
            raise Outcome(Status.RUNTIME_ERROR, f"the solution worker's answer is malformed (a forged or out-of-order message?): {exc}") from None
        except WorkerFailed as exc:
            if exc.kind == "reward_hack":
                if exc.rule == "integrity":
                    self.restart_solution_worker()  # a patched worker is not used again
                raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [{exc.rule}]: {exc.error}") from None
            status = Status.INCORRECT_SHAPE if exc.kind == "outputs" else Status.RUNTIME_ERROR
            raise Outcome(status, exc.detail or exc.error, memory=exc.kind == "runtime" and says_out_of_memory(exc.error)) from None

    def ask_reference(self, request: Request, deadline: float, answer: type[A]) -> A:
        """A request to the reference worker. Out of memory there is retried once with the solution
        worker stopped (its memory freed; it is started again afterwards); a dead or hung reference
        worker is replaced."""
        try:
            return self._ask_reference_once(request, deadline, answer)
        except WorkerFailed as exc:
            if exc.kind != "memory":
                raise Outcome(Status.INVALID_REFERENCE, f"reference failed: {exc.error}\n{exc.detail}".strip()) from None
            first = exc.error
        solution_was_running = self.worker is not None
        self.stop_solution_worker()
        self._drop_spares()  # its device context holds memory too
        try:
            return self._ask_reference_once(request, deadline, answer)
        except WorkerFailed as exc:
            again = "; again with the solution worker stopped" if exc.kind == "memory" else f"; the retry failed otherwise: {exc.error}"
            raise Outcome(Status.INVALID_REFERENCE, f"reference failed: {first}{again}", memory=exc.kind == "memory") from None
        finally:
            if solution_was_running:
                failure = self._start_solution_worker(None)
                if failure is not None:
                    raise Outcome(failure[0], f"after the reference's retry, the solution worker did not start again: {failure[1]}")

    def _ask_reference_once(self, request: Request, deadline: float, answer: type[A]) -> A:
        request = self._with_releases("reference", request)
        try:
            return self._typed(self.reference, request, _remaining(deadline), answer)
        except (WorkerTimeout, WorkerCrashed, WorkerForged, MalformedMessage) as exc:
            self.reference.kill()
            self._start_reference()
            status = Status.TIMEOUT if isinstance(exc, WorkerTimeout) else Status.INVALID_REFERENCE
            raise Outcome(status, f"reference: {exc}") from None

    def _with_releases(self, role: str, request: Request) -> Request:
        released, self._to_release[role] = self._to_release[role], []
        return request.model_copy(update={"release": released, "ipc": self.ipc, "digest": role == "reference" and self.checks_reference_blobs})

    @property
    def checks_reference_blobs(self) -> bool:
        """Whether the reference's output blobs are checked against their sha256 when read: while a submitted
        solution is attached, its worker (alive while the reference runs) can write the session folder."""
        return self.solution is not None and not self.trusts(self.solution)

    @staticmethod
    def _typed(process: WorkerProcess | None, request: Request, timeout: float, answer: type[A]) -> A:
        """Send a typed request; its answer is validated here, on receipt, against the command's model."""
        if process is None:
            raise WorkerCrashed("no worker is running (it did not start)")
        command = COMMANDS[type(request)]
        with device_shared():  # never beside another evaluation's timed section (a timed request passes: its thread holds the device)
            reply = process.request(command, timeout, **to_wire(request))
        parsed = parse_answer(command, reply)
        if not isinstance(parsed, answer):
            raise MalformedMessage(f"{command} answer: expected {answer.__name__}")
        return parsed


def compile_cache_environment(folder: Path) -> dict[str, str]:
    """The variables that point inductor's and Triton's caches into `folder` (created here)."""
    for name in ("inductor", "triton"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    return {"TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TRITON_CACHE_DIR": str(folder / "triton")}


def _remaining(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())
