"""The suite plots of the SOL-ExecBench paper: speedup over the reference against distance to SOL
(log-log, coloured by score band, with the S = 0.5 / 0.7 / 0.9 iso-lines), and the distribution of
problem scores per category."""

from __future__ import annotations

import math
from typing import Iterator

import matplotlib
from matplotlib.lines import Line2D

from solbench.report.bands import BANDS, ISO_SCORES, NO_SCORE, band_of
from solbench.report.figures import RC, log_axes, new_figure, series_id, short, solution_set_of, solution_styles, to_svg
from solbench.score.summary import ProblemScore


def iso_speedup(score: float, ratio_to_sol: float) -> float:
    """The speedup over the reference at which a solution T_SOL * ratio_to_sol away from the bound
    scores `score`, when the baseline is the reference (T_b = T_ref): from
    S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)) with T_b = speedup * T_k."""
    factor = score / (1 - score)
    return (1 + (ratio_to_sol - 1) * factor) / ratio_to_sol


def speedup_vs_sol_svg(problems: list[ProblemScore], key: str = "suite-speedup") -> str | None:
    """Speedup over the reference against distance to SOL (T_k / T_SOL), log-log, one point per
    problem and solution, coloured by score band, with the S = 0.5 / 0.7 / 0.9 iso-lines."""
    placed = [p for p in problems if p.median_ratio_to_sol and p.median_ratio_to_sol > 0
              and p.geomean_speedup_vs_reference and p.geomean_speedup_vs_reference > 0]
    if not placed:
        return None
    markers = {name: marker for name, (marker, _) in solution_styles(solution_set_of(p) for p in placed).items()}
    with matplotlib.rc_context(RC):
        figure = new_figure(7.0, 4.2, (0.65, 0.5, 2.2, 0.3))
        ax = figure.add_subplot()
        log_axes(ax)
        ratios = [p.median_ratio_to_sol for p in placed]
        speedups = [p.geomean_speedup_vs_reference for p in placed]
        low, high = min(min(ratios) / 1.5, 0.8), max(max(ratios) * 1.5, 10.0)
        bottom, top = min(min(speedups) / 1.5, 0.5), max(max(speedups) * 1.5, 20.0)
        if low < 1:
            ax.axvspan(low, 1, color="#d62728", alpha=0.07, zorder=0)
            ax.text(math.sqrt(low), top / 1.3, "T_k < T_SOL:\naudit", fontsize=6.5, color="#b22222", ha="center", va="top")
        steps = 120
        xs = [math.exp(math.log(1.0) + (math.log(high) - math.log(1.0)) * i / steps) for i in range(steps + 1)]
        for score in ISO_SCORES:
            ys = [iso_speedup(score, x) for x in xs]
            ax.plot(xs, ys, color="#444444", linestyle="--" if score != 0.5 else "-", linewidth=0.8, zorder=1)
            ax.annotate(f"S = {score:g}", xy=(1.0, min(max(ys[-1], bottom), top)), xycoords=("axes fraction", "data"),
                        xytext=(3, 0), textcoords="offset points", fontsize=6.5, va="center", annotation_clip=False)
        for solution, marker in markers.items():
            mine = [p for p in placed if solution_set_of(p) == solution]
            ax.scatter([p.median_ratio_to_sol for p in mine], [p.geomean_speedup_vs_reference for p in mine], marker=marker, s=22,
                       c=[band_of(p.score).colour for p in mine], edgecolors="#333333", linewidths=0.4, zorder=3, gid=series_id(solution))
        ax.set_xlim(low, high)
        ax.set_ylim(bottom, top)
        ax.set_xlabel("distance to SOL: median T_k / T_SOL")
        ax.set_ylabel("speedup over the reference (geomean)")
        ax.set_title("speedup vs distance to SOL (iso-lines assume T_b = T_ref)", loc="left")
        band_handles = [Line2D([], [], linestyle="", marker="o", markersize=5, markerfacecolor=b.colour, markeredgecolor="#333333", label=b.label)
                        for b in (*BANDS, NO_SCORE)]
        bands_legend = ax.legend(handles=band_handles, loc="upper left", bbox_to_anchor=(1.1, 1.0), fontsize=6.5, title="score", title_fontsize=7)
        if len(markers) > 1:
            ax.add_artist(bands_legend)
            ax.legend(handles=[Line2D([], [], linestyle="", marker=m, markersize=5, color="#333333", label=short(name)) for name, m in markers.items()],
                      loc="lower left", bbox_to_anchor=(1.1, 0.0), fontsize=6.5, title="solution", title_fontsize=7)
        return to_svg(figure, key)


def _category_groups(problems: list[ProblemScore], category: str) -> Iterator[tuple[str, str, list[float]]]:
    """(value, solution, scores) for every value of one category, values in name order."""
    groups: dict[tuple[str, str], list[float]] = {}
    for p in problems:
        if p.score is not None:
            groups.setdefault((p.categories.get(category, "(none)"), solution_set_of(p)), []).append(p.score)
    for (value, solution), scores in sorted(groups.items()):
        yield value, solution, scores


def score_distribution_svg(problems: list[ProblemScore], category: str, key: str) -> str | None:
    """Problem scores per value of one category (subset, op_type, ...) as horizontal box plots, a
    box per solution, every problem a dot on it."""
    groups = list(_category_groups(problems, category))
    if not groups:
        return None
    values = list(dict.fromkeys(value for value, _, _ in groups))
    solutions = list(dict.fromkeys(solution_set_of(p) for p in problems if p.score is not None))
    colours = {name: colour for name, (_, colour) in solution_styles(solutions).items()}
    lane = 0.8 / len(solutions)
    with matplotlib.rc_context(RC):
        height = 0.75 + 0.22 * len(values) * max(1, min(len(solutions), 4)) + 0.1
        figure = new_figure(6.4, max(1.8, height), (1.7, 0.45, 1.6, 0.3))
        ax = figure.add_subplot()
        for value, solution, scores in groups:
            row = values.index(value)
            position = row - 0.4 + lane * (solutions.index(solution) + 0.5)
            ax.boxplot([scores], positions=[position], widths=lane * 0.8, orientation="horizontal", patch_artist=True, showfliers=False,
                       boxprops={"facecolor": colours[solution], "alpha": 0.45, "linewidth": 0.6}, medianprops={"color": "#222222"},
                       whiskerprops={"linewidth": 0.6}, capprops={"linewidth": 0.6}, manage_ticks=False)
            ax.scatter(scores, [position] * len(scores), s=5, color="#222222", zorder=3, linewidths=0)
        for score in ISO_SCORES:
            ax.axvline(score, color="#888888", linestyle="--", linewidth=0.6, zorder=0)
        ax.set_yticks(range(len(values)), [short(v) for v in values])
        ax.set_ylim(len(values) - 0.5, -0.5)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("problem score S (mean over its workloads)")
        ax.set_title(f"score distribution by {category}", loc="left")
        ax.grid(True, axis="x", alpha=0.25, linewidth=0.6)
        ax.legend(handles=[Line2D([], [], linestyle="", marker="s", markersize=6, markerfacecolor=colours[s], alpha=0.6, markeredgecolor="#333333",
                                  label=short(s)) for s in solutions], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6.5, title="solution",
                  title_fontsize=7)
        return to_svg(figure, key)
