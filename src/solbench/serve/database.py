"""Engines, sessions and migrations. SQLite (a file, the default) or PostgreSQL, by URL.

SQLite is opened in WAL mode with a busy timeout, and every transaction begins IMMEDIATE, so that
the server's threads and the worker processes serialise their writes instead of failing on a lock
upgrade; PostgreSQL needs nothing of the kind (the queue's claims are conditional updates)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class DatabaseError(RuntimeError):
    """A database URL that cannot be used: one line for the user."""


def normalise_url(url: str) -> str:
    """postgresql:// means the psycopg 3 driver (the serve extra's); a plain path means a SQLite file."""
    if "://" not in url:
        return f"sqlite:///{Path(url).resolve()}"
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise DatabaseError(f"--db {url!r}: not a database URL ({exc})") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
        return engine
    try:
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    except Exception as exc:  # noqa: BLE001 - an unknown driver or dialect: one line
        raise DatabaseError(f"--db {url!r}: {type(exc).__name__}: {exc}") from None


def _sqlite_connect(connection: Any, _record: Any) -> None:
    connection.isolation_level = None  # transactions are begun by the "begin" listener (IMMEDIATE)
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextlib.contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose work is committed at the end, rolled back on an exception."""
    with factory() as session, session.begin():
        yield session


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (Alembic, the scripts in serve/migrations)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except DatabaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - unreachable server, bad credentials, a file we may not write: one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DatabaseError(f"cannot open the database {engine.url.render_as_string(hide_password=True)}: {type(exc).__name__}: {first}") from None
