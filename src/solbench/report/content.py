"""What a run report says, gathered once from a RunSummary for both the Markdown and the HTML:
the header, suite scores, leaderboard, per-problem sections, audit flags and notes. Nothing is
recomputed: every number is one the summary stores."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from solbench.report.bands import band_of
from solbench.report.figures import solution_set_of
from solbench.score.summary import AuditFinding, ProblemScore, RunSummary, SuiteScore, WorkloadScore


@dataclass(frozen=True)
class FlaggedRow:
    problem: str
    solution: str
    workload: str | None  # None for a flag of the problem score as a whole
    flag: str


@dataclass
class ProblemSection:
    name: str
    anchor: str  # an HTML id, unique in the report
    categories: dict[str, str]
    verdict: str | None
    scores: list[ProblemScore]  # best first
    workloads: list[WorkloadScore]
    roofline_svg: str | None = None
    roofline_notes: list[str] = field(default_factory=list)
    roofline_legend: list = field(default_factory=list)  # LegendEntry of solbench.report.roofline, for the markers drawn

    @property
    def best(self) -> ProblemScore | None:
        return self.scores[0] if self.scores else None


@dataclass
class ReportContent:
    summary: RunSummary
    leaderboard: list[ProblemScore]  # by problem, then best score first
    problems: list[ProblemSection]
    flagged: list[FlaggedRow]
    categories: list[str]  # the category keys seen on problem scores (subset, op_type, ...)
    anchors: dict[str, str] = field(default_factory=dict)  # problem -> the HTML id of its section
    profiles: list = field(default_factory=list)  # ProfileFigure of solbench.report.profile_chart: the run's stored profiles (run --profile)

    @property
    def suites(self) -> list[SuiteScore]:
        return self.summary.suites

    @property
    def audit(self) -> list[AuditFinding]:
        return self.summary.audit

    def anchor_of(self, problem: str) -> str:
        return self.anchors[problem]


def _score_order(score: ProblemScore) -> tuple[float, str]:
    """Best first; unknown scores after every known one."""
    return (-(score.score if score.score is not None else -1.0), score.solution)


def _anchors(names: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for index, name in enumerate(names):
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:60] or "problem"
        found[name] = f"p{index}-{slug}"
    return found


def gather(summary: RunSummary) -> ReportContent:
    """The report's content, in the order a reader wants it."""
    names = list(dict.fromkeys([p.problem for p in summary.problems] + [w.problem for w in summary.workloads]))
    anchors = _anchors(names)
    verdicts = getattr(summary, "problem_verdicts", None) or {}
    scores: dict[str, list[ProblemScore]] = {name: [] for name in names}
    for score in summary.problems:
        scores[score.problem].append(score)
    rows: dict[str, list[WorkloadScore]] = {name: [] for name in names}
    for row in summary.workloads:
        rows[row.problem].append(row)
    sections = []
    for name in names:
        mine = sorted(scores[name], key=_score_order)
        categories = next((s.categories for s in mine if s.categories), {})
        ordered_rows = sorted(rows[name], key=lambda r: (r.workload, solution_set_of(r) != "reference", r.solution))
        sections.append(ProblemSection(name, anchors[name], categories, verdicts.get(name), mine, ordered_rows))
    leaderboard = [score for section in sections for score in section.scores]
    flagged = [FlaggedRow(r.problem, r.solution, r.workload, flag) for r in summary.workloads for flag in r.flags]
    on_workloads = {(f.problem, f.solution, f.flag) for f in flagged}
    flagged += [FlaggedRow(p.problem, p.solution, None, flag) for p in summary.problems for flag in p.flags
                if (p.problem, p.solution, flag) not in on_workloads]
    categories = list(dict.fromkeys(key for p in summary.problems for key in p.categories))
    return ReportContent(summary, leaderboard, sections, flagged, categories, anchors)


def band_class(score: float | None) -> str:
    return band_of(score).name
