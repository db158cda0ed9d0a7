"""The leaderboard service tests' fixtures; the helpers are in serve_testkit.py."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'solbench[serve]')")
pytest.importorskip("sqlalchemy", reason="the serve extra is not installed (pip install 'solbench[serve]')")

from serve_testkit import start_service  # noqa: E402 - after the skips


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A service for a module of tests (on SQLite), stopped after it."""
    found = start_service(tmp_path_factory.mktemp("serve"))
    yield found
    found.stop()
