"""benchmarks/run_at_scale.py: how the second run over the same baselines is compared with the first, when
both ran whole and when either was cut at its limit."""

from __future__ import annotations

from types import ModuleType


def _run(wall_s: float, cut: bool, timeline: list[tuple[float, int]]) -> dict:
    return {"wall_s": wall_s, "cut_at_limit": cut, "timeline": timeline, "problems_scored": timeline[-1][1] if timeline else 0}


def test_two_whole_runs_are_compared_by_their_walls(run_at_scale: ModuleType) -> None:
    first, again = _run(300.0, False, [(20.0, 1), (300.0, 10)]), _run(100.0, False, [(5.0, 1), (100.0, 10)])
    assert run_at_scale.second_run_speedup(first, again) == {"problems": 10, "first_s": 300.0, "again_s": 100.0, "ratio": 3.0}


def test_a_cut_first_run_is_compared_on_the_problems_it_finished(run_at_scale: ModuleType) -> None:
    """The first run finished 4 problems before its limit; the second all 10: each is timed to its 4th problem."""
    first = _run(480.0, True, [(60.0, 1), (200.0, 3), (400.0, 4)])
    again = _run(150.0, False, [(10.0, 1), (50.0, 4), (150.0, 10)])
    assert run_at_scale.second_run_speedup(first, again) == {"problems": 4, "first_s": 400.0, "again_s": 50.0, "ratio": 8.0}


def test_a_run_that_finished_nothing_has_no_ratio(run_at_scale: ModuleType) -> None:
    first, again = _run(480.0, True, []), _run(100.0, False, [(10.0, 1)])
    speedup = run_at_scale.second_run_speedup(first, again)
    assert speedup["problems"] == 0 and speedup["ratio"] is None
    sampled_before_any = _run(480.0, True, [(30.0, 0), (480.0, 0)])  # progress seen, nothing finished: not a time to 0 problems
    assert run_at_scale.second_run_speedup(sampled_before_any, again) == {"problems": 0, "first_s": None, "again_s": None, "ratio": None}
    assert run_at_scale.seconds_to([(10.0, 1), (30.0, 3)], 2) == 30.0 and run_at_scale.seconds_to([(10.0, 1)], 2) is None
