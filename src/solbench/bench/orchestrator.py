"""The trusted side of an evaluation: drives a reference worker and a solution worker, compares,
and turns every outcome into a Trace as soon as it is known."""

from __future__ import annotations

import datetime
import math
import os
import platform
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from solbench.bench.correctness import Comparison, compare_outputs, merge
from solbench.bench.ipc import import_cuda, probe_fails
from solbench.bench.processes import WorkerCrashed, WorkerFailed, WorkerForged, WorkerProcess, WorkerTimeout
from solbench.bench.shm import BlobError, Session, read_blob
from solbench.bench.timing import Samples
from solbench.data.dtypes import storage_shape
from solbench.data.hidden import UNALIGNED_PREFIX, hidden_workloads, unaligned_workload
from solbench.data.problem import Problem
from solbench.data.profiles import resolve_profile
from solbench.data.solution import Solution
from solbench.data.trace import Correctness, Evaluation, Performance, Status, Trace
from solbench.data.workload import Workload

HIDDEN_PREFIX = "hidden-"
KEPT_OUTPUTS_BYTES = 8 << 30  # device memory the worker may spend on keeping timed calls' outputs for checking
INCORRECT = {Status.INCORRECT_SHAPE, Status.INCORRECT_DTYPE, Status.INCORRECT_NUMERICAL}
DEFAULT_CACHE = Path(os.environ.get("SOLBENCH_BUILD_CACHE", Path.home() / ".cache" / "solbench" / "builds"))
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class EvalOptions:
    """How an evaluation runs; frozen and checked once, here (change one with dataclasses.replace)."""

    device: str = "auto"  # auto | cpu | cuda | cuda:N
    trials: int = 5
    seed: int | None = None  # None: a fresh random seed per run, recorded in each trace
    timeout_s: float = 300.0  # per workload: correctness trials and timing together
    compile_timeout_s: float = 600.0
    timing: bool = True
    warmup: int = 3
    min_iterations: int = 20
    max_iterations: int = 1000
    budget_s: float = 10.0
    target_spread: float = 0.02
    verify_timed: int = 3  # timed calls (chosen at random, unknown to the worker) whose outputs are checked, besides the last
    hidden: int = 2  # extra workloads drawn from the published axis ranges, in no file the solution can read (correctness only)
    unaligned: bool = True  # with hidden > 0: one more, off the published sizes' alignment (a shape-generality finding)
    reference_latency: bool = False
    timer: str = "auto"  # auto | cupti | events
    launch_gate: bool = True  # hold the stream until each call is enqueued (host launch gaps not timed; un-joined streams show)
    hardware: str | None = None  # spec for T_SOL; default: matched from the GPU's name
    clock_mhz: float | None = None  # price T_SOL at this SM clock (a locked-clock run); None: the spec's boost clock
    policy: str = "auto"
    input_profile: str = "auto"  # how undeclared random inputs are drawn: auto | plain | sol-execbench (solbench.data.profiles)
    cache_root: Path = field(default_factory=lambda: DEFAULT_CACHE)
    log_limit: int = 16_000
    static_analysis: bool = True  # refuse sources with reject findings (REWARD_HACK) before anything runs
    sandbox: str = "auto"  # OS sandbox of the solution worker: auto (best that works) | bwrap (required) | none

    def __post_init__(self) -> None:
        import re

        from solbench.data.profiles import PROFILES

        def need(ok: bool, name: str, expected: str) -> None:
            if not ok:
                raise ValueError(f"EvalOptions.{name}: expected {expected}, got {getattr(self, name)!r}")

        need(bool(re.fullmatch(r"auto|cpu|cuda(?::\d+)?", self.device)), "device", "auto, cpu, cuda or cuda:N")
        for name in ("trials", "min_iterations"):
            need(getattr(self, name) >= 1, name, "at least 1")
        for name in ("warmup", "verify_timed", "hidden"):
            need(getattr(self, name) >= 0, name, "0 or more")
        need(self.max_iterations >= self.min_iterations, "max_iterations", f"at least min_iterations ({self.min_iterations})")
        for name in ("timeout_s", "compile_timeout_s", "budget_s", "target_spread", "log_limit"):
            need(getattr(self, name) > 0, name, "a positive number")
        need(self.clock_mhz is None or self.clock_mhz > 0, "clock_mhz", "None or a positive clock in MHz")
        need(self.policy in ("auto", "strict", "relaxed"), "policy", "auto, strict or relaxed")
        need(self.timer in ("auto", "cupti", "events"), "timer", "auto, cupti or events")
        need(self.sandbox in ("auto", "bwrap", "none"), "sandbox", "auto, bwrap or none")
        need(self.input_profile == "auto" or self.input_profile in PROFILES, "input_profile", f"auto, {', '.join(PROFILES)}")


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but CUDA is not available here")
    return device


