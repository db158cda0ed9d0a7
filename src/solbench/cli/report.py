"""`solbench report RUN_DIR`: the Markdown and HTML report of a run folder."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from .app import app, error_console, reports_user_errors


@app.command()
@reports_user_errors
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder: the summary.json (and traces.jsonl) that `solbench run` wrote.")],
    open_browser: Annotated[bool, typer.Option("--open", help="Open report.html in the default web browser afterwards.")] = False,
) -> None:
    """Write RUN_DIR/report.md and RUN_DIR/report.html (one self-contained file: leaderboard, roofline
    per problem, suite plots, audit flags) from RUN_DIR/summary.json."""
    from solbench.report.render import write_report

    started = time.perf_counter()
    paths = write_report(run_dir)
    for path in paths:
        print(path)
    error_console.print(f"report written in {time.perf_counter() - started:.1f} s")
    if open_browser:
        import webbrowser

        html = paths[-1].resolve()
        if not webbrowser.open(html.as_uri()):
            print(f"--open: no web browser found here; open {html} by hand", file=sys.stderr)
