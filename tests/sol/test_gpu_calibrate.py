"""Calibration on a real GPU measures ceilings in the range the datasheet allows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.sol.calibrate import calibrated_spec, default_base_for, measure
from solbench.sol.hardware import get_hardware

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_measured_ceilings_are_below_the_datasheet_and_plausible(tmp_path: Path):
    measured = measure("cuda", size_scale=0.25, repeats=5)
    base = default_base_for("cuda")
    assert base is not None
    # Attainable ceilings sit below the datasheet peaks but not absurdly far below them.
    assert 0.3 * base.dram.bandwidth_tbps < measured["copy_tbps"] <= 1.05 * base.dram.bandwidth_tbps
    assert 0.3 * base.peak_tflops["tensor_bf16"] < measured["tensor_bf16"] <= 1.05 * base.peak_tflops["tensor_bf16"]
    spec = calibrated_spec(base, "cuda", measured)
    assert spec.peak_tflops["tensor_bf16"] == pytest.approx(measured["tensor_bf16"], rel=1e-3)
    assert spec.calibration["base"] == base.name
    path = tmp_path / "gpu.yaml"
    import yaml

    path.write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    assert get_hardware(str(path)).name == spec.name


def test_latency_floors_are_short_positive_and_the_dram_one_is_the_longer():
    from solbench.sol.calibrate import measure_floors

    floors = measure_floors("cuda", launches=300)
    launch, dram = floors["launch_floor_s"], floors["dram_latency_floor_s"]
    assert 0 < launch <= dram < 50e-6
    base = default_base_for("cuda")
    assert base is not None
    spec = calibrated_spec(base, "cuda", {**measure("cuda", size_scale=0.05, repeats=2, floors=False), **floors})
    assert spec.launch_floor_s == pytest.approx(launch, rel=1e-3) and spec.dram_latency_floor_s == pytest.approx(dram, rel=1e-3)
    assert spec.calibration["measured"]["dram_latency_floor_s"] == pytest.approx(dram, rel=1e-3)
