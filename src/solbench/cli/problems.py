"""`solbench validate` and `solbench show`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .app import PathsArgument, SynthesizeOption, TABLE_LIMIT, _default_paths, _print_issue, app, console, error_console, reports_user_errors


@app.command()
@reports_user_errors
def validate(
    paths: PathsArgument = None,
    synthesize_missing_blobs: SynthesizeOption = False,
    degenerate: Annotated[bool, typer.Option("--degenerate/--no-degenerate", help="Run each problem's reference at its smallest workload, once per tensor input drawn afresh, and warn about outputs that depend on no input (any solution could precompute them).")] = True,
    degenerate_limit: Annotated[int, typer.Option("--degenerate-limit", help="Skip the degenerate check where the smallest workload has more input elements than this (input generation dominates its cost).", min=1)] = 1 << 25,
) -> None:
    """Check problems, datasets, solutions and traces; exit code 1 if anything is invalid (a degenerate problem is a warning)."""
    from solbench.report.problem_tables import refusal_line, subset_summaries, validation_table
    from solbench.data.loaders import flag_duplicate_names, scan

    results = [loaded for path in _default_paths(paths) for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs)]
    flag_duplicate_names(results)
    if len(results) <= TABLE_LIMIT:
        console.print(validation_table(results))
    invalid = [loaded for loaded in results if not loaded.ok]
    for loaded in results:
        for issue in loaded.issues:
            _print_issue(issue)
    if degenerate:
        _warn_degenerate([loaded.problem for loaded in results if loaded.problem is not None], degenerate_limit)
    for line in subset_summaries(results):
        print(line)
    for loaded in invalid:
        print(refusal_line(loaded))
    problems = sum(1 for loaded in results if loaded.problem is not None)
    workloads = sum(len(loaded.problem.workloads) for loaded in results if loaded.problem is not None)
    summary = f"{len(results) - len(invalid)} of {len(results)} valid ({problems} problems, {workloads} workloads)"
    console.print(summary, style="red" if invalid else "green")
    if invalid:
        raise typer.Exit(1)


def _warn_degenerate(problems: list[Any], limit: int) -> None:
    """One warning line per problem whose reference's outputs do not change with any input (or cannot be run here)."""
    from solbench.bench.degenerate import find_constant_outputs
    from solbench.data.selection import input_elements

    skipped = 0
    for problem in problems:
        if min(input_elements(problem, w) for w in problem.workloads) > limit:
            skipped += 1
            continue
        try:
            found = find_constant_outputs(problem)
        except Exception as exc:  # noqa: BLE001 - the reference is the problem's code: any failure is a finding, not a crash
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            print(f"{problem.source}: warning: degenerate check: the reference did not run at its smallest workload here: {type(exc).__name__}: {first}")
            continue
        if found.degenerate:
            print(f"{problem.source}: warning: degenerate: {found.message()}")
    if skipped:
        print(f"degenerate check skipped for {skipped} problem(s) whose smallest workload has more than {limit:,} input elements (--degenerate-limit)")


@app.command()
@reports_user_errors
def show(paths: PathsArgument = None) -> None:
    """Axes, inputs, outputs and workloads of each problem (a summary table for the bundled set)."""
    from solbench.report.problem_tables import problem_details, problems_summary
    from solbench.data.loaders import load_problems

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


