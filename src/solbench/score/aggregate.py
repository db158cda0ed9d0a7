"""From traces and baselines to the run summary's scores: per workload, per problem (the mean over its
workloads), per suite (the mean over problems, with the median, per-category means, fast_p and
geometric means), and best-of-k when a problem has several solutions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable

from solbench.data.hidden import is_held_out
from solbench.data.trace import Performance, Status, Trace
from solbench.score.baselines import BaselineEntry
from solbench.score.formula import FASTER_THAN_SOL, fast_p, geomean, mean, median, ratio, reclaimed, sol_score
from solbench.score.summary import ProblemScore, SuiteScore, WorkloadScore

BEST_OF_K = "best-of-k"


def sol_of(performance: Performance | None, entry: BaselineEntry | None) -> tuple[float | None, float | None, float | None]:
    """T_SOL for the score, with its roofline and floor: the trace's own, which is the one the evaluator's
    faster-than-sol check used (priced as the run's --sol-floor said); else the baseline entry's."""
    if performance is not None and performance.sol_ms is not None:
        return performance.sol_ms, performance.sol_roofline_ms, performance.sol_floor_ms
    if entry is not None:
        return entry.sol_ms, entry.sol_roofline_ms, entry.sol_floor_ms
    return None, None, None


def score_workload(trace: Trace, entry: BaselineEntry | None, solution_set: str | None = None) -> WorkloadScore:
    """One trace scored against its workload's baseline; also sets the trace's `performance.score`."""
    evaluation = trace.evaluation
    performance = evaluation.performance
    latency = performance.latency_ms if performance is not None else None
    sol_ms, roofline_ms, floor_ms = sol_of(performance, entry)
    baseline_ms = entry.baseline_ms if entry else None
    reference_ms = entry.reference_ms if entry else None
    correct = evaluation.status == Status.PASSED
    value = sol_score(correct, latency, sol_ms, baseline_ms, performance.latency_iqr_ms if performance is not None else None)
    flags = list(evaluation.flags or [])
    if evaluation.status == Status.REWARD_HACK and FASTER_THAN_SOL in (evaluation.log or ""):
        flags.append(FASTER_THAN_SOL)
    flags += value.flags
    if performance is not None:
        performance.score = value.score
    energy = energy_of(performance, entry, correct)
    flags += energy.flags
    timed = latency if correct else None
    return WorkloadScore(
        problem=trace.definition, solution=trace.solution or "", workload=trace.workload.uuid, status=evaluation.status.value,
        latency_ms=latency, sol_ms=sol_ms, sol_roofline_ms=roofline_ms, sol_floor_ms=floor_ms, baseline_ms=baseline_ms, baseline_candidate=entry.candidate if entry else None,
        reference_ms=reference_ms, score=value.score, speedup_vs_reference=ratio(reference_ms, timed), speedup_vs_baseline=ratio(baseline_ms, timed),
        reclaimed=reclaimed(reference_ms, timed, sol_ms), flags=sorted(set(flags)), solution_set=solution_set,
        energy_j=energy.joules, energy_sol_j=energy.sol_j, energy_baseline_j=energy.baseline_j, energy_score=energy.score,
    )


@dataclass(frozen=True)
class EnergyValues:
    joules: float | None = None
    sol_j: float | None = None
    baseline_j: float | None = None
    score: float | None = None
    flags: tuple[str, ...] = ()


def energy_of(performance: Performance | None, entry: BaselineEntry | None, correct: bool) -> EnergyValues:
    """A trace's energy beside its bound and baseline, and its energy score (also set on the trace's
    `performance.energy.score`): the time score's formula on joules (solbench.energy.score)."""
    from solbench.energy.score import BELOW_ENERGY_SOL, below_energy_sol, energy_score

    measured = performance.energy if performance is not None else None
    if measured is None:
        return EnergyValues()
    baseline_j = entry.baseline_energy_j if entry is not None else None
    joules = measured.joules if correct else None
    value = energy_score(correct, joules, measured.sol_j, baseline_j, measured.resolution_j)
    score = value.score if measured.joules is not None or not correct else None
    if score is not None or "score" in measured.model_fields_set:
        measured.score = score
    flags = list(value.flags)
    if below_energy_sol(joules, measured.sol_j, measured.resolution_j) and BELOW_ENERGY_SOL not in flags:
        flags.append(BELOW_ENERGY_SOL)  # flagged with no baseline too: the bound is what it breaks
    return EnergyValues(measured.joules, measured.sol_j, baseline_j, score, tuple(flags))


HIDDEN_WORKLOAD_FLAG = "hidden-workload"


