"""`write_report(run_dir)`: RUN_DIR/summary.json in, RUN_DIR/report.md and RUN_DIR/report.html out.

A report file starts with a marker naming its run (the summary's creation time and the folder), so
that a later report may replace it, and nothing else: a report.md or report.html that is not a
previous report of the same run (moved folders and re-written summaries are still recognised by
either key) is left alone and is an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

from pydantic import ValidationError

from solbench.cores import usable_cores
from solbench.data.errors import SpecError, issues_from_validation_error
from solbench.data.files import write_atomically
from solbench.profile.store import run_profiles
from solbench.report.content import ReportContent, gather
from solbench.report.figures import suite_names
from solbench.report.html import SuiteFigure, render_html
from solbench.report.markdown import render_markdown
from solbench.report.profile_chart import profile_figures
from solbench.report.roofline import draw_rooflines as draw_rooflines_of
from solbench.report.roofline_worker import draw_in_processes
from solbench.report.energy_plot import time_energy_svg
from solbench.report.suite_plots import score_distribution_svg, speedup_vs_sol_svg
from solbench.score.summary import RunSummary

SUMMARY_FILE = "summary.json"
MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"
PARALLEL_CHUNK = 40  # problems per roofline process, for large reports
_MARKER = re.compile(r"<!-- solbench report; created=(\S*); folder=(\S*);")


def load_summary(run_dir: Path) -> RunSummary:
    """The run's summary; a SpecError naming the folder or file when it is missing or invalid."""
    if not run_dir.is_dir():
        raise SpecError("no such run folder" if not run_dir.exists() else "not a folder (expected a run folder holding summary.json)", path=run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise SpecError("missing: not a run folder (`solbench run` writes summary.json)", path=path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    try:
        return RunSummary.model_validate_json(data)
    except ValidationError as exc:
        issues = issues_from_validation_error(exc)
        first = issues[0]
        more = f" (and {len(issues) - 1} more: {', '.join(i.field or '?' for i in issues[1:4])}{', ...' if len(issues) > 4 else ''})" if len(issues) > 1 else ""
        where = f"{first.field}: " if first.field else ""
        raise SpecError(f"not a valid run summary: {where}{first.message}{more}", path=path) from None


def report_marker(summary: RunSummary, run_dir: Path) -> str:
    return (f"<!-- solbench report; created={quote(summary.created, safe='')}; folder={quote(str(run_dir.resolve()), safe='')}; "
            f"written by `solbench report` from {SUMMARY_FILE}, which it replaces on the next report -->")


def is_previous_report(path: Path, summary: RunSummary, run_dir: Path) -> bool:
    """Whether `path` is a report that an earlier `write_report` of this run wrote."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    found = _MARKER.search(head)
    if found is None:
        return False
    created, folder = unquote(found.group(1)), unquote(found.group(2))
    return created == summary.created or folder == str(run_dir.resolve())


def _check_replaceable(path: Path, summary: RunSummary, run_dir: Path) -> None:
    if (path.exists() or path.is_symlink()) and not is_previous_report(path, summary, run_dir):
        raise SpecError("exists and is not a previous report of this run; move it away (solbench report never overwrites other files)", path=path)


def _workers_for(problems: int) -> int:
    """Processes to draw rooflines in: one per PARALLEL_CHUNK problems up to the cores here; one
    (this process) for small reports, where starting a process costs more than it saves."""
    if problems < 2 * PARALLEL_CHUNK:
        return 1
    return max(1, min(usable_cores(), problems // PARALLEL_CHUNK))


def draw_rooflines(content: ReportContent, workers: int | None = None) -> None:
    """A roofline on each problem section (in place), drawn in `workers` processes (default: by size)."""
    summary = content.summary
    sets = suite_names(summary.problems)
    problems = [(section.name, section.workloads) for section in content.problems]
    workers = _workers_for(len(problems)) if workers is None else workers
    if workers <= 1:
        drawn = draw_rooflines_of(summary.roofs, sets, problems)
    else:
        size = -(-len(problems) // workers)
        drawn = draw_in_processes(summary.roofs, sets, [(start, problems[start:start + size]) for start in range(0, len(problems), size)])
    for section, roofline in zip(content.problems, drawn):
        section.roofline_svg, section.roofline_notes, section.roofline_legend = roofline.svg, roofline.notes, roofline.legend


def draw_suite_figures(content: ReportContent) -> list[SuiteFigure]:
    problems = content.summary.problems
    figures = []
    speedup = speedup_vs_sol_svg(problems, key="speedup-vs-sol")
    if speedup is not None:
        figures.append(SuiteFigure("speedup-vs-sol", speedup))
    for category in content.categories:
        distribution = score_distribution_svg(problems, category, key=f"scores-by-{category}")
        if distribution is not None:
            figures.append(SuiteFigure(f"scores-by-{category}", distribution))
    for index, suite in enumerate(suite_names(problems)):  # measured energy (--energy): time against energy per suite
        scatter = time_energy_svg(content.summary.workloads, problems, suite, key=f"time-vs-energy-{index}")
        if scatter is not None:
            figures.append(SuiteFigure("time-vs-energy", scatter))
    return figures


def write_report(run_dir: Path) -> list[Path]:
    """Write RUN_DIR/report.md and RUN_DIR/report.html from RUN_DIR/summary.json; returns their paths."""
    run_dir = Path(run_dir)
    summary = load_summary(run_dir)
    targets = [run_dir / MARKDOWN_FILE, run_dir / HTML_FILE]
    for path in targets:
        _check_replaceable(path, summary, run_dir)
    marker = report_marker(summary, run_dir)
    content = gather(summary)
    draw_rooflines(content)
    figures = draw_suite_figures(content)
    content.profiles = profile_figures(run_profiles(run_dir)[0])  # the gap decomposition of each profiled solution (run --profile)
    markdown = render_markdown(content, marker)
    html = render_html(content, figures, marker)
    for path, text in zip(targets, (markdown, html)):
        write_atomically(path, text)
    return targets
