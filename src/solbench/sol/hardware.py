"""Hardware specs: datasheet peaks per unit, DRAM bandwidth, on-chip capacity; and pricing of
each execution unit under a precision policy."""

from __future__ import annotations

import os
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solbench.sol.costs import UNITS
from solbench.energy.figures import EnergyFigures
from solbench.data.errors import SpecError, issues_from_validation_error

Policy = Literal["strict", "relaxed"]
ON_CHIP_WRITE_FACTOR = 2.5  # outputs written into the L2, against the DRAM bandwidth, when a spec names no rate
MAX_FLOOR_S = 1e-3  # a latency floor is microseconds: a larger value is a unit mistake (floors are in seconds)
USER_HARDWARE_DIR = Path(os.environ.get("SOLBENCH_HARDWARE_DIR", Path.home() / ".cache" / "solbench" / "hardware"))

# Where a unit is missing on a chip, the other ways to do the same work exactly (fp8 without fp8 units runs as
# fp16 or bf16): the fastest of them that the chip has (or can substitute in turn) prices it, so that T_SOL stays
# a lower bound (a CPU's fp16 matrix rate can be a hundredth of its bf16 one).
_SUBSTITUTES = {
    "tensor_fp4": ("tensor_fp8", "tensor_fp16", "tensor_bf16"),
    "tensor_fp8": ("tensor_fp16", "tensor_bf16"),
    "tensor_int8": ("vector_int32",),
    "tensor_fp64": ("vector_fp64",),
    "tensor_tf32": ("vector_fp32",),
    "tensor_fp16": ("vector_fp16",),
    "tensor_bf16": ("tensor_fp16",),
    "vector_fp16": ("vector_fp32",),
}


class Dram(BaseModel):
    model_config = ConfigDict(extra="allow")
    capacity_gb: float = Field(gt=0)
    bandwidth_tbps: float = Field(gt=0)


class OnChip(BaseModel):
    model_config = ConfigDict(extra="allow")
    l2_bytes: int = Field(ge=0)
    shared_memory_per_sm_bytes: int = Field(ge=0)
    registers_per_sm_bytes: int = Field(ge=0)
    last_level_cache_bytes: int = 0
    tensor_memory_per_sm_bytes: int = 0
    # The rate at which outputs can be written into the L2 (they may stay there after the call);
    # absent: ON_CHIP_WRITE_FACTOR x the DRAM bandwidth. A bound must not assume slower storage than the chip has.
    l2_write_tbps: float | None = Field(None, gt=0)


class HardwareSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    vendor: str
    architecture: str
    sm_count: int = Field(gt=0)
    boost_clock_ghz: float = Field(gt=0)
    dram: Dram
    on_chip: OnChip
    peak_tflops: dict[str, float]
    relaxed_contraction_unit: str = "tensor_bf16"
    # Latency floors, in seconds: the least time any call takes on the chip, however little it does. T_SOL
    # is never below the floor that applies (see latency_floor_s). 0 (the default, and what specs written
    # before the floors existed get): no floor. `solbench hw calibrate` measures both.
    launch_floor_s: float = Field(0.0, ge=0)  # shortest CUPTI span of an empty kernel
    dram_latency_floor_s: float = Field(0.0, ge=0)  # shortest CUPTI span of a kernel reading one cache line from DRAM (not L2)
    calibration: dict[str, Any] | None = None
    # Energy per byte and per operation, static power (solbench.energy.figures), from `solbench hw calibrate --energy`;
    # None for a datasheet-only spec: no E_SOL is priced on it.
    energy: EnergyFigures | None = None

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.dram.bandwidth_tbps * 1e12

    @property
    def on_chip_write_bytes_per_s(self) -> float:
        rate = self.on_chip.l2_write_tbps
        return rate * 1e12 if rate is not None else ON_CHIP_WRITE_FACTOR * self.bandwidth_bytes_per_s

    @property
    def has_floor(self) -> bool:
        return self.launch_floor_s > 0 or self.dram_latency_floor_s > 0

    def latency_floor_s(self, reads_dram: bool) -> float:
        """The floor of a call that reads input bytes from DRAM (`reads_dram`: the DRAM latency floor,
        never below the launch floor), else of one that only launches work (the launch floor). Inputs
        are always in DRAM: the L2 is flushed before every timed call."""
        return max(self.launch_floor_s, self.dram_latency_floor_s) if reads_dram else self.launch_floor_s

    def at_clock(self, mhz: float) -> HardwareSpec:
        """This spec with its compute peaks at an SM clock of `mhz` (they scale with the clock; the
        DRAM bandwidth does not). The datasheet peaks hold at boost_clock_ghz. The latency floors are
        kept: measured at the chip's own clocks, they are no longer at a lower one."""
        if mhz <= 0:
            raise SpecError(f"a clock must be a positive number of MHz, got {mhz:g}", field="clock")
        factor = mhz / (self.boost_clock_ghz * 1000)
        return self.model_copy(update={
            "name": f"{self.name}@{mhz:g}MHz", "boost_clock_ghz": mhz / 1000,
            "peak_tflops": {unit: value * factor for unit, value in self.peak_tflops.items()},
        })

    @property
    def on_chip_bytes(self) -> int:
        """Everything the chip holds between DRAM accesses: caches, shared memory, registers."""
        per_sm = self.on_chip.shared_memory_per_sm_bytes + self.on_chip.registers_per_sm_bytes + self.on_chip.tensor_memory_per_sm_bytes
        return self.on_chip.l2_bytes + self.on_chip.last_level_cache_bytes + self.sm_count * per_sm

    def rate(self, unit: str, policy: Policy = "strict") -> tuple[float, str]:
        """Operations per second for work counted on `unit`, and how that work is done."""
        if unit == "tensor_fp32":
            if policy == "relaxed":
                return self.rate(self.relaxed_contraction_unit, policy)[0], f"relaxed: fp32 contraction at the {self.relaxed_contraction_unit} rate"
            options = {"vector_fp32": self.peak("vector_fp32")}
            if "tensor_fp32" in self.peak_tflops:
                options["tensor_fp32"] = self.peak("tensor_fp32")
            if "tensor_tf32" in self.peak_tflops:
                options["3xTF32"] = self.peak("tensor_tf32") / 3
            method = max(options, key=options.get)
            return options[method], f"strict: fp32 contraction by {method}"
        if unit == "vector_fp32" and policy == "relaxed" and "vector_fp16" in self.peak_tflops:
            return self.peak("vector_fp16"), "relaxed: fp32 vector math at the 16-bit rate"
        seen = self._substitute(unit)
        if seen is None:
            raise SpecError(f"hardware {self.name} has no rate for {unit} and no fallback", field="peak_tflops")
        how = seen if seen == unit else f"{seen} (no {unit} on {self.name})"
        return self.peak(seen), how

    def _substitute(self, unit: str, visiting: frozenset[str] = frozenset()) -> str | None:
        """The unit itself where the chip has it, else the fastest of its substitutes (_SUBSTITUTES), in turn."""
        if unit in self.peak_tflops:
            return unit
        found = [seen for seen in (self._substitute(other, visiting | {unit}) for other in _SUBSTITUTES.get(unit, ()) if other not in visiting)
                 if seen is not None]
        return max(found, key=self.peak, default=None)

    def peak(self, unit: str) -> float:
        return self.peak_tflops[unit] * 1e12


