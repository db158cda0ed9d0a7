"""Tables of speed-of-light results and hardware specs."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text

from solbench.report.units import format_seconds
from solbench.sol.analysis import SolResult
from solbench.sol.hardware import HardwareSpec

_SHORT_UNIT = {
    "tensor_fp64": "fp64 TC", "tensor_fp32": "fp32 TC", "tensor_tf32": "tf32 TC", "tensor_fp16": "fp16 TC",
    "tensor_bf16": "bf16 TC", "tensor_fp8": "fp8 TC", "tensor_fp4": "fp4 TC", "tensor_int8": "int8 TC",
    "vector_fp64": "fp64", "vector_fp32": "fp32", "vector_fp16": "16-bit", "vector_int32": "int", "sfu": "SFU",
}


def quantity(value: float, unit: str = "") -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()


def milliseconds(seconds: float) -> str:
    """A time given in seconds, in the unit that keeps it readable (kept for callers of the old name)."""
    return format_seconds(seconds)


_FLOOR_LABEL = {"dram-latency": "DRAM", "launch": "launch", "no-device-work": "no work", "not-in-spec": "not in spec"}


def sol_table(results: list[SolResult]) -> Table:
    """T_SOL per workload beside what it is made of: the (cache-aware) roofline and the latency floor."""
    hardware = ", ".join(sorted({r.hardware for r in results}))
    policies = ", ".join(sorted({r.policy for r in results}))
    unfloored = " (floor not applied: roofline alone)" if not all(r.floor_applied for r in results) else ""
    table = Table(title=Text(f"speed of light on {hardware} ({policies} precision){unfloored}"))
    for column, justify in (("problem", "left"), ("workload", "left"), ("FLOPs by unit", "left"), ("bytes fused", "right"),
                            ("unfused", "right"), ("fused", "right"), ("roofline", "right"), ("floor", "right"), ("T_SOL", "right"),
                            ("bottleneck", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for result in results:
        units = ", ".join(f"{_SHORT_UNIT.get(u, u)} {quantity(f)}" for u, f in sorted(result.flops_by_unit.items(), key=lambda x: -x[1]) if f)
        bottleneck = Text(("latency floor" if result.floor_bound else result.bottleneck) + (" (partial)" if result.partial else ""))
        table.add_row(
            Text(result.problem), Text(result.workload), units or "0", quantity(result.bytes_fused, "B"),
            milliseconds(result.t_unfused_s), milliseconds(result.t_fused_s), milliseconds(result.t_roofline_s), floor_cell(result),
            milliseconds(result.t_sol_s), bottleneck,
        )
    return table


def floor_cell(result: SolResult) -> str:
    """The latency floor and which it is ("896 ns (DRAM)"); only the kind where there is none."""
    label = _FLOOR_LABEL.get(result.floor, result.floor)
    return f"{milliseconds(result.t_floor_s)} ({label})" if result.t_floor_s > 0 else f"– ({label})"


def explain_table(result: SolResult) -> Table:
    """The ops that cost something, numbered 1..n in graph order (views and free ops are left out)."""
    table = Table(title=Text(f"{result.problem} / {result.workload[:8]}: per-op breakdown (unfused)"))
    for column, justify in (("#", "right"), ("op", "left"), ("einsum", "left"), ("FLOPs", "left"), ("read", "right"), ("written", "right"),
                            ("time", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    number = 0
    for report in result.nodes:
        node, cost = report.node, report.cost
        if cost is not None and not cost.flops and not cost.reads and not cost.writes:
            continue  # views and free ops
        number += 1
        if cost is None:
            table.add_row(str(number), Text(node.op), "UNCOVERED: no cost rule", "?", "?", "?", "?", style="red")
            continue
        flops = ", ".join(f"{_SHORT_UNIT.get(u, u)} {quantity(f)}" for u, f in cost.flops.items() if f) or "0"
        table.add_row(str(number), Text(node.op), Text(cost.einsum or ""), flops, quantity(cost.bytes_read, "B"), quantity(cost.bytes_written, "B"),
                      format_seconds(report.time_s))
    return table


def hardware_table(specs: list[tuple[str, HardwareSpec]]) -> Table:
    table = Table(title="hardware specs")
    for column in ("name", "vendor", "arch", "SMs", "DRAM TB/s", "bf16 TC TFLOP/s", "fp32 TFLOP/s", "on chip MB", "file"):
        table.add_column(column, overflow="fold")
    for path, spec in specs:
        table.add_row(
            Text(spec.name), Text(spec.vendor), Text(spec.architecture), str(spec.sm_count), f"{spec.dram.bandwidth_tbps:g}",
            f"{spec.peak_tflops.get('tensor_bf16', 0):g}", f"{spec.peak_tflops['vector_fp32']:g}",
            f"{spec.on_chip_bytes / 1e6:.1f}", Text(Path(path).name),
        )
    return table


def hardware_details(spec: HardwareSpec) -> Table:
    table = Table(title=Text(f"{spec.name} ({spec.vendor} {spec.architecture}, {spec.sm_count} SMs at {spec.boost_clock_ghz} GHz)"))
    for column in ("unit", "peak TFLOP/s", "strict: rate, method", "relaxed: rate, method"):
        table.add_column(column, overflow="fold")
    from solbench.sol.costs import UNITS

    for unit in UNITS:
        peak = spec.peak_tflops.get(unit)
        strict, strict_how = spec.rate(unit, "strict")
        relaxed, relaxed_how = spec.rate(unit, "relaxed")
        table.add_row(unit, f"{peak:g}" if peak is not None else "-", f"{strict / 1e12:g} ({strict_how})", f"{relaxed / 1e12:g} ({relaxed_how})")
    table.caption = (
        f"DRAM {spec.dram.capacity_gb:g} GB at {spec.dram.bandwidth_tbps:g} TB/s; on chip {spec.on_chip_bytes / 1e6:.1f} MB "
        f"(L2 {spec.on_chip.l2_bytes / 2**20:g} MiB + per-SM shared memory and registers); latency floors: "
        + (f"launch {format_seconds(spec.launch_floor_s)}, DRAM {format_seconds(spec.latency_floor_s(reads_dram=True))}" if spec.has_floor
           else "none (not measured: T_SOL is the roofline alone)")
    )
    return table
