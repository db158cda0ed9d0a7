"""Abuse of the API: wrong and missing tokens, other users' ids, SQL injection and HTML in names, path-like
source names, a 50 MB body, invalid JSON, the hourly limit. Each gets its status code and a one-line
reason, and a refused request leaves every table as it was."""

from __future__ import annotations

import json

import pytest

from serve_testkit import PASSING, start_service, table_counts

LIMIT = 3


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    found = start_service(tmp_path_factory.mktemp("abuse"), None, "--submissions-per-hour", str(LIMIT))
    yield found
    found.stop()


@pytest.fixture(scope="module")
def users(service):
    return {name: service.user(name) for name in ("mallory", "victim", "limited")}


def _refused(reply, status: int, words: str) -> None:
    assert reply.status == status, (reply.status, reply.text)
    reason = reply.body["error"] if reply.body else reply.text
    assert words in reason and "\n" not in reason, reason


def _solution(**changes):
    return {**json.loads(PASSING.read_text()), **changes}


def test_tokens(service, users):
    before = table_counts(service.db)
    _refused(service.call("POST", "/api/submissions", None, _solution()), 401, "no API token")
    _refused(service.call("POST", "/api/submissions", "sb_wrong", _solution()), 401, "unknown or revoked")
    _refused(service.call("POST", "/api/submissions", None, _solution(), headers={"Authorization": "Basic YWRtaW46YWRtaW4="}), 401, "no API token")
    _refused(service.call("GET", "/api/submissions", "' OR '1'='1"), 401, "unknown or revoked")
    _refused(service.call("POST", "/api/admin/users", users["mallory"], {"name": "eve", "admin": True}), 403, "admin token")
    _refused(service.call("POST", "/api/admin/baselines", users["mallory"]), 403, "admin token")
    _refused(service.call("POST", "/api/admin/users", None, {"name": "eve"}), 401, "no API token")
    assert table_counts(service.db) == before
    assert not [row for row in _token_digests(service) if row.startswith("sb_")]  # never stored in clear


def _token_digests(service) -> list[str]:
    from serve_testkit import rows

    return [row[0] for row in rows(service.db, "SELECT digest FROM tokens")]


def test_another_users_submission_is_out_of_reach(service, users):
    own = service.submit(users["victim"], name="victims-kernel")
    assert own.status == 201, own.text
    victim_id = own.body["id"]
    before = table_counts(service.db)
    for method, path in (("GET", f"/api/submissions/{victim_id}"), ("POST", f"/api/submissions/{victim_id}/cancel")):
        _refused(service.call(method, path, users["mallory"]), 404, f"no submission {victim_id}")
    for method in ("PUT", "DELETE", "PATCH"):
        assert service.call(method, f"/api/submissions/{victim_id}", users["mallory"], _solution()).status == 405
    page = service.call("GET", f"/submissions/{victim_id}", users["mallory"])
    assert page.status == 404 and "victims-kernel" not in page.text and "def run" not in page.text
    assert service.call("GET", f"/submissions/{victim_id}").status == 404  # nor anonymously
    assert "victims-kernel" not in json.dumps(service.call("GET", "/api/submissions", users["mallory"]).body)
    assert table_counts(service.db) == before
    assert service.call("GET", f"/submissions/{victim_id}", users["victim"]).status == 200


def test_sql_injection_and_html_in_names(service, users):
    before = table_counts(service.db)
    _refused(service.call("POST", "/api/admin/users", service.admin, {"name": "x'); DROP TABLE users; --"}), 422, "user name")
    _refused(service.call("POST", "/api/admin/users", service.admin, {"name": "<script>alert(1)</script>"}), 422, "user name")
    _refused(service.call("POST", "/api/submissions", users["mallory"], _solution(name="<img src=x onerror=alert(1)>")), 422, "not a valid solution: name")
    _refused(service.call("POST", "/api/submissions", users["mallory"], _solution(definition="vector_scale' OR 1=1 --")), 422, "no problem named")
    _refused(service.call("POST", "/api/submissions?dataset=x'%20OR%20'1'='1", users["mallory"], _solution()), 422, "no problem named")
    assert service.call("GET", "/problems/1%20OR%201=1").status == 422
    assert service.call("GET", "/boards/1;DROP%20TABLE%20jobs/1").status == 422
    assert table_counts(service.db) == before
    # accepted text fields are stored as sent and shown escaped
    html = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
    sql = "'); DROP TABLE submissions; --"
    solution = _solution(name="html-author", author=html, description=sql)
    solution["sources"][0]["content"] += f"\n# {html}\n"
    accepted = service.call("POST", "/api/submissions", users["mallory"], solution)
    assert accepted.status == 201, accepted.text
    page = service.call("GET", f"/submissions/{accepted.body['id']}", users["mallory"]).text
    assert "<script>document" not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page and "&#39;); DROP TABLE submissions; --" in page
    assert table_counts(service.db)["submissions"] == before["submissions"] + 1
    headers = service.call("GET", "/").headers
    assert "script-src 'self'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ["../escape.py", "../../etc/passwd", "/etc/passwd", "a/../../b.py", "C:\\x.py", "..\\x.py"])
def test_path_like_source_names(service, users, path):
    solution = _solution()
    solution["sources"][0]["path"] = path
    solution["spec"] = {**solution["spec"], "entry_point": f"{path}::run"}
    before = table_counts(service.db)
    _refused(service.call("POST", "/api/submissions", users["mallory"], solution), 422, "path-like")
    assert table_counts(service.db) == before


def test_bodies(service, users):
    before = table_counts(service.db)
    huge = b'{"name": "x", "sources": [{"path": "main.py", "content": "' + b"#" * (50 << 20) + b'"}]}'
    _refused(service.call("POST", "/api/submissions", users["mallory"], huge, {"Content-Type": "application/json"}), 413, "at most")
    for body, words in ((b"{not json", "invalid JSON"), (b"", "invalid JSON"), (b"[1, 2]", "expected a solution JSON object"),
                        (b"\xff\xfe", "not UTF-8"), (b'{"name": "x"}', "not a valid solution"),
                        (json.dumps({**_solution(), "sources": [{"path": f"f{i}.py", "content": ""} for i in range(40)]}).encode(), "40 sources")):
        _refused(service.call("POST", "/api/submissions", users["mallory"], body, {"Content-Type": "application/json"}), 422, words)
    _refused(service.call("POST", "/api/admin/users", service.admin, b"{oops", {"Content-Type": "application/json"}), 422, "invalid JSON")
    assert table_counts(service.db) == before


def test_the_hourly_limit(service, users):
    token = users["limited"]
    accepted = [service.submit(token, name=f"limited-{i}") for i in range(LIMIT)]
    assert [r.status for r in accepted] == [201] * LIMIT
    before = table_counts(service.db)
    refused = service.submit(token, name="one-too-many")
    _refused(refused, 429, f"at most {LIMIT} per user")
    assert 1 <= int(refused.headers["retry-after"]) <= 3600
    assert table_counts(service.db) == before
