"""What the problem and submission pages show, gathered from the database (no HTML here), and who
may read what: a submission's source and results are its owner's (and admins'), everyone's only
where the service runs with --public."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from solbench.score.summary import WorkloadScore
from solbench.serve.boards import Entry, entries
from solbench.serve.models import Baseline, Dataset, Environment, Problem, Result, Submission, User
from solbench.serve.results import current_baselines

BEST_SHOWN = 10
_PLOT_LOCK = threading.Lock()  # matplotlib's rc settings are global: one figure at a time


def may_read(viewer: User | None, submission: Submission, public: bool) -> bool:
    return public or (viewer is not None and (viewer.is_admin or viewer.id == submission.user_id))


@dataclass
class Roofline:
    svg: str | None
    legend: list[Any]
    notes: list[str]


@dataclass
class ProblemView:
    problem: Problem
    dataset: Dataset
    environment: Environment | None
    environments: list[Environment]
    baselines: list[tuple[Baseline, dict[str, Any]]]
    best: list[Entry]
    roofline: Roofline | None
    categories: dict[str, str] = field(default_factory=dict)


def environments_of(session: Session, problem_id: int) -> list[Environment]:
    ids = {i for (i,) in session.execute(select(Baseline.environment_id).where(Baseline.problem_id == problem_id).distinct())}
    return sorted((session.get(Environment, i) for i in ids), key=lambda e: -e.created)


def problem_view(session: Session, problem: Problem, environment_id: int | None) -> ProblemView:
    environments = environments_of(session, problem.id)
    environment = next((e for e in environments if e.id == environment_id), None) if environment_id is not None else (environments[0] if environments else None)
    baselines = list(current_baselines(session, environment.id, problem.id).values()) if environment else []
    best = sorted(entries(session, environment.id, [problem]), key=lambda e: (-(e.score.score if e.score.score is not None else -1), e.submission.id))[:BEST_SHOWN] if environment else []
    view = ProblemView(problem, session.get(Dataset, problem.dataset_id), environment, environments,
                       [(b, json.loads(b.sol or "{}")) for b in baselines], best, None, json.loads(problem.categories or "{}"))
    if environment is not None and baselines:
        view.roofline = roofline(environment, problem, baselines, best)
    return view


def roofline(environment: Environment, problem: Problem, baselines: list[Baseline], best: list[Entry]) -> Roofline:
    """The report's roofline of this problem: the reference, T_b and T_SOL of every workload and the best submissions' points."""
    from solbench.report.roofline import REFERENCE, draw_rooflines

    rows = [WorkloadScore(problem=problem.name, solution="reference", workload=b.workload, status="PASSED", latency_ms=b.reference_ms,
                          sol_ms=b.sol_ms, baseline_ms=b.baseline_ms, reference_ms=b.reference_ms, flops=b.flops, bytes=b.bytes,
                          solution_set=REFERENCE) for b in baselines]
    for entry in best:
        rows += [row.model_copy(update={"solution_set": row.solution}) for row in entry.rows]
    sets = list(dict.fromkeys(row.solution_set for row in rows if row.solution_set))
    with _PLOT_LOCK:
        drawn = draw_rooflines(json.loads(environment.roofs or "{}"), sets, [(problem.name, rows)])[0]
    return Roofline(drawn.svg, drawn.legend, drawn.notes)


@dataclass
class SourceLine:
    number: int
    text: str
    findings: list[dict[str, Any]]


@dataclass
class SubmissionView:
    submission: Submission
    user: User
    problem: Problem
    results: list[tuple[Result, Environment]]
    findings: list[dict[str, Any]]
    sources: list[tuple[str, list[SourceLine]]]
    solution: dict[str, Any]


def submission_view(session: Session, submission: Submission) -> SubmissionView:
    findings = json.loads(submission.findings or "[]")
    solution = json.loads(submission.body)
    sources = []
    for source in solution.get("sources", []):
        path, text = str(source.get("path", "")), str(source.get("content", ""))
        here = [f for f in findings if f.get("file") == path]
        lines = [SourceLine(number, line, [f for f in here if f.get("line") == number]) for number, line in enumerate(text.splitlines() or [""], 1)]
        sources.append((path, lines))
    results = [(r, session.get(Environment, r.environment_id))
               for r in session.scalars(select(Result).where(Result.submission_id == submission.id).order_by(Result.held_out, Result.id))]
    return SubmissionView(submission, session.get(User, submission.user_id), session.get(Problem, submission.problem_id), results, findings,
                          sources, solution)


def mean_score(session: Session, submission_id: int) -> float | None:
    scores = [s for (s,) in session.execute(select(Result.score).where(Result.submission_id == submission_id, Result.held_out.is_(False)))]
    known = [s for s in scores if s is not None]
    return sum(known) / len(known) if known and len(known) == len(scores) else None
