"""Terminal tables of energy: E_SOL per workload (`solbench sol` on a spec with energy figures)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from solbench.report.units import format_joules


def energy_table(results: list[Any], bounds: list[Any], spec_name: str) -> Table:
    """E_SOL of each workload and what it is made of (DRAM, L2, compute, static power over T_SOL)."""
    table = Table(title=Text(f"energy bound on {spec_name}"))
    for column in ("problem", "workload", "DRAM", "L2", "compute", "static", "E_SOL", "E_SOL / T_SOL"):
        table.add_column(column, justify="left" if column in ("problem", "workload") else "right", overflow="fold")
    for result, bound in zip(results, bounds):
        power = bound.joules / result.t_sol_s if result.t_sol_s > 0 else None
        table.add_row(Text(result.problem), Text(result.workload), *(format_joules(bound.parts[name]) for name in ("dram", "l2", "compute", "static")),
                      format_joules(bound.joules), f"{power:.0f} W" if power is not None else "–")
    return table


def figures_line(spec: Any) -> str:
    """One line on a spec's energy figures: when they were measured, or that it has none."""
    from solbench.energy.bound import no_figures_note

    figures = getattr(spec, "energy", None)
    if figures is None:
        return no_figures_note(spec)
    fit = f", fit residuals rms {figures.rms_residual:.1%}, max {figures.max_residual:.1%}" if figures.rms_residual is not None else ""
    envelope = figures.envelope()
    fit += f", E_SOL's per-byte and per-operation energies x {envelope:.3f} (the fit's lower envelope)" if envelope < 1 else ""
    return (f"{spec.name} energy figures of {figures.date} ({figures.device or 'device not named'}): DRAM {figures.dram_pj_per_byte:.3g} pJ/B, "
            f"L2 {figures.l2_pj_per_byte:.3g} pJ/B, static {figures.static_power_w:.0f} W{fit}")


def energy_rows_of(summary: Any) -> list[Any]:
    """The summary's workloads that carry energy (measured, or a score), in the summary's order."""
    return [w for w in summary.workloads if w.energy_j is not None or w.energy_score is not None]


def energy_markdown(summary: Any, table: Any) -> list[str]:
    """The Markdown report's energy section (nothing without measured energy); `table` renders rows."""
    from solbench.report.formatting import fmt_score

    rows = energy_rows_of(summary)
    if not rows:
        return []
    out = ["## Energy", "", ("Energy score S_E = 1 / (1 + (E_k − E_SOL) / (E_b − E_SOL)), joules per call (`--energy`); the time-vs-energy "
                             "scatter per suite is in `report.html`."), ""]
    out += table(["solution", "problems", "mean S_E", "median S_E"],
                 ([s.solution, s.problems, fmt_score(s.energy_score_mean), fmt_score(s.energy_score_median)] for s in summary.suites))
    out.append("")
    out += table(["problem", "workload", "solution", "E_k", "E_SOL", "E_b", "E_k/E_SOL", "S_E"],
                 ([w.problem, w.workload[:12], w.solution, format_joules(w.energy_j), format_joules(w.energy_sol_j), format_joules(w.energy_baseline_j),
                   f"{w.energy_j / w.energy_sol_j:.3g}×" if w.energy_j is not None and w.energy_sol_j else "–", fmt_score(w.energy_score)]
                  for w in rows))
    return out + [""]
