"""From a problem's reference to its speed-of-light time on a piece of hardware.

Bounds, each T = max(compute time, DRAM bytes / bandwidth), where compute time is the largest
FLOPs / rate over the execution units (they run concurrently):
- unfused: every op reads its inputs and writes its outputs (sum over ops of each op's T);
- fused: one kernel; DRAM traffic is the problem's inputs as far as they are read, plus its outputs;
- cache-aware: fused, plus what contractions must re-read when their operands do not fit on chip,
  plus a second pass over any slice that a softmax or norm needs whole and that does not fit.
The roofline time is the cache-aware bound. T_SOL = max(roofline, latency floor): no call on the chip,
however little it does, takes less than its latency floor (HardwareSpec.latency_floor_s): the DRAM
latency floor where the workload reads input bytes (inputs are in DRAM: the L2 is flushed before each
timed call), the launch floor where it only writes or computes, none where it does nothing on the
device. `floor_applied` False (`--no-sol-floor`) makes T_SOL the roofline alone, as bounds published
without a floor are.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from solbench.sol.capture import Captures
from solbench.sol.costs import FREE_OPS, RULES
from solbench.sol.hardware import HardwareSpec, Policy
from solbench.sol.pricing import NodeReport, Totals, compute_time
from solbench.data.problem import Problem
from solbench.data.workload import Workload


@dataclass
class SolResult:
    problem: str
    workload: str
    hardware: str
    policy: str
    flops_by_unit: dict[str, float]
    bytes_unfused: float
    bytes_fused: float
    bytes_cache_aware: float
    t_compute_s: float
    t_unfused_s: float
    t_fused_s: float
    t_cache_aware_s: float
    bottleneck: str
    uncovered_ops: list[str]
    nodes: list[NodeReport] = field(repr=False)
    notes: list[str] = field(default_factory=list)
    rate_notes: dict[str, str] = field(default_factory=dict)
    bytes_on_chip: float = 0.0  # output bytes priced at the on-chip write rate (they fit in the L2)
    t_floor_s: float = 0.0  # the hardware's latency floor for this workload (0: none, or the spec has none)
    floor: str = "not-in-spec"  # which floor applies: dram-latency, launch, no-device-work or not-in-spec (see latency_floor)
    floor_applied: bool = True  # whether T_SOL takes the floor into account (False: the roofline alone)

    @property
    def flops(self) -> float:
        return sum(self.flops_by_unit.values())

    @property
    def t_roofline_s(self) -> float:
        return self.t_cache_aware_s

    @property
    def t_sol_s(self) -> float:
        return max(self.t_roofline_s, self.t_floor_s) if self.floor_applied else self.t_roofline_s

    @property
    def floor_bound(self) -> bool:
        """T_SOL is the floor, not the roofline."""
        return self.floor_applied and self.t_floor_s > self.t_roofline_s

    @property
    def partial(self) -> bool:
        return bool(self.uncovered_ops)

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / self.bytes_cache_aware if self.bytes_cache_aware else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "workload": self.workload,
            "hardware": self.hardware,
            "policy": self.policy,
            "flops": self.flops,
            "flops_by_unit": {u: f for u, f in self.flops_by_unit.items() if f},
            "bytes_unfused": self.bytes_unfused,
            "bytes_fused": self.bytes_fused,
            "bytes_cache_aware": self.bytes_cache_aware,
            "bytes_on_chip": self.bytes_on_chip,
            "t_compute_ms": self.t_compute_s * 1e3,
            "t_unfused_ms": self.t_unfused_s * 1e3,
            "t_fused_ms": self.t_fused_s * 1e3,
            "t_cache_aware_ms": self.t_cache_aware_s * 1e3,
            "t_roofline_ms": self.t_roofline_s * 1e3,
            "t_floor_ms": self.t_floor_s * 1e3,
            "floor": self.floor,
            "floor_applied": self.floor_applied,
            "t_sol_ms": self.t_sol_s * 1e3,
            "bottleneck": self.bottleneck,
            "floor_bound": self.floor_bound,
            "arithmetic_intensity": self.arithmetic_intensity,
            "uncovered_ops": self.uncovered_ops,
            "partial": self.partial,
            "notes": self.notes,
        }


def decomposition_for(func: Any) -> Any:
    """The decomposition to record instead of an op that has no cost rule, if torch has one."""
    from torch._decomp import decomposition_table

    name = str(func)
    packet = name.split(".")[1] if name.count(".") >= 2 else name
    if packet in RULES or packet in FREE_OPS:
        return None
    schema = getattr(func, "_schema", None)
    if schema is not None and schema.returns and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return None  # a view: free, whatever its name
    return decomposition_table.get(func)


def problem_captures(problem: Problem) -> Captures:
    """The captures of one problem that its workloads share (ops without a rule decomposed)."""
    return Captures(problem, decomposition_for)


SHARED_CAPTURES = 8  # problems whose captures a process keeps (a run evaluates a problem's jobs one after another)
_shared: OrderedDict[tuple, Captures] = OrderedDict()


def shared_captures(problem: Problem) -> Captures:
    """The captures of a problem kept in this process for the next caller that prices the same problem
    (a run's baseline candidates, its solutions and its summary): captured once, not once per job.
    Keyed by content, since executors hand each job a copy of the problem."""
    import hashlib
    import json

    definition = json.dumps(problem.definition.to_json_dict(), sort_keys=True, ensure_ascii=False)
    key = (problem.name, hashlib.sha256(definition.encode()).hexdigest(), str(problem.root), problem.kind, problem.input_profile,
           problem.synthesize_missing_blobs)
    found = _shared.get(key)
    if found is None:
        found = _shared[key] = problem_captures(problem)
        while len(_shared) > SHARED_CAPTURES:
            _shared.popitem(last=False)
    else:
        _shared.move_to_end(key)
    return found


def analyze(problem: Problem, workload: Workload, hardware: HardwareSpec, policy: Policy = "strict", captures: Captures | None = None,
            floor: bool = True) -> SolResult:
    """The bounds of one workload; `captures` (of this problem) lets many workloads share captures;
    `floor` False: T_SOL is the roofline alone."""
    captures = captures if captures is not None else problem_captures(problem)
    return finish(captures.totals(workload, hardware, policy), problem.name, workload.uuid, hardware, policy, floor)


def latency_floor(totals: Totals, hardware: HardwareSpec) -> tuple[float, str]:
    """The floor that applies to a workload, and which it is: reading input bytes needs DRAM
    (dram-latency), writing or computing needs a kernel (launch), doing neither needs nothing on the
    device (no-device-work: a call that launches nothing is timed at 0); not-in-spec where the spec
    has no value for the floor that applies (0: older specs, chips not measured)."""
    if totals.bytes_read > 0:
        floor, which = hardware.latency_floor_s(reads_dram=True), "dram-latency"
    elif totals.bytes_written > 0 or any(totals.flops.values()):
        floor, which = hardware.latency_floor_s(reads_dram=False), "launch"
    else:
        return 0.0, "no-device-work"
    return (floor, which) if floor > 0 else (0.0, "not-in-spec")


def finish(totals: Totals, problem: str, workload: str, hardware: HardwareSpec, policy: Policy, floor: bool = True) -> SolResult:
    """The bounds from a graph's totals: T = max(compute time, memory time) for each; and the latency floor."""
    bandwidth = hardware.bandwidth_bytes_per_s
    t_compute, per_unit_time = compute_time(totals.flops, hardware, policy, totals.rate_notes)
    bytes_fused = totals.bytes_read + totals.bytes_written
    # Outputs that fit in the L2 can still be there when the call ends (written back after the timer
    # stops): they are priced at the on-chip write rate, the rest at DRAM.
    on_chip = min(totals.bytes_written, hardware.on_chip.l2_bytes)

    def memory_time(dram_extra: float) -> float:
        return max((bytes_fused - on_chip + dram_extra) / bandwidth, on_chip / hardware.on_chip_write_bytes_per_s)

    t_fused = max(t_compute, memory_time(0.0))
    t_cache = max(t_compute, memory_time(totals.surplus))
    if t_compute >= memory_time(totals.surplus) and per_unit_time:
        bottleneck = max(per_unit_time, key=per_unit_time.get)
    else:
        bottleneck = "memory"
    t_floor, which = latency_floor(totals, hardware)
    return SolResult(
        problem, workload, hardware.name, policy, dict(totals.flops), totals.bytes_unfused, bytes_fused, bytes_fused + totals.surplus,
        t_compute, totals.t_unfused, t_fused, t_cache, bottleneck, totals.uncovered, totals.reports, totals.notes, totals.rate_notes, on_chip,
        t_floor, which, floor,
    )


