"""The time-vs-energy scatter of a suite: one point per correct workload with measured energy, coloured
by its problem's category. Where every point has both bounds, the axes are the distances to them
(T_k / T_SOL against E_k / E_SOL, with the diagonal where both are equally far); otherwise the
measured time and joules per call themselves."""

from __future__ import annotations

from typing import Iterable

import matplotlib
from matplotlib.lines import Line2D

from solbench.report.figures import COLOURS, RC, log_axes, new_figure, series_id, short, solution_set_of, to_svg
from solbench.score.summary import ProblemScore, WorkloadScore

CATEGORY_ORDER = ("op_type", "subset", "precision", "direction")  # the category the points are coloured by: the first one the problems have


def energy_rows(rows: Iterable[WorkloadScore]) -> list[WorkloadScore]:
    return [r for r in rows if r.status == "PASSED" and r.energy_j is not None and r.energy_j > 0 and r.latency_ms]


def colour_category(problems: Iterable[ProblemScore]) -> str | None:
    seen = {key for p in problems for key in p.categories}
    return next((key for key in CATEGORY_ORDER if key in seen), next(iter(sorted(seen)), None))


def time_energy_svg(rows: list[WorkloadScore], problems: list[ProblemScore], suite: str, key: str) -> str | None:
    """The scatter of one suite's workloads (see the module docstring); None when none has measured energy."""
    placed = [r for r in energy_rows(rows) if solution_set_of(r) == suite]
    if not placed:
        return None
    category = colour_category(problems)
    value_of = {(p.problem, p.solution): p.categories.get(category, "(none)") if category else "(none)" for p in problems}
    values = list(dict.fromkeys(value_of.get((r.problem, r.solution), "(none)") for r in placed))
    colours = {value: COLOURS[i % len(COLOURS)] for i, value in enumerate(values)}
    ratios = all(r.sol_ms and r.energy_sol_j for r in placed)
    xs = [r.latency_ms / r.sol_ms if ratios else r.latency_ms for r in placed]
    ys = [r.energy_j / r.energy_sol_j if ratios else r.energy_j for r in placed]
    with matplotlib.rc_context(RC):
        figure = new_figure(6.4, 4.0, (0.7, 0.5, 1.9, 0.3))
        ax = figure.add_subplot()
        log_axes(ax)
        for value in values:
            mine = [i for i, r in enumerate(placed) if value_of.get((r.problem, r.solution), "(none)") == value]
            ax.scatter([xs[i] for i in mine], [ys[i] for i in mine], s=20, color=colours[value], edgecolors="#333333", linewidths=0.4,
                       zorder=3, gid=series_id(f"{suite}-{value}"))
        low, high = min(min(xs), min(ys)) / 1.5, max(max(xs), max(ys)) * 1.5
        if ratios:
            low, high = min(low, 0.8), max(high, 10.0)
            ax.plot([low, high], [low, high], color="#888888", linestyle="--", linewidth=0.8, zorder=1)
            ax.set_xlim(low, high)
            ax.set_ylim(low, high)
            ax.set_xlabel("distance to SOL in time: T_k / T_SOL")
            ax.set_ylabel("distance to SOL in energy: E_k / E_SOL")
        else:
            ax.set_xlabel("T_k (ms)")
            ax.set_ylabel("E_k (J per call)")
        ax.set_title(f"time vs energy: {short(suite, 40)}", loc="left")
        ax.legend(handles=[Line2D([], [], linestyle="", marker="o", markersize=5, markerfacecolor=colours[v], markeredgecolor="#333333",
                                  label=short(v)) for v in values], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6.5,
                  title=category or "category", title_fontsize=7)
        return to_svg(figure, key)
