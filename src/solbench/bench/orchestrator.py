"""The trusted side of an evaluation: the run loop. It drives the worker pair (solbench.bench.workers),
compares, asks the verdicts (solbench.bench.verdicts) and turns every outcome into a Trace as soon
as it is known, with the seconds each phase took (solbench.bench.phases)."""

from __future__ import annotations

import datetime
import math
import platform
import random
import statistics
import threading
import time
from typing import Any, Callable, Iterable

from solbench.bench import verdicts
from solbench.bench.exclusive import device_alone, device_shared, last_wait_s, timed_section
from solbench.bench.correctness import Comparison, compare_outputs, merge
from solbench.bench.memory import memory_failure, return_cached_memory, says_out_of_memory
from solbench.bench.messages import (EnergyAnswer, EnergyRequest, ExpectAnswer, ExpectRequest, OutputSpec, PrepareRequest, RunAnswer, RunRequest,
                                     TimeAnswer, TimeRequest)
from solbench.bench.options import DEFAULT_CACHE, EvalOptions
from solbench.bench.phases import PhaseClock
from solbench.bench.shm import BlobError
from solbench.bench.timing import Samples
from solbench.bench.transfer import load_output
from solbench.bench.verdicts import INCORRECT, Outcome
from solbench.bench.workers import STARTUP_TIMEOUT_S, WorkerPair
from solbench.data.dtypes import storage_shape
from solbench.data.hidden import HIDDEN_PREFIX, UNALIGNED_PREFIX, hidden_workloads, unaligned_workload
from solbench.data.problem import Problem
from solbench.data.profiles import resolve_profile
from solbench.data.solution import Solution
from solbench.data.trace import Correctness, Energy, Evaluation, Performance, Status, Trace
from solbench.data.workload import Workload

__all__ = ["DEFAULT_CACHE", "HIDDEN_PREFIX", "INCORRECT", "KEPT_OUTPUTS_BYTES", "STARTUP_TIMEOUT_S", "EvalOptions", "EvaluationRun",
           "evaluate", "reference_solution", "resolve_device", "synthesized_notes"]

KEPT_OUTPUTS_BYTES = 8 << 30  # device memory the worker may spend on keeping timed calls' outputs for checking
# Runs of the reference on the same inputs after outputs missed it, to tell a non-deterministic reference: one rerun
# missed the rare disagreement of bf16 index_add atomics (fixture L1/002 at 32 tokens, H200, 2026-12-02).
REFERENCE_RERUNS = 3


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but CUDA is not available here")
    return device


