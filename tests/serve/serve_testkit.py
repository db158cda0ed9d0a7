"""Helpers of the leaderboard service tests (imported by name: a module called conftest is another folder's in a whole-suite run). A real leaderboard service for the tests: `solbench serve` in a subprocess on a free loopback port,
over a real database (a SQLite file, or the PostgreSQL cluster of test_serve_postgres), with its
worker evaluating on the CPU. The evaluation is made cheap by the problem, not by a stand-in: the
tiny `vector_scale` fixture at its smallest workload, two trials, a short timing budget, no held-out
workloads. Skipped with the reason where the serve extra is not installed."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'solbench[serve]')")
pytest.importorskip("sqlalchemy", reason="the serve extra is not installed (pip install 'solbench[serve]')")

TESTS = Path(__file__).resolve().parents[1]
PROBLEM = TESTS / "fixtures" / "solutions" / "status" / "vector_scale"
PASSING = TESTS / "fixtures" / "solutions" / "status" / "pytorch_dps.json"
ALIASING = TESTS / "exploits" / "05_output_aliases_input.json"  # REWARD_HACK at run time (the output aliases the input)
PATCHING = TESTS / "exploits" / "04_patch_perf_counter.json"  # refused by the static analysis (PY-PATCH)
CHEAP = ["--device", "cpu", "--workloads", "smallest:1", "--hidden", "0", "--trials", "2", "--timing-budget", "0.1"]
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    text: str = ""


@dataclass
class Service:
    """One `solbench serve` process (started again by restart()), its database URL and admin token."""

    db: str
    args: list[str]
    log: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    admin: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [sys.executable, "-m", "solbench.cli", "serve", "--db", self.db, "--dataset", str(PROBLEM), "--port", str(self.port), *self.args]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"solbench serve exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if self.call("GET", "/api/health").status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"solbench serve did not answer in {START_TIMEOUT_S:g} s: {self.log.read_text()[-2000:]}")
        found = re.search(r"API token \(shown once\): (\S+)", self.log.read_text())
        self.admin = self.admin or (found.group(1) if found else "")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def call(self, method: str, path: str, token: str | None = None, body: bytes | dict | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return _reply(response.status, response.read(), dict(response.headers))
        except urllib.error.HTTPError as exc:
            return _reply(exc.code, exc.read(), dict(exc.headers))

    def user(self, name: str, admin: bool = False) -> str:
        reply = self.call("POST", "/api/admin/users", self.admin, {"name": name, "admin": admin})
        assert reply.status == 201, reply
        return reply.body["token"]

    def submit(self, token: str, path: Path = PASSING, **changes: Any) -> Reply:
        solution = {**json.loads(path.read_text()), **changes}
        return self.call("POST", "/api/submissions", token, solution)

    def wait(self, token: str, ids: list[int], timeout_s: float = 240.0) -> dict[int, Any]:
        deadline, found = time.monotonic() + timeout_s, {}
        while time.monotonic() < deadline:
            for submission in ids:
                if submission not in found:
                    reply = self.call("GET", f"/api/submissions/{submission}", token)
                    if reply.body["state"] in ("done", "failed", "cancelled"):
                        found[submission] = reply.body
            if len(found) == len(ids):
                return found
            time.sleep(0.3)
        raise AssertionError(f"{len(ids) - len(found)} of {len(ids)} submissions unfinished after {timeout_s:g} s")


def _reply(status: int, raw: bytes, headers: dict[str, str]) -> Reply:
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    return Reply(status, body, {k.lower(): v for k, v in headers.items()}, text)


def start_service(tmp: Path, db: str | None = None, *args: str) -> Service:
    service = Service(db or f"sqlite:///{tmp / 'serve.db'}", [*CHEAP, *args], tmp / "serve.log")
    service.start()
    return service


def table_counts(db: str) -> dict[str, int]:
    """Rows per table, read straight from the database."""
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as connection:
        return {name: connection.execute(text(f'SELECT COUNT(*) FROM "{name}"')).scalar_one() for name in inspect(connection).get_table_names()}


def rows(db: str, query: str) -> list[Any]:
    from sqlalchemy import create_engine, text

    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as connection:
        return list(connection.execute(text(query)))


