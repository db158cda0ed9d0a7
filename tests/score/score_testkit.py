"""Helpers of the scoring tests: real traces made as the evaluator makes them (no evaluation), and the fixtures' paths."""

from __future__ import annotations

from pathlib import Path

from solbench.data.trace import Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VECTOR_SCALE = FIXTURES / "solutions" / "status" / "vector_scale"


def make_trace(problem: str, solution: str, workload: str, status: str = "PASSED", latency: float | None = None, sol: float | None = None,
               log: str = "") -> Trace:
    performance = {"latency_ms": latency, "sol_ms": sol} if latency is not None else None
    return Trace.model_validate({
        "definition": problem, "solution": solution,
        "workload": {"uuid": workload, "axes": {"n": 16}, "inputs": {}},
        "evaluation": {"status": status, "performance": performance, "log": log},
    })
