"""Helpers of the exec tests: jobs over a few of the bundled problems (their references) and the lane processes of a pool."""

from __future__ import annotations

import os
from pathlib import Path

from solbench.bench.orchestrator import EvalOptions, reference_solution
from solbench.data.loaders import load_problems
from solbench.data.problem import Problem
from solbench.data.selection import choose_workloads
from solbench.data.trace import Trace
from solbench.exec import Job

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "solbench" / "dataset" / "problems"
CHEAP = ("fused_add_rmsnorm_llama3_8b", "rmsnorm_llama3_8b", "silu_and_mul_llama3_8b")


def bundled(name: str) -> Problem:
    return next(problem for problem in load_problems([BUNDLED]) if problem.name == name)


def quick_options(**changes: object) -> EvalOptions:
    """Correctness only, one trial, a fixed seed: the statuses are the same wherever the jobs run."""
    settings: dict[str, object] = {"device": "cpu", "trials": 1, "timing": False, "hidden": 0, "seed": 7, "static_analysis": False}
    return EvalOptions(**{**settings, **changes})  # type: ignore[arg-type]


def reference_job(name: str, which: str = "smallest:1") -> Job:
    problem = bundled(name)
    return Job(problem, reference_solution(problem), choose_workloads(problem, which))


def outcome(traces: list[Trace]) -> list[tuple[str, str, str]]:
    return [(trace.definition, trace.workload.uuid, trace.evaluation.status.value) for trace in traces]


def process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, T stopped, Z a zombie, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def child_pids(module: str, *, living: bool = False) -> set[int]:
    """This process's children running `python -m MODULE` (living: not zombies waiting to be reaped)."""
    pids = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:  # the thread ended between the listing and the read
            continue
        for child in children:
            try:
                if module.encode() in Path(f"/proc/{child}/cmdline").read_bytes() and not (living and process_state(int(child)) == "Z"):
                    pids.add(int(child))
            except OSError:
                continue
    return pids


def lane_pids() -> set[int]:
    """The pool's lane processes: this process's children running solbench.exec.lane_process."""
    return child_pids("solbench.exec.lane_process")
