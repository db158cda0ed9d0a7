"""Helpers of the energy tests: a spec with energy figures written as a user would write it, and a counter
that advances in steps like NVML's (NVML itself cannot run without an NVIDIA driver, as on CI)."""

from __future__ import annotations

from pathlib import Path

import yaml

from solbench.sol.hardware import builtin_hardware_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VECTOR_SCALE = FIXTURES / "solutions" / "status" / "vector_scale"
# How late, at most, a window's poller thread sees the counter's last update while the steps run on: the
# poller polls every 0.5 ms but waits for the GIL (a 5 ms switch interval) and, on a loaded machine, for the
# scheduler (12 ms seen on 2 cores running the whole suite). Steps run in that time are not covered.
SEEN_WITHIN_S = 0.05
FIGURES = {"date": "2026-12-04", "device": "NVIDIA H200", "static_power_w": 80.0, "dram_pj_per_byte": 40.0, "l2_pj_per_byte": 10.0,
           "op_pj": {"tensor_bf16": 0.5, "vector_fp32": 2.0, "vector_fp16": 1.5, "tensor_tf32": 0.9}, "power_limit_w": 700.0,
           "rms_residual": 0.03, "max_residual": 0.06}


def write_spec(folder: Path, name: str = "H200-energy", energy: object = FIGURES) -> Path:
    data = yaml.safe_load((builtin_hardware_dir() / "h200.yaml").read_text())
    data["name"] = name
    if energy is not None:
        data["energy"] = energy
    path = folder / f"{name.lower()}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class SteppedCounter:
    """Millijoules at a constant power, updated every `period_s` of a clock, as NVML's counter is: a
    reading is the energy up to the last update. `clock` is a callable; `advance(s)` moves a manual one."""

    def __init__(self, power_w: float, period_s: float = 0.1, clock=None):
        self.power_w, self.period_s = power_w, period_s
        self.now = 0.0
        self.clock = clock or (lambda: self.now)
        self.reads = 0

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def read_mj(self) -> int:
        self.reads += 1
        updates = int(self.clock() / self.period_s)
        return int(round(updates * self.period_s * self.power_w * 1e3))
