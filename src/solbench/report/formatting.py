"""Numbers of a run summary as a report shows them; a blank is an en dash, never 'None'."""

from __future__ import annotations

import math

from solbench.report.units import format_ms

BLANK = "–"


def _known(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def fmt_score(value: float | None) -> str:
    return f"{value:.3f}" if _known(value) else BLANK


def fmt_ratio(value: float | None) -> str:
    """A speedup or T/T_SOL: three significant digits and a times sign."""
    return f"{value:.3g}×" if _known(value) else BLANK


def fmt_time(milliseconds: float | None) -> str:
    return format_ms(milliseconds) if _known(milliseconds) else BLANK


def fmt_share(value: float | None) -> str:
    return f"{100 * value:.0f}%" if _known(value) else BLANK


def fmt_count(value: float | None) -> str:
    """FLOPs or bytes: engineering notation that stays short (1.07e+09 -> 1.07 G)."""
    if not _known(value):
        return BLANK
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.3g}"


def sort_key(value: float | None) -> str:
    """The data-sort attribute of a numeric table cell: the number, or '' (blanks sort last)."""
    return repr(float(value)) if _known(value) else ""


def statuses_text(statuses: dict[str, int]) -> str:
    """'3/4 PASSED, 1 TIMEOUT' from a status -> count map."""
    total = sum(statuses.values())
    passed = statuses.get("PASSED", 0)
    others = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()) if status != "PASSED" and count)
    text = f"{passed}/{total} PASSED"
    return f"{text}, {others}" if others else text
