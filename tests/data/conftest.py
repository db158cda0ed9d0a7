"""Shared builders for the spec tests: plain JSON objects, as a user would write them."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest


def _reference_for(inputs: dict[str, Any], body: str) -> str:
    return f"def run({', '.join(inputs)}):\n    {body}\n"


@pytest.fixture
def definition_data() -> Callable[..., dict[str, Any]]:
    """Factory of definition JSON objects; by default one var axis M, one input x[M] and one output y[M].

    Any keyword replaces the top-level key of that name; the reference follows the inputs unless given.
    """

    def make(**overrides: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": "spec_test",
            "axes": {"M": {"type": "var"}},
            "inputs": {"x": {"shape": ["M"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["M"], "dtype": "float32"}},
        }
        data.update(copy.deepcopy(overrides))
        data.setdefault("reference", _reference_for(data["inputs"], "return x"))
        return data

    return make
