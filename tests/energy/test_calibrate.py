"""From calibration measurements to a spec: static power taken out, the fit, the figures with their residuals,
and a spec written as `hw calibrate --energy` writes it that loads back; on a CPU, a one-line refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from solbench.energy.calibrate import CalibrationError, Measured, calibrate_energy, figures_of, samples_of
from solbench.energy.fit import fit
from solbench.energy.kernels import Kernel
from solbench.sol.hardware import get_hardware, load_hardware_file

STATIC_W = 85.0
TRUE_PJ = {"dram": 30.0, "l2": 6.0, "tensor_bf16": 0.4, "vector_fp32": 1.8}


def measured(name: str, dram: float, l2: float, flops: dict[str, float], seconds: float) -> Measured:
    dynamic = (dram * TRUE_PJ["dram"] + l2 * TRUE_PJ["l2"] + sum(f * TRUE_PJ[u] for u, f in flops.items())) * 1e-12
    return Measured(Kernel(name, lambda: None, dram, l2, flops), dynamic + STATIC_W * seconds, seconds, 1000)


def calibration() -> list[Measured]:
    mib = 2**20
    return [measured("dram-copy", 2 * 1024 * mib, 2 * 1024 * mib, {}, 0.5e-3), measured("dram-copy-small", 512 * mib, 512 * mib, {}, 0.13e-3),
            measured("l2-copy", 0, 8 * mib, {}, 3e-6), measured("l2-copy-big", 0, 20 * mib, {}, 6e-6),
            measured("mm", 3 * 8192**2 * 2, 3 * 8192**2 * 2, {"tensor_bf16": 2 * 8192**3}, 1.4e-3),
            measured("mm-small", 3 * 4096**2 * 2, 3 * 4096**2 * 2, {"tensor_bf16": 2 * 4096**3}, 0.18e-3),
            measured("fma", 32 * mib, 32 * mib, {"vector_fp32": 4e9}, 70e-6), measured("fma-long", 32 * mib, 32 * mib, {"vector_fp32": 16e9}, 270e-6)]


def test_measurements_become_figures_and_a_spec_that_loads(tmp_path: Path):
    samples = samples_of(calibration(), STATIC_W)
    assert samples[0].joules == pytest.approx(2 * 1024 * 2**20 * 36e-12)  # the static power over its time taken out
    figures = figures_of(fit(samples), samples, STATIC_W, "NVIDIA H200", 700.0, 1.0)
    assert figures.dram_pj_per_byte == pytest.approx(30.0, rel=1e-3) and figures.l2_pj_per_byte == pytest.approx(6.0, rel=1e-3)
    assert figures.op_pj == pytest.approx({"tensor_bf16": 0.4, "vector_fp32": 1.8}, rel=1e-3)
    assert figures.static_power_w == STATIC_W and figures.max_residual < 1e-3 and len(figures.samples) == 8
    spec = get_hardware("H200").model_copy(update={"name": "H200-calibrated", "energy": figures})
    path = tmp_path / "h200-calibrated.yaml"
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    loaded = load_hardware_file(path)
    assert loaded.energy == figures and loaded.peak_tflops == spec.peak_tflops


def test_energy_calibration_needs_a_gpu():
    with pytest.raises(CalibrationError, match="needs a CUDA device, not cpu"):
        calibrate_energy("cpu")


def test_hw_calibrate_energy_on_a_cpu_is_one_line_and_exit_1(tmp_path: Path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SOLBENCH_HARDWARE_DIR": str(tmp_path)}
    env.pop("SOLBENCH_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "hw", "calibrate", "--energy", "--device", "cpu"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == ["<input>: --energy: measures a GPU's energy counter: it needs a CUDA device, not cpu"]
    assert not list(tmp_path.iterdir())  # nothing measured, nothing written
