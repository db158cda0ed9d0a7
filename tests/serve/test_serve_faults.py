"""Faults: the worker process is SIGKILLed in the middle of a job and the server is restarted; the
killed job's lease expires, it is claimed again, and every job finishes exactly once with one result
per workload: nothing lost, nothing stored twice."""

from __future__ import annotations

import json
import os
import signal
import time

from serve_testkit import PASSING, rows, start_service

SUBMISSIONS = 4
LEASE_S = 3


def _running_job(db: str, timeout_s: float = 240.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = rows(db, "SELECT id, worker FROM jobs WHERE kind = 'submission' AND state = 'running'")
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no submission job started running")


def test_a_killed_worker_and_a_restarted_server_lose_nothing(tmp_path):
    service = start_service(tmp_path, None, "--lease", str(LEASE_S), "--batch", "1")
    try:
        token = service.user("faults")
        solution = json.loads(PASSING.read_text())
        ids = []
        for index in range(SUBMISSIONS):  # distinct code: each is evaluated
            body = {**solution, "name": f"fault-{index}", "sources": [{**solution["sources"][0], "content": solution["sources"][0]["content"] + f"\n# {index}\n"}]}
            ids.append(service.call("POST", "/api/submissions", token, body).body["id"])
        job_id, worker = _running_job(service.db)
        os.kill(int(worker.rsplit(":", 1)[1]), signal.SIGKILL)
        service.stop()
        assert rows(service.db, f"SELECT state FROM jobs WHERE id = {int(job_id)}")[0][0] == "running"  # left with its lease
        service.start()
        final = service.wait(token, ids, timeout_s=240)
    finally:
        service.stop()
    assert {found["state"] for found in final.values()} == {"done"}
    per_submission = dict(rows(service.db, "SELECT submission_id, COUNT(*) FROM results GROUP BY submission_id"))
    assert per_submission == {submission: 1 for submission in ids}
    duplicates = rows(service.db, "SELECT job_id, workload, COUNT(*) FROM results GROUP BY job_id, workload HAVING COUNT(*) > 1")
    assert duplicates == []
    jobs = dict(rows(service.db, "SELECT id, attempts FROM jobs WHERE kind = 'submission'"))
    assert jobs[job_id] >= 2 and set(rows(service.db, "SELECT DISTINCT state FROM jobs")) == {("done",)}
    assert {r[0] for r in rows(service.db, "SELECT status FROM results")} == {"PASSED"}
