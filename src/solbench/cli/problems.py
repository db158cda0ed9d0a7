"""`solbench validate` and `solbench show`."""

from __future__ import annotations



import typer

from .app import PathsArgument, SynthesizeOption, TABLE_LIMIT, _default_paths, _print_issue, app, console, error_console, reports_user_errors


@app.command()
@reports_user_errors
def validate(paths: PathsArgument = None, synthesize_missing_blobs: SynthesizeOption = False) -> None:
    """Check problems, datasets, solutions and traces; exit code 1 if anything is invalid."""
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


