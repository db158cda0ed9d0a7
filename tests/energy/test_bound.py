"""E_SOL against hand-computed values: bytes x (e_DRAM + e_L2) + FLOPs x e_unit + P_static x T_SOL."""

from __future__ import annotations

import math

import pytest

from solbench.energy.bound import bound_for_spec, energy_bound, unit_energy_j
from solbench.energy.figures import EnergyFigures
from solbench.sol.analysis import SolResult, analyze
from solbench.sol.hardware import get_hardware, load_hardware_file

from energy_testkit import FIGURES, VECTOR_SCALE

FIG = EnergyFigures.model_validate(FIGURES)


def result(flops: dict[str, float], moved: float, t_sol_s: float, policy: str = "relaxed") -> SolResult:
    return SolResult(problem="p", workload="w", hardware="H200", policy=policy, flops_by_unit=flops, bytes_unfused=moved, bytes_fused=moved,
                     bytes_cache_aware=moved, t_compute_s=0.0, t_unfused_s=t_sol_s, t_fused_s=t_sol_s, t_cache_aware_s=t_sol_s,
                     bottleneck="memory", uncovered_ops=[], nodes=[])


def test_a_bf16_gemm_by_hand():
    # 4096^3 bf16 GEMM: 2*4096^3 FLOPs, 3 * 4096^2 * 2 bytes, T_SOL 0.139 ms
    flops, moved, t_sol = 2 * 4096**3, 3 * 4096**2 * 2, 0.139e-3
    bound = energy_bound(result({"tensor_bf16": flops}, moved, t_sol), FIG)
    assert bound.parts["dram"] == pytest.approx(moved * 40e-12)
    assert bound.parts["l2"] == pytest.approx(moved * 10e-12)
    assert bound.parts["compute"] == pytest.approx(flops * 0.5e-12)
    assert bound.parts["static"] == pytest.approx(80.0 * t_sol)
    assert bound.joules == pytest.approx(100663296 * 50e-12 + 137438953472 * 0.5e-12 + 80 * 0.139e-3)  # 5.03e-3 + 0.0687 + 0.0111 J
    assert bound.joules == pytest.approx(0.0849, rel=1e-3)
    assert bound.notes == []


def test_units_are_priced_by_the_cheapest_way_the_policy_allows():
    # relaxed: fp32 vector math may run at the 16-bit rate, an fp32 contraction at the bf16 tensor rate
    assert unit_energy_j("vector_fp32", FIG, "relaxed")[0] == pytest.approx(1.5e-12)
    assert unit_energy_j("vector_fp32", FIG, "strict")[0] == pytest.approx(2.0e-12)
    assert unit_energy_j("tensor_fp32", FIG, "relaxed")[0] == pytest.approx(0.5e-12)
    # strict: the fp32 vector units (2.0 pJ) or 3xTF32 (3 x 0.9 = 2.7 pJ): the vector units
    assert unit_energy_j("tensor_fp32", FIG, "strict")[0] == pytest.approx(2.0e-12)
    cheap_tf32 = FIG.model_copy(update={"op_pj": {**FIG.op_pj, "tensor_tf32": 0.3}})
    assert unit_energy_j("tensor_fp32", cheap_tf32, "strict")[0] == pytest.approx(0.9e-12)


def test_a_unit_without_a_figure_gets_the_least_measured_one_with_a_note():
    joules, note = unit_energy_j("sfu", FIG, "relaxed")
    assert joules == pytest.approx(0.5e-12) and "no energy figure for sfu" in note and "tensor_bf16" in note
    bound = energy_bound(result({"sfu": 1e9, "vector_fp32": 2e9}, 1e6, 1e-5, policy="strict"), FIG)
    assert bound.parts["compute"] == pytest.approx(1e9 * 0.5e-12 + 2e9 * 2e-12)
    assert len(bound.notes) == 1
    empty = FIG.model_copy(update={"op_pj": {}})
    joules, note = unit_energy_j("tensor_bf16", empty, "relaxed")
    assert joules == 0.0 and "cost nothing" in note


def test_e_sol_of_a_real_analysis_and_no_bound_on_a_datasheet_spec(energy_spec):
    from solbench.data.loaders import load_problems

    problem = load_problems([VECTOR_SCALE])[0]
    workload = problem.workloads[0]
    spec = load_hardware_file(energy_spec)
    analysed = analyze(problem, workload, spec, "relaxed")
    bound, note = bound_for_spec(analysed, spec)
    assert note is None
    expected = (analysed.bytes_cache_aware * 50e-12 + sum(f * unit_energy_j(u, FIG, "relaxed")[0] for u, f in analysed.flops_by_unit.items())
                + 80.0 * analysed.t_sol_s)
    assert math.isclose(bound.joules, expected, rel_tol=1e-12)
    assert bound.parts["static"] == pytest.approx(80.0 * analysed.t_sol_s)  # T_SOL includes the latency floor
    datasheet = get_hardware("B200")
    assert datasheet.energy is None
    bound, note = bound_for_spec(analyze(problem, workload, datasheet, "relaxed"), datasheet)
    assert bound is None and "no energy figures (datasheet only)" in note


def test_e_sol_is_the_fits_lower_envelope_at_or_below_every_calibration_kernel():
    """A least-squares fit runs through the middle of its kernels: the bound takes its figures down by the
    largest over-estimate, so that no calibration kernel measured less than the bound prices it."""
    from solbench.energy.calibrate import figures_of
    from solbench.energy.fit import Sample, fit

    # two bf16 matmuls whose energy per FLOP differs by 6%, and two copies: no line runs through all four
    samples = [Sample("mm-big", 1e8, 1e8, {"tensor_bf16": 1e12}, 0.53), Sample("mm-small", 1e7, 1e7, {"tensor_bf16": 1e11}, 0.05),
               Sample("copy-big", 1e9, 1e9, {}, 0.1), Sample("copy-small", 1e8, 1e8, {}, 0.0102)]
    fitted = fit(samples)
    figures = figures_of(fitted, samples, 100.0, "GPU", 700.0, 1.0)
    over = max(f / s.joules for f, s in zip(fitted.fitted, samples))
    assert over > 1.02  # the central fit prices one kernel above what it measured
    assert figures.envelope() == pytest.approx(1 / over, rel=2e-3)  # the stored figures keep 4 digits
    for sample in samples:
        analysed = result({unit: flops for unit, flops in sample.flops.items()}, sample.dram_bytes, 0.0)
        dynamic = energy_bound(analysed, figures).joules  # T_SOL 0: the dynamic part alone (dram and l2 bytes are equal here)
        assert dynamic <= sample.joules * (1 + 1e-3), (sample.kernel, dynamic, sample.joules)
    # the parts are scaled alike, and figures without samples are not scaled
    bound = energy_bound(result({"tensor_bf16": 1e12}, 1e8, 1e-3), figures)
    assert bound.parts["compute"] == pytest.approx(figures.envelope() * 1e12 * figures.op_pj["tensor_bf16"] * 1e-12)
    assert bound.parts["static"] == pytest.approx(100.0 * 1e-3)
    assert FIG.envelope() == 1.0
