"""Joining the measurements with the SOL side: per-kernel rows, the call's totals, the utilisation of
the bound unit's pipe, and the profile document with its gap decomposition. Pure functions of what was
measured and analysed (tested on hand-made values)."""

from __future__ import annotations

import datetime
from typing import Any, Sequence

from solbench.profile import metrics as m
from solbench.profile.gap import MEMORY, GapInputs, decompose
from solbench.profile.model import DecompositionRow, FactorRow, KernelRow, ProfileReport, SolSide, TimelineSummary, Totals
from solbench.profile.ncu_csv import KernelRecord
from solbench.profile.timeline import CallTimeline

# The ncu column that measures each SOL unit's pipe (units without one: fp64, int32, sfu are not measured).
TENSOR_PIPE_UNITS = {"tensor_fp32", "tensor_tf32", "tensor_fp16", "tensor_bf16", "tensor_fp8", "tensor_fp4", "tensor_int8"}
FMA_PIPE_UNITS = {"vector_fp32", "vector_fp16"}


def kernel_rows(records: Sequence[KernelRecord], peak_bandwidth: float | None) -> list[KernelRow]:
    rows = []
    for record in records:
        value = record.value
        duration_s = value(m.DURATION)
        read, write = value(m.DRAM_READ), value(m.DRAM_WRITE)
        share = None
        if peak_bandwidth and duration_s and read is not None and write is not None:
            share = (read + write) / duration_s / peak_bandwidth
        tensor = [v for v in (value(m.TENSOR_HMMA), value(m.TENSOR_GMMA)) if v is not None]
        rows.append(KernelRow(
            index=record.index, name=record.name, duration_ms=duration_s * 1e3 if duration_s is not None else None,
            dram_read_bytes=read, dram_write_bytes=write, l2_bytes=value(m.L2_BYTES), dram_bandwidth_share=share,
            dram_throughput_pct=value(m.DRAM_THROUGHPUT), sm_throughput_pct=value(m.SM_THROUGHPUT), tensor_pipe_pct=max(tensor) if tensor else None,
            fma_pipe_pct=value(m.FMA_PIPE), occupancy_pct=value(m.OCCUPANCY), registers_per_thread=value(m.REGISTERS),
            grid_size=value(m.GRID), block_size=value(m.BLOCK),
        ))
    return rows


def totals(rows: Sequence[KernelRow]) -> Totals:
    def total(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) if known and len(known) == len(values) else None

    dram = [None if r.dram_read_bytes is None or r.dram_write_bytes is None else r.dram_read_bytes + r.dram_write_bytes for r in rows]
    return Totals(kernels=len(rows), duration_ms=total([r.duration_ms for r in rows]), dram_bytes=total(dram), l2_bytes=total([r.l2_bytes for r in rows]),
                  truncated=len(rows) >= m.MAX_KERNELS)


def pipe_utilisation(rows: Sequence[KernelRow], unit: str) -> float | None:
    """The bound unit's pipe utilisation over the call (0..1): each kernel's share, weighted by its
    duration; None for units without a measured pipe or where no kernel has the value."""
    column = "tensor_pipe_pct" if unit in TENSOR_PIPE_UNITS else "fma_pipe_pct" if unit in FMA_PIPE_UNITS else None
    if column is None:
        return None
    pairs = [(getattr(row, column), row.duration_ms) for row in rows if getattr(row, column) is not None and row.duration_ms]
    weight = sum(duration for _, duration in pairs)
    if not pairs or weight <= 0:
        return None
    return sum(pct * duration for pct, duration in pairs) / weight / 100.0


def sol_side(result: Any, spec: Any) -> SolSide:
    """The SOL side of the join from a solbench.sol.analysis.SolResult and its HardwareSpec."""
    rate = None
    if result.bottleneck != MEMORY:
        try:
            rate = spec.rate(result.bottleneck, result.policy)[0]
        except Exception:  # noqa: BLE001 - a unit the spec cannot price: no rate to show
            rate = None
    return SolSide(hardware=result.hardware, policy=result.policy, t_sol_ms=result.t_sol_s * 1e3, t_roofline_ms=result.t_roofline_s * 1e3,
                   t_floor_ms=result.t_floor_s * 1e3, floor_bound=result.floor_bound, bottleneck=result.bottleneck,
                   compulsory_bytes=result.bytes_cache_aware, bytes_fused=result.bytes_fused,
                   flops_by_unit={unit: flops for unit, flops in result.flops_by_unit.items() if flops},
                   peak_bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s, bottleneck_rate=rate)


def build_report(*, problem: str, solution: str, workload: str, status: str, status_message: str = "", device: str | None = None,
                 latency_ms: float | None, latency_source: str | None, sol: SolSide | None, records: Sequence[KernelRecord],
                 timeline: CallTimeline | None, calls: int = 0, notes: Sequence[str] = (), seconds: dict[str, float] | None = None,
                 tool: dict[str, Any] | None = None) -> ProfileReport:
    """The profile document: rows, totals, the SOL side and, where T and T_SOL are known, the decomposition."""
    rows = kernel_rows(records, sol.peak_bandwidth_bytes_per_s if sol else None)
    summed = totals(rows)
    notes = list(notes)
    if summed.truncated:
        notes.append(f"ncu profiled its limit of {m.MAX_KERNELS} kernels: the totals miss the later kernels of the call")
    if not rows:
        notes.append("ncu profiled no kernel inside the call (the call launched none, or none ran inside its NVTX range)")
    line = TimelineSummary(calls=calls, span_ms=timeline.span_ms, busy_ms=timeline.busy_ms, gaps_ms=timeline.gaps_ms,
                           activities=timeline.activities) if timeline is not None else None
    report = ProfileReport(problem=problem, solution=solution, workload=workload, device=device, status=status, status_message=status_message,
                           latency_ms=latency_ms, latency_source=latency_source, sol=sol, kernels=rows, totals=summed, timeline=line,
                           notes=notes, seconds=dict(seconds or {}), tool=dict(tool or {}),
                           created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    if sol is None or not latency_ms or sol.t_sol_ms <= 0:
        report.notes.append("no gap decomposition: " + ("no T_SOL (no hardware spec, or the SOL analysis failed)" if sol is None or sol.t_sol_ms <= 0
                                                        else "no measured latency"))
        return report
    decomposition = decompose(GapInputs(
        latency_s=latency_ms / 1e3, sol_s=sol.t_sol_ms / 1e3, bound=sol.bottleneck, compulsory_bytes=sol.compulsory_bytes,
        peak_bandwidth=sol.peak_bandwidth_bytes_per_s, dram_bytes=summed.dram_bytes if rows else None,
        span_over_busy=timeline.span_ms / timeline.busy_ms if timeline is not None and timeline.busy_ms > 0 else None,
        pipe_utilisation=pipe_utilisation(rows, sol.bottleneck) if sol.bottleneck != MEMORY else None, floor_bound=sol.floor_bound,
    ))
    report.decomposition = DecompositionRow(t_over_t_sol=decomposition.t_over_t_sol, bound=decomposition.bound,
                                            factors=[FactorRow(name=f.name, value=f.value, meaning=f.meaning) for f in decomposition.factors],
                                            notes=decomposition.notes)
    report.gap = decomposition.values()
    return report
