"""`--memcheck` (`solbench eval` and `run`): a submitted solution, once, under compute-sanitizer first.

Before its workloads are evaluated, the solution is evaluated on its smallest workload (one correctness
trial, no timing) in the evaluator's own set-up (the same sandbox, build, inputs and reference worker),
with its worker started under `compute-sanitizer --tool memcheck`, and then under `--tool racecheck`
where its kernels use shared memory (solbench.profile.racecheck). PyTorch's caching allocator is off in
that worker (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so every tensor is an allocation of its own and a read
past the end of one is out of bounds for the sanitizer (inside a cached block it would not be); where the
evaluation fails that way although the sanitizer found nothing (CUDA graphs need the allocator), it is
made again with the allocator on, and the verdict says so. The worker is asked to exit at the end, so
the sanitizer writes its summary and exit code.

The verdict (MemcheckVerdict.apply, on every trace of the solution):
- errors (a device-side report, a non-zero error summary, or the sanitizer's error exit code): a PASSED
  trace becomes INCORRECT_NUMERICAL, its log starting "INCORRECT [memcheck]: " (or racecheck) with the
  sanitizer's first report, flagged `memcheck` / `racecheck`; its outputs may well have been right (a
  kernel without a bounds mask that reads past the end of its inputs);
- incomplete (the sanitizer did not finish: killed, another exit code, no worker started under it, an
  internal error of the sanitizer; or the sanitized evaluation did not pass, so its kernels may not all
  have run: a build that failed or timed out there, a crash): a PASSED trace becomes RUNTIME_ERROR saying
  why: a solution that ends its sanitizer must not pass;
- clean: a note.
Either way each trace records `environment.memcheck` (result, tools, workload, seconds per tool) and
the first trace the phase `memcheck` (seconds). Trusted code (references, their torch.compile
candidates) is not sanitized. The sanitizer runs inside the solution's own process: a hostile solution
can notice it and behave; it finds honest bugs, and is no defence of its own.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from solbench.data.problem import Problem
from solbench.data.selection import input_elements
from solbench.data.solution import Solution
from solbench.data.trace import Status, Trace
from solbench.data.workload import Workload
from solbench.profile.launched import first_line, launched_under, read_log
from solbench.profile.racecheck import racecheck_reason
from solbench.profile.sanitizer import ERROR_EXITCODE, SanitizerOutput, parse_output, sanitizer_argv
from solbench.profile.tools import SANITIZER, ToolMissing, find_tool

NO_CACHING = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
FINISH_TIMEOUT_S = 120.0  # for the sanitized worker to exit and the sanitizer to write its summary
PHASE = "memcheck"


@dataclass
class ToolRun:
    """One sanitized evaluation: the tool, its cost, the evaluation's status under it, and what the sanitizer said."""

    tool: str
    seconds: float
    build_seconds: float = 0.0
    status: str = ""  # the sanitized evaluation's status on the workload
    message: str = ""  # its first log line, where it did not pass
    exit_codes: list[int | None] = field(default_factory=list)
    output: SanitizerOutput = field(default_factory=SanitizerOutput)
    failure: str = ""  # why it could not run at all
    note: str = ""  # how it ran, where not as usual (the caching allocator left on)

    @property
    def found_errors(self) -> bool:
        out = self.output
        return bool(out.errors) or (out.error_summary or 0) > 0 or (out.race_errors or 0) > 0 or ERROR_EXITCODE in self.exit_codes

    @property
    def outcome(self) -> str:
        if self.found_errors:
            return "errors"
        finished = self.exit_codes and all(code == 0 for code in self.exit_codes)
        if not self.failure and finished and not self.output.internal and self.status == Status.PASSED.value:
            return "clean"
        return "incomplete"

    def first_report(self) -> str:
        if self.output.errors:
            return self.output.errors[0].text
        count = self.output.error_summary or self.output.race_errors
        return (f"compute-sanitizer {self.tool} found {count} error(s) (its reports are not in its output)" if count
                else f"compute-sanitizer {self.tool} exited with its error code {ERROR_EXITCODE}")

    def why_incomplete(self) -> str:
        if self.failure:
            return self.failure
        if self.output.internal:
            return f"the sanitizer failed: {self.output.internal[0].text}"
        if not self.exit_codes:
            return "no worker started under the sanitizer"
        if any(code != 0 for code in self.exit_codes):
            return "the sanitizer did not finish: " + "; ".join(_exit_text(code) for code in self.exit_codes if code != 0)
        return f"under the sanitizer the evaluation ended {self.status or 'without a trace'}" + (f": {self.message}" if self.message else "")


