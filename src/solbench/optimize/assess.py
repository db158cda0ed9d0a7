"""The trusted verdict on an attempt: its score per published workload against the baseline measured at
the start of the loop, the problem's score (0 when a held-out workload caught it), and whether it may
ever be the best (every workload, published and held out, PASSED, and nothing flagged)."""

from __future__ import annotations

from dataclasses import dataclass, field

from solbench.data.hidden import is_held_out
from solbench.data.problem import Problem
from solbench.data.trace import Status, Trace
from solbench.score.aggregate import problem_score, score_workload
from solbench.score.baselines import EAGER, BaselineEntry, candidate_result, make_entry
from solbench.score.formula import FASTER_THAN_SOL
from solbench.score.summary import WorkloadScore

@dataclass
class Assessment:
    rows: list[WorkloadScore]  # the published workloads, scored
    held_out: list[Trace]  # the held-out workloads' traces: for the run folder, never for the proposer
    score: float | None
    eligible: bool  # may be the best
    why_not: str = ""  # why it may not, in a line
    held_out_statuses: dict[str, int] = field(default_factory=dict)


def baseline_entries(problem: Problem, traces: list[Trace]) -> dict[str, BaselineEntry]:
    """T_b per published workload from the reference's traces (its latency where it PASSED), as a run's
    baselines are made with the eager candidate alone."""
    entries = {}
    for trace in traces:
        performance = trace.evaluation.performance if trace.evaluation is not None else None
        entries[trace.workload.uuid] = make_entry(problem, trace.workload.uuid, [candidate_result(EAGER, trace)],
                                                  performance.sol_ms if performance else None,
                                                  roofline_ms=performance.sol_roofline_ms if performance else None,
                                                  floor_ms=performance.sol_floor_ms if performance else None)
    return entries


def assess(traces: list[Trace], baselines: dict[str, BaselineEntry]) -> Assessment:
    """Score an attempt's traces (setting each published trace's performance.score) and judge it."""
    published = [t for t in traces if not is_held_out(t.workload.uuid)]
    held_out = [t for t in traces if is_held_out(t.workload.uuid)]
    if not published:
        return Assessment([], held_out, None, False, "no published workload was evaluated")
    rows = [score_workload(trace, baselines.get(trace.workload.uuid)) for trace in published]
    summary = problem_score(rows, {}, held_out)
    statuses: dict[str, int] = {}
    for trace in held_out:
        statuses[trace.evaluation.status.value] = statuses.get(trace.evaluation.status.value, 0) + 1
    why = _why_not_best(rows, held_out, summary.score)
    return Assessment(rows, held_out, summary.score, not why, why, statuses)


def _why_not_best(rows: list[WorkloadScore], held_out: list[Trace], score: float | None) -> str:
    failed = [r for r in rows if r.status != Status.PASSED.value]
    if failed:
        return f"{failed[0].status} on published workload {failed[0].workload}"
    missed = [t for t in held_out if t.evaluation.status != Status.PASSED]
    if missed:
        return f"{missed[0].evaluation.status.value} on a held-out workload"
    flagged = [r for r in rows if FASTER_THAN_SOL in r.flags]
    if flagged:
        return f"faster than T_SOL on {flagged[0].workload} (flagged for audit)"
    if score is None:
        return "no score (no T_SOL or no baseline)"
    return ""
