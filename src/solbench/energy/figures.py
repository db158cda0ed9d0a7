"""The energy figures of a hardware spec (its `energy:` block), as `solbench hw calibrate --energy`
writes them: energy per byte moved at each level of the memory hierarchy, energy per operation of
each execution unit, the static (idle) power, and the fit's date and residuals. A datasheet-only
spec has none: no E_SOL is priced on it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Picojoules = Annotated[float, Field(ge=0)]


class FitSample(BaseModel):
    """One calibration kernel: what it moved and computed, the joules per call measured and fitted."""

    model_config = ConfigDict(extra="allow")
    kernel: str
    measured_j: float = Field(ge=0)  # per call, static power over its time excluded
    fitted_j: float = Field(ge=0)
    residual: float  # (fitted - measured) / measured


class EnergyFigures(BaseModel):
    """Per-byte and per-operation energies (picojoules), static power (watts), and their provenance.

    DRAM and L2 are levels of one path: a byte that comes from DRAM pays dram_pj_per_byte and also
    l2_pj_per_byte (it passes the L2 on its way to the SMs); a byte served by the L2 alone pays only
    the latter. op_pj is per FLOP counted as the SOL analysis counts them (an FMA is 2), per unit."""

    model_config = ConfigDict(extra="allow")
    date: str = Field(min_length=1)  # ISO date of the calibration
    device: str = ""  # the GPU it was measured on
    static_power_w: float = Field(ge=0)  # idle power measured before the calibration: paid over T_SOL
    dram_pj_per_byte: float = Field(ge=0)
    l2_pj_per_byte: float = Field(ge=0)
    op_pj: dict[str, Picojoules] = Field(default_factory=dict)  # unit -> pJ per FLOP (tensor_bf16, vector_fp32, ...)
    power_limit_w: float | None = Field(None, gt=0)
    window_s: float | None = Field(None, gt=0)  # the measurement window of each calibration kernel
    rms_residual: float | None = Field(None, ge=0)  # root mean square of the relative residuals
    max_residual: float | None = Field(None, ge=0)  # the largest |relative residual|
    samples: list[FitSample] = Field(default_factory=list)
    note: str = ""

    def envelope(self) -> float:
        """The factor (at most 1) that brings the fit down to its lower envelope: the least measured/fitted
        joules of the calibration kernels. E_SOL's per-byte and per-operation parts are scaled by it, so that
        it lies at or below every kernel the figures were fitted to (a least-squares fit runs through the
        middle of them: on an H100, 2026-12-07, its 4096 bf16 matmul was fitted 2.5% above what it measured,
        and a cuBLAS GEMM of Llama-3-8B's QKV projection measured 0.8% below the unscaled E_SOL). 1 without
        samples."""
        ratios = [sample.measured_j / sample.fitted_j for sample in self.samples if sample.fitted_j > 0]
        return min([1.0, *ratios])

    def op_energy_j(self, unit: str) -> float | None:
        value = self.op_pj.get(unit)
        return None if value is None else value * 1e-12

    def unit_issues(self, known: Any) -> list[str]:
        """op_pj's unit names that are not among the known ones (one line each)."""
        return [f"unknown unit {unit!r} (known: {', '.join(known)})" for unit in self.op_pj if unit not in known]