def _exit_text(code: int | None) -> str:
    if code is None:
        return "it did not end in time"
    signal_number = -code if code < 0 else code - 128 if code > 128 else None
    if signal_number is not None:
        try:
            return f"killed by {signal.Signals(signal_number).name}"
        except ValueError:
            pass
    return f"exit code {code}"


@dataclass
class MemcheckVerdict:
    workload: str
    runs: list[ToolRun] = field(default_factory=list)
    racecheck: str | None = None  # why racecheck ran (None: it was not needed)
    skipped: str | None = None  # why nothing was judged
    _phase_recorded: bool = False

    @property
    def result(self) -> str:
        if self.skipped:
            return "skipped"
        outcomes = [run.outcome for run in self.runs]
        return "errors" if "errors" in outcomes else "incomplete" if "incomplete" in outcomes or not outcomes else "clean"

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs)

    def cost(self) -> str:
        """What the sanitizer cost, per tool (the build, done under the first tool, in brackets)."""
        parts = [f"{run.tool} {run.seconds:.1f} s" + (f" (build {run.build_seconds:.1f} s)" if run.build_seconds >= 0.05 else "") for run in self.runs]
        return ", ".join(parts) or "nothing ran"

    def record(self) -> dict[str, Any]:
        failing = next((run for run in self.runs if run.outcome == "errors"), None)
        record: dict[str, Any] = {"result": self.result, "workload": self.workload, "tools": [run.tool for run in self.runs],
                                  "seconds": {run.tool: round(run.seconds, 3) for run in self.runs}}
        if self.racecheck:
            record["racecheck_because"] = self.racecheck
        notes = [f"{run.tool}: {run.note}" for run in self.runs if run.note]
        if notes:
            record["notes"] = notes
        if failing is not None:
            record["tool"], record["first_report"] = failing.tool, failing.first_report()
        elif self.result == "incomplete":
            record["reason"] = self._incomplete_reason()
        if self.skipped:
            record["reason"] = self.skipped
        record["line"] = self.line()
        return record

    def _incomplete_reason(self) -> str:
        run = next((run for run in self.runs if run.outcome == "incomplete"), None)
        return run.why_incomplete() if run is not None else "no sanitizer run"

    def line(self) -> str:
        """One line for the log and the terminal."""
        where = f"on workload {self.workload[:8]}"
        if self.result == "errors":
            failing = next(run for run in self.runs if run.outcome == "errors")
            return f"INCORRECT [{failing.tool}]: compute-sanitizer {failing.tool} {where} reported: {failing.first_report()}"
        if self.result == "incomplete":
            return f"RUNTIME_ERROR [memcheck]: compute-sanitizer {where} could not judge the solution: {self._incomplete_reason()}"
        if self.result == "skipped":
            return f"note [memcheck]: not run: {self.skipped}"
        notes = "".join(f"; {run.tool}: {run.note}" for run in self.runs if run.note)
        return f"memcheck: clean ({self.cost()}, compute-sanitizer {where}){notes}"

    def apply(self, trace: Trace) -> None:
        """The verdict on one trace of the solution (see the module docstring)."""
        evaluation = trace.evaluation
        if evaluation is None:
            return
        evaluation.environment = {**(evaluation.environment or {}), "memcheck": self.record()}
        if not self._phase_recorded and self.runs:
            evaluation.phases = {**(evaluation.phases or {}), PHASE: round(self.seconds, 6)}
            self._phase_recorded = True
        line = self.line()
        judged = self.result in ("errors", "incomplete") and evaluation.status == Status.PASSED
        if judged:
            evaluation.status = Status.INCORRECT_NUMERICAL if self.result == "errors" else Status.RUNTIME_ERROR
            evaluation.log = line + ("\n" + evaluation.log if evaluation.log else "")
            if self.result == "errors":
                tool = next(run.tool for run in self.runs if run.outcome == "errors")
                evaluation.flags = sorted({*(evaluation.flags or []), tool})
        else:
            evaluation.log = (evaluation.log + "\n" if evaluation.log else "") + line


def smallest_workload(problem: Problem, workloads: Iterable[Workload]) -> Workload:
    return min(workloads, key=lambda workload: input_elements(problem, workload))


