"""The worker pair: one reference worker can serve several problems in turn, while every solution
gets a fresh solution worker; each trace records the seconds of its phases."""

from __future__ import annotations

from pathlib import Path

from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution
from solbench.bench.phases import PHASES
from solbench.bench.workers import WorkerPair
from solbench.data.inline import inline_problem
from solbench.data.trace import Status


def test_the_reference_worker_is_kept_across_problems_and_solution_workers_are_not(tmp_path: Path):
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")},
                            workload_axes=[{}, {}])
    negate = inline_problem("negate", "def run(x):\n    return -x\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=2, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    with WorkerPair.for_options("cpu", options) as pair:
        first = evaluate(double, reference_solution(double), options, workers=pair)
        reference_pid = pair.reference.process.pid
        assert pair.worker is None  # the solution's worker went with its evaluation
        second = evaluate(negate, reference_solution(negate), options, workers=pair)
        assert pair.reference.process.pid == reference_pid
        assert pair.started_workers == 3  # one reference worker, one solution worker per solution
    assert [t.evaluation.status for t in first + second] == [Status.PASSED] * 3, [t.evaluation.log for t in first + second]
    assert pair.reference is None and not pair.session.root.exists()

    phases = [trace.evaluation.phases for trace in first + second]
    assert all(set(p) <= set(PHASES) and all(v >= 0 for v in p.values()) for p in phases)
    assert "start" in phases[0] and "build" in phases[0] and "start" not in phases[1]  # the run's start-up lands in its first trace
    for p in phases:
        assert {"inputs", "reference", "correctness", "timing", "verify", "other"} <= set(p)
        assert p["correctness"] > 0 and p["timing"] > 0
    assert phases[2]["start"] < phases[0]["start"]  # loading a problem into a running reference worker is cheaper than starting one