def builtin_hardware_dir() -> Path:
    return Path(str(files("solbench.sol") / "hardware"))


def _spec_files() -> list[Path]:
    found = sorted(builtin_hardware_dir().glob("*.yaml"))
    if USER_HARDWARE_DIR.is_dir():
        found += sorted(USER_HARDWARE_DIR.glob("*.yaml"))
    return found


def load_hardware_file(path: Path) -> HardwareSpec:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"cannot read hardware spec: {str(exc).splitlines()[0]}", path=path) from None
    try:
        spec = HardwareSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(issues_from_validation_error(exc), path=path) from None
    unknown = set(spec.peak_tflops) - set(UNITS)
    if unknown:
        raise SpecError(f"unknown units {', '.join(sorted(unknown))} (known: {', '.join(UNITS)})", path=path, field="peak_tflops")
    if "vector_fp32" not in spec.peak_tflops:
        raise SpecError("vector_fp32 is required", path=path, field="peak_tflops")
    zero = sorted(unit for unit, value in spec.peak_tflops.items() if not value > 0)
    if zero:
        raise SpecError(f"expected a positive rate in TFLOP/s for {', '.join(zero)}", path=path, field="peak_tflops")
    for name in ("launch_floor_s", "dram_latency_floor_s"):
        value = getattr(spec, name)
        if value > MAX_FLOOR_S:
            raise SpecError(f"expected seconds below {MAX_FLOOR_S:g} (a floor is microseconds, e.g. 2.5e-06), got {value:g}", path=path, field=name)
    if spec.energy is not None and (issues := spec.energy.unit_issues(UNITS)):
        raise SpecError(issues[0], path=path, field="energy.op_pj")
    return spec


@lru_cache(maxsize=1)
def _catalogue_cached(key: tuple[tuple[str, int], ...]) -> dict[str, tuple[Path, HardwareSpec]]:
    catalogue = {}
    for path, _ in key:
        spec = load_hardware_file(Path(path))
        catalogue[spec.name.lower()] = (Path(path), spec)
    return catalogue


def catalogue() -> dict[str, tuple[Path, HardwareSpec]]:
    """Name (lower case) -> (file, spec) of every built-in and user (calibrated) spec."""
    paths = _spec_files()
    return _catalogue_cached(tuple((str(p), p.stat().st_mtime_ns) for p in paths))


def get_hardware(name: str) -> HardwareSpec:
    """A spec by name (case-insensitive, '-' and '_' alike) or by the path of a YAML file."""
    if name.endswith((".yaml", ".yml")) or os.sep in name:
        return load_hardware_file(Path(name))
    wanted = name.lower().replace("_", "-")
    for key, (_, spec) in catalogue().items():
        if key.replace("_", "-") == wanted:
            return spec
    known = ", ".join(spec.name for _, spec in catalogue().values())
    raise SpecError(f"unknown hardware {name!r}; known: {known}", field="hardware")


def default_hardware_name() -> str:
    return os.environ.get("SOLBENCH_HARDWARE", "H200")