def problem_score(rows: list[WorkloadScore], categories: dict[str, str], held_out: Iterable[Trace] = ()) -> ProblemScore:
    """One solution on one problem (rows: its workloads). The score is the mean over workloads that
    have one (failed ones count as 0); None when none has; 0 when a held-out workload found a
    specialised solution (REWARD_HACK there)."""
    first = rows[0]
    correct = [r for r in rows if r.status == Status.PASSED.value]
    held = [t for t in held_out if t.evaluation is not None]
    hacked = any(t.evaluation.status == Status.REWARD_HACK for t in held)
    score = mean(r.score for r in rows)
    held_flags = {flag for t in held for flag in (t.evaluation.flags or [])} | ({HIDDEN_WORKLOAD_FLAG} if hacked else set())
    return ProblemScore(
        problem=first.problem, solution=first.solution, solution_set=first.solution_set, categories=dict(categories), workloads=len(rows),
        statuses=dict(Counter(r.status for r in rows)), score=0.0 if hacked else score,
        median_ratio_to_sol=median(ratio(r.latency_ms, r.sol_ms) for r in correct),
        geomean_speedup_vs_reference=geomean(r.speedup_vs_reference for r in correct),
        geomean_speedup_vs_baseline=geomean(r.speedup_vs_baseline for r in correct),
        flags=sorted({flag for r in rows for flag in r.flags} | held_flags),
        held_out=dict(Counter(t.evaluation.status.value for t in held)),
        energy_score=(0.0 if hacked else mean(r.energy_score if r.status == Status.PASSED.value else 0.0 for r in rows))
        if any(r.energy_j is not None for r in rows) else None,  # failed workloads count 0 where the problem's energy was measured
        median_energy_ratio_to_sol=median(ratio(r.energy_j, r.energy_sol_j) for r in correct),
    )


def suite_score(name: str, problems: list[ProblemScore], rows: list[WorkloadScore]) -> SuiteScore:
    """A solution set over its problems (rows: the workloads behind them, for fast_p and geomeans)."""
    by_category: dict[str, dict[str, list[float | None]]] = {}
    for problem in problems:
        for category, value in problem.categories.items():
            by_category.setdefault(category, {}).setdefault(value, []).append(problem.score)
    correct = [r.status == Status.PASSED.value for r in rows]
    return SuiteScore(
        solution=name, problems=len(problems), score_mean=mean(p.score for p in problems), score_median=median(p.score for p in problems),
        by_category={c: {v: m for v, scores in values.items() if (m := mean(scores)) is not None} for c, values in by_category.items()},
        fast_p=fast_p([r.speedup_vs_reference for r in rows], correct),
        geomean_speedup_vs_reference=geomean(r.speedup_vs_reference for r, ok in zip(rows, correct) if ok),
        geomean_speedup_vs_baseline=geomean(r.speedup_vs_baseline for r, ok in zip(rows, correct) if ok),
        energy_score_mean=mean(p.energy_score for p in problems), energy_score_median=median(p.energy_score for p in problems),
    )


def score_run(traces: Iterable[Trace], entry_for: Callable[[str, str], BaselineEntry | None], categories: dict[str, dict[str, str]],
              solution_set: Callable[[Trace], str]) -> tuple[list[WorkloadScore], list[ProblemScore], list[SuiteScore]]:
    """Every score of a run: `entry_for(problem, workload)` gives the baseline entry, `categories` each
    problem's categories, `solution_set(trace)` the set (suite) its solution belongs to."""
    traces = [trace for trace in traces if trace.evaluation is not None]
    held_out: dict[tuple[str, str], list[Trace]] = {}
    for trace in traces:
        if is_held_out(trace.workload.uuid):
            held_out.setdefault((trace.definition, trace.solution or ""), []).append(trace)
    rows = [score_workload(trace, entry_for(trace.definition, trace.workload.uuid), solution_set(trace)) for trace in traces
            if not is_held_out(trace.workload.uuid)]
    groups: dict[tuple[str, str], list[WorkloadScore]] = {}
    for row in rows:
        groups.setdefault((row.problem, row.solution), []).append(row)
    problems = [problem_score(group, categories.get(key[0], {}), held_out.get(key, [])) for key, group in groups.items()]
    suites = []
    for name in dict.fromkeys(p.solution_set or "" for p in problems):
        members = [p for p in problems if (p.solution_set or "") == name]
        keys = {(p.problem, p.solution) for p in members}
        suites.append(suite_score(name, members, [r for r in rows if (r.problem, r.solution) in keys]))
    best = best_of_k(problems)
    if best is not None:
        chosen, name = best
        keys = {(p.problem, p.solution) for p in chosen}
        suites.append(suite_score(name, chosen, [r for r in rows if (r.problem, r.solution) in keys]))
    return rows, problems, suites


def best_of_k(problems: list[ProblemScore]) -> tuple[list[ProblemScore], str] | None:
    """Per problem, the best-scoring of its solutions; None unless some problem has several."""
    by_problem: dict[str, list[ProblemScore]] = {}
    for problem in problems:
        by_problem.setdefault(problem.problem, []).append(problem)
    if all(len(group) < 2 for group in by_problem.values()):
        return None
    chosen = [max(group, key=lambda p: -1.0 if p.score is None else p.score) for group in by_problem.values()]
    return chosen, BEST_OF_K
