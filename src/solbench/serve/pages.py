"""The server-rendered pages: the boards, a board, a problem, a submission, a user's own
submissions, and logging in (the token in an HttpOnly, SameSite=Strict cookie, used for reading
pages only; every change goes through the API with a bearer token)."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from solbench.report.html_template import SCRIPT, STYLE
from solbench.score.formula import FAST_P_THRESHOLDS
from solbench.serve import auth, boards
from solbench.serve.api import read_limited
from solbench.serve.database import transaction
from solbench.serve.intake import Refusal
from solbench.serve.models import Problem, Submission, User
from solbench.serve.state import ServiceState
from solbench.serve.templates import EXTRA_STYLE
from solbench.serve.views import may_read, mean_score, problem_view, submission_view

COOKIE = "solbench_token"


def viewer_of(session, request: Request) -> User | None:
    return auth.user_for_token(session, request.cookies.get(COOKIE) or auth.bearer(request.headers.get("authorization")))


def router(state: ServiceState) -> APIRouter:
    pages = APIRouter()

    def render(name: str, title: str, viewer: User | None, status: int = 200, **context: object) -> HTMLResponse:
        html = state.templates.get_template(name).render(title=title, viewer=viewer, **context)
        return HTMLResponse(html, status_code=status)

    def readable(viewer: User | None):
        return lambda submission: may_read(viewer, submission, state.config.public)

    @pages.get("/static/style.css")
    def style() -> Response:
        return Response(STYLE + EXTRA_STYLE, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    @pages.get("/static/sort.js")
    def script() -> Response:
        return Response(SCRIPT, media_type="text/javascript", headers={"Cache-Control": "max-age=3600"})

    @pages.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        with transaction(state.factory) as session:
            problems = [session.get(Problem, pid) for pid in sorted(state.served, key=lambda pid: state.served[pid][1].name)]
            return render("index", "solbench leaderboards", viewer_of(session, request), keys=boards.board_keys(session), problems=problems)

    @pages.get("/boards/{dataset_id}/{environment_id}", response_class=HTMLResponse)
    def board(dataset_id: int, environment_id: int, request: Request) -> HTMLResponse:
        with transaction(state.factory) as session:
            viewer = viewer_of(session, request)
            found = boards.board(session, dataset_id, environment_id)
            if found is None:
                raise Refusal(404, f"no board {dataset_id}/{environment_id}")
            others = [k for k in boards.board_keys(session) if k.dataset.name == found.dataset.name and k.environment.hardware == found.environment.hardware
                      and (k.dataset.id, k.environment.id) != (dataset_id, environment_id)]
            categories = sorted({c for s in found.standings for c in s.by_category})
            return render("board", f"{found.dataset.name} on {found.environment.hardware}", viewer, b=found, others=others, categories=categories,
                          fast_keys=[f"{p:.1f}" for p in FAST_P_THRESHOLDS], readable=readable(viewer))

    @pages.get("/problems/{problem_id}", response_class=HTMLResponse)
    def problem(problem_id: int, request: Request, env: int | None = None) -> HTMLResponse:
        with transaction(state.factory) as session:
            viewer = viewer_of(session, request)
            row = session.get(Problem, problem_id)
            if row is None:
                raise Refusal(404, f"no problem {problem_id}")
            return render("problem", row.name, viewer, v=problem_view(session, row, env), readable=readable(viewer))

    @pages.get("/submissions/{submission_id}", response_class=HTMLResponse)
    def submission(submission_id: int, request: Request) -> HTMLResponse:
        with transaction(state.factory) as session:
            viewer = viewer_of(session, request)
            row = session.get(Submission, submission_id)
            if row is None or not may_read(viewer, row, state.config.public):
                raise Refusal(404, f"no submission {submission_id} that you may read" + ("" if viewer else " (log in to see your own)"))
            return render("submission", f"submission #{row.id}: {row.name}", viewer, v=submission_view(session, row))

    @pages.get("/me", response_class=HTMLResponse)
    def mine(request: Request) -> Response:
        with transaction(state.factory) as session:
            viewer = viewer_of(session, request)
            if viewer is None:
                return RedirectResponse("/login", status_code=303)
            rows = [(s, session.get(Problem, s.problem_id), mean_score(session, s.id))
                    for s in session.scalars(select(Submission).where(Submission.user_id == viewer.id).order_by(Submission.id.desc()))]
            return render("mine", f"submissions of {viewer.name}", viewer, rows=rows)

    @pages.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> HTMLResponse:
        with transaction(state.factory) as session:
            return render("login", "log in", viewer_of(session, request), message="")

    @pages.post("/login")
    async def login(request: Request) -> Response:
        body = await read_limited(request, 4096)
        token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()

        def check() -> Response:
            with transaction(state.factory) as session:
                if auth.user_for_token(session, token) is None:
                    return render("login", "log in", None, status=401, message="unknown or revoked API token")
            response = RedirectResponse("/me", status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
            return response

        return await run_in_threadpool(check)

    @pages.get("/logout")
    def logout() -> Response:
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    return pages
