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

    console.print(hardware_details(get_hardware(name)))


@hw_app.command("calibrate")
@reports_user_errors
def hw_calibrate(
    base: Annotated[Optional[str], typer.Option(help="Datasheet spec to derive from (default: matched from the GPU's name; none on a CPU).")] = None,
    device: Annotated[Optional[str], typer.Option(help="cuda, cuda:N or cpu (default: cuda if available).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write the spec (default: the user spec folder).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    scale: Annotated[float, typer.Option(help="Scale of the test sizes (smaller is faster, less exact).")] = 1.0,
) -> None:
    """Measure attainable ceilings (and, on a GPU, the latency floors) here and save a spec derived from the datasheet entry."""
    import torch
    import yaml

    from solbench.sol.calibrate import calibrated_spec, default_base_for, measure
    from solbench.sol.hardware import USER_HARDWARE_DIR, get_hardware
    from solbench.data.files import write_text_safely

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    base_spec = get_hardware(base) if base else default_base_for(device)
    error_console.print(f"measuring on {device} (base spec: {base_spec.name if base_spec else 'none, a CPU spec'})...")
    measured = measure(device, size_scale=scale)
    spec = calibrated_spec(base_spec, device, measured)
    target = output or USER_HARDWARE_DIR / f"{spec.name.lower()}.yaml"
    write_text_safely(target, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), overwrite=force)
    for key, value in measured.items():
        if key.endswith("_s"):  # the latency floors
            console.print(f"{key:>20}: {value * 1e6:10.3f} µs")
        else:
            console.print(f"{key:>20}: {value:10.3f} {'TB/s' if key.endswith('tbps') else 'TFLOP/s'}")
    if device.startswith("cuda") and not any(key.endswith("_s") for key in measured):
        error_console.print("latency floors not measured (no CUPTI here: pip install cupti-python); kept from the base spec")
    console.print(f"saved {spec.name} to {target}")


