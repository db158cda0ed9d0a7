"""The stats figure: a bar chart per dimension and a histogram of log10 arithmetic intensity, as SVG.

The SVG is byte-identical for the same index: no date in its metadata, a fixed hash salt for its ids,
and text drawn as paths (no dependence on the fonts installed). Its Creator names this tool, which
is how `stats` knows it may replace a stats.svg it wrote before.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

from solbench.dataset.catalog.row import ProblemRow
from solbench.dataset.catalog.stats import STATS_DIMENSIONS, counts

CREATOR = "solbench dataset stats"
BAR_DIMENSIONS = tuple(d for d in STATS_DIMENSIONS if d != "intensity")
EXTRA_DIMENSIONS = ("fusion",)  # the sixth panel


def stats_svg(rows: list[ProblemRow], title: str) -> str:
    """The figure as SVG text."""
    buffer = io.StringIO()
    _save(rows, title, buffer, "svg")
    return buffer.getvalue()


def _save(rows: list[ProblemRow], title: str, stream, fmt: str) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    with plt.rc_context({"svg.hashsalt": "solbench-catalog", "svg.fonttype": "path", "font.size": 8}):
        figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
        for ax, dimension in zip(axes.flat, BAR_DIMENSIONS):
            found = counts(rows, dimension)
            ax.bar(range(len(found)), [c.problems for c in found], color="#4c72b0")
            ax.set_xticks(range(len(found)), [c.value for c in found], rotation=45, ha="right")
            ax.set_title(f"{dimension} ({len(found)} values)")
            ax.set_ylabel("problems")
            ax.margins(y=0.12)
            for x, c in enumerate(found):
                ax.annotate(f"{c.share:.0%}", (x, c.problems), ha="center", va="bottom", fontsize=7)
        _intensity_histogram(axes.flat[len(BAR_DIMENSIONS)], rows)
        for ax, dimension in zip(list(axes.flat)[len(BAR_DIMENSIONS) + 1:], EXTRA_DIMENSIONS):
            found = counts(rows, dimension)
            ax.bar(range(len(found)), [c.problems for c in found], color="#8172b3")
            ax.set_xticks(range(len(found)), [c.value for c in found])
            ax.set_title(f"{dimension} (distinct non-trivial ops in the capture)" if dimension == "fusion" else dimension)
            ax.set_ylabel("problems")
        figure.suptitle(title)
        figure.tight_layout()
        figure.savefig(stream, format=fmt, metadata={"Date": None, "Creator": CREATOR} if fmt == "svg" else None)
        plt.close(figure)


def _intensity_histogram(ax, rows: list[ProblemRow]) -> None:
    values = [math.log10(r.sol.intensity) for r in rows if r.sol is not None and r.sol.intensity]
    bounds = [r.sol.bound for r in rows if r.sol is not None and r.sol.intensity]
    if values:
        low, high = math.floor(min(values)), math.ceil(max(values))
        bins = [low + i * 0.25 for i in range(int((high - low) / 0.25) + 1)] if high > low else 10
        ax.hist([[v for v, b in zip(values, bounds) if b == "memory"], [v for v, b in zip(values, bounds) if b == "compute"]],
                bins=bins, stacked=True, color=["#dd8452", "#55a868"], label=["memory-bound", "compute-bound"])
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no arithmetic intensity known", ha="center", va="center", transform=ax.transAxes)
    missing = len(rows) - len(values)
    ax.set_title("log10 arithmetic intensity (FLOP/byte)" + (f"; {missing} without FLOPs or analysis" if missing else ""))
    ax.set_xlabel("log10(FLOPs / bytes)")
    ax.set_ylabel("problems")


def is_ours(path: Path) -> bool:
    """Whether path holds a figure this tool wrote (its Creator metadata)."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return False
    return head.lstrip().startswith(("<?xml", "<svg")) and CREATOR in head
