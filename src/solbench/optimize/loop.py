"""The optimisation loop: brief the proposer, then per attempt take its proposal, evaluate it with every
defence on (static analysis, hidden and unaligned workloads drawn by the evaluator for that attempt),
score it against the reference measured once at the start, feed back what a kernel author needs (the
published workloads only) and keep the best eligible solution. Every step is in the run folder as soon
as it is known, so a loop cut short resumes where it was (solbench.optimize.state)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from solbench.bench.options import EvalOptions
from solbench.data.files import append_jsonl
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.hidden import is_held_out
from solbench.data.trace import Status, Trace
from solbench.optimize.assess import assess, baseline_entries
from solbench.optimize.brief import problem_brief
from solbench.optimize.feedback import attempt_feedback, audit_findings, no_solution_feedback
from solbench.optimize.messages import AttemptFeedback, ProblemBrief, ProfileFeedback, Proposal
from solbench.optimize.proposers import Proposer, ProposerError
from solbench.optimize.state import AttemptRecord, RunConfig, RunFolder, now
from solbench.score.baselines import BaselineEntry, definition_hash
from solbench.sol.hardware import HardwareSpec

MIN_HIDDEN = 1  # held-out workloads per attempt at the least: a loop never runs without them


@dataclass(frozen=True)
class LoopSettings:
    iterations: int = 10  # attempts in all, those of earlier sittings included
    budget_s: float | None = None  # wall seconds of this sitting after which no new attempt starts
    resume: bool = False
    sol_floor: bool = True
    profile: Path | None = None  # ncu: each correct attempt profiled on its smallest workload (the proposer sees the profile)


@dataclass
class LoopOutcome:
    records: list[AttemptRecord]
    best: AttemptRecord | None
    best_path: Path | None
    stopped: str  # why the loop ended, in a few words
    error: str | None  # the proposer's failure, one line, where it stopped the loop
    report: Path | None
    plot: Path | None


def defended(options: EvalOptions) -> EvalOptions:
    """The options with every defence on, whatever was asked."""
    return dataclasses.replace(options, static_analysis=True, hidden=max(options.hidden, MIN_HIDDEN), unaligned=True)


def optimize(problem: Problem, proposer: Proposer, options: EvalOptions, spec: HardwareSpec | None, run_dir: Path, settings: LoopSettings,
             on_attempt: Callable[[AttemptRecord], None] | None = None) -> LoopOutcome:
    """Run the loop on `problem` (its workloads are the published ones the proposer sees) into `run_dir`."""
    from solbench.bench.orchestrator import resolve_device
    from solbench.bench.workers import WorkerPair
    from solbench.sol.api import policy_for

    started = time.monotonic()
    options = defended(options)
    device = resolve_device(options.device)
    config = RunConfig(problem=problem.name, definition_hash=definition_hash(problem), proposer=proposer.label,
                       hardware=spec.name if spec is not None else None, device=device)
    folder = RunFolder.open(run_dir, config, settings.resume)
    policy = policy_for(problem, options.policy)
    brief = problem_brief(problem, spec, device, policy, settings.sol_floor)
    folder.write_json("brief.json", brief.model_dump(mode="json"))
    records = folder.records()
    stopped, error = "iterations", None
    try:  # the first proposal before any worker starts: a proposer that cannot answer fails at once
        if len(records) < settings.iterations and _proposal(len(records) + 1, problem, proposer, brief, folder, records) is None:
            return _outcome(folder, config, records, "proposer exhausted", None)
    except ProposerError as exc:
        return _outcome(folder, config, records, "proposer error", str(exc))
    with WorkerPair.for_options(device, options) as pair:
        baselines = folder.baseline() or _measure_baseline(problem, options, pair, folder)
        for attempt in range(len(records) + 1, settings.iterations + 1):
            if settings.budget_s is not None and time.monotonic() - started >= settings.budget_s:
                stopped = "budget"
                break
            try:
                record = _attempt(attempt, problem, proposer, brief, options, policy, baselines, pair, folder, records,
                                  (spec, settings.profile) if settings.profile is not None else None)
            except ProposerError as exc:
                stopped, error = "proposer error", str(exc)
                break
            if record is None:
                stopped = "proposer exhausted"
                break
            records.append(record)
            best = best_of(records)
            if best is not None and best.attempt == record.attempt and record.proposal.solution is not None:
                folder.save_best(record.proposal.solution)
            _write_report(folder, config, records, stopped="running")
            if on_attempt is not None:
                on_attempt(record)
    return _outcome(folder, config, records, stopped, error)


def _outcome(folder: RunFolder, config: RunConfig, records: list[AttemptRecord], stopped: str, error: str | None) -> LoopOutcome:
    best = best_of(records)
    report, plot = _write_report(folder, config, records, stopped)
    best_path = folder.root / "best" / "solution.json" if best is not None else None
    return LoopOutcome(records, best, best_path, stopped, error, report, plot)


def _measure_baseline(problem: Problem, options: EvalOptions, pair: object, folder: RunFolder) -> dict[str, BaselineEntry]:
    """T_b per published workload: the eager reference, trusted code (no static analysis, no held-out workloads)."""
    from solbench.bench.orchestrator import evaluate, reference_solution

    trusted = dataclasses.replace(options, static_analysis=False, hidden=0)
    traces = evaluate(problem, reference_solution(problem), trusted, workers=pair, held_out=False)  # type: ignore[arg-type]
    entries = baseline_entries(problem, traces)
    folder.save_baseline(entries, traces)
    return entries


def _attempt(attempt: int, problem: Problem, proposer: Proposer, brief: ProblemBrief, options: EvalOptions, policy: str,
             baselines: dict[str, BaselineEntry], pair: object, folder: RunFolder, records: list[AttemptRecord],
             profiling: tuple[HardwareSpec | None, Path] | None = None) -> AttemptRecord | None:
    """One attempt, recorded; None when the proposer has nothing more to try. `profiling`: the spec and ncu
    with which a correct attempt is profiled."""
    started = time.monotonic()
    proposal = _proposal(attempt, problem, proposer, brief, folder, records)
    if proposal is None:
        return None
    if proposal.solution is None:
        feedback, eligible, why, held = no_solution_feedback(attempt, proposal.reason or "the proposal held no solution"), False, "no solution", {}
    else:
        feedback, eligible, why, held = _evaluate(attempt, problem, proposal.solution, options, policy, baselines, pair, folder, profiling)
    record = AttemptRecord(attempt=attempt, proposal=proposal, feedback=feedback, eligible=eligible, why_not=why, held_out_statuses=held,
                           elapsed_s=round(time.monotonic() - started, 3), finished=now())
    folder.finish(record)
    return record


def _proposal(attempt: int, problem: Problem, proposer: Proposer, brief: ProblemBrief, folder: RunFolder,
              records: list[AttemptRecord]) -> Proposal | None:
    """The attempt's proposal: the one saved by an earlier sitting (an attempt cut short is evaluated again,
    not asked again), else the proposer's, saved at once; None when the proposer has nothing more."""
    proposal = folder.saved_proposal(attempt)
    if proposal is None:
        proposal = proposer.propose(brief, problem.definition, [r.turn for r in records], _attempt_name(problem, attempt))
        if proposal.exhausted:
            return None
        folder.save_proposal(attempt, proposal)
    return proposal


