"""Scores per workload, per problem and per suite from real traces and baseline entries."""

from __future__ import annotations

import pytest

from score_testkit import make_trace
from solbench.score.aggregate import BEST_OF_K, score_run, score_workload
from solbench.score.baselines import BaselineEntry
from solbench.score.categories import categories_of
from solbench.score.formula import FASTER_THAN_SOL

CATEGORIES = {"p1": {"subset": "L1", "op_type": "gemm", "precision": "bfloat16", "direction": "forward"},
              "p2": {"subset": "L2", "op_type": "norm", "precision": "bfloat16", "direction": "backward"}}


def entry(problem: str, workload: str, baseline: float | None, reference: float | None = None, sol: float | None = 1.0) -> BaselineEntry:
    return BaselineEntry(problem=problem, workload=workload, definition_hash="x", baseline_ms=baseline, candidate="eager",
                         reference_ms=reference if reference is not None else baseline, sol_ms=sol)


def test_a_workload_score_sets_the_trace_performance_and_the_ratios():
    trace = make_trace("p1", "fast", "w1", latency=3.0, sol=1.0)
    row = score_workload(trace, entry("p1", "w1", baseline=5.0, reference=10.0), "mine")
    assert row.score == pytest.approx(1 / (1 + 2 / 4)) and trace.evaluation.performance.score == row.score
    assert row.speedup_vs_reference == pytest.approx(10 / 3) and row.speedup_vs_baseline == pytest.approx(5 / 3)
    assert row.reclaimed == pytest.approx((10 - 3) / (10 - 1))
    assert row.baseline_candidate == "eager" and row.solution_set == "mine"


def test_a_failed_workload_scores_zero_and_has_no_speedup():
    row = score_workload(make_trace("p1", "bad", "w1", status="INCORRECT_NUMERICAL"), entry("p1", "w1", 5.0))
    assert row.score == 0.0 and row.speedup_vs_reference is None and row.latency_ms is None


def test_faster_than_sol_from_the_evaluator_is_zero_with_the_flag():
    trace = make_trace("p1", "hack", "w1", status="REWARD_HACK", latency=0.5, sol=1.0,
                       log="REWARD_HACK [faster-than-sol]: median 0.5 ms is below T_SOL 1 ms")
    row = score_workload(trace, entry("p1", "w1", 5.0))
    assert row.score == 0.0 and FASTER_THAN_SOL in row.flags


def test_missing_sol_or_baseline_leaves_the_score_blank_but_keeps_the_speedups():
    no_sol = score_workload(make_trace("p1", "s", "w1", latency=2.0, sol=None), entry("p1", "w1", 4.0, sol=None))
    assert no_sol.score is None and no_sol.speedup_vs_baseline == pytest.approx(2.0)
    no_baseline = score_workload(make_trace("p1", "s", "w1", latency=2.0, sol=1.0), None)
    assert no_baseline.score is None and no_baseline.baseline_ms is None


def test_problem_and_suite_aggregation_with_best_of_k():
    entries = {(p, w): entry(p, w, baseline=5.0, reference=5.0) for p in ("p1", "p2") for w in ("w1", "w2")}
    traces = [
        make_trace("p1", "a", "w1", latency=1.0, sol=1.0),  # 1.0
        make_trace("p1", "a", "w2", status="TIMEOUT"),  # 0.0  -> p1/a = 0.5
        make_trace("p1", "b", "w1", latency=5.0, sol=1.0),  # 0.5
        make_trace("p1", "b", "w2", latency=5.0, sol=1.0),  # 0.5  -> p1/b = 0.5
        make_trace("p2", "c", "w1", latency=2.0, sol=1.0),  # 0.8
        make_trace("p2", "c", "w2", latency=2.0, sol=1.0),  # 0.8  -> p2/c = 0.8
    ]
    sets = {"a": "set1", "c": "set1", "b": "set2"}
    rows, problems, suites = score_run(traces, lambda p, w: entries.get((p, w)), CATEGORIES, lambda t: sets[t.solution])
    assert len(rows) == 6
    scores = {(p.problem, p.solution): p.score for p in problems}
    assert scores == {("p1", "a"): pytest.approx(0.5), ("p1", "b"): pytest.approx(0.5), ("p2", "c"): pytest.approx(0.8)}
    p1a = next(p for p in problems if p.solution == "a")
    assert p1a.statuses == {"PASSED": 1, "TIMEOUT": 1} and p1a.median_ratio_to_sol == pytest.approx(1.0)
    assert p1a.geomean_speedup_vs_reference == pytest.approx(5.0)
    by_name = {s.solution: s for s in suites}
    set1 = by_name["set1"]
    assert set1.problems == 2 and set1.score_mean == pytest.approx(0.65) and set1.score_median == pytest.approx(0.65)
    assert set1.by_category["subset"] == {"L1": pytest.approx(0.5), "L2": pytest.approx(0.8)}
    assert set1.by_category["direction"] == {"forward": pytest.approx(0.5), "backward": pytest.approx(0.8)}
    # fast_p over set1's 4 workloads: speedups 5, None (timeout), 2.5, 2.5
    assert set1.fast_p == {"1.0": 0.75, "1.5": 0.75, "2.0": 0.75}
    assert set1.geomean_speedup_vs_reference == pytest.approx((5 * 2.5 * 2.5) ** (1 / 3))
    # best of k: p1 takes the better of a and b (a tie at 0.5: either), p2 its only one
    best = by_name[BEST_OF_K]
    assert best.problems == 2 and best.score_mean == pytest.approx(0.65)


