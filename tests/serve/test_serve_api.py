"""Submitting through the API and through `solbench submit`, end to end: a real server, a real SQLite
file, the real evaluator. A passing solution is evaluated, scored against the baseline the worker
measured first and shown on its board; a refused one never reaches the queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from serve_testkit import ALIASING, PASSING, PATCHING, rows, table_counts


def _submit_cli(service, path, token: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SOLBENCH_TOKEN"}
    if token is not None:
        env["SOLBENCH_TOKEN"] = token
    env["HOME"] = str(service.log.parent)  # no token file from the machine's own home
    return subprocess.run([sys.executable, "-m", "solbench.cli", "submit", str(path), "--server", service.url, *extra],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_submission_is_evaluated_scored_and_ranked(service):
    token = service.user("alice")
    done = _submit_cli(service, PASSING, token, "--wait", "--wait-timeout", "240")
    assert done.returncode == 0, done.stderr
    submission = int(done.stdout.split()[1])
    found = service.call("GET", f"/api/submissions/{submission}", token).body
    assert found["state"] == "done" and [r["status"] for r in found["results"]] == ["PASSED"]
    assert found["results"][0]["score"] is not None and 0 < found["results"][0]["score"] <= 1  # T_b was measured before it
    (board,) = [b for b in service.call("GET", "/api/boards").body if b["current"]]
    standings = service.call("GET", f"/api/boards/{board['dataset_id']}/{board['environment_id']}").body["standings"]
    assert standings[0]["user"] == "alice" and standings[0]["best"][0]["submission"] == submission
    environment = rows(service.db, "SELECT hardware, torch, solbench, clock_policy FROM environments")[0]
    assert environment.hardware and environment.torch and environment.solbench and "not locked" in environment.clock_policy
    assert rows(service.db, "SELECT COUNT(*) FROM baselines WHERE baseline_ms IS NOT NULL")[0][0] >= 1


def test_a_statically_refused_solution_is_answered_at_once_and_not_queued(service):
    token = service.user("bob")
    before = table_counts(service.db)
    refused = _submit_cli(service, PATCHING, token)
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: refused (422): REWARD_HACK: refused by the static analysis: [PY-PATCH]")
    assert table_counts(service.db) == before


def test_the_client_needs_a_token_and_a_server(service):
    missing = _submit_cli(service, PASSING, None)
    assert missing.returncode == 2 and missing.stderr.strip().splitlines() == [missing.stderr.strip()] and "no API token" in missing.stderr
    wrong = _submit_cli(service, PASSING, "sb_not-a-token")
    assert wrong.returncode == 1 and "refused (401): unknown or revoked API token" in wrong.stderr
    unreachable = subprocess.run([sys.executable, "-m", "solbench.cli", "submit", str(PASSING), "--server", "http://127.0.0.1:9"],
                                 capture_output=True, text=True, env={**os.environ, "SOLBENCH_TOKEN": "x"}, timeout=60)
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr and "Traceback" not in unreachable.stderr


def test_a_token_file_is_read_when_no_variable_is_set(service, tmp_path):
    token = service.user("carol")
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    sent = _submit_cli(service, ALIASING, None, "--token-file", str(token_file))
    assert sent.returncode == 0, sent.stderr
    submission = int(sent.stdout.split()[1])
    assert service.call("GET", f"/api/submissions/{submission}", token).status == 200


def test_cancel_and_the_own_list(service):
    token = service.user("dave")
    ids = [service.submit(token, name=f"dave-{i}").body["id"] for i in range(2)]
    cancelled = service.call("POST", f"/api/submissions/{ids[1]}/cancel", token)
    assert cancelled.status in (200, 409)  # 409: the worker finished it first
    mine = service.call("GET", "/api/submissions", token).body
    assert [s["id"] for s in mine] == ids
    final = service.wait(token, ids)
    assert final[ids[0]]["state"] == "done"
    if cancelled.status == 200:
        assert final[ids[1]]["state"] == "cancelled" and final[ids[1]]["results"] == []
        assert service.call("POST", f"/api/submissions/{ids[1]}/cancel", token).status == 409


def test_migrations_match_the_models(service):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine

    from solbench.serve.models import Base

    with create_engine(service.db).connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    assert json.loads(json.dumps(rows(service.db, "SELECT version_num FROM alembic_version")[0][0])) == "0001"
