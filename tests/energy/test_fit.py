"""The least-squares fit recovers known coefficients from synthetic calibration samples."""

from __future__ import annotations

import numpy as np
import pytest

from solbench.energy.fit import FitError, Sample, fit

TRUE = {"dram": 35e-12, "l2": 8e-12, "tensor_bf16": 0.45e-12, "vector_fp32": 1.9e-12}


def sample(name: str, dram: float, l2: float, flops: dict[str, float], noise: float = 0.0) -> Sample:
    joules = dram * TRUE["dram"] + l2 * TRUE["l2"] + sum(f * TRUE[u] for u, f in flops.items())
    return Sample(name, dram, l2, flops, joules * (1 + noise))


def calibration(noise: list[float] | None = None) -> list[Sample]:
    noise = noise or [0.0] * 8
    mib = 1 << 20
    return [
        sample("dram-256", 2 * 256 * mib, 2 * 256 * mib, {}, noise[0]),
        sample("dram-1024", 2 * 1024 * mib, 2 * 1024 * mib, {}, noise[1]),
        sample("l2-4", 0, 2 * 4 * mib, {}, noise[2]),
        sample("l2-10", 0, 2 * 10 * mib, {}, noise[3]),
        sample("mm-8192", 3 * 8192**2 * 2, 3 * 8192**2 * 2, {"tensor_bf16": 2 * 8192**3}, noise[4]),
        sample("mm-4096", 3 * 4096**2 * 2, 3 * 4096**2 * 2, {"tensor_bf16": 2 * 4096**3}, noise[5]),
        sample("fma-512", 2 * 4 * (1 << 22), 2 * 4 * (1 << 22), {"vector_fp32": 2 * 512 * (1 << 22)}, noise[6]),
        sample("fma-2048", 2 * 4 * (1 << 22), 2 * 4 * (1 << 22), {"vector_fp32": 2 * 2048 * (1 << 22)}, noise[7]),
    ]


def test_exact_samples_give_the_coefficients_back():
    result = fit(calibration())
    for name, value in TRUE.items():
        assert result.coefficients[name] == pytest.approx(value, rel=1e-9)
    assert result.max_residual < 1e-9 and result.notes == []


def test_noisy_samples_give_them_back_within_the_noise_with_its_residuals():
    noise = [0.02, -0.01, 0.03, -0.02, 0.01, -0.015, 0.02, -0.01]
    result = fit(calibration(noise))
    for name, value in TRUE.items():
        assert result.coefficients[name] == pytest.approx(value, rel=0.08)
    assert 0.005 < result.rms_residual < 0.04
    assert result.max_residual == pytest.approx(np.max(np.abs(result.residuals)))


def test_a_coefficient_the_data_pushes_below_zero_is_fixed_at_zero():
    samples = calibration()
    # L2 copies that cost less than nothing at the L2 once DRAM is paid for: the l2 coefficient would go negative
    samples = [s if not s.kernel.startswith("dram") else Sample(s.kernel, s.dram_bytes, s.l2_bytes, s.flops, s.joules * 0.5) for s in samples]
    samples = [s if not s.kernel.startswith("l2") else Sample(s.kernel, s.dram_bytes, s.l2_bytes, s.flops, s.joules * 3.0) for s in samples]
    result = fit(samples)
    assert all(value >= 0 for value in result.coefficients.values())
    assert any("negative" in note for note in result.notes)


def test_unfittable_samples_are_one_line_errors():
    with pytest.raises(FitError, match="no calibration samples"):
        fit([])
    with pytest.raises(FitError, match="no dynamic energy"):
        fit([Sample("idle", 1.0, 1.0, {}, 0.0)])
    with pytest.raises(FitError, match="exercises dram"):
        fit([Sample("l2", 0.0, 1e6, {}, 1e-5)])