def test_best_of_k_picks_the_better_solution_and_is_absent_with_one_per_problem():
    entries = {("p1", "w1"): entry("p1", "w1", baseline=5.0)}
    traces = [make_trace("p1", "slow", "w1", latency=9.0, sol=1.0), make_trace("p1", "quick", "w1", latency=1.5, sol=1.0)]
    _, _, suites = score_run(traces, lambda p, w: entries.get((p, w)), CATEGORIES, lambda t: t.solution)
    best = next(s for s in suites if s.solution == BEST_OF_K)
    assert best.score_mean == pytest.approx(1 / (1 + 0.5 / 4))
    _, _, single = score_run(traces[:1], lambda p, w: entries.get((p, w)), CATEGORIES, lambda t: t.solution)
    assert [s.solution for s in single] == ["slow"]


def test_a_problem_whose_workloads_have_no_score_has_no_score():
    rows, problems, suites = score_run([make_trace("p1", "a", "w1", latency=2.0, sol=None)], lambda p, w: None, CATEGORIES, lambda t: "s")
    assert problems[0].score is None and suites[0].score_mean is None and suites[0].score_median is None


def test_categories_come_from_the_definition(vector_scale):
    assert categories_of(vector_scale) == {"subset": "none", "op_type": "none", "precision": "float32", "direction": "forward"}


def test_bundled_problem_categories():
    from solbench.data.loaders import load_problems
    from solbench.dataset import bundled_problems_path

    root = bundled_problems_path()
    problems = {p.name: p for p in load_problems([root / "layernorm_backward_gpt2_medium", root / "fp8_gemm_llama3_8b_down_proj"])}
    backward = categories_of(problems["layernorm_backward_gpt2_medium"])
    assert backward["direction"] == "backward" and backward["op_type"] == problems["layernorm_backward_gpt2_medium"].definition.op_type
    assert categories_of(problems["fp8_gemm_llama3_8b_down_proj"])["precision"].startswith("float8")


def test_the_score_records_what_t_sol_is_made_of_and_the_summary_says_how_it_was_priced():
    from solbench.score.run_summary import build_summary

    floored = make_trace("p1", "s", "w1", latency=2.0, sol=1.0)
    floored.evaluation.performance = floored.evaluation.performance.model_copy(
        update={"sol_roofline_ms": 0.25, "sol_floor_ms": 1.0, "sol_floor_applied": True})
    row = score_workload(floored, entry("p1", "w1", 5.0, sol=0.25))
    assert (row.sol_ms, row.sol_roofline_ms, row.sol_floor_ms) == (1.0, 0.25, 1.0)  # the trace's T_SOL (the check's), not the entry's
    assert row.score == pytest.approx(1 / (1 + 1 / 4))
    unfloored = make_trace("p1", "s", "w2", latency=2.0, sol=0.25)
    unfloored.evaluation.performance = unfloored.evaluation.performance.model_copy(
        update={"sol_roofline_ms": 0.25, "sol_floor_ms": 1.0, "sol_floor_applied": False})
    summary = build_summary([floored, unfloored], {}, None, None, "cpu", lambda t: "", created="now", sol_floor=False)
    assert summary.sol_floor is False
    assert any("roofline alone (--no-sol-floor)" in note for note in summary.notes)
    assert any(note.startswith("T_SOL mixed") for note in summary.notes)
    assert not any("T_SOL mixed" in note for note in build_summary([floored], {}, None, None, "cpu", lambda t: "", created="now").notes)
    assert type(summary).model_validate(summary.to_json_dict()).workloads[0].sol_roofline_ms == 0.25
