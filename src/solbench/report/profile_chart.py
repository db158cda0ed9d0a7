"""The report's profiles: the gap decomposition of each profiled solution as a bar chart (one bar per
factor of T / T_SOL: gaps, extra bytes, bandwidth or pipe, remainder, on a log axis from 1, and the
product, T / T_SOL, below them; solbench.profile.gap) and as a line in the Markdown. Drawn from the
stored profiles (RUN_DIR/profiles/...) alone."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import matplotlib
from matplotlib import ticker

from solbench.profile.model import ProfileReport
from solbench.report.figures import RC, new_figure, plain_number, short, to_svg

LABELS = {"gaps": "launch / idle gaps", "extra_bytes": "extra DRAM bytes", "bandwidth": "DRAM bandwidth below peak",
          "pipe": "pipe below peak", "remainder": "remainder"}
FACTOR_COLOUR, TOTAL_COLOUR, BELOW_COLOUR = "#1f77b4", "#444444", "#2ca02c"


@dataclass(frozen=True)
class ProfileFigure:
    problem: str
    solution: str
    workload: str
    svg: str
    caption: str  # the decomposition in one line: T/T_SOL = a x b x ...


def caption(report: ProfileReport) -> str:
    decomposition = report.decomposition
    if decomposition is None:
        return ""
    parts = " × ".join(f"{LABELS.get(f.name, f.name)} {f.value:.3g}" for f in decomposition.factors)
    return f"T/T_SOL {decomposition.t_over_t_sol:.3g} = {parts} ({decomposition.bound}-bound)"


def gap_chart_svg(report: ProfileReport, key: str) -> str | None:
    """The chart of one profile (None where it has no decomposition)."""
    decomposition = report.decomposition
    if decomposition is None or not decomposition.factors:
        return None
    labels = [LABELS.get(factor.name, factor.name) for factor in decomposition.factors] + ["T / T_SOL"]
    values = [factor.value for factor in decomposition.factors] + [decomposition.t_over_t_sol]
    colours = [FACTOR_COLOUR if value >= 1 else BELOW_COLOUR for value in values[:-1]] + [TOTAL_COLOUR]
    with matplotlib.rc_context(RC):
        figure = new_figure(5.6, 0.32 * len(values) + 0.95, (1.75, 0.42, 0.3, 0.32))
        ax = figure.add_subplot()
        ax.set_xscale("log")
        positions = list(range(len(values)))
        lefts = [min(1.0, value) for value in values]
        widths = [abs(value - 1.0) or 1e-9 for value in values]
        bars = ax.barh(positions, widths, left=lefts, color=colours, height=0.62)
        for bar, name in zip(bars, [factor.name for factor in decomposition.factors] + ["t_over_t_sol"]):
            bar.set_gid(f"{key}-bar-{name}")  # tests and scripts find each factor's bar by it
        low = min(min(values) / 1.3, 0.9)
        high = max(max(values) * 1.6, 2.0)
        ax.set_xlim(low, high)
        for position, value in zip(positions, values):
            ax.text(value * (1.04 if value >= 1 else 0.96), position, f"×{value:.3g}", va="center", ha="left" if value >= 1 else "right", fontsize=7)
        ax.axvline(1.0, color="#999999", linewidth=0.8)
        ax.set_yticks(positions)
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(plain_number))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.grid(True, axis="x", alpha=0.25, linewidth=0.6)
        ax.set_title(short(f"{report.problem} / {report.solution} ({decomposition.bound}-bound)", 64), loc="right")
        if not math.isclose(math.prod(values[:-1]), values[-1], rel_tol=1e-6):
            ax.set_xlabel("factors (their product differs from T / T_SOL: see the profile's notes)")
        else:
            ax.set_xlabel("factor of T / T_SOL (their product)")
        return to_svg(figure, key)


def profile_figures(reports: list[ProfileReport]) -> list[ProfileFigure]:
    """A figure per profile that has a decomposition, in the order given."""
    figures = []
    for index, report in enumerate(reports):
        svg = gap_chart_svg(report, key=f"profile-{index}")
        if svg is not None:
            figures.append(ProfileFigure(report.problem, report.solution, report.workload, svg, caption(report)))
    return figures


def profile_markdown(figures: list[ProfileFigure], table: Callable[[list[str], Iterable[Iterable[object]]], list[str]]) -> list[str]:
    """The Markdown report's section on the run's profiles (the charts are in report.html)."""
    if not figures:
        return []
    lines = ["## Profiles", "", "Where T / T_SOL goes for each profiled solution (`solbench run --profile`; the bar charts are in `report.html`).", ""]
    lines += table(["problem", "solution", "workload", "decomposition"], ([f.problem, f.solution, f.workload[:12], f.caption] for f in figures))
    return lines + [""]
