"""`solbench dataset stats`: counts and shares of an index by dimension, and coverage targets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from solbench.dataset.catalog.row import INTENSITY_BANDS, ProblemRow

STATS_DIMENSIONS = ("category", "domain", "precision", "direction", "intensity")


@dataclass(frozen=True)
class Count:
    value: str
    problems: int
    share: float


def counts(rows: list[ProblemRow], dimension: str) -> list[Count]:
    """Problems per value of a dimension, most first (ties by value; intensity bands in their order)."""
    found = Counter(row.value(dimension) for row in rows)
    total = len(rows) or 1
    if dimension == "intensity":
        ordered = [band for band in INTENSITY_BANDS if band in found]
    else:
        ordered = sorted(found, key=lambda value: (-found[value], value))
    return [Count(value, found[value], found[value] / total) for value in ordered]


@dataclass(frozen=True)
class TargetCheck:
    dimension: str
    value: str
    target: float
    actual: float
    problems: int

    @property
    def met(self) -> bool:
        return self.actual + 1e-12 >= self.target


def coverage(rows: list[ProblemRow], targets: dict[str, dict[str, float]]) -> list[TargetCheck]:
    """Each target share beside the share the rows have (a value no row has is at 0)."""
    checks = []
    for dimension, shares in targets.items():
        found = Counter(row.value(dimension) for row in rows)
        for value, target in shares.items():
            checks.append(TargetCheck(dimension, value, target, found[value] / (len(rows) or 1), found[value]))
    return checks


def stats_table(rows: list[ProblemRow], dimensions: tuple[str, ...] = STATS_DIMENSIONS, title: str | None = None):
    """One rich table: a section per dimension, a line per value with its count and share."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("dimension")
    table.add_column("value")
    table.add_column("problems", justify="right")
    table.add_column("share", justify="right")
    for dimension in dimensions:
        found = counts(rows, dimension)
        for number, count in enumerate(found):
            table.add_row(dimension if number == 0 else "", count.value, str(count.problems), f"{count.share:.1%}",
                          end_section=number == len(found) - 1)
    return table


def targets_table(checks: list[TargetCheck]):
    from rich.table import Table

    table = Table(title="coverage targets")
    for column in ("dimension", "value", "target", "actual", "problems", ""):
        table.add_column(column, justify="right" if column in {"target", "actual", "problems"} else "left")
    for check in checks:
        table.add_row(check.dimension, check.value, f"{check.target:.1%}", f"{check.actual:.1%}", str(check.problems),
                      "ok" if check.met else "SHORT", style=None if check.met else "red")
    return table
