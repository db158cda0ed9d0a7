"""The solbench command line: one typer app over every stage."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer
from rich.console import Console

from solbench import __version__

app = typer.Typer(
    name="solbench",
    help="Benchmark GPU kernels against the hardware's speed of light.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
class _LazyConsole:
    """A rich Console made at first use in each command, so that it sees the environment of that
    call (COLUMNS, the streams of a test runner); piped output gets 200 columns instead of 80."""

    def __init__(self, stderr: bool = False):
        self.stderr = stderr

    def print(self, *objects: Any, **kwargs: Any) -> None:
        stream = sys.stderr if self.stderr else sys.stdout
        width = None if stream.isatty() or os.environ.get("COLUMNS") else 200
        Console(file=stream, width=width, soft_wrap=self.stderr).print(*objects, **kwargs)


console = _LazyConsole()
error_console = _LazyConsole(stderr=True)

PathsArgument = Annotated[
    Optional[list[Path]],
    typer.Argument(help="Problem folders, dataset folders, FlashInfer-Trace folders, KernelBench-style .py files, solutions (.json) or traces (.jsonl). Default: the bundled problems."),
]


def _default_paths(paths: list[Path] | None) -> list[Path]:
    if paths:
        return paths
    from solbench.dataset import bundled_problems_path

    return [bundled_problems_path()]


def _print_issue(issue: object) -> None:
    # One plain line per issue (no wrapping), so that tools and people can grep it.
    print(str(issue), file=sys.stderr)


def reports_user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A SpecError from a command becomes one line per issue and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from solbench.spec.errors import SpecError

        try:
            return command(*args, **kwargs)
        except SpecError as exc:
            for issue in exc.issues:
                _print_issue(issue)
            raise typer.Exit(1) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        print(f"solbench {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """solbench: is the kernel correct, how fast is it really, and how close to the speed of light?"""


@app.command()
@reports_user_errors
def validate(paths: PathsArgument = None) -> None:
    """Check problems, datasets, solutions and traces; exit code 1 if anything is invalid."""
    from solbench.report.problem_tables import validation_table
    from solbench.spec.loaders import flag_duplicate_names, scan

    results = [loaded for path in _default_paths(paths) for loaded in scan(path)]
    flag_duplicate_names(results)
    console.print(validation_table(results))
    invalid = [loaded for loaded in results if not loaded.ok]
    for loaded in results:
        for issue in loaded.issues:
            _print_issue(issue)
    problems = sum(1 for loaded in results if loaded.problem is not None)
    workloads = sum(len(loaded.problem.workloads) for loaded in results if loaded.problem is not None)
    summary = f"{len(results) - len(invalid)} of {len(results)} valid ({problems} problems, {workloads} workloads)"
    console.print(summary, style="red" if invalid else "green")
    if invalid:
        raise typer.Exit(1)


@app.command()
@reports_user_errors
def show(paths: PathsArgument = None) -> None:
    """Axes, inputs, outputs and workloads of each problem (a summary table for the bundled set)."""
    from solbench.report.problem_tables import problem_details, problems_summary
    from solbench.spec.loaders import load_problems

    problems = load_problems(_default_paths(paths))
    if not problems:
        error_console.print("no problem found")
        raise typer.Exit(1)
    if not paths:
        console.print(problems_summary(problems))
        return
    for problem in problems:
        console.print(problem_details(problem))
        console.print()


@app.command()
@reports_user_errors
def sol(
    paths: PathsArgument = None,
    hardware: Annotated[Optional[str], typer.Option("--hardware", "-H", help="Hardware spec name or YAML file (default: $SOLBENCH_HARDWARE or H200).")] = None,
    workload: Annotated[Optional[list[str]], typer.Option("--workload", "-w", help="Only these workload uuids (a unique prefix of 6+ characters is enough).")] = None,
    policy: Annotated[str, typer.Option(help="Precision policy: strict, relaxed, or auto (the problem's own, else relaxed for FlashInfer-Trace data, strict otherwise).")] = "auto",
    explain: Annotated[bool, typer.Option("--explain", help="Add the per-op breakdown.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON list, an object per workload.")] = False,
) -> None:
    """Speed-of-light bounds of each workload: FLOPs by unit, bytes, unfused/fused/cache-aware times."""
    import json

    from solbench.report.sol_tables import explain_table, sol_table
    from solbench.sol.api import analyze_paths
    from solbench.sol.hardware import default_hardware_name, get_hardware

    if policy not in {"auto", "strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict, relaxed or auto, got {policy!r}", param_hint="--policy")
    spec = get_hardware(hardware or default_hardware_name())
    results, failures = analyze_paths(_default_paths(paths), spec, policy, workload, progress=not as_json)
    for failure in failures:
        _print_issue(failure)
    if as_json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        if results:
            console.print(sol_table(results))
        for result in results:
            for note in result.notes:
                console.print(f"[dim]{result.problem}/{result.workload[:8]}: {note}[/dim]")
            if result.partial:
                console.print(f"[yellow]{result.problem}/{result.workload[:8]}: partial, no cost rule for {', '.join(result.uncovered_ops)}[/yellow]")
            if explain:
                console.print(explain_table(result))
    if failures:
        raise typer.Exit(1)


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
    """Measure attainable ceilings here and save a spec derived from the datasheet entry."""
    import torch
    import yaml

    from solbench.sol.calibrate import calibrated_spec, default_base_for, measure
    from solbench.sol.hardware import USER_HARDWARE_DIR, get_hardware
    from solbench.spec.files import write_text_safely

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    base_spec = get_hardware(base) if base else default_base_for(device)
    error_console.print(f"measuring on {device} (base spec: {base_spec.name if base_spec else 'none, a CPU spec'})...")
    measured = measure(device, size_scale=scale)
    spec = calibrated_spec(base_spec, device, measured)
    target = output or USER_HARDWARE_DIR / f"{spec.name.lower()}.yaml"
    write_text_safely(target, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), overwrite=force)
    for key, value in measured.items():
        console.print(f"{key:>14}: {value:10.3f} {'TB/s' if key.endswith('tbps') else 'TFLOP/s'}")
    console.print(f"saved {spec.name} to {target}")


def main() -> None:
    """Console entry point: never a traceback for the user (SOLBENCH_DEBUG=1 shows one)."""
    try:
        app()
    except KeyboardInterrupt:
        print("solbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last line of defence against tracebacks
        if os.environ.get("SOLBENCH_DEBUG"):
            raise
        print(f"solbench: internal error: {type(exc).__name__}: {exc} (set SOLBENCH_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
