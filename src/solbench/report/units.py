"""Times for people: a duration in the unit that keeps it readable (1.23 s, 4.56 ms, 7.89 µs, 320 ns)."""

from __future__ import annotations

import math

_UNITS = ((1e3, "s"), (1.0, "ms"), (1e-3, "µs"), (1e-6, "ns"))  # the size of each unit in milliseconds
_JOULES = ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ"))


def format_ms(milliseconds: float | None, digits: int = 3) -> str:
    """A time given in milliseconds, in s, ms, µs or ns with `digits` significant digits; "" for None.

    The unit is the largest one in which the value is at least 1 (ns below that); NaN and
    infinities are spelled out rather than scaled.
    """
    return _scaled(milliseconds, digits, _UNITS, "ms")


def _scaled(value: float | None, digits: int, units: tuple[tuple[float, str], ...], base: str) -> str:
    """`value` (in `base`) in the largest of `units` (scale in `base`, largest first) where it is at least 1; the last below that."""
    if value is None:
        return ""
    if math.isnan(value) or math.isinf(value):
        return f"{value} {base}"
    if value == 0:
        return f"0 {base}"
    size = abs(value)
    for scale, unit in units[:-1]:
        if size >= scale * (1 - 0.5 * 10 ** -digits):  # 0.9999 ms rounds to 1 ms, not 1e+03 µs
            return f"{_significant(value / scale, digits)} {unit}"
    scale, unit = units[-1]
    return f"{_significant(value / scale, digits)} {unit}"


def format_seconds(seconds: float | None, digits: int = 3) -> str:
    """format_ms for a time given in seconds."""
    return "" if seconds is None else format_ms(seconds * 1e3, digits)


def _significant(value: float, digits: int) -> str:
    """`value` with `digits` significant digits and no exponent (values here are below 10**6)."""
    text = f"{value:.{digits}g}"
    if "e" in text:  # 1e+03: a whole number too large for %g at this precision
        text = f"{value:.0f}"
    return text


def format_joules(joules: float | None, digits: int = 3) -> str:
    """An energy in J, mJ, µJ or nJ with `digits` significant digits; "" for None."""
    return _scaled(joules, digits, _JOULES, "J")