"""Fixtures of the energy tests (helpers in energy_testkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from energy_testkit import write_spec


@pytest.fixture
def energy_spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path)
