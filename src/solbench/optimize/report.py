"""The loop's report: score against attempt as a PNG (score.png) and a short markdown page (report.md)
with one row per attempt, the best solution and why the loop ended."""

from __future__ import annotations

from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg

from solbench.data.files import write_atomically
from solbench.optimize.state import AttemptRecord, RunConfig
from solbench.report.figures import RC, new_figure

PLOT = "score.png"
REPORT = "report.md"


def write_report(root: Path, config: RunConfig, records: list[AttemptRecord], best: AttemptRecord | None, stopped: str) -> tuple[Path, Path]:
    plot = root / PLOT
    plot_bytes = score_plot(records, best, config.problem)
    temporary = plot.with_name(f".{PLOT}.tmp")
    temporary.write_bytes(plot_bytes)
    temporary.replace(plot)
    report = root / REPORT
    write_atomically(report, markdown(config, records, best, stopped))
    return report, plot


def score_plot(records: list[AttemptRecord], best: AttemptRecord | None, problem: str) -> bytes:
    """PNG bytes: each attempt's score (0 where it failed), eligible ones filled, the others hollow or
    crossed (REWARD_HACK and held-out failures), and the best eligible score so far as a step line."""
    import io

    with matplotlib.rc_context(RC):
        figure = new_figure(6.0, 3.2, (0.6, 0.5, 0.2, 0.35))
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        groups = {"eligible": [], "not eligible": [], "REWARD_HACK": []}
        running, best_line = None, []
        for record in records:
            score = record.feedback.score or 0.0
            key = "eligible" if record.eligible else "REWARD_HACK" if record.feedback.status == "REWARD_HACK" else "not eligible"
            groups[key].append((record.attempt, score))
            if record.eligible and record.feedback.score is not None:
                running = max(running or 0.0, record.feedback.score)
            best_line.append((record.attempt, running))
        styles = {"eligible": dict(marker="o", color="#2ca02c"), "not eligible": dict(marker="o", facecolors="none", edgecolors="#7f7f7f"),
                  "REWARD_HACK": dict(marker="x", color="#d62728")}
        for key, points in groups.items():
            if points:
                ax.scatter([p[0] for p in points], [p[1] for p in points], label=key, zorder=3, **styles[key])
        steps = [(a, s) for a, s in best_line if s is not None]
        if steps:
            ax.step([a for a, _ in steps], [s for _, s in steps], where="post", color="#1f77b4", linewidth=1, label="best so far")
        ax.axhline(0.5, color="#999999", linewidth=0.6, linestyle="--")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("attempt")
        ax.set_ylabel("score (1 = T_SOL, 0.5 = baseline)")
        ax.set_title(f"solbench optimize: {problem}" + (f" (best {best.feedback.score:.3f}, attempt {best.attempt})" if best and best.feedback.score is not None else ""))
        if records:
            ax.set_xlim(0.5, max(r.attempt for r in records) + 0.5)
            ax.legend(loc="upper left", fontsize=7, frameon=False)
        ax.grid(True, alpha=0.25, linewidth=0.6)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def markdown(config: RunConfig, records: list[AttemptRecord], best: AttemptRecord | None, stopped: str) -> str:
    lines = [f"# solbench optimize: {config.problem}", "",
             f"Proposer {config.proposer}; T_SOL on {config.hardware or 'no spec'}; timed on {config.device}. "
             f"{len(records)} attempt{'s' if len(records) != 1 else ''}; the loop {_ended(stopped)}.", "",
             "Every attempt was evaluated with static analysis on and with held-out workloads (hidden and unaligned) drawn by the "
             "evaluator and never shown to the proposer. Scores are against T_b = the eager reference measured at the start of the "
             "loop; an attempt that is not correct everywhere (held-out workloads included) or is flagged can never be the best.", ""]
    if best is not None:
        lines += [f"**Best: attempt {best.attempt}** ({best.proposal.candidate or 'proposal'}), score {_number(best.feedback.score)}: "
                  "`best/solution.json`.", ""]
    else:
        lines += ["**No eligible solution yet.**", ""]
    lines += [f"![score against attempt]({PLOT})", "",
              "| attempt | proposal | status | score | median T/T_SOL | held out | eligible | note |", "|---:|---|---|---:|---:|---|---|---|"]
    for record in records:
        ratios = sorted(w.ratio_to_sol for w in record.feedback.workloads if w.ratio_to_sol is not None)
        ratio = f"{ratios[len(ratios) // 2]:.3g}" if ratios else "-"
        held = ", ".join(f"{n} {s}" for s, n in sorted(record.held_out_statuses.items())) or "-"
        note = (record.why_not or "").replace("|", "/")[:120]
        lines.append(f"| {record.attempt} | {record.proposal.candidate or '-'} | {record.feedback.status} | {_number(record.feedback.score)} | "
                     f"{ratio} | {held} | {'yes' if record.eligible else 'no'} | {note} |")
    return "\n".join(lines) + "\n"


def _ended(stopped: str) -> str:
    return {"iterations": "ran all its iterations", "budget": "stopped at its time budget", "running": "is still running",
            "proposer exhausted": "ended: the proposer had nothing more to try"}.get(stopped, f"stopped: {stopped}")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
