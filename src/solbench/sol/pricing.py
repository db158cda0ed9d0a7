"""What a captured graph costs: FLOPs per execution unit, bytes unfused and fused, and the
re-reads that any tiling must pay (the additive quantities of the bounds, `Totals`), and the
compute time of a set of FLOPs on a piece of hardware. solbench.sol.analysis turns totals into bounds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from math import prod

from solbench.sol.costs import FREE_OPS, RULES, Cost
from solbench.sol.graph import Graph, OpNode, TensorInfo
from solbench.sol.hardware import HardwareSpec, Policy
from solbench.sol.patterns import adjust
from solbench.sol.tiling import contraction_surplus
from solbench.data.dtypes import DType


@dataclass
class NodeReport:
    node: OpNode
    cost: Cost | None  # None: no rule (uncovered)
    time_s: float = 0.0



@dataclass
class Totals:
    """What a graph costs before it becomes times: the additive quantities of the bounds."""

    flops: dict[str, float]
    bytes_unfused: float
    t_unfused: float
    bytes_read: float  # problem inputs as far as read
    bytes_written: float  # outputs
    surplus: float  # re-reads that tilings must pay (cache-aware)
    uncovered: list[str]
    reports: list[NodeReport] = field(repr=False)
    notes: list[str] = field(default_factory=list)
    rate_notes: dict[str, str] = field(default_factory=dict)

    ADDITIVE = ("bytes_unfused", "t_unfused", "bytes_read", "bytes_written", "surplus")



def graph_totals(graph: Graph, hardware: HardwareSpec, policy: Policy = "strict") -> Totals:
    reports: list[NodeReport] = []
    uncovered: dict[str, int] = defaultdict(int)
    flops: dict[str, float] = defaultdict(float)
    rate_notes: dict[str, str] = {}
    problem_storages = {t.storage for t in (*graph.inputs.values(), *graph.outputs.values())}
    for node in graph.nodes:
        if node.is_view or node.packet in FREE_OPS or _constant_work(node, problem_storages):
            reports.append(NodeReport(node, Cost()))
            continue
        rule = RULES.get(node.packet)
        if rule is None:
            uncovered[node.op] += 1
            reports.append(NodeReport(node, None))
            continue
        reports.append(NodeReport(node, rule(node)))
    pattern_notes = adjust(graph, [r.cost for r in reports])
    for report in reports:
        if report.cost is not None:
            for unit, value in report.cost.flops.items():
                flops[unit] += value
    bandwidth = hardware.bandwidth_bytes_per_s
    problem_storages = {t.storage for t in (*graph.inputs.values(), *graph.outputs.values())}
    bytes_unfused = 0.0
    t_unfused = 0.0
    for report in reports:
        if report.cost is None:
            continue
        moved = sum(_priced_bytes(t, b, policy, problem_storages) for t, b in report.cost.reads + report.cost.writes)
        bytes_unfused += moved
        report.time_s = max(compute_time(report.cost.flops, hardware, policy, rate_notes)[0], moved / bandwidth)
        t_unfused += report.time_s
    bytes_read, bytes_written = fused_traffic(graph, [r.cost for r in reports if r.cost is not None])
    capacity = hardware.on_chip_bytes
    surplus = 0.0
    notes = list(graph.notes) + pattern_notes
    for report in reports:
        cost = report.cost
        if cost is None:
            continue
        if cost.contraction is not None:
            extra = contraction_surplus(cost.contraction, capacity)
            if extra:
                notes.append(f"op {report.node.index} ({report.node.packet}): operands exceed on-chip capacity, +{extra / 1e6:.1f} MB re-read")
            surplus += extra
        if cost.two_pass_slice is not None:
            tensor, slice_bytes = cost.two_pass_slice
            if slice_bytes > capacity:
                surplus += tensor.unique_bytes
                notes.append(f"op {report.node.index} ({report.node.packet}): a {slice_bytes / 1e6:.1f} MB slice does not fit on chip, read twice")
    return Totals(dict(flops), bytes_unfused, t_unfused, bytes_read, bytes_written, surplus, sorted(uncovered), reports, notes, rate_notes)



def compute_time(unit_flops: dict[str, float], hardware: HardwareSpec, policy: Policy, rate_notes: dict[str, str] | None = None) -> tuple[float, dict[str, float]]:
    """Units (matrix, vector, special-function) work concurrently, so the busiest one bounds the
    time: a sum would be beaten by kernels that overlap them (flash attention's exp and MMAs)."""
    per_unit = {}
    for unit, value in unit_flops.items():
        if value:
            rate, how = hardware.rate(unit, policy)
            if rate_notes is not None:
                rate_notes[unit] = how
            per_unit[unit] = value / rate
    return max(per_unit.values(), default=0.0), per_unit



def _constant_work(node: OpNode, problem_storages: set[int]) -> bool:
    """An op of a subgraph that depends on no input (a mask built from shapes, or from an input drawn the
    same at every seed): evaluated at analysis time, so no kernel needs to do it. An op that reads or
    writes the memory of a problem input or output (or a view of it) is priced all the same: a kernel
    is given that input, or must write that tensor."""
    tensors = (*node.inputs, *node.outputs)
    return bool(node.outputs) and all(t.constant and t.storage not in problem_storages for t in tensors)



def _priced_bytes(tensor: TensorInfo, count: int, policy: Policy, problem_storages: set[int]) -> float:
    """Under the relaxed policy an fp32 intermediate may be kept in 16 bits (a view of a problem input
    or output is no intermediate: it is that tensor's memory, at its dtype)."""
    if policy == "relaxed" and tensor.role == "intermediate" and tensor.dtype == DType.float32 and tensor.storage not in problem_storages:
        return count / 2
    return count



def fused_traffic(graph: Graph, costs: list[Cost]) -> tuple[float, float]:
    """(bytes of problem inputs as far as any op reads them, bytes of outputs written: in-place ones the rows written)."""
    input_storages = {t.storage: t for t in graph.inputs.values()}
    reads: dict[int, dict[tuple, int]] = defaultdict(dict)
    writes: dict[int, dict[tuple, int]] = defaultdict(dict)
    for cost in costs:
        for tensor, count in cost.reads:
            if tensor.storage in input_storages:
                key = _view_key(tensor)
                reads[tensor.storage][key] = max(reads[tensor.storage].get(key, 0), count)
        for tensor, count in cost.writes:
            if tensor.storage in input_storages:
                key = _view_key(tensor)
                writes[tensor.storage][key] = max(writes[tensor.storage].get(key, 0), count)
    read = sum(float(_union_bytes(reads.get(storage, {}), base.storage_bytes)) for storage, base in input_storages.items())
    written = 0.0
    counted_outputs: set[int] = set()
    for output in graph.outputs.values():
        if output.storage in counted_outputs:
            continue
        counted_outputs.add(output.storage)
        if output.storage in input_storages:
            written += _union_bytes(writes.get(output.storage, {}), output.storage_bytes)
        else:
            written += min(output.unique_bytes, output.storage_bytes or output.unique_bytes)
    return read, written



def _view_key(tensor: TensorInfo) -> tuple:
    return (tensor.storage_offset, tensor.shape, tensor.stride, tensor.element_bits)



def _union_bytes(views: dict[tuple, int], storage_bytes: int) -> int:
    """Bytes of one storage touched through several views. A dense view (contiguous, read whole)
    covers one byte interval, and overlapping intervals are merged; other views (strided slices,
    gathers) add what they touch. Never more than the storage."""
    if not views:
        return 0
    intervals: list[tuple[int, int]] = []
    scattered = 0
    for (offset, shape, stride, bits), count in views.items():
        numel = prod(shape)
        if numel and _is_contiguous(shape, stride) and count * 8 >= numel * bits:
            start = offset * bits // 8
            intervals.append((start, start + (numel * bits + 7) // 8))
        else:
            scattered += count
    covered, end = 0, -1
    for start, stop in sorted(intervals):
        if start > end:
            covered += stop - start
            end = stop
        elif stop > end:
            covered += stop - end
            end = stop
    total = covered + scattered
    return min(storage_bytes, total) if storage_bytes else total



def _is_contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride)):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True
