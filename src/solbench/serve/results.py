"""Traces, baselines and scores into the database. A submission's traces become Result rows scored
against the newest baselines of the same version key; a baseline job's candidates become Baseline
rows (T_b per workload, with the SOL breakdown), after which that key's results of the problem are
scored again."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from solbench.data.hidden import is_held_out
from solbench.data.problem import Problem as LoadedProblem
from solbench.data.trace import Trace
from solbench.score.aggregate import score_workload
from solbench.score.baselines import BaselineEntry, candidate_result, make_entry
from solbench.serve.models import Baseline, Job, Result, Submission


def current_baselines(session: Session, environment_id: int, problem_id: int) -> dict[str, Baseline]:
    """workload uuid -> the newest baseline of that workload for this key."""
    rows = session.scalars(select(Baseline).where(Baseline.environment_id == environment_id, Baseline.problem_id == problem_id)
                           .order_by(Baseline.id)).all()
    return {row.workload: row for row in rows}


def _entry(row: Baseline | None) -> BaselineEntry | None:
    return BaselineEntry.model_validate(json.loads(row.entry)) if row is not None and row.entry not in ("", "{}") else None


def score_of(trace: Trace, baseline: Baseline | None) -> tuple[float | None, list[str]]:
    if is_held_out(trace.workload.uuid):
        return None, list(trace.evaluation.flags or [])
    row = score_workload(trace, _entry(baseline))
    return row.score, row.flags


def store_submission(session: Session, job: Job, environment_id: int, traces: list[Trace], gpu_of: Callable[[Trace], str],
                     reused_from: int | None = None) -> None:
    baselines = current_baselines(session, environment_id, job.problem_id)
    now = time.time()
    for trace in traces:
        evaluation = trace.evaluation
        performance = evaluation.performance
        score, flags = score_of(trace, baselines.get(trace.workload.uuid))
        session.add(Result(job_id=job.id, submission_id=job.submission_id, environment_id=environment_id, gpu_uuid=gpu_of(trace), reused_from=reused_from,
                           workload=trace.workload.uuid, held_out=is_held_out(trace.workload.uuid), status=evaluation.status.value,
                           latency_ms=performance.latency_ms if performance else None,
                           latency_iqr_ms=performance.latency_iqr_ms if performance else None,
                           sol_ms=performance.sol_ms if performance else None, score=score, flags=json.dumps(flags),
                           log=(evaluation.log or "")[:20000], trace=json.dumps(trace.to_json_dict()), created=now))


def stored_evaluation(session: Session, code: str, problem_id: int, environment_id: int) -> tuple[int, list[Trace]] | None:
    """(submission id, traces) of a finished evaluation of the same code on this problem under this key, if any."""
    source = session.scalar(select(Result.submission_id).join(Submission, Submission.id == Result.submission_id)
                            .where(Submission.code_hash == code, Submission.problem_id == problem_id, Result.environment_id == environment_id,
                                   Result.reused_from.is_(None)).order_by(Result.id).limit(1))
    if source is None:
        return None
    traces = session.scalars(select(Result.trace).where(Result.submission_id == source).order_by(Result.id)).all()
    return source, [Trace.model_validate(json.loads(text)) for text in traces]


def store_baselines(session: Session, job: Job, environment_id: int, problem: LoadedProblem, by_candidate: dict[str, list[Trace]],
                    sol: dict[str, dict[str, Any]]) -> None:
    """One Baseline row per workload from the candidates' traces, then the key's results rescored."""
    workloads = dict.fromkeys(t.workload.uuid for traces in by_candidate.values() for t in traces if not is_held_out(t.workload.uuid))
    now = time.time()
    for uuid in workloads:
        results = [candidate_result(name, t) for name, traces in by_candidate.items() for t in traces if t.workload.uuid == uuid]
        performance = next((t.evaluation.performance for traces in by_candidate.values() for t in traces
                            if t.workload.uuid == uuid and t.evaluation.performance is not None and t.evaluation.performance.sol_ms is not None), None)
        entry = make_entry(problem, uuid, results, performance.sol_ms if performance else None,
                           roofline_ms=performance.sol_roofline_ms if performance else None, floor_ms=performance.sol_floor_ms if performance else None)
        breakdown = sol.get(uuid, {})
        session.add(Baseline(job_id=job.id, environment_id=environment_id, problem_id=job.problem_id, workload=uuid, baseline_ms=entry.baseline_ms,
                             candidate=entry.candidate, reference_ms=entry.reference_ms, sol_ms=entry.sol_ms, flops=breakdown.get("flops"),
                             bytes=breakdown.get("bytes"), sol=json.dumps(breakdown), entry=json.dumps(entry.to_json_dict()), measured=now))
    session.flush()
    rescore(session, environment_id, job.problem_id)


def rescore(session: Session, environment_id: int, problem_id: int) -> None:
    baselines = current_baselines(session, environment_id, problem_id)
    rows = session.scalars(select(Result).join(Submission, Submission.id == Result.submission_id)
                           .where(Result.environment_id == environment_id, Submission.problem_id == problem_id, Result.held_out.is_(False))).all()
    for row in rows:
        score, flags = score_of(Trace.model_validate(json.loads(row.trace)), baselines.get(row.workload))
        row.score, row.flags = score, json.dumps(flags)


def sol_breakdown(problem: LoadedProblem, workloads: list[Any], spec: Any) -> dict[str, dict[str, Any]]:
    """The SOL analysis of each workload, as the problem page shows it; a workload it fails on is left out (with the reason)."""
    if spec is None:
        return {}
    from solbench.sol.analysis import analyze, shared_captures
    from solbench.sol.api import policy_for

    found: dict[str, dict[str, Any]] = {}
    for workload in workloads:
        try:
            result = analyze(problem, workload, spec, policy_for(problem, "auto"), shared_captures(problem))
        except Exception as exc:  # noqa: BLE001 - a missing breakdown loses a table row, not the baselines
            found[workload.uuid] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            continue
        found[workload.uuid] = {**result.to_json(), "bytes": result.bytes_cache_aware}
    return found
