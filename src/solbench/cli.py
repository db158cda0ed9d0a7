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
console = Console()
error_console = Console(stderr=True, soft_wrap=True)

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
    from solbench.cli_render import validation_table
    from solbench.spec.loaders import scan

    results = [loaded for path in _default_paths(paths) for loaded in scan(path)]
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
    from solbench.cli_render import problem_details, problems_summary
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
