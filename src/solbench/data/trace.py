"""Trace: the outcome of evaluating one solution on one workload."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field

from solbench.data.base import SpecModel
from solbench.data.workload import Workload


class Status(str, Enum):
    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"
    REWARD_HACK = "REWARD_HACK"
    INVALID_REFERENCE = "INVALID_REFERENCE"


class Correctness(SpecModel):
    max_absolute_error: float | None = None
    max_relative_error: float | None = None
    matched_ratio: float | None = None
    first_mismatch_index: list[int] | None = None
    trials: int | None = None
    precision: str | None = None  # the precision the outputs appear to be computed in (fp64 oracle), where assessed
    verified_timed_calls: int | None = None  # timed calls whose outputs were checked too
    gross_errors: int | None = None  # elements beyond 100x the tolerance (its relative part at most half the value) or not finite where the reference is (solbench.bench.correctness)


class Energy(SpecModel):
    """Measured energy per call (`--energy`; solbench.energy), beside its bound and score. Absent in traces
    evaluated without --energy; with only `note` where the counter could not be read (no energy score)."""

    joules: float | None = None  # per call: the window of calls less the blank window of their setup, per step
    sol_j: float | None = None  # E_SOL on the hardware spec (None: the spec has no energy figures)
    score: float | None = None  # the energy score (solbench.energy.score), set where a baseline energy is known
    mean_power_w: float | None = None  # over the window of calls (their untimed setup included)
    idle_power_w: float | None = None  # measured just before, with nothing running
    window_s: float | None = None  # the window of calls, aligned to the counter's updates
    calls: int | None = None  # calls in that window
    calls_per_step: int | None = None  # calls run back to back in each step of the windows (solbench.energy.evaluate.batch_size)
    inputs_ahead: bool | None = None  # the window's inputs were made before it (True) or in each of its steps (solbench.bench.worker.Worker.energy)
    overhead_j: float | None = None  # per call, of the blank window's steps (per step: fresh inputs, L2 flush; made ahead: a synchronisation): subtracted
    resolution_j: float | None = None  # the windows' boundary error per call
    method: str | None = None  # nvml-total-energy
    note: str | None = None  # why energy or E_SOL is missing, where it is


class Performance(SpecModel):
    latency_ms: float | None = None
    latency_iqr_ms: float | None = None
    reference_latency_ms: float | None = None
    sol_ms: float | None = None  # T_SOL as the score and the faster-than-sol check use it
    # what T_SOL is made of (absent in traces from before the latency floor): the cache-aware roofline, the
    # hardware's latency floor for this workload (0: none), and whether sol_ms is their max (else the roofline alone)
    sol_roofline_ms: float | None = None
    sol_floor_ms: float | None = None
    sol_floor_applied: bool | None = None
    score: float | None = None
    timing_method: str | None = None
    iterations: int | None = None
    # how much longer a call's device span is without the launch gate (the host's launch gaps between its
    # kernels, as a user without CUDA graphs sees them): median of a short ungated series less latency_ms
    launch_overhead_ms: float | None = None
    energy: Energy | None = None  # with --energy (solbench.energy)


class Evaluation(SpecModel):
    status: Status
    correctness: Correctness | None = None
    performance: Performance | None = None
    environment: dict[str, Any] | None = None
    log: str = ""
    timestamp: str | None = None
    flags: list[str] | None = None  # findings that are no status of their own, e.g. "shape-generality"
    phases: dict[str, float] | None = None  # seconds per evaluation phase (solbench.bench.phases.PHASES); start and build: the run's, in its first trace


class Trace(SpecModel):
    definition: str = Field(min_length=1)
    workload: Workload
    solution: str | None = None
    evaluation: Evaluation | None = None
