"""Leaderboards: per dataset (by content) and version key, every submission's problem score from
its stored results and that key's newest baselines, each user's best per problem, and the suite
score over all the dataset's problems (a problem not attempted counts 0). Results of another key
are never mixed in: a board is one (dataset, environment) pair."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from solbench.data.trace import Trace
from solbench.score.aggregate import problem_score, suite_score
from solbench.score.formula import FAST_P_THRESHOLDS, ratio, reclaimed
from solbench.score.summary import ProblemScore, WorkloadScore
from solbench.serve.models import Baseline, Dataset, Environment, Problem, Result, Submission, User
from solbench.serve.results import current_baselines

PASSED = "PASSED"


@dataclass
class Entry:
    """One submission's outcome on its problem under one key."""

    submission: Submission
    user: User
    problem: Problem
    score: ProblemScore
    rows: list[WorkloadScore]


@dataclass
class Standing:
    """One user on a board: the best submission per problem and the suite score over them."""

    user: str
    score: float  # mean over every problem of the dataset, 0 where none was submitted
    problems: int
    solved: int  # problems whose best submission passed every workload
    by_category: dict[str, dict[str, float]]
    fast_p: dict[str, int]  # "1.0", "1.5", "2.0" -> correct workloads faster than the reference by more than p
    best: list[Entry] = field(default_factory=list)


@dataclass
class Board:
    dataset: Dataset
    environment: Environment
    problems: list[Problem]
    standings: list[Standing]
    baselines_measured: tuple[float, float] | None  # first and last time a current baseline of the board was measured
    baselined_problems: int


def workload_row(result: Result, entry: Submission, user: User, problem: Problem, baseline: Baseline | None) -> WorkloadScore:
    passed = result.status == PASSED
    timed = result.latency_ms if passed else None
    reference = baseline.reference_ms if baseline else None
    return WorkloadScore(problem=problem.name, solution=f"#{entry.id} {entry.name}", workload=result.workload, status=result.status,
                         latency_ms=result.latency_ms, sol_ms=result.sol_ms if result.sol_ms is not None else (baseline.sol_ms if baseline else None),
                         baseline_ms=baseline.baseline_ms if baseline else None, baseline_candidate=baseline.candidate if baseline else None,
                         reference_ms=reference, score=result.score, speedup_vs_reference=ratio(reference, timed),
                         speedup_vs_baseline=ratio(baseline.baseline_ms if baseline else None, timed),
                         reclaimed=reclaimed(reference, timed, result.sol_ms), flops=baseline.flops if baseline else None,
                         bytes=baseline.bytes if baseline else None, flags=json.loads(result.flags or "[]"), solution_set=user.name)


def entries(session: Session, environment_id: int, problems: list[Problem], submission_ids: list[int] | None = None) -> list[Entry]:
    """Every finished submission of these problems with results under this key."""
    by_id = {p.id: p for p in problems}
    if not by_id:
        return []
    query = (select(Result, Submission, User).join(Submission, Submission.id == Result.submission_id).join(User, User.id == Submission.user_id)
             .where(Result.environment_id == environment_id, Submission.problem_id.in_(list(by_id))).order_by(Result.id))
    if submission_ids is not None:
        query = query.where(Submission.id.in_(submission_ids))
    grouped: dict[int, tuple[Submission, User, list[Result]]] = {}
    for result, submission, user in session.execute(query):
        grouped.setdefault(submission.id, (submission, user, []))[2].append(result)
    baselines = {pid: current_baselines(session, environment_id, pid) for pid in {s.problem_id for s, _, _ in grouped.values()}}
    found = []
    for submission, user, results in grouped.values():
        problem = by_id[submission.problem_id]
        rows = [workload_row(r, submission, user, problem, baselines[problem.id].get(r.workload)) for r in results if not r.held_out]
        held = [Trace.model_validate(json.loads(r.trace)) for r in results if r.held_out]
        if rows:
            found.append(Entry(submission, user, problem, problem_score(rows, json.loads(problem.categories or "{}"), held), rows))
    return found


def _order(entry: Entry) -> tuple[float, float]:
    return (-1.0 if entry.score.score is None else entry.score.score, -entry.submission.id)


def standings(found: list[Entry], problem_count: int) -> list[Standing]:
    by_user: dict[str, dict[int, Entry]] = {}
    for entry in found:
        mine = by_user.setdefault(entry.user.name, {})
        if entry.problem.id not in mine or _order(entry) > _order(mine[entry.problem.id]):
            mine[entry.problem.id] = entry
    table = []
    for user, best in by_user.items():
        chosen = sorted(best.values(), key=lambda e: e.problem.name)
        rows = [row for entry in chosen for row in entry.rows]
        suite = suite_score(user, [e.score for e in chosen], rows)
        counts = {f"{p:.1f}": sum(1 for r in rows if r.status == PASSED and r.speedup_vs_reference is not None and r.speedup_vs_reference > p)
                  for p in FAST_P_THRESHOLDS}
        table.append(Standing(user=user, score=sum(e.score.score or 0.0 for e in chosen) / max(1, problem_count), problems=len(chosen),
                              solved=sum(1 for e in chosen if e.score.statuses.get(PASSED, 0) == e.score.workloads),
                              by_category=suite.by_category, fast_p=counts, best=chosen))
    return sorted(table, key=lambda s: (-s.score, s.user))


def board(session: Session, dataset_id: int, environment_id: int) -> Board | None:
    dataset, environment = session.get(Dataset, dataset_id), session.get(Environment, environment_id)
    if dataset is None or environment is None:
        return None
    problems = list(session.scalars(select(Problem).where(Problem.dataset_id == dataset_id).order_by(Problem.name)))
    ids = [p.id for p in problems]
    measured = session.execute(select(func.min(Baseline.measured), func.max(Baseline.measured), func.count(func.distinct(Baseline.problem_id)))
                               .where(Baseline.environment_id == environment_id, Baseline.problem_id.in_(ids or [-1]))).one()
    return Board(dataset, environment, problems, standings(entries(session, environment_id, problems), len(problems)),
                 (measured[0], measured[1]) if measured[0] is not None else None, measured[2] or 0)


@dataclass
class BoardKey:
    dataset: Dataset
    environment: Environment
    results: int
    current: bool  # the newest key of its dataset name and hardware


def board_keys(session: Session) -> list[BoardKey]:
    """Every (dataset, key) with results or baselines, newest first; `current` marks the newest per dataset name and hardware."""
    pairs = session.execute(select(Problem.dataset_id, Baseline.environment_id).join(Baseline, Baseline.problem_id == Problem.id).distinct()).all()
    pairs += session.execute(select(Problem.dataset_id, Result.environment_id).join(Submission, Submission.problem_id == Problem.id)
                             .join(Result, Result.submission_id == Submission.id).distinct()).all()
    keys = []
    for dataset_id, environment_id in sorted(set(pairs), key=lambda pair: (-pair[1], -pair[0])):
        count = session.scalar(select(func.count(func.distinct(Result.submission_id))).join(Submission, Submission.id == Result.submission_id)
                               .join(Problem, Problem.id == Submission.problem_id)
                               .where(Problem.dataset_id == dataset_id, Result.environment_id == environment_id))
        keys.append(BoardKey(session.get(Dataset, dataset_id), session.get(Environment, environment_id), count or 0, False))
    seen: set[tuple[str, str]] = set()
    for key in sorted(keys, key=lambda k: (-k.environment.created, -k.dataset.created)):
        group = (key.dataset.name, key.environment.hardware)
        key.current = group not in seen
        seen.add(group)
    return keys
