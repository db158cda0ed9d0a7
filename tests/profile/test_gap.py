"""The gap decomposition's arithmetic against values computed by hand (the factors multiply to T/T_SOL),
the timeline's busy time and gaps, and the join of measurements with the SOL side."""

from __future__ import annotations

import math

import pytest

from solbench.profile import metrics as m
from solbench.profile.gap import GapInputs, decompose
from solbench.profile.join import build_report, kernel_rows, pipe_utilisation
from solbench.profile.model import ProfileReport, SolSide
from solbench.profile.ncu_csv import KernelRecord
from solbench.profile.timeline import busy_ms, call_timeline, representative

BW = 4.8e12


def test_memory_bound_by_hand():
    # T = 30 us, T_SOL = C / BW = 48 MB / 4.8 TB/s = 10 us: T/T_SOL = 3. The kernels moved D = 60 MB (1.25x), the call's span
    # is 1.25x its busy time, so B' = 30 / 1.25 = 24 us and they ran at 60 MB / 24 us = 2.5 TB/s: 4.8 / 2.5 = 1.92 below peak.
    # 1.25 * 1.25 * 1.92 = 3: nothing remains (r = C / (BW * T_SOL) = 1).
    result = decompose(GapInputs(latency_s=30e-6, sol_s=10e-6, bound="memory", compulsory_bytes=48e6, peak_bandwidth=BW, dram_bytes=60e6,
                                 span_over_busy=1.25))
    values = result.values()
    assert values["t_over_t_sol"] == pytest.approx(3.0)
    assert values["gaps"] == pytest.approx(1.25) and values["extra_bytes"] == pytest.approx(1.25)
    assert values["bandwidth"] == pytest.approx(1.92) and values["remainder"] == pytest.approx(1.0)
    assert [f.name for f in result.factors] == ["gaps", "extra_bytes", "bandwidth", "remainder"]
    assert result.product == pytest.approx(result.t_over_t_sol) and result.notes == []


def test_memory_bound_with_a_bound_below_compulsory_bytes_over_bandwidth():
    # T_SOL = 8 us although C / BW = 10 us (outputs priced at the on-chip write rate): r = C / (BW * T_SOL) = 1.25.
    result = decompose(GapInputs(latency_s=20e-6, sol_s=8e-6, bound="memory", compulsory_bytes=48e6, peak_bandwidth=BW, dram_bytes=48e6,
                                 span_over_busy=1.0))
    values = result.values()
    assert values["extra_bytes"] == pytest.approx(1.0) and values["gaps"] == pytest.approx(1.0)
    assert values["bandwidth"] == pytest.approx(BW * 20e-6 / 48e6)  # 2.0
    assert values["remainder"] == pytest.approx(1.25)
    assert result.product == pytest.approx(2.5)


def test_compute_bound_by_hand():
    # T = 100 us, T_SOL = 40 us (2.5x); no gaps; the tensor pipe was 50% busy: 2x; the rest, B' * u / T_SOL = 100 * 0.5 / 40 = 1.25.
    result = decompose(GapInputs(latency_s=100e-6, sol_s=40e-6, bound="tensor_bf16", compulsory_bytes=1e6, peak_bandwidth=BW, dram_bytes=9e6,
                                 span_over_busy=1.0, pipe_utilisation=0.5))
    assert [f.name for f in result.factors] == ["gaps", "pipe", "remainder"]
    assert result.values() == pytest.approx({"t_over_t_sol": 2.5, "gaps": 1.0, "pipe": 2.0, "remainder": 1.25})


@pytest.mark.parametrize("given, left_out, note", [
    (dict(dram_bytes=None), "extra_bytes", "DRAM bytes not measured"),
    (dict(span_over_busy=None), "gaps", "no CUPTI timeline"),
    (dict(compulsory_bytes=0.0), "bandwidth", "no compulsory bytes"),
])
def test_a_missing_measurement_is_left_out_and_the_product_stays_exact(given, left_out, note):
    inputs = dict(latency_s=30e-6, sol_s=10e-6, bound="memory", compulsory_bytes=48e6, peak_bandwidth=BW, dram_bytes=60e6, span_over_busy=1.25)
    result = decompose(GapInputs(**{**inputs, **given}))
    assert left_out not in result.values()
    assert any(note in line for line in result.notes)
    assert result.product == pytest.approx(3.0)


def test_without_the_pipes_utilisation_the_remainder_holds_it():
    result = decompose(GapInputs(latency_s=50e-6, sol_s=10e-6, bound="sfu", compulsory_bytes=1.0, peak_bandwidth=BW, span_over_busy=1.25))
    assert result.values() == pytest.approx({"t_over_t_sol": 5.0, "gaps": 1.25, "remainder": 4.0})
    assert "not measured" in result.notes[0]


def test_a_floor_bound_is_said_and_gaps_never_below_one():
    result = decompose(GapInputs(latency_s=2e-6, sol_s=1e-6, bound="memory", compulsory_bytes=4096, peak_bandwidth=BW, dram_bytes=4096,
                                 span_over_busy=0.99, floor_bound=True))
    assert result.values()["gaps"] == 1.0
    assert result.values()["remainder"] == pytest.approx(4096 / (BW * 1e-6))  # far below 1: the floor, not the bytes, sets T_SOL
    assert any("latency floor" in note for note in result.notes)
    assert result.product == pytest.approx(2.0)


