"""benchmarks/pool_scaling.py: what it compares between the one-lane run and the others (statuses, missing
workloads, speed-up per lane, latency spread per lane), on traces of real evaluations."""

from __future__ import annotations

from pathlib import Path

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Performance, Status


def _traces(tmp_path: Path, factor: int, lane: str, latencies: list[float]) -> list:
    """Three workloads of a doubling problem, evaluated for real, with a solution multiplying by `factor`."""
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path / "cache", seed=3)
    problem = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": (["n"], "float32")}, {"y": (["n"], "float32")},
                             axes={"n": {"type": "var"}}, workload_axes=[{"n": n} for n in (8, 16, 32)])
    solution = inline_solution("s", problem.name, "pytorch", "k.py::run", {"k.py": f"def run(x):\n    return x * {factor}\n"}, dps=False)
    traces = evaluate(problem, solution, options)
    for trace, value in zip(traces, latencies):
        trace.evaluation.environment = {**(trace.evaluation.environment or {}), "lane": lane}
        trace.evaluation.performance = Performance(latency_ms=value)
    return traces


def test_the_runs_are_compared_with_the_one_lane_run(tmp_path: Path, pool_scaling):
    one = _traces(tmp_path, 2, "gpu0", [1.0, 2.0, 4.0])
    assert [t.evaluation.status for t in one] == [Status.PASSED] * 3
    other = _traces(tmp_path, 2, "gpu1", [1.1, 2.0, 3.0])[:2]  # the third workload is missing
    wrong = _traces(tmp_path, 3, "gpu1", [1.0, 2.0, 4.0])

    summary = pool_scaling.compare({"one-lane": {"wall_s": 10.0, "exit_code": 0, "traces": one, "killed": None, "deaths_said": 0},
                                    "all-lanes": {"wall_s": 4.0, "exit_code": 0, "traces": other, "killed": 123, "deaths_said": 1},
                                    "ray": {"wall_s": 5.0, "exit_code": 1, "traces": wrong, "killed": None, "deaths_said": 0}})

    assert summary["one-lane"]["statuses_identical"] and summary["one-lane"]["missing"] == 0
    many = summary["all-lanes"]
    assert many["speed_up"] == 2.5 and many["speed_up_per_lane"] == 2.5 and many["lanes"] == ["gpu1"]
    assert many["missing"] == 1 and not many["statuses_identical"]  # a lost workload is not an identical outcome
    assert many["latency_spread"] == {"gpu1": (0.05, 2)}  # median of |1.1/1 - 1| and |2/2 - 1|
    assert many["killed"] == 123 and many["deaths_said"] == 1
    assert summary["ray"]["missing"] == 0 and not summary["ray"]["statuses_identical"]
    assert len(summary["ray"]["differing"]) == 3 and summary["ray"]["differing"][0].endswith("PASSED -> INCORRECT_NUMERICAL")
