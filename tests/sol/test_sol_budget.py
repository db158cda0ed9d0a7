"""solbench.sol.budget: worker processes that each run a task under a time and a memory budget.

The tasks here are plain Python (no torch), so that the real processes start in a fraction of a
second; tests/sol/test_sol_cli.py runs the analysis itself under the same budgets.
"""

from __future__ import annotations

import os
import time

import pytest

from solbench.sol.budget import Done, Limits, Stopped, WorkerPool, WorkerStartError, resident_bytes, run_here


def _pid(task: float, report) -> int:
    time.sleep(task)
    return os.getpid()


def _steps(task: int, report) -> int:
    """Reports a pass, then a second one, then hangs when the task says so."""
    report("first step")
    report(f"step {task}")
    if task == 2:
        time.sleep(600)
    if task == 3:
        raise ValueError("boom\nsecond line")
    return task


def _environment(task: str, report) -> str | None:
    return os.environ.get(task)


def _broken_start() -> None:
    raise ImportError("no such module")


def test_outcomes_come_as_tasks_finish_and_a_hung_one_is_said_with_its_pass() -> None:
    with WorkerPool(2, Limits(timeout_s=1.5), _steps) as pool:
        outcomes = list(pool.run([2, 1, 3, 4]))
    assert [o.index for o in outcomes if isinstance(o, Done)] == [1, 3]  # in the order they finished
    done = {o.index: o for o in outcomes}
    assert done[1].value == 1 and done[3].value == 4
    hung, failed = done[0], done[2]
    assert isinstance(hung, Stopped) and hung.reason == "time" and hung.where == "step 2" and hung.elapsed_s >= 1.5
    assert isinstance(failed, Stopped) and failed.reason == "error" and failed.detail == "ValueError: boom"


def test_workers_are_recycled_after_their_share_of_tasks() -> None:
    with WorkerPool(2, Limits(recycle_after=1), _pid) as pool:
        outcomes = list(pool.run([0.0] * 5))
    assert sorted(o.index for o in outcomes) == [0, 1, 2, 3, 4]
    assert len({o.value for o in outcomes}) == 5  # a fresh process for every task


def test_a_worker_that_cannot_start_is_one_clear_error() -> None:
    with pytest.raises(WorkerStartError, match="cannot start: ImportError: no such module"), WorkerPool(1, Limits(), _pid, prepare=_broken_start) as pool:
        list(pool.run([0.0]))


def test_in_this_process_the_time_budget_holds_and_the_tasks_go_in_order() -> None:
    outcomes = list(run_here([1, 2, 4], Limits(timeout_s=0.5), _steps))
    assert [o.index for o in outcomes] == [0, 1, 2]
    assert isinstance(outcomes[1], Stopped) and outcomes[1].reason == "time" and outcomes[1].where == "step 2"
    assert [o.value for o in outcomes if isinstance(o, Done)] == [1, 4]


def test_resident_bytes_of_this_process_and_of_none() -> None:
    assert resident_bytes(os.getpid()) > 1 << 20
    assert resident_bytes(2**22 + 12345) == 0  # no such process


def test_workers_wait_for_openmp_work_asleep_unless_told_otherwise(monkeypatch) -> None:
    """Workers share the cores: idle OpenMP threads must not spin on them (the same threads, the same split
    of the work, so the same values). A policy set by the user is kept; this process's environment is left as it was."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with WorkerPool(1, Limits(), _environment) as pool:
        (outcome,) = pool.run(["OMP_WAIT_POLICY"])
    assert outcome.value == "PASSIVE" and "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with WorkerPool(1, Limits(), _environment) as pool:
        (outcome,) = pool.run(["OMP_WAIT_POLICY"])
    assert outcome.value == "ACTIVE" and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