@pytest.mark.parametrize("latency, sol", [(0.0, 1e-6), (1e-6, 0.0), (-1.0, 1.0)])
def test_no_decomposition_without_positive_times(latency, sol):
    with pytest.raises(ValueError):
        decompose(GapInputs(latency_s=latency, sol_s=sol, bound="memory", compulsory_bytes=1, peak_bandwidth=BW))


# --- the timeline ------------------------------------------------------------------------------------

def test_busy_time_is_the_union_of_the_activities():
    spans = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.75)]
    assert busy_ms(spans) == pytest.approx(4.0)
    timeline = call_timeline(spans)
    assert (timeline.span_ms, timeline.busy_ms, timeline.gaps_ms, timeline.activities) == pytest.approx((6.0, 4.0, 2.0, 4))
    assert call_timeline([]) is None and busy_ms([]) == 0.0


def test_the_representative_call_is_the_median_span():
    calls = [[(0.0, 3.0)], [(0.0, 1.0)], [], [(0.0, 0.5), (1.5, 2.0)]]
    chosen = representative(calls)
    assert chosen.span_ms == 2.0 and chosen.busy_ms == 1.0  # the spans 3, 1, 2: the middle one; the call without activity is not one
    assert representative([[], []]) is None


# --- the join ------------------------------------------------------------------------------------------

def record(index: int, duration_s: float, read: float, write: float, tensor: float | None, fma: float) -> KernelRecord:
    return KernelRecord(index, f"kernel_{index}", {m.DURATION: duration_s, m.DRAM_READ: read, m.DRAM_WRITE: write, m.L2_BYTES: read * 2,
                                                   m.TENSOR_HMMA: tensor, m.TENSOR_GMMA: None, m.FMA_PIPE: fma, m.OCCUPANCY: 50.0,
                                                   m.REGISTERS: 32.0, m.GRID: 132.0, m.BLOCK: 256.0})


def sol_side(bound: str = "memory", t_sol_ms: float = 0.010) -> SolSide:
    return SolSide(hardware="H200", policy="relaxed", t_sol_ms=t_sol_ms, t_roofline_ms=t_sol_ms, t_floor_ms=0.0009, floor_bound=False,
                   bottleneck=bound, compulsory_bytes=48e6, bytes_fused=48e6, flops_by_unit={"vector_fp32": 1e7}, peak_bandwidth_bytes_per_s=BW)


def test_kernel_rows_and_the_pipe_weighted_by_duration():
    rows = kernel_rows([record(0, 1e-3, 4.8e9, 0.0, 80.0, 10.0), record(1, 3e-3, 0.0, 0.0, 40.0, 30.0)], BW)
    assert rows[0].duration_ms == pytest.approx(1.0) and rows[0].dram_bandwidth_share == pytest.approx(1.0)  # 4.8 GB in 1 ms at 4.8 TB/s
    assert rows[0].tensor_pipe_pct == 80.0 and rows[0].l2_bytes == 9.6e9
    assert pipe_utilisation(rows, "tensor_bf16") == pytest.approx((80 * 1 + 40 * 3) / 4 / 100)
    assert pipe_utilisation(rows, "vector_fp32") == pytest.approx((10 * 1 + 30 * 3) / 4 / 100)
    assert pipe_utilisation(rows, "sfu") is None and pipe_utilisation(rows, "tensor_fp64") is None


def test_a_report_joins_everything_and_round_trips_through_json():
    records = [record(0, 20e-6, 30e6, 10e6, 0.0, 5.0), record(1, 5e-6, 15e6, 5e6, None, 1.0)]  # D = 60 MB
    timeline = call_timeline([(0.0, 0.012), (0.015, 0.024)])  # span 24 us, busy 21 us
    report = build_report(problem="scale", solution="s", workload="w-1", status="PASSED", latency_ms=0.030, latency_source="evaluation",
                          sol=sol_side(), records=records, timeline=timeline, calls=9, seconds={"ncu": 3.0}, tool={"ncu": "/usr/bin/ncu"})
    assert report.totals.kernels == 2 and report.totals.dram_bytes == pytest.approx(60e6) and report.totals.duration_ms == pytest.approx(0.025)
    gap = report.gap
    assert gap["t_over_t_sol"] == pytest.approx(3.0) and gap["gaps"] == pytest.approx(24 / 21) and gap["extra_bytes"] == pytest.approx(1.25)
    assert math.prod(value for name, value in gap.items() if name != "t_over_t_sol") == pytest.approx(3.0)
    again = ProfileReport.model_validate_json(report.to_json_text())
    assert again == report and again.timeline.calls == 9 and again.decomposition.factors[-1].name == "remainder"


def test_a_report_without_t_sol_or_kernels_says_why():
    report = build_report(problem="p", solution="s", workload="w", status="PASSED", latency_ms=0.01, latency_source="evaluation", sol=None,
                          records=[], timeline=None)
    assert report.decomposition is None and report.gap == {}
    assert any("profiled no kernel" in note for note in report.notes) and any("no T_SOL" in note for note in report.notes)
