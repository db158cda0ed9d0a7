"""The profile of one solution on one workload as stored (`solbench profile --json`, and
RUN_DIR/profiles/<problem>/<solution>.json after `solbench run --profile`): per-kernel measurements,
the SOL side, the call's timeline and the gap decomposition (solbench.profile.gap). Unknown keys are
kept, so a newer file still loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solbench.data.errors import SpecError

FORMAT = "solbench-profile/1"


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")


class KernelRow(Model):
    """One kernel of the profiled call, as Nsight Compute measured it (None: n/a on this kernel or chip)."""

    index: int
    name: str
    duration_ms: float | None = None  # ncu's gpu__time_duration (about 0.9 us above the CUPTI span of a kernel on an H200)
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    l2_bytes: float | None = None  # L2 traffic (lts__t_bytes)
    dram_bandwidth_share: float | None = None  # (read + write) / duration over the spec's DRAM bandwidth
    dram_throughput_pct: float | None = None  # ncu's own DRAM throughput, % of its peak
    sm_throughput_pct: float | None = None
    tensor_pipe_pct: float | None = None  # the busier of the mma.sync and wgmma tensor pipes, % of peak while active
    fma_pipe_pct: float | None = None
    occupancy_pct: float | None = None  # achieved: warps active, % of the SM's maximum
    registers_per_thread: float | None = None
    grid_size: float | None = None
    block_size: float | None = None


class Totals(Model):
    kernels: int = 0
    duration_ms: float | None = None  # sum of the kernels' ncu durations
    dram_bytes: float | None = None  # read + write, all kernels
    l2_bytes: float | None = None
    truncated: bool = False  # ncu profiled its limit of kernels: later ones are missing


class SolSide(Model):
    hardware: str
    policy: str
    t_sol_ms: float
    t_roofline_ms: float
    t_floor_ms: float
    floor_bound: bool
    bottleneck: str  # "memory" or the bound unit
    compulsory_bytes: float  # the cache-aware bound's DRAM bytes
    bytes_fused: float  # the problem's inputs as read plus its outputs
    flops_by_unit: dict[str, float] = Field(default_factory=dict)
    peak_bandwidth_bytes_per_s: float
    bottleneck_rate: float | None = None  # operations per second of the bound unit under the policy (None for memory)


class TimelineSummary(Model):
    """The representative (median-span) call of a few timed like the evaluator times them."""

    calls: int
    span_ms: float
    busy_ms: float
    gaps_ms: float
    activities: int  # kernels, copies and memsets in that call


class FactorRow(Model):
    name: str
    value: float
    meaning: str


class DecompositionRow(Model):
    t_over_t_sol: float
    bound: str
    factors: list[FactorRow]
    notes: list[str] = Field(default_factory=list)


class ProfileReport(Model):
    format: str = FORMAT
    problem: str
    solution: str
    workload: str
    device: str | None = None
    status: str  # the evaluation's status on this workload (correctness and timing, as `solbench eval` does them)
    status_message: str = ""  # its first log line, where it did not pass
    latency_ms: float | None = None  # T: the evaluation's median, else the timeline's median call
    latency_source: str | None = None  # evaluation | timeline
    sol: SolSide | None = None
    kernels: list[KernelRow] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    timeline: TimelineSummary | None = None
    decomposition: DecompositionRow | None = None
    gap: dict[str, float] = Field(default_factory=dict)  # the decomposition's values, flat: t_over_t_sol and each factor
    notes: list[str] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)  # wall time of each step (evaluation, timeline, ncu)
    tool: dict[str, Any] = Field(default_factory=dict)  # ncu: path and metrics asked for
    created: str | None = None

    def to_json_text(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n"


def load_profile(path: Path) -> ProfileReport:
    """A stored profile; SpecError (one line, naming the file) when it cannot be read or is not one."""
    try:
        return ProfileReport.model_validate_json(Path(path).read_bytes())
    except OSError as exc:
        raise SpecError(f"cannot be read: {exc.strerror or exc}", path=Path(path)) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(document)"
        raise SpecError(f"not a solbench profile: {where}: {error['msg']}", path=Path(path)) from None
