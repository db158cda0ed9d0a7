"""The FastAPI application: the API and the pages over one ServiceState, one-line errors for every
refusal (JSON under /api, a page elsewhere), and headers that keep a page from running anything but
its own script."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from starlette.exceptions import HTTPException

from solbench import __version__
from solbench.serve import api, pages
from solbench.serve.auth import AuthError
from solbench.serve.intake import Refusal
from solbench.serve.state import ServiceState
from solbench.serve.templates import environment

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def create_app(state: ServiceState) -> FastAPI:
    state.templates = state.templates or environment()
    app = FastAPI(title="solbench leaderboard", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(api.router(state))
    app.include_router(pages.router(state))

    def refuse(request: Request, status: int, reason: str, headers: dict[str, str] | None = None, **extra: object) -> Response:
        reason = " ".join(str(reason).split())
        if request.url.path.startswith("/api"):
            return api.error(status, reason, headers, **extra)
        html = state.templates.get_template("error").render(title=f"{status}", viewer=None, message=reason)
        return HTMLResponse(html, status_code=status, headers=headers)

    @app.exception_handler(Refusal)
    async def on_refusal(request: Request, exc: Refusal) -> Response:
        return refuse(request, exc.status, exc.reason, exc.headers, **exc.extra)

    @app.exception_handler(AuthError)
    async def on_auth(request: Request, exc: AuthError) -> Response:
        return refuse(request, exc.status, exc.reason, {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return refuse(request, 422, f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Response:
        return refuse(request, exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> Response:
        return refuse(request, 500, f"internal error: {type(exc).__name__}")

    @app.middleware("http")
    async def headers(request: Request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    return app
