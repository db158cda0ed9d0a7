"""The scripts under benchmarks/ as modules, for their tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def self_check() -> ModuleType:
    return load_script("reference_self_check")


@pytest.fixture(scope="module")
def pool_scaling() -> ModuleType:
    return load_script("pool_scaling")


@pytest.fixture(scope="module")
def run_at_scale() -> ModuleType:
    return load_script("run_at_scale")


@pytest.fixture(scope="module")
def compile_plain() -> ModuleType:
    return load_script("compile_plain")


@pytest.fixture(scope="module")
def tolerance_audit() -> ModuleType:
    return load_script("tolerance_audit")
