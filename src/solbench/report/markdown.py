"""The Markdown report: the same content as the HTML one in plain tables (the plots are in
report.html)."""

from __future__ import annotations

from typing import Iterable

from solbench.report.content import ReportContent
from solbench.report.energy_tables import energy_markdown
from solbench.report.formatting import BLANK, fmt_count, fmt_ratio, fmt_score, fmt_share, fmt_time, statuses_text
from solbench.report.header import header_lines
from solbench.report.profile_chart import profile_markdown


def cell(value: object) -> str:
    """A table cell: pipes escaped, line breaks flattened."""
    text = BLANK if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def table(headers: list[str], rows: Iterable[Iterable[object]]) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def render_markdown(content: ReportContent, marker: str) -> str:
    summary = content.summary
    out = [marker, "", "# solbench run report", ""]
    out += [f"- **{label}:** {value}" for label, value in header_lines(summary)]
    out += ["", "Plots (rooflines, speedup vs distance to SOL, score distributions) are in `report.html` beside this file.", ""]

    out += ["## Suite scores", ""]
    if content.suites:
        fast = sorted({key for s in content.suites for key in s.fast_p}, key=float)
        out += table(["solution", "problems", "mean S", "median S", "speedup vs ref (geomean)", "speedup vs T_b (geomean)", *[f"fast_{k}" for k in fast]],
                     ([s.solution, s.problems, fmt_score(s.score_mean), fmt_score(s.score_median), fmt_ratio(s.geomean_speedup_vs_reference),
                       fmt_ratio(s.geomean_speedup_vs_baseline), *[fmt_share(s.fast_p.get(k)) for k in fast]] for s in content.suites))
        for suite in content.suites:
            for category, values in suite.by_category.items():
                out += ["", f"{suite.solution}, mean problem score by {category}: "
                        + ", ".join(f"{value} {fmt_score(score)}" for value, score in sorted(values.items()))]
    else:
        out.append("No suite scores in the summary.")

    out += ["", "## Leaderboard", ""]
    ranked = sorted(content.leaderboard, key=lambda p: (p.score is None, -(p.score or 0.0), p.problem, p.solution))
    out += table(["problem", "solution", "score", "speedup vs ref", "speedup vs T_b", "T/T_SOL", "workloads", "flags"],
                 ([p.problem, p.solution, fmt_score(p.score), fmt_ratio(p.geomean_speedup_vs_reference), fmt_ratio(p.geomean_speedup_vs_baseline),
                   fmt_ratio(p.median_ratio_to_sol), statuses_text(p.statuses), ", ".join(p.flags)] for p in ranked))

    out += ["", "## Problems", ""]
    for section in content.problems:
        out += [f"### {section.name}", ""]
        facts = [f"{key} {value}" for key, value in section.categories.items()]
        if section.verdict:
            facts.append(f"verdict: {section.verdict}")
        if facts:
            out += ["; ".join(facts), ""]
        out += table(["workload", "solution", "status", "T_k", "T_SOL", "T_b", "T_b from", "T_ref", "S", "speedup vs ref", "FLOPs", "bytes", "flags"],
                     ([w.workload[:12], w.solution, w.status, fmt_time(w.latency_ms), fmt_time(w.sol_ms), fmt_time(w.baseline_ms), w.baseline_candidate,
                       fmt_time(w.reference_ms), fmt_score(w.score), fmt_ratio(w.speedup_vs_reference), fmt_count(w.flops), fmt_count(w.bytes),
                       ", ".join(w.flags)] for w in section.workloads))
        out += [f"- {note}" for note in section.roofline_notes]
        out.append("")

    out += energy_markdown(summary, table)
    out += profile_markdown(content.profiles, table)
    out += ["## Audit flags", ""]
    if content.audit:
        out += table(["solution", "severity", "rule", "where", "message"],
                     ([a.solution, a.severity, a.rule, f"{a.file or ''}{f':{a.line}' if a.line else ''}", a.message] for a in content.audit))
        out.append("")
    if content.flagged:
        out += table(["problem", "solution", "workload", "flag"],
                     ([f.problem, f.solution, f.workload[:12] if f.workload else "(all)", f.flag] for f in content.flagged))
    if not content.audit and not content.flagged:
        out.append("No audit findings and no flagged workloads.")

    if summary.baseline_failures:
        out += ["", "## Baseline candidates that failed", "",
                "T_b of these workloads comes from the other candidates.", ""]
        out += table(["problem", "candidate", "status", "workloads", "first line of its error"],
                     ([f.problem, f.candidate, f.status, f.workloads, f.detail] for f in summary.baseline_failures))

    out += ["", "## Notes", ""]
    out += [f"- {note}" for note in summary.notes] or ["None."]
    return "\n".join(out) + "\n"