def memcheck_first(problem: Problem, solution: Solution, options: Any, workers: Any, chosen: list[Workload],
                   skip: Iterable[str] = ()) -> MemcheckVerdict | None:
    """The sanitizer's verdict on `solution` (None where none is needed: trusted code, nothing left to
    evaluate), from sanitized evaluations on the smallest of the chosen workloads, in `workers` (a
    solbench.bench.workers.WorkerPair; its reference worker is reused, the solution gets workers of its own)."""
    skipped = set(skip)
    if workers.trusts(solution) or not chosen or all(workload.uuid in skipped for workload in chosen):
        return None
    workload = smallest_workload(problem, chosen)
    verdict = MemcheckVerdict(workload.uuid)
    if not workers.device.startswith("cuda"):
        verdict.skipped = f"compute-sanitizer checks CUDA kernels; this evaluation runs on {workers.device}"
        return verdict
    try:
        sanitizer = find_tool(SANITIZER)
    except ToolMissing as exc:
        verdict.runs.append(ToolRun("memcheck", 0.0, failure=str(exc)))
        return verdict
    verdict.racecheck = racecheck_reason(solution)
    for tool in ("memcheck", "racecheck") if verdict.racecheck else ("memcheck",):
        run = sanitized_run(problem, solution, options, workers, workload, sanitizer, tool)
        if run is None:
            verdict.skipped = "the static analysis refused the solution (no code of it runs)"
            return verdict
        if _failed_without_the_cache(run):
            again = sanitized_run(problem, solution, options, workers, workload, sanitizer, tool, caching=True)
            if again is not None:
                again.note = (f"checked with PyTorch's caching allocator on (without it the evaluation ended {run.status}: {run.message}); "
                              "a read past a tensor's end inside a cached block is not seen then")
                again.seconds += run.seconds
                run = again
        verdict.runs.append(run)
        if run.outcome != "clean":
            break  # one finding (or a run that could not judge) is enough
    return verdict


def _failed_without_the_cache(run: ToolRun) -> bool:
    """The sanitized evaluation failed although the sanitizer found nothing and finished: possibly because
    the caching allocator was off (CUDA graphs, torch.compile's reduce-overhead, need it)."""
    return (run.outcome == "incomplete" and not run.failure and run.status not in ("", Status.PASSED.value) and bool(run.exit_codes)
            and all(code == 0 for code in run.exit_codes) and not run.output.internal)


def sanitized_run(problem: Problem, solution: Solution, options: Any, workers: Any, workload: Workload, sanitizer: Any, tool: str,
                  caching: bool = False) -> ToolRun | None:
    """One evaluation of `workload` with the solution's worker under the sanitizer (None: the static
    analysis refused the solution, so nothing ran); `caching`: PyTorch's caching allocator left on."""
    from solbench.bench.orchestrator import EvaluationRun
    from solbench.bench.processes import Launcher

    sanitized = dataclasses.replace(options, trials=1, timing=False, hidden=0, timer="events", launch_gate=False, memcheck=False,
                                    reference_latency=False)
    started = time.monotonic()
    run: EvaluationRun | None = None
    trace: Trace | None = None
    launcher = Launcher(tuple(sanitizer_argv(sanitizer, tool)), {} if caching else dict(NO_CACHING))
    with launched_under(workers, solution, launcher, FINISH_TIMEOUT_S, lambda: run.close() if run is not None else None) as found:
        run = EvaluationRun(problem, solution, sanitized, workers)
        run.start()
        if run.refusal is not None:
            return None
        trace = run.evaluate_workload(workload)
    launched, codes = found.processes, found.codes
    text = "\n".join(read_log(process.log_path) for process in launched)
    evaluation = trace.evaluation if trace is not None else None
    failure = ""
    if not launched and evaluation is not None:
        failure = f"no worker started under the sanitizer ({evaluation.status.value}: {first_line(evaluation.log)})"
    passed = evaluation is not None and evaluation.status == Status.PASSED
    return ToolRun(tool, time.monotonic() - started, build_seconds=(evaluation.phases or {}).get("build", 0.0) if evaluation else 0.0,
                   status=evaluation.status.value if evaluation else "", message="" if passed or evaluation is None else first_line(evaluation.log),
                   exit_codes=codes, output=parse_output(text), failure=failure)


