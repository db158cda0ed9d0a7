"""`solbench calibrate-tolerance`: each workload's max_atol/max_rtol from the reference's own distance
from an fp64 run (solbench.dataset.tolerance), written back into the workload file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import DeviceOption, InputProfileOption, SynthesizeOption, _input_profile, _print_issue, app, console, reports_user_errors
from .workloads import choose_workloads


@app.command("calibrate-tolerance")
@reports_user_errors
def calibrate_tolerance(
    problems: Annotated[list[Path], typer.Argument(help="Problem folders (or dataset folders of them); their workload.jsonl is rewritten.")],
    runs: Annotated[int, typer.Option(help="Fresh input draws per workload, each run at native precision twice and once in fp64.", min=1)] = 5,
    check_runs: Annotated[int, typer.Option("--check-runs", help="Further draws, not used for the calibration, on which the new tolerance must hold; a workload that fails is not written.", min=0)] = 1,
    seed: Annotated[int, typer.Option(help="Input seed of the draws (trials 0..runs-1, then the check's).")] = 0,
    device: DeviceOption = "auto",
    workloads: Annotated[str, typer.Option(help="Which workloads of each problem: all, smallest:N or spread:N.")] = "all",
    input_profile: InputProfileOption = "auto",
    synthesize_missing_blobs: SynthesizeOption = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the table and write nothing.")] = False,
) -> None:
    """Calibrate each workload's max_atol and max_rtol: the native-precision reference against an fp64 run of it
    on the same inputs, with a 1.25x margin (the rule: solbench.dataset.tolerance). Only the tolerance values of the
    calibrated lines change; exit code 1 if a problem could not be loaded or a workload could not be calibrated."""
    from solbench.bench.orchestrator import resolve_device
    from solbench.data.errors import SpecError
    from solbench.dataset.tolerance import workload_file

    try:
        resolved = resolve_device(device)
    except RuntimeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    profile = _input_profile(input_profile)
    loaded, failed = _load(problems, synthesize_missing_blobs)
    plans = []
    for problem in loaded:
        try:
            plans.append((problem, workload_file(problem), choose_workloads(problem, workloads)))
        except SpecError as exc:
            failed = True
            for issue in exc.issues:
                _print_issue(issue)
    for problem, path, chosen in plans:
        failed |= _calibrate(problem, path, chosen, runs=runs, check_runs=check_runs, seed=seed, device=resolved,
                             profile=None if profile == "auto" else profile, dry_run=dry_run)
    if failed:
        raise typer.Exit(1)


def _load(paths: list[Path], synthesize: bool) -> tuple[list[Any], bool]:
    """The problems under the paths, and whether any path failed (each failure printed as one line)."""
    from solbench.data.errors import Issue
    from solbench.data.loaders import flag_duplicate_names, scan

    found, failed = [], False
    for path in paths:
        if path.suffix == ".py" and path.is_file():  # inline and KernelBench-style problems live in code, not in a workload file
            _print_issue(Issue("a .py problem has no workload file beside a definition to write tolerances into; "
                               "calibrate-tolerance takes problem folders (definition.json + workload.jsonl)", path))
            failed = True
            continue
        found += scan(path, synthesize_missing_blobs=synthesize)
    flag_duplicate_names(found)
    for item in found:
        if not item.ok and item.kind not in {"solution", "traces"}:
            failed = True
            for issue in item.errors:
                _print_issue(issue)
    problems = [item.problem for item in found if item.problem is not None]
    if not problems and not failed:
        for path in paths:
            _print_issue(Issue("holds no problem", path))
        failed = True
    return problems, failed


def _calibrate(problem: Any, path: Path, chosen: list[Any], *, runs: int, check_runs: int, seed: int, device: str,
               profile: Optional[str], dry_run: bool) -> bool:
    """Calibrate, print the table and write (unless dry_run); True when a workload failed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from solbench.dataset.tolerance import calibrate_workload, write_calibrations

    results = []
    live = sys.stderr.isatty()  # a bar on a terminal; elsewhere (logs, pipes) a line per workload
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr), transient=True, disable=not live) as progress:
        task = progress.add_task(problem.name, total=len(chosen))
        for index, workload in enumerate(chosen, start=1):
            progress.update(task, description=f"{problem.name} / {workload.uuid[:8]}")
            results.append(calibrate_workload(problem, workload, runs=runs, check_runs=check_runs, seed=seed, device=device,
                                              profile=profile))
            progress.advance(task)
            if not live:
                print(f"{problem.name} / {workload.uuid[:8]}: calibrated ({index} of {len(chosen)})", file=sys.stderr)
    console.print(_table(problem, path, results, device))
    failed = False
    for result in results:
        for note in result.notes:
            print(f"{problem.name} / {result.workload.uuid}: note: {note}")
        if result.failure is not None:
            failed = True
            print(f"{path}: workload {result.workload.uuid}: cannot calibrate: {result.failure}", file=sys.stderr)
    if dry_run:
        console.print(f"{path}: dry run, nothing written")
    else:
        changed = write_calibrations(problem, results)
        console.print(f"{path}: {changed} workload line(s) updated" if changed else f"{path}: unchanged")
    return failed


def _table(problem: Any, path: Path, results: list[Any], device: str) -> Any:
    from rich.table import Table

    table = Table(title=f"{problem.name}: tolerance vs fp64 run ({device}), {path}")
    for column in ("workload", "old atol", "old rtol", "new atol", "new rtol", "max abs err", "max rel err", "non-det", "runs", "held-out"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for result in results:
        old = result.old
        new = result.tolerance
        table.add_row(result.workload.uuid[:8], f"{old.max_atol:.3g}", f"{old.max_rtol:.3g}",
                      f"{new.max_atol:.3g}" if new else "-", f"{new.max_rtol:.3g}" if new else "-",
                      f"{result.max_abs_error:.3g}", f"{result.max_rel_error:.3g}", f"{result.nondeterminism:.3g}",
                      str(result.runs), f"{result.checked} passed" if new else "-")
    return table
