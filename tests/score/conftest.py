"""Fixtures of the scoring tests (helpers in score_testkit.py: a module of its own name, so that no other folder's conftest shadows it)."""

from __future__ import annotations

import pytest

from score_testkit import VECTOR_SCALE
from solbench.data.loaders import load_problems


@pytest.fixture
def vector_scale():
    return load_problems([VECTOR_SCALE])[0]
