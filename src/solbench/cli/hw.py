"""`solbench hw`: hardware specs (list, show, calibrate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app, console, error_console, reports_user_errors


hw_app = typer.Typer(help="Hardware specs: list, show, calibrate.", no_args_is_help=True)
app.add_typer(hw_app, name="hw")


@hw_app.command("list")
@reports_user_errors
def hw_list() -> None:
    """Every known spec: the built-in datasheets and the calibrated ones."""
    from solbench.report.sol_tables import hardware_table
    from solbench.sol.hardware import catalogue

    console.print(hardware_table([(str(path), spec) for path, spec in catalogue().values()]))


@hw_app.command("show")
@reports_user_errors
def hw_show(name: Annotated[str, typer.Argument(help="Spec name or YAML file.")]) -> None:
    """Peaks per unit and the rates each precision policy uses."""
    from solbench.report.sol_tables import hardware_details
    from solbench.sol.hardware import get_hardware

    from solbench.report.energy_tables import figures_line

    spec = get_hardware(name)
    console.print(hardware_details(spec))
    console.print(figures_line(spec), markup=False, highlight=False, soft_wrap=True)


@hw_app.command("calibrate")
@reports_user_errors
def hw_calibrate(
    base: Annotated[Optional[str], typer.Option(help="Datasheet spec to derive from (default: matched from the GPU's name; none on a CPU).")] = None,
    device: Annotated[Optional[str], typer.Option(help="cuda, cuda:N or cpu (default: cuda if available).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write the spec (default: the user spec folder).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    scale: Annotated[float, typer.Option(help="Scale of the test sizes (smaller is faster, less exact).")] = 1.0,
    energy: Annotated[bool, typer.Option("--energy", help="Also measure the energy figures (GPU, NVML's energy counter): copies through DRAM and the L2, matrix products per dtype, FMA loops; fitted by least squares into the spec's energy block (about 30 s more).")] = False,
    energy_window: Annotated[float, typer.Option("--energy-window", min=0.2, max=60.0, help="With --energy: seconds of each calibration kernel's measurement window.")] = 1.0,
) -> None:
    """Measure attainable ceilings (and, on a GPU, the latency floors; with --energy, the energy figures) here and save a spec derived from the datasheet entry."""
    import torch
    import yaml

    from solbench.data.errors import SpecError
    from solbench.sol.calibrate import calibrated_spec, default_base_for, measure
    from solbench.sol.hardware import USER_HARDWARE_DIR, get_hardware
    from solbench.data.files import write_text_safely

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if energy and not device.startswith("cuda"):
        raise SpecError(f"measures a GPU's energy counter: it needs a CUDA device, not {device}", field="--energy")
    if energy:  # before the ceilings are measured: a GPU without a readable counter fails at once
        from solbench.energy.counter import open_counter

        counter, note = open_counter(device)
        if counter is None:
            raise SpecError(note or "no energy counter", field="--energy")
    base_spec = get_hardware(base) if base else default_base_for(device)
    error_console.print(f"measuring on {device} (base spec: {base_spec.name if base_spec else 'none, a CPU spec'})...")
    measured = measure(device, size_scale=scale)
    spec = calibrated_spec(base_spec, device, measured)
    if energy:
        spec = spec.model_copy(update={"energy": _energy_figures(device, energy_window, scale)})
    target = output or USER_HARDWARE_DIR / f"{spec.name.lower()}.yaml"
    write_text_safely(target, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), overwrite=force)
    for key, value in measured.items():
        if key.endswith("_s"):  # the latency floors
            console.print(f"{key:>20}: {value * 1e6:10.3f} µs")
        else:
            console.print(f"{key:>20}: {value:10.3f} {'TB/s' if key.endswith('tbps') else 'TFLOP/s'}")
    if device.startswith("cuda") and not any(key.endswith("_s") for key in measured):
        error_console.print("latency floors not measured (no CUPTI here: pip install cupti-python); kept from the base spec")
    if spec.energy is not None:
        from solbench.report.energy_tables import figures_line

        console.print(figures_line(spec), markup=False, highlight=False, soft_wrap=True)
        console.print("  per FLOP: " + ", ".join(f"{unit} {value:.3g} pJ" for unit, value in sorted(spec.energy.op_pj.items())), markup=False, highlight=False)
    console.print(f"saved {spec.name} to {target}")


def _energy_figures(device: str, window_s: float, scale: float):
    """The energy figures measured here (solbench.energy.calibrate); a failure is one line (SpecError)."""
    from solbench.data.errors import SpecError
    from solbench.energy.calibrate import CalibrationError, calibrate_energy

    error_console.print(f"measuring energy on {device} (windows of {window_s:g} s)...")
    try:
        figures, _ = calibrate_energy(device, window_s, scale, progress=lambda line: error_console.print(f"  {line}", markup=False, highlight=False))
    except CalibrationError as exc:
        raise SpecError(str(exc), field="--energy") from None
    return figures


