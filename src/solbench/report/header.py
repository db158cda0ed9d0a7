"""The facts at the top of a report: when, on what, with which versions."""

from __future__ import annotations

from solbench.report.formatting import BLANK, fmt_time
from solbench.score.summary import RunSummary


def header_lines(summary: RunSummary) -> list[tuple[str, str]]:
    versions = " · ".join(f"{name} {value}" for name, value in summary.versions.items()) or BLANK
    solutions = len({(w.problem, w.solution) for w in summary.workloads})
    lines = [
        ("created", summary.created),
        ("hardware (T_SOL priced on)", summary.hardware or "none: T_SOL blank"),
        ("device", summary.device),
        ("versions", versions),
        ("run", f"{len({w.problem for w in summary.workloads} | {p.problem for p in summary.problems})} problems, "
                f"{solutions} solution runs, {len(summary.workloads)} workload results"
                + (f", {fmt_time(summary.wall_s * 1e3)} wall" if summary.wall_s is not None else "")),
    ]
    baselines = getattr(summary, "baselines", None)
    if baselines:
        lines.append(("baselines", str(baselines)))
    return lines
