"""`solbench baseline`: build and show the scoring baselines (T_b) of the device at hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import (DeviceOption, EnergyOption, EnergyWindowOption, HardwareOption, PathsArgument, PolicyOption, SandboxOption, SeedOption, TimeoutOption, TrialsOption, _device_defaults,
                  _evaluation_options, _problems_to_run, _print_issue, _sandbox_mode, app, console, error_console, reports_user_errors)
from .evaluate import CompileModesOption, _compile_modes
from .workloads import choose_workloads as _choose_workloads

baseline_app = typer.Typer(help="Scoring baselines (T_b): the fastest correct of the eager reference, torch.compile and registered baselines.",
                           no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
BaselinesOption = Annotated[Optional[Path], typer.Option("--baselines", help="Baseline folder (default: ./baselines or $SOLBENCH_BASELINES).")]


@baseline_app.command("build")
@reports_user_errors
def baseline_build(
    paths: PathsArgument = None,
    hardware: HardwareOption = None,
    baselines: BaselinesOption = None,
    baseline_solutions: Annotated[Optional[Path], typer.Option("--baseline-solutions", help="A folder of registered baseline solutions (JSON files).")] = None,
    compile_modes: CompileModesOption = "auto",
    workloads: Annotated[str, typer.Option(help="Which workloads: all, smallest:N or spread:N (default: all on a GPU, smallest:2 on a CPU).")] = "auto",
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Measure again where current entries exist.")] = False,
    device: DeviceOption = "auto",
    trials: TrialsOption = 3,
    timeout: TimeoutOption = 300.0,
    seed: SeedOption = None,
    sandbox: SandboxOption = "auto",
    policy: PolicyOption = "auto",
    energy: EnergyOption = False,
    energy_window: EnergyWindowOption = 1.0,
) -> None:
    """Measure T_b for every problem and workload on this device (with --energy, E_b too: the least joules
    per call of the correct candidates); entries already current are kept (one made without energy is
    measured again when --energy is asked)."""
    from solbench.data.errors import SpecError
    from solbench.score.baselines import DEFAULT_DIR, baseline_path, solution_folder_solutions
    from solbench.score.pipeline import RunInputs, modes_for, open_store
    from solbench.score.build import build_baselines
    from solbench.sol.cpu_spec import run_hardware

    modes = _compile_modes(compile_modes)
    problems, refused = _problems_to_run(paths)
    options = _evaluation_options(device, trials, timeout, 600.0, seed, None, False, True, policy, sandbox=_sandbox_mode(sandbox), hidden=0,
                                  energy=energy, energy_window_s=energy_window)
    options, device_name, workloads = _device_defaults(options, workloads)
    if baseline_solutions is not None and not baseline_solutions.is_dir():
        raise SpecError("expected a folder of baseline solutions", path=baseline_solutions, field="--baseline-solutions")
    registered = solution_folder_solutions(baseline_solutions) if baseline_solutions else []
    hardware_value, spec, note = run_hardware(hardware, device_name)
    if note:
        error_console.print(note)
    options = dataclasses.replace(options, hardware=hardware_value)
    selection = [(problem, _choose_workloads(problem, workloads)) for problem in problems]
    inputs = RunInputs(selection=selection, solutions={}, options=options, device=device_name, spec=spec, run_dir=Path("."),
                       baseline_dir=baselines or DEFAULT_DIR, registered=registered, rebuild=rebuild, compile_modes=modes)
    store, path = open_store(inputs)

    def on_trace(job: Any, trace: Any) -> None:
        performance = trace.evaluation.performance
        latency = f"{performance.latency_ms:.4g} ms" if performance is not None and performance.latency_ms is not None else ""
        error_console.print(f"{trace.definition} / {job.tag} / {trace.workload.uuid[:8]}: {trace.evaluation.status.value}  {latency}")

    outcome = build_baselines(selection, store, path, options, registered, rebuild, modes_for(inputs), on_trace=on_trace,
                              on_error=lambda job, message: _print_issue(message))
    _show(store, {p.name for p in problems})
    console.print(f"{outcome.built} entries measured, {outcome.reused} reused; saved to {baseline_path(inputs.baseline_dir, store.hardware)}",
                  highlight=False, soft_wrap=True)
    if refused or outcome.errors:
        raise typer.Exit(1)


@baseline_app.command("show")
@reports_user_errors
def baseline_show(
    hardware: Annotated[Optional[str], typer.Argument(help="The baseline file's hardware key (its name without .json); default: every file.")] = None,
    baselines: BaselinesOption = None,
) -> None:
    """The baselines of a folder: per problem and workload, T_b, its candidate, T_SOL and the verdict."""
    from solbench.data.errors import SpecError
    from solbench.score.baselines import DEFAULT_DIR, baseline_path, load_baselines

    folder = baselines or DEFAULT_DIR
    paths = [baseline_path(folder, hardware)] if hardware else sorted(p for p in folder.glob("*.json"))
    if not paths or not all(path.is_file() for path in paths):
        raise SpecError("holds no baseline file" + (f" for {hardware!r}" if hardware else "") + " (make one with `solbench baseline build`)",
                        path=folder, field="--baselines")
    for path in paths:
        store = load_baselines(path)
        console.print(f"{path}: hardware {store.hardware}, device {store.device}, updated {store.updated}", highlight=False, soft_wrap=True)
        console.print("versions: " + ", ".join(f"{k} {v}" for k, v in store.versions.items()), highlight=False, soft_wrap=True)
        for note in store.notes:
            console.print(f"note: {note}", highlight=False, soft_wrap=True)
        _show(store, None)


def _show(store: Any, problems: set[str] | None) -> None:
    from rich.table import Table

    from solbench.report.units import format_joules

    shown = sorted((e for e in store.entries if problems is None or e.problem in problems), key=lambda e: (e.problem, e.workload))
    energy = any(entry.energy_asked for entry in shown)  # an E_b column only where energy was asked for
    table = Table(title=f"baselines on {store.hardware}")
    columns = ("problem", "workload", "T_b ms", "candidate", "eager ms", "T_SOL ms", *(("E_b",) if energy else ()), "verdict", "failed candidates")
    for column in columns:
        table.add_column(column, justify="right" if column.endswith("ms") or column == "E_b" else "left")
    for entry in shown:
        failed = ", ".join(f"{c.name} {c.status}" for c in entry.candidates if c.latency_ms is None)
        joules = (format_joules(entry.baseline_energy_j) if entry.baseline_energy_j is not None else "-",) if energy else ()
        table.add_row(entry.problem, entry.workload[:8], _ms(entry.baseline_ms), entry.candidate or "-", _ms(entry.reference_ms), _ms(entry.sol_ms),
                      *joules, entry.verdict, failed or "")
    console.print(table)


def _ms(value: float | None) -> str:
    return f"{value:.4g}" if value is not None else "-"
