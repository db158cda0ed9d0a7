"""Load: 200 submissions from 20 concurrent clients within a bounded time; every one ends with exactly
one stored result, none twice, and every job was claimed once. Each client sends its own code (so
20 evaluations really run) ten times under ten names: the service evaluates a code once per version
key and stores that evaluation's results for each submission of it."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import json

from serve_testkit import PASSING, rows, start_service

CLIENTS, EACH = 20, 10
BOUND_S = 300.0


def test_200_submissions_from_20_clients(tmp_path):
    service = start_service(tmp_path, None, "--batch", "8")
    try:
        tokens = [service.user(f"client{index:02d}") for index in range(CLIENTS)]
        started = time.monotonic()

        def client(index: int) -> list[int]:
            sent = []
            solution = json.loads(PASSING.read_text())
            solution["sources"][0]["content"] += f"\n# the kernel of client {index}\n"
            for number in range(EACH):
                body = {**solution, "name": f"c{index:02d}-s{number:02d}", "description": f"client {index}, submission {number}"}
                reply = service.call("POST", "/api/submissions", tokens[index], body)
                assert reply.status == 201, reply.text
                sent.append(reply.body["id"])
            return sent

        with ThreadPoolExecutor(CLIENTS) as pool:
            ids = [i for found in pool.map(client, range(CLIENTS)) for i in found]
        accepted_s = time.monotonic() - started
        assert len(set(ids)) == CLIENTS * EACH
        for index in range(CLIENTS):
            service.wait(tokens[index], ids[index * EACH:(index + 1) * EACH], timeout_s=BOUND_S)
        elapsed = time.monotonic() - started
        assert elapsed < BOUND_S
        per_submission = dict(rows(service.db, "SELECT submission_id, COUNT(*) FROM results GROUP BY submission_id"))
        assert sorted(per_submission) == sorted(ids) and set(per_submission.values()) == {1}
        jobs = rows(service.db, "SELECT state, attempts FROM jobs WHERE kind = 'submission'")
        assert len(jobs) == CLIENTS * EACH and {(j.state, j.attempts) for j in jobs} == {("done", 1)}
        statuses = {r[0] for r in rows(service.db, "SELECT status FROM results")}
        assert statuses == {"PASSED"}
        evaluated = rows(service.db, "SELECT COUNT(*) FROM results WHERE reused_from IS NULL")[0][0]
        assert evaluated == CLIENTS  # one evaluation per distinct code, each stored once
        print(f"200 submissions accepted in {accepted_s:.1f} s, all evaluated in {elapsed:.1f} s")
    finally:
        service.stop()
