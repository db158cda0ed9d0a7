"""The service on PostgreSQL: a private cluster from Debian's package (initdb and pg_ctl in a temporary
folder, on a free loopback port, as the postgres user when the tests run as root), migrated to the
models' schema, and submissions queued, evaluated and stored exactly once through it. Skipped with the
reason where PostgreSQL or its driver is not installed."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from serve_testkit import free_port, rows, start_service

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'solbench[serve]')")


def _binary(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


@pytest.fixture(scope="module")
def postgres_url():
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    prefix: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="solbench-pg-"))
    if os.geteuid() == 0:  # the server refuses to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run PostgreSQL as")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()
    made = subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"], capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"initdb failed: {made.stderr.strip().splitlines()[-1] if made.stderr.strip() else made.returncode}")
    options = f"-h 127.0.0.1 -p {port} -k {folder}"
    started = subprocess.run([*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "-t", "60", "start"],
                             capture_output=True, text=True)
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {started.stderr.strip()[-300:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_service_on_postgresql(postgres_url, tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine

    from serve_testkit import ALIASING, PASSING
    from solbench.serve.models import Base

    service = start_service(tmp_path, postgres_url)
    try:
        with create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://")).connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        token = service.user("pg-user")
        ids = [service.submit(token, PASSING, name="pg-pass").body["id"], service.submit(token, ALIASING, name="pg-hack").body["id"]]
        bad = service.submit(token, PASSING, name="pg-bad", definition="x'); DROP TABLE jobs; --")
        assert bad.status == 422
        final = service.wait(token, ids)
        assert [r["status"] for r in final[ids[0]]["results"]] == ["PASSED"] and final[ids[0]]["results"][0]["score"] is not None
        assert [r["status"] for r in final[ids[1]]["results"]] == ["REWARD_HACK"]
        assert dict(rows(postgres_url, "SELECT submission_id, COUNT(*) FROM results GROUP BY submission_id")) == {ids[0]: 1, ids[1]: 1}
        assert service.call("GET", f"/submissions/{ids[1]}", token).status == 200
        started = time.monotonic()
        assert service.call("GET", "/").status == 200 and time.monotonic() - started < 30
    finally:
        service.stop()