def _evaluate(attempt: int, problem: Problem, solution: Solution, options: EvalOptions, policy: str, baselines: dict[str, BaselineEntry],
              pair: object, folder: RunFolder, profiling: tuple[HardwareSpec | None, Path] | None = None
              ) -> tuple[AttemptFeedback, bool, str, dict[str, int]]:
    from solbench.bench.orchestrator import evaluate

    path = folder.fresh_traces(attempt)
    try:
        traces: list[Trace] = evaluate(problem, solution, options, workers=pair, held_out=True,  # type: ignore[arg-type]
                                       on_trace=lambda trace: append_jsonl(path, trace.to_json_dict()))
    except Exception as exc:  # noqa: BLE001 - one attempt that breaks the evaluation must not end the loop
        message = f"the evaluation failed: {type(exc).__name__}: {exc}"
        return AttemptFeedback(attempt=attempt, solution=solution.name, status="RUNTIME_ERROR", message=message[:2000], score=0.0), False, message, {}
    assessment = assess(traces, baselines)
    write_scored(path, traces)
    feedback = attempt_feedback(attempt, solution, traces, assessment, audit_findings(solution, policy))
    if profiling is not None and feedback.status == Status.PASSED.value:
        feedback.profile = _profile(problem, solution, traces, options, profiling[0], profiling[1], pair)
    return feedback, assessment.eligible, assessment.why_not, assessment.held_out_statuses


def _profile(problem: Problem, solution: Solution, traces: list[Trace], options: EvalOptions, spec: HardwareSpec | None, ncu: Path,
             pair: object) -> ProfileFeedback:
    """The attempt profiled (solbench.profile) on the smallest of its published workloads, in the loop's workers."""
    from solbench.optimize.feedback import profile_feedback
    from solbench.profile.memcheck import smallest_workload
    from solbench.profile.runner import ProfileError, profile_solution

    published = [t.workload for t in traces if not is_held_out(t.workload.uuid)]
    try:
        report = profile_solution(problem, solution, smallest_workload(problem, published), options, spec=spec, ncu=ncu, workers=pair)
    except ProfileError as exc:
        return ProfileFeedback(note=f"no profile: {exc}")
    return profile_feedback(report)


def write_scored(path: Path, traces: list[Trace]) -> None:
    """The attempt's traces again, now with their scores (performance.score)."""
    from solbench.data.files import dump_jsonl, write_atomically

    write_atomically(path, dump_jsonl(trace.to_json_dict() for trace in traces))


def _attempt_name(problem: Problem, attempt: int) -> str:
    return f"{problem.name}-attempt-{attempt:03d}"


def best_of(records: list[AttemptRecord]) -> AttemptRecord | None:
    """The eligible attempt with the highest score (the earliest of equals)."""
    eligible = [r for r in records if r.eligible and r.feedback.score is not None]
    return max(eligible, key=lambda r: (r.feedback.score, -r.attempt)) if eligible else None


def _write_report(folder: RunFolder, config: RunConfig, records: list[AttemptRecord], stopped: str) -> tuple[Path | None, Path | None]:
    from solbench.optimize.report import write_report

    return write_report(folder.root, config, records, best_of(records), stopped)

