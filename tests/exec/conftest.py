"""The jobs over a few of the bundled problems and their serial run, shared by the exec tests."""

from __future__ import annotations

import pytest
from exec_testkit import CHEAP, quick_options, reference_job

from solbench.data.trace import Trace
from solbench.exec import Job, evaluate_jobs


@pytest.fixture(scope="session")
def cheap_jobs() -> list[Job]:
    return [reference_job(name) for name in CHEAP]


@pytest.fixture(scope="session")
def serial_traces(cheap_jobs: list[Job]) -> list[Trace]:
    return evaluate_jobs(cheap_jobs, quick_options(), executor="serial")
