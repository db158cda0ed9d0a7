"""`solbench submit`: send a solution to a leaderboard service. The token comes from $SOLBENCH_TOKEN,
else from a file (default ~/.config/solbench/token). Standard library only: the client needs no extra."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

TOKEN_ENV = "SOLBENCH_TOKEN"
TOKEN_FILE = Path.home() / ".config" / "solbench" / "token"
FINISHED = {"done", "failed", "cancelled"}


class ClientError(Exception):
    """One line for the user; `code` is the exit code (1: the server refused, 2: it could not be asked)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def find_token(token_file: Path | None = None) -> str:
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        return token
    path = token_file or TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    if not token:
        raise ClientError(f"no API token: set ${TOKEN_ENV} or write it to {path}", 2)
    return token


def request(server: str, method: str, path: str, token: str, body: bytes | None = None, timeout: float = 60.0) -> Any:
    url = server.rstrip("/") + path
    if not url.startswith(("http://", "https://")):
        raise ClientError(f"--server {server!r}: expected http://HOST:PORT or https://...", 2)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, method=method, headers=headers), timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read()).get("error", "")
        except (ValueError, AttributeError, OSError):
            reason = ""
        raise ClientError(f"refused ({exc.code}): {reason or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}", 2) from None


def submit(solution: Any, server: str, token: str, dataset: str | None = None) -> dict[str, Any]:
    """Send a loaded Solution (its sources inlined, as `solbench eval` reads them); the server's answer."""
    query = f"?dataset={urllib.parse.quote(dataset)}" if dataset else ""
    return request(server, "POST", f"/api/submissions{query}", token, solution.to_json().encode("utf-8"))


def wait(server: str, token: str, submission_id: int, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        found = request(server, "GET", f"/api/submissions/{submission_id}", token)
        if found["state"] in FINISHED:
            return found
        if time.monotonic() > deadline:
            raise ClientError(f"submission {submission_id} is still {found['state']} after {timeout_s:g} s", 2)
        time.sleep(1.0)

