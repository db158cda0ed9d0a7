"""The report's figures: roofline points and roofs, the suite plots, as real matplotlib SVG."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from solbench.report.figures import series_id
from solbench.report.roofline import BASELINE, BOUND, REFERENCE, RooflinePlotter, roofline_points, roofs_of
from solbench.report.sample import sample_summary
from solbench.report.suite_plots import iso_speedup, score_distribution_svg, speedup_vs_sol_svg
from solbench.score.summary import ProblemScore, WorkloadScore

SVG = "{http://www.w3.org/2000/svg}"
H200_ROOFS = {"dram_tbps": 4.8, "tensor_fp16_tflops": 989.4, "tensor_bf16_tflops": 989.4, "tensor_fp8_tflops": 1978.9,
              "vector_fp32_tflops": 66.9, "tensor_fp64_tflops": 67.0, "sfu_tflops": 4.18}


def _row(solution: str, workload: str, status: str = "PASSED", latency: float | None = 0.5, flops: float | None = 2e9, nbytes: float | None = 1e7,
         solution_set: str | None = None) -> WorkloadScore:
    return WorkloadScore(problem="gemm", solution=solution, workload=workload, status=status, latency_ms=latency, sol_ms=0.01, baseline_ms=1.0,
                         reference_ms=2.0, flops=flops, bytes=nbytes, solution_set=solution_set)


def _points_in(svg: str, label: str) -> int:
    """How many markers the series `label` drew (its <use> elements)."""
    root = ET.fromstring(svg)
    group = next((g for g in root.iter(f"{SVG}g") if g.get("id") == series_id(label)), None)
    return 0 if group is None else sum(1 for _ in group.iter(f"{SVG}use"))


def test_roofs_merge_equal_peaks_and_keep_bandwidth():
    bandwidth, roofs = roofs_of(H200_ROOFS)
    assert bandwidth == 4.8
    assert [(r.label, r.tflops) for r in roofs] == [("tensor fp8", 1978.9), ("tensor fp16/bf16", 989.4), ("tensor fp64/vector fp32", 67.0), ("sfu", 4.18)]
    assert roofs_of({}) == (None, [])


def test_roofline_points_place_each_workload_once_per_series():
    rows = [_row("ref", "w1", latency=2.0, solution_set="reference"), _row("fast", "w1", latency=0.5, solution_set="agent"),
            _row("fast", "w2", flops=4e9, nbytes=1e6, latency=0.25, solution_set="agent"),
            _row("fast", "w3", status="RUNTIME_ERROR", latency=None, solution_set="agent"),
            _row("fast", "w4", flops=0.0, solution_set="agent"), _row("fast", "w5", flops=None, nbytes=None, solution_set="agent")]
    points, notes = roofline_points(rows)
    assert set(points) == {REFERENCE, BASELINE, BOUND, "agent"}
    assert points["agent"] == [(200.0, pytest.approx(4.0)), (4000.0, pytest.approx(16.0))]  # 2e9 FLOP in 0.5 ms: 4 TFLOP/s
    assert points[REFERENCE] == [(200.0, pytest.approx(2e9 / 2.0 / 1e9)), (4000.0, pytest.approx(4e9 / 2.0 / 1e9)), (200.0, pytest.approx(1.0))]
    assert len(points[BOUND]) == 3  # w1, w2, w3: the failed solution's workload still has a T_SOL
    assert notes == ["1 workload(s) do no FLOPs (data movement only): not on the roofline",
                     "1 workload(s) without FLOPs/bytes from the SOL analysis: not placed", "1 failed solution workload(s): not placed"]


def test_attained_rate_is_flops_over_time():
    points, _ = roofline_points([_row("k", "w", latency=1.0, flops=1e12, nbytes=1e9, solution_set="s")])
    assert points["s"] == [(1000.0, pytest.approx(1000.0))]  # 1e12 FLOP in 1 ms = 1000 TFLOP/s


def test_plotter_reuses_its_figure_without_leaking_points():
    plotter = RooflinePlotter(H200_ROOFS, ["reference", "agent"])
    first, _ = plotter.svg("gemm", [_row("k", f"w{i}", solution_set="agent") for i in range(3)], key="a")
    second, _ = plotter.svg("norm", [_row("k", "w9", solution_set="agent", flops=1e6, nbytes=4e6)], key="b")
    assert first is not None and second is not None
    assert (_points_in(first, "agent"), _points_in(second, "agent")) == (3, 1)
    assert (_points_in(first, BOUND), _points_in(second, BOUND)) == (3, 1)
    assert ">gemm<" in first and ">norm<" in second and ">gemm<" not in second
    assert "tensor fp16/bf16 989.4" in first and "DRAM 4.8 TB/s" in first
    assert first.startswith("<svg") and "<?xml" not in first and "DOCTYPE" not in first


def test_plotter_adds_unknown_solutions_for_one_problem_only():
    plotter = RooflinePlotter(H200_ROOFS, [])
    first, _ = plotter.svg("p1", [_row("only-here", "w1")], key="a")
    second, _ = plotter.svg("p2", [_row("other", "w2")], key="b")
    assert _points_in(first, "only-here") == 1 and _points_in(second, "only-here") == 0 and _points_in(second, "other") == 1


def test_plotter_without_roofs_or_points():
    plotter = RooflinePlotter({}, ["agent"])
    svg, notes = plotter.svg("p", [_row("k", "w", solution_set="agent")], key="x")
    assert svg is not None and notes == ["no roofs: the run has no hardware spec"]
    assert plotter.svg("p", [_row("k", "w", flops=None)], key="y")[0] is None


@pytest.mark.parametrize("score", [0.5, 0.7, 0.9])
@pytest.mark.parametrize("ratio", [1.5, 3.0, 40.0])
def test_iso_lines_satisfy_the_score_formula(score, ratio):
    sol = 1.0
    latency = ratio * sol
    baseline = iso_speedup(score, ratio) * latency  # T_b = T_ref = speedup * T_k
    assert 1 / (1 + (latency - sol) / (baseline - sol)) == pytest.approx(score)


def test_iso_line_of_the_baseline_is_speedup_one():
    assert [iso_speedup(0.5, r) for r in (1.1, 10, 1000)] == pytest.approx([1.0, 1.0, 1.0])


def _problem(solution_set: str, score: float | None, ratio: float | None, speedup: float | None, subset: str = "L1") -> ProblemScore:
    return ProblemScore(problem=f"p-{score}-{ratio}", solution=f"{solution_set}-x", solution_set=solution_set, categories={"subset": subset},
                        score=score, median_ratio_to_sol=ratio, geomean_speedup_vs_reference=speedup)


def test_speedup_plot_places_problems_with_both_numbers():
    problems = [_problem("a", 0.8, 2.0, 5.0), _problem("a", 0.3, 9.0, 0.8), _problem("b", 0.95, 1.1, 12.0), _problem("b", None, None, 2.0)]
    svg = speedup_vs_sol_svg(problems)
    assert svg is not None
    assert (_points_in(svg, "a"), _points_in(svg, "b")) == (2, 1)
    assert all(f"S = {s}" in svg for s in ("0.5", "0.7", "0.9"))
    assert speedup_vs_sol_svg([_problem("a", None, None, 2.0)]) is None


def test_score_distribution_has_a_row_per_category_value():
    problems = [_problem("a", 0.4, 2, 2, "L1"), _problem("a", 0.6, 2, 2, "L2"), _problem("b", 0.9, 2, 2, "L2"), _problem("b", None, 2, 2, "L3")]
    svg = score_distribution_svg(problems, "subset", key="k")
    assert svg is not None and ">L1<" in svg and ">L2<" in svg and ">L3<" not in svg  # L3 has no score
    assert score_distribution_svg([_problem("a", None, 2, 2)], "subset", key="k") is None


def test_sample_summary_is_realistic_and_deterministic():
    first, again = sample_summary(8, seed=3), sample_summary(8, seed=3)
    assert first == again
    scores = [w.score for w in first.workloads if w.score is not None]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)
    assert any(w.status != "PASSED" for w in first.workloads) and any(w.sol_ms is None for w in first.workloads)
    for w in first.workloads:
        if w.status == "PASSED" and w.sol_ms and w.latency_ms and w.latency_ms >= w.sol_ms and w.baseline_ms > w.sol_ms:
            assert w.score == pytest.approx(1 / (1 + (w.latency_ms - w.sol_ms) / (w.baseline_ms - w.sol_ms)))
    assert not any(math.isnan(w.flops) for w in first.workloads if w.flops is not None)
