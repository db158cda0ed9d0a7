"""On a CUDA GPU with NVML's energy counter: energy measured by the evaluator on a real copy kernel, its
scaling with bytes, the counter's windows themselves, and `hw calibrate --energy` writing a spec with
figures that `sol` then prices E_SOL with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution
from solbench.data.inline import inline_problem
from solbench.data.trace import Status

from energy_testkit import VECTOR_SCALE

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SMALL, LARGE = 1 << 26, 1 << 28  # float32 elements: a 256 MiB and a 1 GiB copy, both far beyond the L2
COPY = inline_problem(
    "energy_copy_gpu",
    "import torch\n\ndef run(x):\n    return x.clone()\n",
    {"x": (["N"], "float32")},
    {"y": (["N"], "float32")},
    axes={"N": {"type": "var"}},
    workload_axes=[{"N": SMALL}, {"N": LARGE}],
    tolerance={"max_atol": 0.0, "max_rtol": 0.0},
)


@pytest.fixture(scope="module")
def copy_traces():
    options = EvalOptions(device="cuda", energy=True, hidden=0, trials=2)
    return evaluate(COPY, reference_solution(COPY), options)


def test_energy_of_a_real_copy_kernel_is_positive_and_its_power_between_idle_and_the_limit(copy_traces):
    from solbench.energy.counter import open_counter

    counter, note = open_counter("cuda")
    assert counter is not None, note
    for trace in copy_traces:
        assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
        energy = trace.evaluation.performance.energy
        assert energy is not None, trace.evaluation.log
        if energy.sol_j is None:  # the GPU's datasheet spec carries no energy figures (only the H200's are calibrated): said once, nothing else
            assert energy.note is not None and energy.note.startswith("no E_SOL: the hardware spec") and "no energy figures" in energy.note, energy
        else:
            assert energy.note is None and 0 < energy.sol_j < energy.joules, energy
        assert energy.joules > 0 and energy.joules > 10 * energy.resolution_j
        assert 20 < energy.idle_power_w < energy.mean_power_w <= 1.05 * (counter.power_limit_w or 1000), energy
        assert energy.window_s >= 1.0 and energy.calls >= 10
        assert "energy" in trace.evaluation.phases
        print(f"{trace.workload.uuid}: {energy.joules * 1e3:.3f} mJ per call, {energy.mean_power_w:.0f} W (idle {energy.idle_power_w:.0f} W), "
              f"{energy.calls} calls in {energy.window_s:.2f} s, setup {energy.overhead_j * 1e3:.3f} mJ, latency {trace.evaluation.performance.latency_ms:.4g} ms")


def test_joules_per_call_scale_about_linearly_with_bytes(copy_traces):
    small, large = (trace.evaluation.performance.energy.joules for trace in copy_traces)
    assert 3.0 < large / small < 5.3, (small, large)  # 4x the bytes; the launch and its static power are a small share


def test_windows_on_the_real_counter():
    from solbench.energy.counter import open_counter
    from solbench.energy.window import idle_window, loop_window

    counter, note = open_counter("cuda")
    assert counter is not None, note
    idle = idle_window(counter, 0.5)
    x = torch.randn(1 << 28, device="cuda")
    y = torch.empty_like(x)

    def step() -> None:
        for _ in range(20):
            y.copy_(x)
        torch.cuda.synchronize()

    busy = loop_window(counter, step, 1.0)
    assert 20 < idle.mean_power_w < busy.mean_power_w <= 1.05 * (counter.power_limit_w or 1000), (idle, busy)
    assert 0.5 <= idle.seconds < 0.7 and 1.0 <= busy.seconds < 1.2


def test_calibration_writes_a_spec_with_figures_that_sol_prices_e_sol_with(tmp_path: Path):
    target = tmp_path / "h200-energy.yaml"
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "hw", "calibrate", "--energy", "--scale", "0.25", "--energy-window", "0.5",
                           "-o", str(target)], capture_output=True, text=True, env=env, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    from solbench.sol.hardware import load_hardware_file

    spec = load_hardware_file(target)
    figures = spec.energy
    assert figures is not None and figures.date and figures.static_power_w > 20
    assert figures.dram_pj_per_byte > 0 and {"tensor_bf16", "vector_fp32"} <= set(figures.op_pj)
    assert figures.samples and figures.rms_residual is not None
    print(done.stdout[-3000:])
    rows = [json.loads(line) for line in subprocess.run([sys.executable, "-m", "solbench.cli", "sol", str(VECTOR_SCALE), "--hardware", str(target),
                                                         "--json"], capture_output=True, text=True, env=env, timeout=120).stdout.splitlines()]
    assert rows and all(row["e_sol_j"] > 0 for row in rows)
