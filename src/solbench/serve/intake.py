"""Checking a submission before anything is stored: JSON, the solution's shape, path-like source
names, the number of sources, the problem it names, the user's hourly limit and the static audit.
Each refusal is a Refusal with an HTTP status and one line; a refused submission leaves no row."""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from solbench.data.errors import SpecError
from solbench.data.problem import Problem as LoadedProblem
from solbench.data.solution import Solution
from solbench.serve.config import Limits
from solbench.serve.models import Submission, User

HOUR_S = 3600.0
PATH_LIKE = re.compile(r"(^|[\\/])\.\.([\\/]|$)|^[\\/]|^[A-Za-z]:|\x00")


class Refusal(Exception):
    def __init__(self, status: int, reason: str, extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None):
        super().__init__(reason)
        self.status, self.reason = status, " ".join(reason.split())[:500]
        self.extra, self.headers = extra or {}, headers or {}


@dataclass
class Accepted:
    solution: Solution
    problem_id: int
    findings: list[dict[str, Any]] = field(default_factory=list)


def parse(body: bytes, limits: Limits) -> Solution:
    """The solution in a request body, or a Refusal (422) saying what is wrong with it."""
    try:
        raw = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refusal(422, "the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise Refusal(422, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(raw, dict):
        raise Refusal(422, f"expected a solution JSON object, got a JSON {type(raw).__name__}")
    sources = raw.get("sources")
    if isinstance(sources, list):
        if len(sources) > limits.max_sources:
            raise Refusal(422, f"{len(sources)} sources: at most {limits.max_sources} per solution")
        for index, source in enumerate(sources):
            path = source.get("path") if isinstance(source, dict) else None
            if isinstance(path, str) and PATH_LIKE.search(path):
                raise Refusal(422, f"sources.{index}.path: {path[:100]!r} is path-like ('..' or an absolute path): name sources by plain relative paths")
            if isinstance(source, dict) and "content" not in source:
                raise Refusal(422, f"sources.{index}: no content: a submission carries every source inline (solbench submit inlines them)")
    try:
        return Solution.model_validate(raw)
    except SpecError as exc:
        raise Refusal(422, f"not a valid solution: {exc.issues[0] if exc.issues else exc}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error.get("loc", ())) or "solution"
        raise Refusal(422, f"not a valid solution: {where}: {error.get('msg', 'invalid')}") from None


def code_hash(solution: Solution) -> str:
    """What an evaluation depends on in a solution: its problem, spec and sources (not its name or description)."""
    import hashlib

    code = {"definition": solution.definition, "spec": solution.spec.model_dump(mode="json"),
            "sources": sorted((s.path, s.content) for s in solution.sources)}
    return hashlib.sha256(json.dumps(code, sort_keys=True).encode()).hexdigest()


def find_problem(solution: Solution, served: dict[int, tuple[str, LoadedProblem]], dataset: str | None) -> int:
    """The id of the served problem the solution names (in `dataset`, where given)."""
    matches = [pid for pid, (name, problem) in served.items() if problem.name == solution.definition and (dataset is None or name == dataset)]
    if not matches:
        where = f" in dataset {dataset!r}" if dataset else ""
        raise Refusal(422, f"no problem named {solution.definition[:100]!r}{where} is served here (solbench show lists problems)")
    if len(matches) > 1:
        names = sorted(served[pid][0] for pid in matches)
        raise Refusal(422, f"problem {solution.definition!r} is in datasets {', '.join(names)}: name one with ?dataset=NAME")
    return matches[0]


def check_rate(session: Session, user: User, limits: Limits, now: float | None = None) -> None:
    now = time.time() if now is None else now
    since = now - HOUR_S
    count, oldest = session.execute(select(func.count(Submission.id), func.min(Submission.created))
                                    .where(Submission.user_id == user.id, Submission.created > since)).one()
    if count >= limits.submissions_per_hour:
        wait = max(1, math.ceil((oldest or now) + HOUR_S - now))
        raise Refusal(429, f"{count} submissions in the last hour: at most {limits.submissions_per_hour} per user; retry in {wait} s",
                      headers={"Retry-After": str(wait)})


def audit(solution: Solution, problem: LoadedProblem) -> list[dict[str, Any]]:
    """The static analysis as the evaluator runs it; a reject finding refuses the solution (422, REWARD_HACK)."""
    from solbench.bench.guards.static import analyze_solution
    from solbench.sol.api import policy_for

    findings = analyze_solution(solution, policy_for(problem, "auto"))
    rows = [{"rule": f.rule, "severity": f.severity, "file": f.path, "line": f.line, "message": f.message} for f in findings]
    rejects = [f for f in findings if f.severity == "reject"]
    if rejects:
        first = rejects[0]
        raise Refusal(422, f"REWARD_HACK: refused by the static analysis: [{first.rule}] {first.path}:{first.line}: {first.message}",
                      extra={"findings": rows})
    return rows