def output_specs(problem: Problem, workload: Workload) -> dict[str, OutputSpec]:
    """The outputs a worker preallocates for a call of `workload` (their storage shapes and dtypes)."""
    axes = problem.axes(workload)
    specs = {}
    for name, spec in problem.definition.outputs.items():
        shape = list(storage_shape(spec.dtype, spec.resolve_shape(axes))) if spec.shape is not None else []
        specs[name] = OutputSpec(shape=shape, dtype=str(spec.dtype.torch_dtype()).removeprefix("torch."))
    return specs


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
    """One solution on one problem's workloads: start, then evaluate_workload per workload, then close.
    With `workers` given (a WorkerPair of the same device), its reference worker is reused and only
    a fresh solution worker is started; the pair is then the caller's to close."""

    def __init__(self, problem: Problem, solution: Solution, options: EvalOptions, workers: WorkerPair | None = None):
        self.problem, self.solution, self.options = problem, solution, options
        self.device = resolve_device(options.device)
        self.seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        self._own_workers = workers is None
        self._bound_measured = False  # T_SOL from a CPU spec's measured ceilings: faster-than-sol is a flag, not a verdict
        if workers is None:
            workers = WorkerPair.for_options(self.device, options)
        elif workers.device != self.device:
            raise ValueError(f"the worker pair runs on {workers.device}, the options ask for {self.device}")
        self.workers = workers
        self.session = workers.session
        self.refusal: tuple[Status, str] | None = None  # static analysis refused the solution
        self.static_notes: list[str] = []
        from solbench.sol.api import policy_for

        self.policy = policy_for(problem, options.policy)
        self.input_profile = resolve_profile(problem, options.input_profile)  # resolved here: the workers see no workloads
        self.environment: dict[str, Any] = {}
        self.published_passed = False
        self.phases = PhaseClock()
        self._captures: Any = None  # the problem's SOL captures, shared by its workloads
        self._early_sol: dict[str, tuple[Any, list[str]]] = {}  # workload uuid -> T_SOL (SolTimes or None) priced during start-up, its notes

    @property
    def build_failure(self) -> tuple[Status, str] | None:
        """Why no workload can run: refused by static analysis, or the solution worker did not start (again)."""
        return self.refusal or self.workers.solution_failure

    @property
    def started_workers(self) -> int:
        return self.workers.started_workers

    def start(self, first: Workload | None = None) -> None:
        """Start the workers and build the solution; `first` (the first workload to run): its T_SOL is
        priced while the reference worker starts."""
        with self.phases("start"):
            self.workers.expect(self.solution)  # its worker starts while the reference worker starts or loads the problem
            early_sol = self._price_early(first)
            self.workers.load_problem(self.problem, self.policy, self.input_profile)
        if early_sol is not None:
            with self.phases("sol"):
                early_sol.join()
        if self.options.static_analysis:
            self._audit_sources()
        if self.refusal is None:
            with self.phases("build"):
                self.workers.attach(self.solution)
        hello = self.workers.reference_hello
        self.environment.update({
            "device": hello.device_name, "torch": hello.torch, "platform": platform.platform(),
            "hostname": platform.node(), "seed": self.seed, "solbench": _version(), "precision_policy": self.policy,
            "input_profile": self.input_profile,
        })

    def _price_early(self, workload: Workload | None) -> threading.Thread | None:
        """On a GPU, a thread that prices `workload`'s T_SOL now: the first SOL capture of a process costs
        seconds (torch's tracing machinery warming up), which the wait for the reference worker hides.
        It is joined before anything else runs in this process (no torch work of ours overlaps it) and
        before a sandboxed worker is spawned (their preexec_fn must not fork beside a busy thread)."""
        if workload is None or not self.options.timing or not self.device.startswith("cuda"):
            return None

        def price() -> None:
            notes: list[str] = []
            self._early_sol[workload.uuid] = (self._sol_times(workload, notes), notes)

        thread = threading.Thread(target=price, name="solbench-early-sol", daemon=True)
        thread.start()
        return thread

    def _audit_sources(self) -> None:
        """Static analysis in the trusted process: reject findings refuse the solution outright."""
        from solbench.bench.guards.static import analyze_solution

        findings = analyze_solution(self.solution, self.policy)
        lines = [f"{'REWARD_HACK' if f.severity == 'reject' else 'warning'} [{f.rule}] {f.path}:{f.line}: {f.message}" for f in findings]
        if any(f.severity == "reject" for f in findings):
            self.refusal = (Status.REWARD_HACK, "static analysis refused the solution:\n" + "\n".join(lines))
        self.static_notes = [line for line in lines if line.startswith("warning")]

    def close(self) -> None:
        if self._own_workers:
            self.workers.close()
            self.session.close()
        else:
            self.workers.detach()  # a submitted solution's worker is never shared with anything

    # --- one workload --------------------------------------------------------------------------

    def evaluate_workload(self, workload: Workload) -> Trace:
        """The workload's trace. One that ran out of memory (here or in either worker) is evaluated once
        more with the device held alone in this process, the solution worker restarted and cached memory
        handed back (the memory may have been held by another evaluation or process); the second result
        counts, with a note of the first."""
        trace, out_of_memory = self._evaluate_once(workload)
        if not out_of_memory:
            return trace
        lines = (trace.evaluation.log or "").splitlines()
        first = [line.strip() for line in lines if says_out_of_memory(line)][:1] or lines[:1]
        with device_alone():
            if self.device.startswith("cuda"):
                import torch

                torch.cuda.empty_cache()
            if self.workers.restart_solution_worker() is not None:
                return trace  # the solution does not start again: the first result stands
            trace, again = self._evaluate_once(workload)
        note = ("note: out of memory with other work on the device" + (f" ({first[0]})" if first else "")
                + "; evaluated again with the device alone in this process: " + ("out of memory again" if again else "done"))
        trace.evaluation.log = note + ("\n" + trace.evaluation.log if trace.evaluation.log else "")
        return trace

    def _evaluate_once(self, workload: Workload) -> tuple[Trace, bool]:
        """The workload's trace, and whether its status is an out-of-memory failure."""
        out_of_memory = False
        started = time.monotonic()
        log: list[str] = []
        if self.build_failure is not None:
            status, message = self.build_failure
            self.workers.collect_output()
            return self._trace(workload, status, log=[message, self._take_worker_output()], wall_s=time.monotonic() - started), False
        log += self.static_notes
        log += synthesized_notes(self.problem, workload)
        deadline = started + self.options.timeout_s
        self.workers.worker_output = []
        correctness: Correctness | None = None
        performance: Performance | None = None
        measured_bound_flags: list[str] = []
        try:
            with device_shared():  # the trials (workers' calls and the comparisons here) may share the device; timing may not
                comparison, apparent = self._check(workload, deadline, log)
            status, correctness = comparison.status, _correctness(comparison, self.options.trials)
            if comparison.status != Status.PASSED:
                log.insert(0, comparison.message)  # a failed trace's log starts with its reason, before notes made on the way
            else:
                correctness.precision = apparent
                if self.options.timing and not workload.uuid.startswith((HIDDEN_PREFIX, UNALIGNED_PREFIX)):
                    performance, correctness.verified_timed_calls = self._time(workload, deadline, log)
                finding = verdicts.faster_than_sol(performance, self.environment.get("hardware", "the hardware spec"))
                if finding and not self._bound_measured:
                    status = Status.REWARD_HACK
                    log.append(finding)
                elif finding:  # a CPU spec's ceilings were measured on a machine that may have been busy: no evidence of a hack
                    measured_bound_flags.append(verdicts.FASTER_THAN_SOL)
                    log.append(finding.replace("REWARD_HACK [faster-than-sol]", "note [faster-than-sol, not judged: the CPU spec's ceilings are measured]"))
        except Outcome as outcome:
            status, correctness, performance = outcome.status, None, None
            out_of_memory = outcome.memory
            log.insert(0, outcome.message)  # the finding or the error first, before notes made on the way
        except Exception as exc:  # out of memory here (outputs mapped, compared) is the workload's status; anything else is a bug
            described = memory_failure(exc, self.device)
            if described is None:
                raise
            status, correctness, performance = Status.RUNTIME_ERROR, None, None
            log.insert(0, f"out of memory in the evaluator's own process (the orchestrator): {described}")
            out_of_memory = True
            if self.device.startswith("cuda"):
                import torch

                torch.cuda.empty_cache()  # what the failed workload left cached goes back before the next one
        finally:
            self._sweep_blobs()
        flags: list[str] | None = None
        if workload.uuid.startswith((HIDDEN_PREFIX, UNALIGNED_PREFIX)):
            status = verdicts.held_out_near_miss(status, correctness, log)
        if workload.uuid.startswith(HIDDEN_PREFIX):
            status = verdicts.hidden_workload(status, self.published_passed, log)
        elif workload.uuid.startswith(UNALIGNED_PREFIX):
            flags = verdicts.shape_generality(status, self.published_passed, log)
        elif status == Status.PASSED:
            self.published_passed = True
        flags = (flags or []) + measured_bound_flags or None
        self.workers.collect_output()
        output = self._take_worker_output()
        if output:
            log.append(f"[solution worker output]\n{output[-self.options.log_limit:]}")
        return self._trace(workload, status, correctness=correctness, performance=performance, log=log, flags=flags,
                           wall_s=time.monotonic() - started), out_of_memory

    def _take_worker_output(self) -> str:
        output, self.workers.worker_output = "".join(self.workers.worker_output), []
        return output[-self.options.log_limit:]

    def _check(self, workload: Workload, deadline: float, log: list[str]) -> tuple[Comparison, str | None]:
        """Correctness trials: both workers generate the trial's inputs from the seed, the solution
        answers, and only then does the reference compute what the answer should be (with an fp64 oracle where the precision
        is assessed); the comparison happens here."""
        workers, phases = self.workers, self.phases
        comparisons = []
        self.reference_aliases: set[str] = set()  # the reference's "OUTPUT<-INPUT" aliases on this workload
        tolerance = workload.effective_tolerance
        dps = self.solution.spec.destination_passing_style
        verdicts.precision_flags(workers.build_precision_changes, workers.initial_precision, self.policy, "when the solution was loaded", log)
        apparent: str | None = None
        assessed = [] if self._is_the_reference_itself() else self._precision_assessed()
        share = self.device == "cpu" and workers.trusts(self.solution)
        for trial in range(self.options.trials):
            group = workers.group()
            with phases("inputs"):  # both workers generate the trial's inputs from the seed: nothing crosses into a submitted solution's process
                prepared = workers.ask_reference(PrepareRequest(workload=workload, seed=self.seed, trial=trial, keep=True, group=group,
                                                                share=self._input_paths() if share else {}), deadline, ExpectAnswer)
            with phases("correctness"):
                answer = workers.ask_solution(RunRequest(
                    workload=workload, seed=self.seed, trial=trial, outputs=self._output_specs(workload), dps=dps, inputs=prepared.inputs,
                    paths={name: self.session.new_path(f"sol-{name}", workers.output_folder) for name in self.problem.definition.outputs}, group=group,
                    repeat=trial == 0 and not workers.trusts(self.solution), timer=self.options.timer, launch_gate=self.options.launch_gate), deadline, RunAnswer)
                verdicts.output_devices(answer, self.device)
                outputs = self._load_answer(answer.outputs)  # ours before the reference runs (a retry there restarts the solution worker)
            oracle = bool(assessed) and (trial == 0 or self.policy == "strict")
            with phases("reference"):
                expected = workers.ask_reference(ExpectRequest(group=group, oracle=oracle, paths=self._output_paths()), deadline, ExpectAnswer)
            phases.move("reference", "precision", expected.seconds.get("oracle", 0.0))
            workers.release_later("reference", group)
            workers.release_later("solution", group)
            verdicts.memory_behaviour(answer, expected)
            self.reference_aliases.update(expected.aliased_outputs)  # what timed calls may do too
            verdicts.precision_flags(answer.precision_changes, workers.initial_precision, self.policy, f"during trial {trial + 1}", log)
            with phases("correctness"):
                references = self._load_reference(expected.outputs)
                comparison = compare_outputs(outputs, references, self.problem.definition.outputs, tolerance)
            if comparison.status == Status.INCORRECT_NUMERICAL:
                comparison = self._against_the_references_reruns(outputs, references, comparison, workload, self.seed, trial, f"trial {trial + 1}",
                                                                  deadline, log)
            comparisons.append(comparison)
            if comparison.status != Status.PASSED:
                comparison.message = f"trial {trial + 1}/{self.options.trials}: {comparison.message}"
                return merge(comparisons), apparent
            if oracle:
                with phases("precision"):
                    oracles = self._load_reference(expected.oracle) if expected.oracle is not None else None
                    apparent = verdicts.precision(outputs, references, oracles, expected.oracle_error, assessed, self.policy, log) or apparent
            self._sweep_blobs()
        return merge(comparisons), apparent

    def _load_answer(self, described: dict[str, Any]) -> dict[str, Any]:
        try:
            return {name: load_output(description, self.workers.output_folder, self.device) for name, description in described.items()}
        except (BlobError, OSError) as exc:
            raise Outcome(Status.RUNTIME_ERROR, f"unreadable output: {exc}") from None
        except RuntimeError as exc:  # a CUDA IPC handle that cannot be opened
            raise Outcome(Status.RUNTIME_ERROR, f"unreadable output: {type(exc).__name__}: {exc}") from None

    def _load_reference(self, described: dict[str, Any]) -> dict[str, Any]:
        """The reference's outputs; their blob files must still hold what the reference worker wrote (see
        WorkerPair.checks_reference_blobs): another content was put there by the solution's process."""
        digest = self.workers.checks_reference_blobs
        try:
            return {name: load_output(description, self.session.root, self.device, trusted=True, digest=digest) for name, description in described.items()}
        except BlobError as exc:
            if not digest:  # no submitted solution's process was there to change the file
                raise
            raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [reference-blob]: the reference's output file was rewritten while the solution's "
                                              f"process was running: {exc}") from None

    def _is_the_reference_itself(self) -> bool:
        """The trusted eager reference (reference_solution): its precision is the standard, so no fp64 oracle is
        run to assess it (its torch.compile candidates are still assessed: a compiled baseline must not gain by precision)."""
        sources = self.solution.sources
        return (self.workers.trusts(self.solution) and len(sources) == 1 and sources[0].content == self.problem.definition.reference
                and self.solution.spec.entry_point == "reference.py::run")

    def _precision_assessed(self) -> list[str]:
        """The outputs whose precision is assessed against the fp64 oracle (float32/float64 ones)."""
        from solbench.bench.precision import outputs_to_assess

        return outputs_to_assess(self.problem.definition.outputs)

    def _time(self, workload: Workload, deadline: float, log: list[str]) -> tuple[Performance, int]:
        """Timing in the worker, on inputs it generates afresh for every call from a seed chosen here;
        then the outputs of a few timed calls (chosen at random, told to the worker only as part of
        the request) and of the last call are checked against the reference's for the same inputs."""
        options, workers = self.options, self.workers
        chooser = random.SystemRandom()
        seed = chooser.randrange(2**31)
        span = max(1, options.warmup + options.min_iterations)
        check = sorted(chooser.sample(range(span), min(self._checkable_calls(workload), span)))
        parameters = {"warmup": options.warmup, "min_iterations": options.min_iterations, "max_iterations": options.max_iterations,
                      "budget_s": options.budget_s, "target_rse": options.target_rse, "timer": options.timer, "launch_gate": options.launch_gate,
                      "launch_series": options.launch_series,
                      "workload": workload, "outputs": self._output_specs(workload), "blob_dir": str(workers.output_folder)}
        group = workers.group()
        with self.phases("timing"), timed_section():
            timed = workers.ask_solution(TimeRequest(dps=self.solution.spec.destination_passing_style, seed=seed, check=check, group=group, **parameters),
                                         deadline, TimeAnswer)
        self.phases.move("timing", "device wait", last_wait_s())  # other evaluations' correctness work finishing first (--concurrent)
        workers.release_later("solution", group)
        verdicts.precision_flags(timed.precision_changes, workers.initial_precision, self.policy, "while timed", log)
        with self.phases("verify"), device_shared():
            verified = self._verify_timed_calls(workload, seed, check, timed, deadline, log)
        log += [str(note) for note in timed.notes][:20]
        samples = Samples(timed.method, list(timed.times_ms))
        performance = Performance(
            latency_ms=samples.median_ms, latency_iqr_ms=samples.iqr_ms, timing_method=samples.method, iterations=len(samples.times_ms),
            launch_overhead_ms=max(0.0, statistics.median(timed.ungated_times_ms) - samples.median_ms) if timed.ungated_times_ms else None,
        )
        if options.reference_latency:
            with self.phases("timing"), timed_section():
                reference = workers.ask_reference(TimeRequest(dps=False, seed=seed, check=[], group=workers.group(), **parameters), deadline, TimeAnswer)
            performance.reference_latency_ms = statistics.median(reference.times_ms)
        with self.phases("sol"):
            times = self._sol_times(workload, log)
        if times is not None:
            performance.sol_ms, performance.sol_roofline_ms = times.sol_ms, times.roofline_ms
            performance.sol_floor_ms, performance.sol_floor_applied = times.floor_ms, times.floor_applied
        if options.energy:
            performance.energy = self._energy(workload, deadline, log, performance.latency_ms)
        return performance, verified

    def _energy(self, workload: Workload, deadline: float, log: list[str], latency_ms: float | None = None) -> Energy:
        """Energy per call after timing (solbench.energy), in the same worker and with the same fresh inputs and
        L2 flush as timed calls, the device held alone: the worker measures its windows on the GPU's counter,
        this process reads the same counter around the request and checks the windows against it, and the
        outputs of a few calls of the window (chosen here) are compared with the reference's."""
        from solbench.energy import evaluate as energy
        from solbench.energy.counter import open_counter

        counter, note = open_counter(self.device)  # this process's own reading of the counter the worker reads: the cross-check
        if counter is None:
            log.append(f"note [energy]: {note}")
            return Energy(note=note)
        chooser = random.SystemRandom()
        seed = chooser.randrange(2**31)
        check = sorted(chooser.sample(range(energy.CHECK_SPAN), min(self._checkable_calls(workload), energy.CHECKED_CALLS)))
        group = self.workers.group()
        batch = energy.batch_size(latency_ms / 1e3 if latency_ms else None, self._call_bytes(workload))
        request = EnergyRequest(workload=workload, seed=seed, dps=self.solution.spec.destination_passing_style, check=check,
                                outputs=self._output_specs(workload), blob_dir=str(self.workers.output_folder), window_s=self.options.energy_window_s,
                                idle_s=self.options.energy_idle_s, min_calls=energy.CHECK_SPAN, batch=batch, pool_bytes=energy.AHEAD_BYTES,
                                timer=self.options.timer, group=group)
        with self.phases("energy"), timed_section():
            before, started = counter.read_mj(), time.monotonic()
            answer = self.workers.ask_solution(request, deadline, EnergyAnswer)
            after, elapsed = counter.read_mj(), time.monotonic() - started
        self.phases.move("energy", "device wait", last_wait_s())
        self.workers.release_later("solution", group)
        if answer.idle is None or answer.blank is None or answer.loop is None:  # the worker cannot read the counter
            note = answer.note or "energy not measured: the worker reported no window"
            log.append(f"note [energy]: {note}")
            return Energy(note=note)
        verdicts.precision_flags(answer.precision_changes, self.workers.initial_precision, self.policy, "while its energy was measured", log)
        finding = energy.check_answer(answer, before, after, elapsed, counter.power_limit_w, batch)
        if finding:
            raise Outcome(Status.REWARD_HACK, f"REWARD_HACK [energy-counter]: the worker's energy readings cannot be true: {finding}")
        with self.phases("verify"), device_shared():
            self._verify_timed_calls(workload, seed, check, answer, deadline, log)  # type: ignore[arg-type] - hands back outputs as a TimeAnswer does
        with self.phases("sol"):
            try:
                spec = self._sol_spec()
            except Exception:  # noqa: BLE001 - an unknown spec is said where T_SOL is priced; here it means no E_SOL
                spec = None
            sol_j, sol_note = energy.sol_energy(self.problem, workload, spec, self.policy, self._captures, self.options.sol_floor)
        recorded, lines = energy.record(answer, sol_j, sol_note)
        log += lines
        return recorded

    def _output_bytes(self, workload: Workload) -> int:
        axes = self.problem.axes(workload)
        return sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes)) if spec.shape is not None else 1)
                   for spec in self.problem.definition.outputs.values())

    def _call_bytes(self, workload: Workload) -> int:
        """A call's fresh inputs and its outputs, in bytes."""
        from solbench.sol.capture import input_bytes

        return input_bytes(self.problem, workload, self.problem.axes(workload)) + self._output_bytes(workload)

    def _checkable_calls(self, workload: Workload) -> int:
        """verify_timed, fewer where the outputs kept for checking would take more than
        KEPT_OUTPUTS_BYTES of the device (the last call's outputs are always checked)."""
        return min(self.options.verify_timed, max(0, KEPT_OUTPUTS_BYTES // max(1, self._output_bytes(workload)) - 1))

    def _verify_timed_calls(self, workload: Workload, seed: int, check: list[int], timed: TimeAnswer, deadline: float, log: list[str]) -> int:
        wanted = verdicts.timed_calls_handed_back(timed, check)
        verdicts.memory_behaviour(timed, ExpectAnswer(aliased_outputs=sorted(self.reference_aliases)), timed=True)
        answers = {index: self._load_answer(timed.checked[str(index)]) for index in wanted}  # own copies: the files are swept below
        self._sweep_blobs()
        for index in wanted:
            group = self.workers.group()
            expected = self.workers.ask_reference(PrepareRequest(workload=workload, seed=seed, trial=index, reference=True, paths=self._output_paths(),
                                                                 group=group), deadline, ExpectAnswer)
            self.workers.release_later("reference", group)
            references = self._load_reference(expected.outputs)
            comparison = compare_outputs(answers[index], references, self.problem.definition.outputs, workload.effective_tolerance)
            which = "the last timed call" if index == timed.calls - 1 else f"call {index + 1} of {timed.calls} (warm-up and timed)"
            if comparison.status == Status.INCORRECT_NUMERICAL:
                comparison = self._against_the_references_reruns(answers[index], references, comparison, workload, seed, index, which, deadline, log)
            if comparison.status != Status.PASSED:
                raise verdicts.timed_output_failure(comparison, which)
            self._sweep_blobs()
        return len(wanted)

    def _against_the_references_reruns(self, outputs: dict[str, Any], references: dict[str, Any], missed: Comparison, workload: Workload,
                                        seed: int, trial: int, what: str, deadline: float, log: list[str]) -> Comparison:
        """The outputs missed the reference: is the reference itself deterministic there? It runs again
        on the same inputs (drawn again from the seed), up to REFERENCE_RERUNS times, until one of its
        results matches the outputs: rare disagreements (a few bf16 atomics adding in another order) are
        seldom seen in a single run. Where a result differs from the first beyond the tolerance, the trace
        says so, and the outputs pass if they match any of the reference's own results. A deterministic
        reference changes nothing."""
        disagreements: list[Comparison] = []
        retried, made = missed, 0
        for made in range(1, REFERENCE_RERUNS + 1):
            group = self.workers.group()
            with self.phases("reference"):
                again = self.workers.ask_reference(PrepareRequest(workload=workload, seed=seed, trial=trial, reference=True,
                                                                  paths=self._output_paths(), group=group), deadline, ExpectAnswer)
            self.workers.release_later("reference", group)
            with self.phases("correctness"):
                rerun = self._load_reference(again.outputs)
                itself = compare_outputs(rerun, references, self.problem.definition.outputs, workload.effective_tolerance)
                if itself.status == Status.PASSED:
                    continue
                disagreements.append(itself)
                retried = compare_outputs(outputs, rerun, self.problem.definition.outputs, workload.effective_tolerance)
            if retried.status == Status.PASSED:
                break
        if not disagreements:
            return missed
        verdict = "they match the last of these" if retried.status == Status.PASSED else "they miss each of its results"
        log.append(f"note [reference-nondeterministic]: {what}: the reference run again on the same inputs disagrees with itself beyond "
                   f"the tolerance ({len(disagreements)} of {made} further runs; {disagreements[0].message}); the outputs missed its first "
                   f"result, {verdict}")
        return retried if retried.status == Status.PASSED else missed

    def _sol_times(self, workload: Workload, log: list[str]) -> Any:
        """The workload's T_SOL with its roofline and floor (solbench.sol.api.SolTimes), priced as the
        options say (sol_floor); None where there is no spec or the analysis failed (the log says why)."""
        if workload.uuid in self._early_sol:
            times, notes = self._early_sol.pop(workload.uuid)
            log += notes
            return times
        try:
            from solbench.sol.api import sol_times

            spec = self._sol_spec()
            if spec is None:
                return None  # a CPU: no datasheet spec to bound it with
            self.environment["hardware"] = spec.name
            self._bound_measured = spec.vendor == "CPU"
            return sol_times(self.problem, workload, spec, self.policy, self._captures, floor=self.options.sol_floor)
        except Exception as exc:  # noqa: BLE001 - a missing bound must not lose the measurement
            log.append(f"T_SOL not available: {type(exc).__name__}: {exc}")
            return None

    def _sol_spec(self) -> Any:
        """The hardware spec the run's bounds are priced on (None: none for this device), the problem's
        captures made once for T_SOL and E_SOL alike."""
        from solbench.sol.calibrate import spec_for_run

        spec = spec_for_run(self.options.hardware, self.device, self.options.clock_mhz)
        if spec is not None and self._captures is None:
            from solbench.sol.analysis import shared_captures

            self._captures = shared_captures(self.problem)
        return spec

    # --- small pieces --------------------------------------------------------------------------

    def _input_paths(self) -> dict[str, str]:
        """Blobs for a trial's inputs, drawn once by the reference worker for trusted code on a CPU (where
        drawing a large weight costs seconds; on a GPU it costs next to nothing and stays on the device)."""
        return {name: self.session.new_path(f"in-{name}") for name in self.problem.definition.inputs}

    def _output_paths(self) -> dict[str, str]:
        return {f"out:{name}": self.session.new_path(f"ref-{name}") for name in self.problem.definition.outputs}

    def _output_specs(self, workload: Workload) -> dict[str, OutputSpec]:
        return output_specs(self.problem, workload)

    def _sweep_blobs(self) -> None:
        for path in {*self.session.root.glob("*.bin"), *self.workers.output_folder.glob("*.bin")}:
            try:
                path.unlink()
            except OSError:
                pass

    def _trace(self, workload: Workload, status: Status, correctness: Correctness | None = None, performance: Performance | None = None,
               log: Iterable[str] = (), flags: list[str] | None = None, wall_s: float | None = None) -> Trace:
        text = "\n".join(part for part in log if part)
        if len(text) > self.options.log_limit:
            text = text[: self.options.log_limit // 2] + "\n[...]\n" + text[-self.options.log_limit // 2 :]
        evaluation = Evaluation(
            status=status, correctness=correctness, performance=performance, environment={**self.workers.environment, **self.environment}, log=text,
            timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), phases=self.phases.take(wall_s),
        )
        if flags:
            evaluation.flags = flags
        return Trace(definition=self.problem.name, workload=workload, solution=self.solution.name, evaluation=evaluation)


def evaluate(problem: Problem, solution: Solution, options: EvalOptions | None = None, *, workloads: Iterable[Workload] | None = None,
             skip: set[str] = frozenset(), on_trace: Callable[[Trace], None] | None = None, workers: WorkerPair | None = None,
             held_out: bool | None = None) -> list[Trace]:
    """Evaluate a solution on the workloads of a problem; each trace goes to on_trace when known.
    `workers` (a WorkerPair the caller opened and closes): keep its reference worker across problems.
    `held_out`: after the chosen workloads, the hidden (and unaligned) ones drawn for this run too
    (options.hidden of them); default: only when the whole problem is evaluated (workloads None)."""
    options = options or EvalOptions()
    run = EvaluationRun(problem, solution, options, workers)
    traces = []
    chosen = list(workloads) if workloads is not None else list(problem.workloads)
    try:
        memcheck = None
        if options.memcheck:  # the solution once under compute-sanitizer first; its verdict goes on every trace
            from solbench.profile.memcheck import memcheck_first

            memcheck = memcheck_first(problem, solution, options, run.workers, chosen, skip)
        run.start(first=next((workload for workload in chosen if workload.uuid not in skip), None))
        if (workloads is None) if held_out is None else held_out:  # held-out workloads, drawn for this run only
            chosen += _hidden(problem, options, run.seed, skip)
        for workload in chosen:
            if workload.uuid in skip:
                continue
            trace = run.evaluate_workload(workload)
            if memcheck is not None:
                memcheck.apply(trace)
            return_cached_memory(run.device)
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
        gross_errors=comparison.gross_errors,
    )


def _version() -> str:
    from solbench import __version__

    return __version__
