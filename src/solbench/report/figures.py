"""What every figure of a report shares: matplotlib settings, log axes, markers and colours, and
the step from a figure to SVG text to inline in HTML.

Speed matters (a report of a few hundred problems draws a roofline for each): figures are drawn
without pyplot, text stays SVG text (no glyph paths), tick labels are plain text (no mathtext),
minor ticks are off and margins are fixed rather than computed per figure.
"""

from __future__ import annotations

import io
import re
from typing import Iterable

import matplotlib
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from solbench.score.summary import ProblemScore

RC = {"svg.fonttype": "none", "text.parse_math": False, "font.size": 8, "axes.titlesize": 9, "font.family": "sans-serif"}
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "h")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def plain_number(value: float, _position: object = None) -> str:
    return f"{value:g}"


def log_axes(ax: Axes) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(ticker.LogLocator(base=10, numticks=9))
        axis.set_major_formatter(ticker.FuncFormatter(plain_number))
        axis.set_minor_locator(ticker.NullLocator())
    ax.grid(True, alpha=0.25, linewidth=0.6)


def new_figure(width: float, height: float, margins: tuple[float, float, float, float]) -> Figure:
    """A figure of `width` x `height` inches whose axes keep fixed margins (left, bottom, right, top, inches)."""
    left, bottom, right, top = margins
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=left / width, bottom=bottom / height, right=1 - right / width, top=1 - top / height)
    return figure


def to_svg(figure: Figure, key: str) -> str:
    """The figure as an <svg> element (no XML prolog or DOCTYPE); its ids are salted by `key` so that
    several figures can share one HTML page, and no date is written (same input, same bytes)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": key}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def series_id(label: str) -> str:
    """The SVG id of a series' group of points (tests and scripts find the points by it)."""
    return "series-" + re.sub(r"[^A-Za-z0-9_-]+", "-", label)


def short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def solution_set_of(score: object) -> str:
    """The suite a score row belongs to: its solution set, else its solution's own name."""
    return getattr(score, "solution_set", None) or getattr(score, "solution")


def solution_styles(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """A (marker, colour) per name, in order of first appearance."""
    unique = list(dict.fromkeys(names))
    return {name: (MARKERS[i % len(MARKERS)], COLOURS[i % len(COLOURS)]) for i, name in enumerate(unique)}


def suite_names(problems: Iterable[ProblemScore]) -> list[str]:
    return list(dict.fromkeys(solution_set_of(p) for p in problems))
