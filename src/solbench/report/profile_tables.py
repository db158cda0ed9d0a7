"""The terminal view of a profile (`solbench profile`): a table per kernel, the SOL line joined with
what was measured, and the gap decomposition."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from solbench.profile.model import ProfileReport
from solbench.report.profile_chart import LABELS
from solbench.report.units import format_ms

NAME_WIDTH = 60


def _bytes(value: float | None) -> str:
    if value is None:
        return ""
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}%"


def _count(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _short(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def kernels_table(report: ProfileReport) -> Table:
    table = Table(title=f"{report.solution} on {report.problem}, workload {report.workload[:12]}: {report.totals.kernels} kernel(s) (Nsight Compute)")
    for column in ("#", "kernel", "time", "DRAM read", "DRAM write", "L2", "DRAM BW of peak", "SM", "tensor pipe", "FMA pipe", "occupancy",
                   "regs", "grid", "block"):
        table.add_column(column, justify="left" if column == "kernel" else "right", overflow="fold")
    for row in report.kernels:
        table.add_row(str(row.index), Text(_short(row.name)), format_ms(row.duration_ms), _bytes(row.dram_read_bytes), _bytes(row.dram_write_bytes),
                      _bytes(row.l2_bytes), "" if row.dram_bandwidth_share is None else f"{row.dram_bandwidth_share:.0%}", _pct(row.sm_throughput_pct),
                      _pct(row.tensor_pipe_pct), _pct(row.fma_pipe_pct), _pct(row.occupancy_pct), _count(row.registers_per_thread),
                      _count(row.grid_size), _count(row.block_size))
    return table


def sol_lines(report: ProfileReport) -> list[str]:
    """The SOL side and the measured side of the call, a line each."""
    lines = []
    sol = report.sol
    if sol is not None:
        flops = ", ".join(f"{unit} {value:.3g}" for unit, value in sol.flops_by_unit.items()) or "none"
        floor = f", floor {format_ms(sol.t_floor_ms)}" + (" (sets T_SOL)" if sol.floor_bound else "")
        lines.append(f"SOL on {sol.hardware} ({sol.policy}): T_SOL {format_ms(sol.t_sol_ms)}, bound by {sol.bottleneck} (roofline "
                     f"{format_ms(sol.t_roofline_ms)}{floor}); compulsory bytes {_bytes(sol.compulsory_bytes)}; FLOPs {flops}")
    measured = [f"status {report.status}"]
    if report.latency_ms:
        measured.append(f"T {format_ms(report.latency_ms)} ({report.latency_source})")
        if sol is not None and sol.t_sol_ms > 0:
            measured.append(f"T/T_SOL {report.latency_ms / sol.t_sol_ms:.3g}")
    if report.totals.dram_bytes is not None:
        extra = f" ({report.totals.dram_bytes / sol.compulsory_bytes:.3g}x compulsory)" if sol is not None and sol.compulsory_bytes > 0 else ""
        measured.append(f"DRAM {_bytes(report.totals.dram_bytes)}{extra}")
    if report.timeline is not None:
        line = report.timeline
        measured.append(f"timeline: span {format_ms(line.span_ms)}, busy {format_ms(line.busy_ms)}, gaps {format_ms(line.gaps_ms)} "
                        f"({line.activities} activities, median of {line.calls} calls)")
    lines.append("measured: " + "; ".join(measured))
    return lines


def decomposition_table(report: ProfileReport) -> Table | None:
    decomposition = report.decomposition
    if decomposition is None:
        return None
    table = Table(title=f"T/T_SOL {decomposition.t_over_t_sol:.3g} ({decomposition.bound}-bound) = the product of")
    for column, justify in (("factor", "left"), ("×", "right"), ("what it is", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for factor in decomposition.factors:
        table.add_row(LABELS.get(factor.name, factor.name), f"{factor.value:.3g}", Text(factor.meaning))
    return table
