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
    assert all(t.evaluation.performance.launch_overhead_ms is None for t in first + second)  # no launch gate on a CPU
    for p in phases:
        assert {"inputs", "reference", "correctness", "timing", "verify", "sol", "other"} <= set(p)
        assert p["correctness"] > 0 and p["timing"] > 0
    assert phases[2]["start"] < phases[0]["start"]  # loading a problem into a running reference worker is cheaper than starting one


def test_the_next_solution_worker_is_started_ahead_and_taken_only_by_its_own_solution(tmp_path: Path):
    """plan_next: the planned solution's worker starts while the current one is evaluated and is used by
    that solution's attach; a spare planned for another solution is killed, never attached."""
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    negate = inline_problem("negate", "def run(x):\n    return -x\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=2, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    first_solution, second_solution = reference_solution(double), reference_solution(negate)
    with WorkerPair.for_options("cpu", options) as pair:
        pair.start_ahead = True
        pair.plan_next(second_solution)
        first = evaluate(double, first_solution, options, workers=pair)
        assert pair.spare is not None and pair.spare[0] is second_solution and pair.spare[1].alive
        spare_pid = pair.spare[1].process.pid
        second = evaluate(negate, second_solution, options, workers=pair)
        assert pair.spares_taken == 1 and pair.started_workers == 3  # reference, first solution, second (started ahead)
        logs = sorted(p.name for p in (pair.session.root / "logs").iterdir())
        assert logs == ["reference-1.log", "solution-2.log", "solution-3.log"]

        pair.plan_next(first_solution)  # planned, but the next attach is for another solution
        third = evaluate(negate, second_solution, options, workers=pair)
        planned = pair.spare[1]
        assert pair.spares_taken == 1
        fourth = evaluate(negate, second_solution, options, workers=pair)  # not the planned solution: its spare is killed
        assert pair.spare is None and not planned.alive and pair.spares_taken == 1
    traces = first + second + third + fourth
    assert [t.evaluation.status for t in traces] == [Status.PASSED] * 4, [t.evaluation.log for t in traces]
    assert spare_pid != planned.process.pid


def test_without_a_plan_no_worker_is_started_ahead(tmp_path: Path):
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=1, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    with WorkerPair.for_options("cpu", options) as pair:
        assert pair.start_ahead is False  # on a CPU the start-up would compete with timed calls
        pair.plan_next(reference_solution(double))
        evaluate(double, reference_solution(double), options, workers=pair)
        assert pair.spare is None and pair.started_workers == 2
