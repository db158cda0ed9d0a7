"""The HTML report: one self-contained file (no network: style, script and plots inlined)."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from solbench.report import formatting
from solbench.report.content import ReportContent, band_class
from solbench.report.energy_tables import energy_rows_of
from solbench.report.header import header_lines
from solbench.report.units import format_joules
from solbench.report.html_template import SCRIPT, STYLE, TEMPLATE
from solbench.score.summary import ProblemScore


@dataclass(frozen=True)
class SuiteFigure:
    name: str  # speedup-vs-sol, scores-by-<category>
    svg: str


def passed_share(score: ProblemScore) -> float | None:
    """The share of a problem score's workloads that passed (the sort key of its 'passed' column)."""
    total = sum(score.statuses.values())
    return score.statuses.get("PASSED", 0) / total if total else None


_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
_TEMPLATE = _ENVIRONMENT.from_string(TEMPLATE)


def render_html(content: ReportContent, suite_figures: list[SuiteFigure], marker: str) -> str:
    fast_keys = sorted({key for s in content.suites for key in s.fast_p}, key=float)
    return _TEMPLATE.render(
        marker=marker, style=STYLE, script=SCRIPT, summary=content.summary, content=content, header=header_lines(content.summary),
        fast_keys=fast_keys, suite_figures=suite_figures, band_class=band_class, passed_share=passed_share,
        energy_rows=energy_rows_of(content.summary), fmt_joules=lambda value: formatting.BLANK if value is None else format_joules(value),
        fmt_score=formatting.fmt_score, fmt_ratio=formatting.fmt_ratio, fmt_time=formatting.fmt_time, fmt_share=formatting.fmt_share,
        fmt_count=formatting.fmt_count, sort_key=formatting.sort_key, statuses_text=formatting.statuses_text,
    )