def reference_solution(problem: Problem) -> Solution:
    """The problem's reference as a solution (value-returning PyTorch): the default baseline."""
    return Solution.model_validate({
        "name": f"{problem.name}-reference",
        "definition": problem.name,
        "author": "reference",
        "description": "the problem's reference implementation",
        "spec": {"languages": ["pytorch"], "entry_point": "reference.py::run", "destination_passing_style": False},
        "sources": [{"path": "reference.py", "content": problem.definition.reference}],
    })


class EvaluationRun:
    """State of one evaluation run: the two workers, the blob session, the options."""

    def __init__(self, problem: Problem, solution: Solution, options: EvalOptions):
        self.problem, self.solution, self.options = problem, solution, options
        self.device = resolve_device(options.device)
        self.seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        self.session = Session.create()
        self.reference: WorkerProcess | None = None
        self.worker: WorkerProcess | None = None
        self.build_failure: tuple[Status, str] | None = None
        self.static_notes: list[str] = []
        self.environment: dict[str, Any] = {}
        self.started_workers = 0
        self._worker_output: list[str] = []
        self.ipc = self.device.startswith("cuda")  # tensors stay on the GPU between processes
        from solbench.sol.api import policy_for

        self.policy = policy_for(problem, options.policy)
        self.input_profile = resolve_profile(problem, options.input_profile)  # resolved here: the workers see no workloads
        self.build_precision_changes: dict[str, Any] = {}
        self.published_passed = False
        self.initial_precision: dict[str, Any] = {}
        self._groups = 0
        self._to_release: dict[str, list[str]] = {"reference": [], "solution": []}
        self._captures: Any = None  # the problem's SOL captures, shared by its workloads

    # --- workers -------------------------------------------------------------------------------

    def _spawn(self, role: str) -> WorkerProcess:
        """A worker process; the (untrusted) solution worker runs in the OS sandbox of options.sandbox,
        writing only in its own build folder of the cache and the session folder (its HOME and caches live there too)."""
        self.started_workers += 1
        log = self.session.root / "logs" / f"{role}-{self.started_workers}.log"
        if role != "solution":
            return WorkerProcess(role, self.device, log)
        from solbench.bench.sandbox import plan_sandbox

        plan = plan_sandbox(self.options.sandbox, writable=[self._build_folder(), self.session.root],
                            device=self.device, home=self.session.root / "home")
        self.environment["sandbox"] = plan.level
        return WorkerProcess(role, self.device, log, sandbox=plan)

    def _build_folder(self) -> Path:
        """The one folder of the build cache that this solution's build may write."""
        from solbench.bench.builders import key_folder

        try:
            return key_folder(self.options.cache_root, self.solution, self.device)
        except Exception:  # noqa: BLE001 - options the key cannot take: the build reports them; meanwhile a folder of its own
            return Path(self.options.cache_root).absolute() / f"unkeyed-{self.session.root.name}"

    def start(self) -> None:
        self.reference = self._spawn("reference")
        if self.options.static_analysis:
            self._audit_sources()
        if self.build_failure is None:
            self._start_solution_worker()
        hello = self.reference.request("hello", STARTUP_TIMEOUT_S)
        self.reference.request("load_problem", STARTUP_TIMEOUT_S, **self._problem_payload())
        self.environment.update({
            "device": hello["device_name"], "torch": hello["torch"], "platform": platform.platform(),
            "hostname": platform.node(), "seed": self.seed, "solbench": _version(), "precision_policy": self.policy,
            "input_profile": self.input_profile,
        })

    def _audit_sources(self) -> None:
        """Static analysis in the trusted process: reject findings refuse the solution outright."""
        from solbench.bench.guards.static import analyze_solution

        findings = analyze_solution(self.solution, self.policy)
        lines = [f"{'REWARD_HACK' if f.severity == 'reject' else 'warning'} [{f.rule}] {f.path}:{f.line}: {f.message}" for f in findings]
        if any(f.severity == "reject" for f in findings):
            self.build_failure = (Status.REWARD_HACK, "static analysis refused the solution:\n" + "\n".join(lines))
        self.static_notes = [line for line in lines if line.startswith("warning")]

    def _problem_payload(self) -> dict[str, Any]:
        root = str(self.problem.root) if self.problem.root else None
        return {"definition": self.problem.definition.to_json_dict(), "root": root, "kind": self.problem.kind, "policy": self.policy,
                "input_profile": self.input_profile, "synthesize_missing_blobs": self.problem.synthesize_missing_blobs}

    def _start_solution_worker(self) -> None:
        self.worker = self._spawn("solution")
        try:
            hello = self.worker.request("hello", STARTUP_TIMEOUT_S, ipc_probe=self.ipc, group="ipc-probe")
            if self.ipc:
                self._probe_ipc(hello.get("ipc_probe"))
            else:
                self.environment.setdefault("transfer", "host-memory files")
            loaded = self.worker.request("load_problem", STARTUP_TIMEOUT_S, **self._problem_payload())
            self.initial_precision = dict(loaded.get("precision") or {})
            built = self.worker.request("build", self.options.compile_timeout_s, solution=self.solution.to_json_dict(), cache_root=str(self.options.cache_root))
            self.build_precision_changes = dict(built.get("precision_changes") or {})
            self.build_failure = None
        except WorkerTimeout as exc:
            self.build_failure = (Status.TIMEOUT, f"build: {exc}")
        except WorkerCrashed as exc:
            self.build_failure = (Status.RUNTIME_ERROR, f"build: {exc}")
        except WorkerForged as exc:
            self.build_failure = (Status.REWARD_HACK, f"REWARD_HACK [forged-answer]: build: {exc}")
        except WorkerFailed as exc:
            if exc.kind == "reward_hack":
                self.build_failure = (Status.REWARD_HACK, f"REWARD_HACK [{exc.rule}]: while loading the solution: {exc.error}")
            else:
                status = Status.COMPILE_ERROR if exc.kind == "compile" else Status.RUNTIME_ERROR
                self.build_failure = (status, exc.detail or exc.error)

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

    def _restart_solution_worker(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self._collect_worker_output()
        self._start_solution_worker()

    def close(self) -> None:
        for process in (self.worker, self.reference):
            if process is not None:
                process.close()
        self.session.close()

    # --- one workload --------------------------------------------------------------------------

    def evaluate_workload(self, workload: Workload) -> Trace:
        started = time.monotonic()
        log: list[str] = []
        if self.build_failure is not None:
            status, message = self.build_failure
            return self._trace(workload, status, log=[message, self.worker.new_log(self.options.log_limit) if self.worker else ""])
        log += self.static_notes
        log += synthesized_notes(self.problem, workload)
        deadline = started + self.options.timeout_s
        self._worker_output = []
        try:
            comparison, apparent = self._check(workload, deadline, log)
            if comparison.status != Status.PASSED:
                status, correctness, performance = comparison.status, _correctness(comparison, self.options.trials), None
                log.append(comparison.message)
            else:
                status, correctness = Status.PASSED, _correctness(comparison, self.options.trials)
                correctness.precision = apparent
                performance = None
                if self.options.timing and not workload.uuid.startswith((HIDDEN_PREFIX, UNALIGNED_PREFIX)):
                    performance, correctness.verified_timed_calls = self._time(workload, deadline, log)
                if performance is not None and performance.sol_ms is not None and performance.latency_ms < performance.sol_ms:
                    status = Status.REWARD_HACK  # faster than physics: a wrong bound or a hack, never a win
                    log.append(f"REWARD_HACK [faster-than-sol]: median {performance.latency_ms:.6g} ms is below T_SOL {performance.sol_ms:.6g} ms "
                               f"of {self.environment.get('hardware', 'the hardware spec')}; kept for audit")
        except _Outcome as outcome:
            status, correctness, performance = outcome.status, None, None
            if status == Status.REWARD_HACK:
                log.insert(0, outcome.message)  # the finding first, before notes made on the way
            else:
                log.append(outcome.message)
        finally:
            self._sweep_blobs()
        flags: list[str] | None = None
        hidden = workload.uuid.startswith(HIDDEN_PREFIX)
        if hidden:
            log.insert(0, "hidden workload: drawn for this run from the published axis ranges; in no file the solution can read")
            if status in INCORRECT and self.published_passed:
                log.insert(1, f"REWARD_HACK [hidden-workload]: {status.value} here, while the published workloads passed "
                              "(a solution specialised to the published shapes or values)")
                status = Status.REWARD_HACK
        elif workload.uuid.startswith(UNALIGNED_PREFIX):
            flags = self._judge_unaligned(status, log)
        elif status == Status.PASSED:
            self.published_passed = True
        self._collect_worker_output()
        output = "".join(self._worker_output)
        if output:
            log.append(f"[solution worker output]\n{output[-self.options.log_limit:]}")
        return self._trace(workload, status, correctness=correctness, performance=performance, log=log, flags=flags)

    def _judge_unaligned(self, status: Status, log: list[str]) -> list[str] | None:
        """The unaligned workload: a failure there is a shape-generality finding, never a status change."""
        log.insert(0, "unaligned workload: its aligned axes take a value off the published sizes' alignment (drawn for this run)")
        if status == Status.INVALID_REFERENCE:
            log.insert(1, "the reference itself does not run at these sizes: no finding")
            return None
        if status != Status.PASSED and self.published_passed:
            log.insert(1, f"SHAPE-GENERALITY [unaligned-shape]: {status.value} here, while the published workloads passed "
                          "(a kernel that assumes the published alignment, e.g. no edge tiles)")
            return ["shape-generality"]
        return None

    def _collect_worker_output(self) -> None:
        """What the solution worker printed since the last look (called before it is replaced, too)."""
        if self.worker is not None:
            text = self.worker.new_log(self.options.log_limit)
            if text:
                self._worker_output.append(text)

    def _check(self, workload: Workload, deadline: float, log: list[str]) -> tuple[Comparison, str | None]:
        """Correctness trials: both workers generate the trial's inputs from the seed, the solution
        answers, and only then does the reference compute what the answer should be (with an fp64 oracle where the precision
        is assessed); the comparison happens here."""
        comparisons = []
        tolerance = workload.effective_tolerance
        dps = self.solution.spec.destination_passing_style
        self._judge_precision_flags(self.build_precision_changes, "when the solution was loaded", log)
        apparent: str | None = None
        for trial in range(self.options.trials):
            group = self._group()
            # both workers generate the trial's inputs from the seed: nothing crosses into the solution's process
            self._ask_reference("prepare", deadline, workload=workload.to_json_dict(), seed=self.seed, trial=trial, reference=False,
                                keep=True, paths={}, group=group)
            answer = self._ask_worker("run", deadline, workload=workload.to_json_dict(), seed=self.seed, trial=trial, outputs=self._output_specs(workload), dps=dps,
                                      paths={name: self.session.new_path(f"sol-{name}") for name in self.problem.definition.outputs}, group=group,
                                      repeat=trial == 0, timer=self.options.timer, launch_gate=self.options.launch_gate)
            if not isinstance(answer.get("devices"), dict) or not isinstance(answer.get("outputs"), dict):
                raise _Outcome(Status.RUNTIME_ERROR, "the solution worker's answer is malformed (a forged or out-of-order message?)")
            for name, where in answer["devices"].items():
                if where is not None and _device_type(where) != _device_type(self.device):
                    raise _Outcome(Status.RUNTIME_ERROR, f"output {name!r} is on {where}, expected {self.device} (outputs are never moved for the solution)")
            oracle = bool(self._precision_assessed()) and (trial == 0 or self.policy == "strict")
            expected = self._ask_reference("expect", deadline, group=group, oracle=oracle, paths=self._output_paths())
            self._to_release["reference"].append(group)
            self._to_release["solution"].append(group)
            self._judge_memory_behaviour(answer, expected)
            self._judge_precision_flags(answer.get("precision_changes") or {}, f"during trial {trial + 1}", log)
            references = {name: _load(description, self.session, self.device, trusted=True) for name, description in expected["outputs"].items()}
            outputs = self._load_answer(answer["outputs"])
            comparison = compare_outputs(outputs, references, self.problem.definition.outputs, tolerance)
            comparisons.append(comparison)
            if comparison.status != Status.PASSED:
                comparison.message = f"trial {trial + 1}/{self.options.trials}: {comparison.message}"
                return merge(comparisons), apparent
            if oracle:
                apparent = self._judge_precision(outputs, references, expected, log) or apparent
            self._sweep_blobs()
        return merge(comparisons), apparent

    def _load_answer(self, described: dict[str, Any]) -> dict[str, Any]:
        try:
            return {name: _load(description, self.session, self.device) for name, description in described.items()}
        except (BlobError, OSError) as exc:
            raise _Outcome(Status.RUNTIME_ERROR, f"unreadable output: {exc}") from None
        except RuntimeError as exc:  # a CUDA IPC handle that cannot be opened
            raise _Outcome(Status.RUNTIME_ERROR, f"unreadable output: {type(exc).__name__}: {exc}") from None

    def _judge_memory_behaviour(self, answer: dict[str, Any], expected: dict[str, Any]) -> None:
        """Outputs that alias inputs, and inputs changed in place, are the reference's privilege."""
        for key, rule, what in (("aliased_outputs", "output-aliases-input", "shares memory with an input"),
                                ("modified_inputs", "input-modified", "was modified in place")):
            allowed = set(expected.get(key) or [])
            found = [name for name in answer.get(key) or [] if name not in allowed]
            if found:
                kind = "output" if key == "aliased_outputs" else "input"
                raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [{rule}]: {kind} {found[0]!r} {what}, which the reference does not do")

    def _precision_assessed(self) -> list[str]:
        """The outputs whose precision is assessed against the fp64 oracle (float32/float64 ones)."""
        from solbench.bench.precision import outputs_to_assess

        return outputs_to_assess(self.problem.definition.outputs)

    def _judge_precision_flags(self, changes: dict[str, Any], when: str, log: list[str]) -> None:
        """Global settings the solution left changed: lowering fp32 precision is refused under strict."""
        from solbench.bench.integrity import lowers_precision

        initial = self.initial_precision
        changes = {name: value for name, value in changes.items() if lowers_precision(name, initial.get(name), value)}
        if not changes:
            return
        listed = ", ".join(f"{name} -> {value!r}" for name, value in sorted(changes.items()))
        if self.policy == "strict":
            raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [precision-flag]: the solution changed global precision settings {when} ({listed}); "
                                               "the strict precision policy is in force")
        note = f"precision settings changed {when}: {listed} (allowed under the relaxed policy)"
        if note not in log:
            log.append(note)

    def _judge_precision(self, outputs: dict[str, Any], references: dict[str, Any], expected: dict[str, Any], log: list[str]) -> str | None:
        """Error against the fp64 oracle, next to the error the declared precision makes."""
        from solbench.bench.precision import assess, judge

        if "oracle" not in expected:
            note = f"precision not assessed: no fp64 run of the reference ({expected.get('oracle_error', 'no oracle')})"
            if note not in log:
                log.append(note)
            return None
        oracles = {name: _load(description, self.session, self.device, trusted=True) for name, description in expected["oracle"].items()}
        assessments = {}
        for name in self._precision_assessed():
            try:
                assessments[name] = assess(outputs[name], references[name], oracles[name])
            except (KeyError, TypeError, ValueError) as exc:  # a scalar output, or an oracle of another shape: not assessed, say why
                note = f"precision of output {name!r} not assessed: {type(exc).__name__}: {exc}"
                if note not in log:
                    log.append(note)
        if not assessments:
            return None
        accepted, message = judge(assessments, self.policy)
        if not accepted:
            raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [precision-downgrade]: {message}")
        if message and message not in log:
            log.append(message)
        labels = sorted({assessment.apparent_precision for assessment in assessments.values()})
        return ", ".join(labels)

    def _time(self, workload: Workload, deadline: float, log: list[str]) -> tuple[Performance, int]:
        """Timing in the worker, on inputs it generates afresh for every call from a seed chosen here;
        then the outputs of a few timed calls (chosen at random, told to the worker only as part of
        the request) and of the last call are checked against the reference's for the same inputs."""
        options = self.options
        chooser = random.SystemRandom()
        seed = chooser.randrange(2**31)
        span = max(1, options.warmup + options.min_iterations)
        check = sorted(chooser.sample(range(span), min(self._checkable_calls(workload), span)))
        group = self._group()
        parameters = {"warmup": options.warmup, "min_iterations": options.min_iterations, "max_iterations": options.max_iterations,
                      "budget_s": options.budget_s, "target_spread": options.target_spread, "timer": options.timer, "launch_gate": options.launch_gate,
                      "workload": workload.to_json_dict(), "outputs": self._output_specs(workload), "blob_dir": str(self.session.root)}
        timed = self._ask_worker("time", deadline, dps=self.solution.spec.destination_passing_style, seed=seed, check=check, group=group, **parameters)
        self._to_release["solution"].append(group)
        times = timed.get("times_ms")
        if not isinstance(times, list) or not times or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0 for t in times):
            raise _Outcome(Status.RUNTIME_ERROR, "the solution worker's timing answer is malformed (a forged or out-of-order message?)")
        self._judge_precision_flags(timed.get("precision_changes") or {}, "while timed", log)
        verified = self._verify_timed_calls(workload, seed, check, timed, deadline)
        log += [str(note) for note in timed.get("notes", [])][:20]
        samples = Samples(str(timed.get("method", "unknown")), [float(t) for t in times])
        performance = Performance(
            latency_ms=samples.median_ms, latency_iqr_ms=samples.iqr_ms, timing_method=samples.method, iterations=len(samples.times_ms),
        )
        if options.reference_latency:
            reference = self._ask_reference("time", deadline, dps=False, seed=seed, check=[], group=self._group(), **parameters)
            performance.reference_latency_ms = statistics.median(reference["times_ms"])
        performance.sol_ms = self._sol_ms(workload, log)
        return performance, verified

    def _checkable_calls(self, workload: Workload) -> int:
        """verify_timed, fewer where the outputs kept for checking would take more than
        KEPT_OUTPUTS_BYTES of the device (the last call's outputs are always checked)."""
        axes = self.problem.axes(workload)
        one_call = sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes)) if spec.shape is not None else 1)
                       for spec in self.problem.definition.outputs.values())
        return min(self.options.verify_timed, max(0, KEPT_OUTPUTS_BYTES // max(1, one_call) - 1))

    def _verify_timed_calls(self, workload: Workload, seed: int, check: list[int], timed: dict[str, Any], deadline: float) -> int:
        checked = timed.get("checked")
        calls = timed.get("calls")
        if not isinstance(checked, dict) or not isinstance(calls, int) or calls < 1:
            raise _Outcome(Status.RUNTIME_ERROR, "the solution worker's timing answer is malformed (no checked calls)")
        wanted = {index for index in check if index < calls} | {calls - 1}
        if {str(index) for index in wanted} != set(checked):
            raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [timed-output]: the worker handed back the outputs of calls {sorted(checked)}, "
                                               f"not of the calls asked for {sorted(wanted)}")
        if timed.get("aliased_outputs"):
            raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [output-aliases-input]: timed call output {timed['aliased_outputs'][0]!r} shares memory with an input")
        tolerance = workload.effective_tolerance
        answers = {index: self._load_answer(checked[str(index)]) for index in sorted(wanted)}  # own copies: the files are swept below
        self._sweep_blobs()
        for index in sorted(wanted):
            group = self._group()
            expected = self._ask_reference("prepare", deadline, workload=workload.to_json_dict(), seed=seed, trial=index, reference=True,
                                           paths=self._output_paths(), group=group)
            self._to_release["reference"].append(group)
            references = {name: _load(description, self.session, self.device, trusted=True) for name, description in expected["outputs"].items()}
            comparison = compare_outputs(answers[index], references, self.problem.definition.outputs, tolerance)
            if comparison.status != Status.PASSED:
                which = "the last timed call" if index == calls - 1 else f"call {index + 1} of {calls} (warm-up and timed)"
                raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [timed-output]: the output of {which} is wrong although the correctness "
                                                   f"trials passed: {comparison.message}")
            self._sweep_blobs()
        return len(wanted)

    def _sol_ms(self, workload: Workload, log: list[str]) -> float | None:
        try:
            from solbench.sol.api import sol_time_ms
            from solbench.sol.calibrate import spec_for_run

            spec = spec_for_run(self.options.hardware, self.device, self.options.clock_mhz)
            if spec is None:
                return None  # a CPU: no datasheet spec to bound it with
            self.environment["hardware"] = spec.name
            if self._captures is None:
                from solbench.sol.analysis import problem_captures

                self._captures = problem_captures(self.problem)
            return sol_time_ms(self.problem, workload, spec, self.policy, self._captures)
        except Exception as exc:  # noqa: BLE001 - a missing bound must not lose the measurement
            log.append(f"T_SOL not available: {type(exc).__name__}: {exc}")
            return None

    # --- requests with the failure mapping -----------------------------------------------------

    def _group(self) -> str:
        self._groups += 1
        return f"g{self._groups}"

    def _releases(self, role: str) -> dict[str, Any]:
        """Shared tensors the process may now free, sent along with its next request."""
        released, self._to_release[role] = self._to_release[role], []
        return {"release": released, "ipc": self.ipc}

    def _ask_worker(self, command: str, deadline: float, **payload: Any) -> dict[str, Any]:
        payload.update(self._releases("solution"))
        try:
            return self.worker.request(command, _remaining(deadline), **payload)
        except WorkerTimeout as exc:
            self._restart_solution_worker()
            raise _Outcome(Status.TIMEOUT, str(exc)) from None
        except WorkerCrashed as exc:
            self._restart_solution_worker()
            raise _Outcome(Status.RUNTIME_ERROR, str(exc)) from None
        except WorkerForged as exc:
            self._restart_solution_worker()
            raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [forged-answer]: {exc}") from None
        except WorkerFailed as exc:
            if exc.kind == "reward_hack":
                if exc.rule == "integrity":
                    self._restart_solution_worker()  # a patched worker is not used again
                raise _Outcome(Status.REWARD_HACK, f"REWARD_HACK [{exc.rule}]: {exc.error}") from None
            status = Status.INCORRECT_SHAPE if exc.kind == "outputs" else Status.RUNTIME_ERROR
            raise _Outcome(status, exc.detail or exc.error) from None

    def _ask_reference(self, command: str, deadline: float, **payload: Any) -> dict[str, Any]:
        payload.update(self._releases("reference"))
        try:
            return self.reference.request(command, _remaining(deadline), **payload)
        except (WorkerTimeout, WorkerCrashed, WorkerForged) as exc:
            self.reference.kill()
            self.reference = self._spawn("reference")
            self.reference.request("hello", STARTUP_TIMEOUT_S)
            self.reference.request("load_problem", STARTUP_TIMEOUT_S, **self._problem_payload())
            status = Status.TIMEOUT if isinstance(exc, WorkerTimeout) else Status.INVALID_REFERENCE
            raise _Outcome(status, f"reference: {exc}") from None
        except WorkerFailed as exc:
            raise _Outcome(Status.INVALID_REFERENCE, f"reference failed: {exc.error}\n{exc.detail}".strip()) from None

    # --- small pieces --------------------------------------------------------------------------

    def _output_paths(self) -> dict[str, str]:
        return {f"out:{name}": self.session.new_path(f"ref-{name}") for name in self.problem.definition.outputs}

    def _output_specs(self, workload: Workload) -> dict[str, Any]:
        axes = self.problem.axes(workload)
        specs = {}
        for name, spec in self.problem.definition.outputs.items():
            shape = list(storage_shape(spec.dtype, spec.resolve_shape(axes))) if spec.shape is not None else []
            specs[name] = {"shape": shape, "dtype": str(spec.dtype.torch_dtype()).removeprefix("torch.")}
        return specs

    def _sweep_blobs(self) -> None:
        for path in self.session.root.glob("*.bin"):
            try:
                path.unlink()
            except OSError:
                pass

    def _trace(self, workload: Workload, status: Status, correctness: Correctness | None = None, performance: Performance | None = None, log: Iterable[str] = (),
               flags: list[str] | None = None) -> Trace:
        text = "\n".join(part for part in log if part)
        if len(text) > self.options.log_limit:
            text = text[: self.options.log_limit // 2] + "\n[...]\n" + text[-self.options.log_limit // 2 :]
        evaluation = Evaluation(
            status=status, correctness=correctness, performance=performance, environment=dict(self.environment), log=text,
            timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        )
        if flags:
            evaluation.flags = flags
        return Trace(definition=self.problem.name, workload=workload, solution=self.solution.name, evaluation=evaluation)


class _Outcome(Exception):
    """A workload's evaluation ended early with this status."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def evaluate(problem: Problem, solution: Solution, options: EvalOptions | None = None, *, workloads: Iterable[Workload] | None = None,
             skip: set[str] = frozenset(), on_trace: Callable[[Trace], None] | None = None) -> list[Trace]:
    """Evaluate a solution on the workloads of a problem; each trace goes to on_trace when known."""
    options = options or EvalOptions()
    run = EvaluationRun(problem, solution, options)
    traces = []
    chosen = list(workloads) if workloads is not None else list(problem.workloads)
    try:
        run.start()
        if workloads is None:  # a whole problem: held-out workloads too, drawn for this run only
            chosen += _hidden(problem, options, run.seed, skip)
        for workload in chosen:
            if workload.uuid in skip:
                continue
            trace = run.evaluate_workload(workload)
            traces.append(trace)
            if on_trace is not None:
                on_trace(trace)
    finally:
        run.close()
    return traces


def _hidden(problem: Problem, options: EvalOptions, seed: int, skip: set[str]) -> list[Workload]:
    """Hidden workloads still to do: a resumed run that has some already draws only the rest."""
    if options.hidden <= 0:
        return []
    wanted = options.hidden - sum(1 for uuid in skip if uuid.startswith(HIDDEN_PREFIX))
    drawn = hidden_workloads(problem, options.hidden, seed).workloads  # the same draws as before when the seed is the same
    chosen = [workload for workload in drawn if workload.uuid not in skip][:max(wanted, 0)]
    if options.unaligned:
        unaligned, _ = unaligned_workload(problem, seed)
        if unaligned is not None and unaligned.uuid not in skip:
            chosen.append(unaligned)
    return chosen


def synthesized_notes(problem: Problem, workload: Workload) -> list[str]:
    """One line per input drawn in place of an absent safetensors file (--synthesize-missing-blobs)."""
    from solbench.data.inputs import blob_path
    from solbench.data.workload import SafetensorsInput

    if not problem.synthesize_missing_blobs:
        return []
    return [f"input {name!r} synthesized from the definition: its safetensors file {str(blob_path(problem.root, spec))!r} "
            "is absent (--synthesize-missing-blobs)"
            for name, spec in workload.inputs.items()
            if isinstance(spec, SafetensorsInput) and name in problem.definition.inputs and not blob_path(problem.root, spec).is_file()]


def _correctness(comparison: Comparison, trials: int) -> Correctness:
    return Correctness(
        max_absolute_error=comparison.max_absolute_error, max_relative_error=comparison.max_relative_error,
        matched_ratio=comparison.matched_ratio, first_mismatch_index=comparison.first_mismatch_index, trials=trials,
    )


def _load(description: Any, session: Session, device: str, trusted: bool = False) -> Any:
    """An output as a tensor on the evaluation's device (comparisons of large outputs are much
    faster there), whichever way it crossed from the worker: our own copy, unless it comes from the
    (trusted) reference worker by CUDA IPC, which keeps it unchanged until we release it."""
    if isinstance(description, dict) and "scalar" in description:
        return description["scalar"]
    if isinstance(description, dict) and "cuda_ipc" in description:
        tensor = import_cuda(description)
        return tensor if trusted else tensor.clone()  # our own copy: the solution's process cannot change it under us
    if isinstance(description, dict) and "unsupported" in description:
        return _Unsupported(description["unsupported"])
    return read_blob(description, session.root).to(device, copy=True)  # our own copy: the solution worker can write the session folder


class _Unsupported:
    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _device_type(device: str) -> str:
    return device.split(":")[0]


def _remaining(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())


def _version() -> str:
    from solbench import __version__

    return __version__
