"""The JSON routes under /api. Every refusal is {"error": one line} with its status: 401 without a
known token, 403 for admin routes without an admin token, 404 for what the caller may not see (another
user's private submission reads as absent), 413 for an oversized body, 422 for a malformed or refused
solution, 429 with Retry-After beyond the hourly limit."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import func, select
from starlette.concurrency import run_in_threadpool

from solbench.serve import auth, boards, intake, queue
from solbench.serve.database import transaction
from solbench.serve.models import Job, Result, Submission, User
from solbench.serve.state import ServiceState
from solbench.serve.views import may_read, mean_score

DRAIN_LIMIT = 256 << 20  # an oversized body is read and dropped up to this size, so that the client sees the 413


def error(status: int, reason: str, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": " ".join(reason.split()), **extra}, status_code=status, headers=headers)


async def read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    size, chunks, too_big = 0, [], declared.isdigit() and int(declared) > limit
    async for chunk in request.stream():
        size += len(chunk)
        if size > DRAIN_LIMIT:
            break
        if size > limit:
            too_big, chunks = True, []
        elif not too_big:
            chunks.append(chunk)
    if too_big or size > limit:
        shown = int(declared) if declared.isdigit() else size
        raise intake.Refusal(413, f"the body is {shown} bytes: at most {limit} bytes per submission")
    return b"".join(chunks)


def token_of(request: Request) -> str | None:
    return auth.bearer(request.headers.get("authorization"))


def router(state: ServiceState) -> APIRouter:
    api = APIRouter(prefix="/api")

    def submit(token: str | None, body: bytes, dataset: str | None) -> JSONResponse:
        with transaction(state.factory) as session:
            user = auth.require_user(session, token)
            solution = intake.parse(body, state.config.limits)
            problem_id = intake.find_problem(solution, state.served, dataset)
            intake.check_rate(session, user, state.config.limits)
            findings = intake.audit(solution, state.served[problem_id][1])
            submission = Submission(user_id=user.id, problem_id=problem_id, name=solution.name, body=body.decode("utf-8"), code_hash=intake.code_hash(solution),
                                    findings=json.dumps(findings), state=queue.QUEUED, created=time.time())
            session.add(submission)
            session.flush()
            queue.enqueue_submission(session, submission)
            return JSONResponse({"id": submission.id, "state": submission.state, "problem": solution.definition,
                                 "url": f"/submissions/{submission.id}", "findings": findings}, status_code=201)

    @api.post("/submissions")
    async def post_submission(request: Request, dataset: str | None = None) -> JSONResponse:
        token = token_of(request)
        with transaction(state.factory) as session:  # refuse an unknown token before reading a large body
            auth.require_user(session, token)
        body = await read_limited(request, state.config.limits.max_body_bytes)
        return await run_in_threadpool(submit, token, body, dataset)

    def readable(session: Any, token: str | None, submission_id: int) -> tuple[User, Submission]:
        user = auth.require_user(session, token)
        submission = session.get(Submission, submission_id)
        if submission is None or not may_read(user, submission, state.config.public):
            raise intake.Refusal(404, f"no submission {submission_id} of yours")
        return user, submission

    @api.get("/submissions")
    def list_submissions(request: Request) -> JSONResponse:
        with transaction(state.factory) as session:
            user = auth.require_user(session, token_of(request))
            rows = session.scalars(select(Submission).where(Submission.user_id == user.id).order_by(Submission.id)).all()
            return JSONResponse([{"id": s.id, "name": s.name, "state": s.state, "score": mean_score(session, s.id)} for s in rows])

    @api.get("/submissions/{submission_id}")
    def get_submission(submission_id: int, request: Request) -> JSONResponse:
        with transaction(state.factory) as session:
            _, submission = readable(session, token_of(request), submission_id)
            results = session.scalars(select(Result).where(Result.submission_id == submission.id).order_by(Result.id)).all()
            return JSONResponse({"id": submission.id, "name": submission.name, "state": submission.state, "score": mean_score(session, submission.id),
                                 "findings": json.loads(submission.findings),
                                 "results": [{"workload": r.workload, "held_out": r.held_out, "status": r.status, "latency_ms": r.latency_ms,
                                              "sol_ms": r.sol_ms, "score": r.score, "flags": json.loads(r.flags), "gpu_uuid": r.gpu_uuid,
                                              "environment": r.environment_id} for r in results]})

    @api.post("/submissions/{submission_id}/cancel")
    def cancel_submission(submission_id: int, request: Request) -> JSONResponse:
        with transaction(state.factory) as session:
            user, submission = readable(session, token_of(request), submission_id)
            if submission.user_id != user.id and not user.is_admin:
                raise intake.Refusal(404, f"no submission {submission_id} of yours")
            if not queue.cancel(session, submission):
                raise intake.Refusal(409, f"submission {submission_id} is {submission.state} already")
            return JSONResponse({"id": submission.id, "state": submission.state})

    @api.get("/boards")
    def list_boards() -> JSONResponse:
        with transaction(state.factory) as session:
            return JSONResponse([{"dataset": k.dataset.name, "dataset_hash": k.dataset.content_hash, "dataset_id": k.dataset.id,
                                  "environment_id": k.environment.id, "hardware": k.environment.hardware, "current": k.current,
                                  "submissions": k.results} for k in boards.board_keys(session)])

    @api.get("/boards/{dataset_id}/{environment_id}")
    def get_board(dataset_id: int, environment_id: int) -> JSONResponse:
        with transaction(state.factory) as session:
            found = boards.board(session, dataset_id, environment_id)
            if found is None:
                raise intake.Refusal(404, f"no board {dataset_id}/{environment_id}")
            return JSONResponse({"dataset": found.dataset.name, "environment_id": environment_id, "baselines_measured": found.baselines_measured,
                                 "standings": [{"user": s.user, "score": s.score, "problems": s.problems, "solved": s.solved, "fast_p": s.fast_p,
                                                "by_category": s.by_category,
                                                "best": [{"problem": e.problem.name, "submission": e.submission.id, "score": e.score.score} for e in s.best]}
                                               for s in found.standings]})

    @api.get("/health")
    def health() -> JSONResponse:
        with transaction(state.factory) as session:
            counts = dict(session.execute(select(Job.state, func.count(Job.id)).group_by(Job.state)).all())
            return JSONResponse({"ok": True, "problems": len(state.served), "jobs": counts})

    @api.post("/admin/users")
    async def add_user(request: Request) -> JSONResponse:
        body = await read_limited(request, 64 << 10)

        def make() -> JSONResponse:
            with transaction(state.factory) as session:
                auth.require_admin(session, token_of(request))
                try:
                    raw = json.loads(body or b"{}")
                except json.JSONDecodeError as exc:
                    raise intake.Refusal(422, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
                if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                    raise intake.Refusal(422, 'expected {"name": USER, "admin": false}')
                try:
                    user, token = auth.create_user(session, raw["name"], bool(raw.get("admin", False)))
                except ValueError as exc:
                    raise intake.Refusal(422, str(exc)) from None
                return JSONResponse({"name": user.name, "admin": user.is_admin, "token": token}, status_code=201)

        return await run_in_threadpool(make)

    @api.post("/admin/baselines")
    def rebaseline(request: Request) -> JSONResponse:
        with transaction(state.factory) as session:
            auth.require_admin(session, token_of(request))
            return JSONResponse({"queued": queue.enqueue_baselines(session, list(state.served), None)})

    return api
