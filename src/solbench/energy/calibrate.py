"""`solbench hw calibrate --energy` (GPU only): the energy figures of a spec, measured here.

1. Idle power: an aligned idle window (solbench.energy.window) with nothing running: the static power
   that every call pays over its time (`static_power_w`).
2. Each calibration kernel (solbench.energy.kernels) is warmed up, then run back to back in an aligned
   window of at least `window_s`, in steps of about STEP_S (several calls, then a synchronisation):
   joules per call = the window's joules per step / calls per step; seconds per call likewise.
3. Dynamic joules per call = joules per call - static power x seconds per call, fitted by least squares
   against each kernel's bytes and FLOPs (solbench.energy.fit): per-byte energies of DRAM and L2 and
   per-FLOP energies of each unit measured, with the residuals, into the spec's `energy:` block.

The copies and products run on random data: moving zeros costs less (fewer bit flips), so a kernel
whose data is mostly zeros can come in under the figures; the energy score's bound uncertainty
(solbench.energy.score) is meant to cover the fit's error, not that.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any, Callable

from solbench.energy.figures import EnergyFigures, FitSample
from solbench.energy.fit import DRAM, L2, Fit, FitError, Sample, fit
from solbench.energy.kernels import Kernel, all_kernels
from solbench.energy.window import idle_window, loop_window

STEP_S = 0.01  # calls per step: about this many seconds of them, then one synchronisation
WARMUP_S = 0.2  # each kernel runs this long before its window (clocks and power settle)
IDLE_S = 1.0
REST_S = 1.0  # nothing runs this long before the idle window


class CalibrationError(RuntimeError):
    """Energy cannot be calibrated here (one line: why)."""


@dataclass(frozen=True)
class Measured:
    kernel: Kernel
    joules: float  # per call, all of it
    seconds: float  # per call, wall time in the window
    calls: int


def calls_per_step(kernel: Kernel) -> int:
    """Calls that take about STEP_S (timed with CUDA events after a warm-up call)."""
    import torch

    kernel.run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        kernel.run()
    end.record()
    end.synchronize()
    seconds = max(start.elapsed_time(end) / 3e3, 1e-6)
    return max(1, min(10_000, round(STEP_S / seconds)))


def measure_kernel(counter: Any, kernel: Kernel, window_s: float) -> Measured:
    import torch

    repeat = calls_per_step(kernel)

    def step() -> None:
        for _ in range(repeat):
            kernel.run()
        torch.cuda.synchronize()

    started = time.monotonic()
    while time.monotonic() - started < WARMUP_S:
        step()
    window = loop_window(counter, step, window_s)
    calls = window.effective_steps * repeat
    return Measured(kernel, window.joules / calls, window.seconds / calls, window.steps * repeat)


def samples_of(measured: list[Measured], static_power_w: float) -> list[Sample]:
    return [Sample(m.kernel.name, m.kernel.dram_bytes, m.kernel.l2_bytes, dict(m.kernel.flops), m.joules - static_power_w * m.seconds)
            for m in measured]


def figures_of(result: Fit, samples: list[Sample], static_power_w: float, device_name: str, power_limit_w: float | None,
               window_s: float) -> EnergyFigures:
    coefficients = result.coefficients
    return EnergyFigures(
        date=datetime.date.today().isoformat(), device=device_name, static_power_w=round(static_power_w, 2),
        dram_pj_per_byte=_pj(coefficients[DRAM]), l2_pj_per_byte=_pj(coefficients[L2]),
        op_pj={unit: _pj(value) for unit, value in coefficients.items() if unit not in (DRAM, L2)},
        power_limit_w=power_limit_w, window_s=window_s, rms_residual=round(result.rms_residual, 4), max_residual=round(result.max_residual, 4),
        samples=[FitSample(kernel=s.kernel, measured_j=float(f"{s.joules:.4g}"), fitted_j=float(f"{fitted:.4g}"), residual=round(residual, 4))
                 for s, fitted, residual in zip(samples, result.fitted, result.residuals)],
        note="least squares of dynamic joules per call (idle power over each call's time excluded) against bytes and FLOPs; "
             + "; ".join(result.notes or ["all coefficients free"]),
    )


def _pj(joules: float) -> float:
    return float(f"{joules * 1e12:.4g}")


def calibrate_energy(device: str, window_s: float = 1.0, scale: float = 1.0, progress: Callable[[str], None] = lambda line: None
                     ) -> tuple[EnergyFigures, list[Measured]]:
    """Measure and fit the energy figures of the GPU `device` (see the module docstring)."""
    from solbench.energy.counter import open_counter

    if not device.startswith("cuda"):
        raise CalibrationError(f"--energy measures a GPU's energy counter: it needs a CUDA device, not {device}")
    counter, note = open_counter(device)
    if counter is None:
        raise CalibrationError(note or "energy not measured: no counter")
    import torch

    kernels = all_kernels(device, scale)
    torch.cuda.synchronize()
    time.sleep(REST_S)  # the power of the allocations' random fills settles before the idle window
    idle = idle_window(counter, IDLE_S)
    progress(f"idle power {idle.mean_power_w:.1f} W over {idle.seconds:.2f} s")
    measured = []
    for kernel in kernels:
        found = measure_kernel(counter, kernel, window_s)
        measured.append(found)
        progress(f"{kernel.name}: {found.joules * 1e3:.4g} mJ per call, {found.seconds * 1e3:.4g} ms per call, "
                 f"{found.joules / found.seconds:.0f} W, {found.calls} calls")
    samples = samples_of(measured, idle.mean_power_w)
    try:
        result = fit(samples)
    except FitError as exc:
        raise CalibrationError(f"energy fit failed: {exc}") from None
    return figures_of(result, samples, idle.mean_power_w, counter.name, counter.power_limit_w, window_s), measured
