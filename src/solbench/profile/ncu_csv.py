"""Nsight Compute's raw CSV page (`--csv --page raw`) as one KernelRecord per profiled kernel.

The page is a header row of column names (`"ID","Process ID",...,"Kernel Name",...` then one column
per metric), a units row (the same columns: empty for the launch columns, "nsecond", "byte", "%",
...) and one row per kernel. Around it, in the same text, are ncu's own `==PROF==` / `==WARNING==` /
`==ERROR==` lines and whatever the profiled program printed; the last header row in the text is
ncu's (it prints the page after the program has ended). Numbers carry thousands separators as ncu
prints them ("33,554,432"); a metric that does not apply to a kernel or chip reads "n/a" (kept as None).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from solbench.profile.metrics import to_base

NAME_COLUMNS = ("Kernel Name", "Function Name", "Demangled Name", "Name")
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")


class NcuOutputError(ValueError):
    """ncu's output holds no page that can be read (one line: why)."""


@dataclass
class KernelRecord:
    """One profiled kernel: its position, name and each metric in base units (None: n/a or not printed)."""

    index: int
    name: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)  # the launch columns as printed (Block Size, Grid Size, Stream, ...)

    def value(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def parse_number(text: str) -> float | None:
    """A number as ncu prints it ("1,234", "12.5", "3e+06"); None for "n/a", blanks and anything else."""
    cleaned = text.strip().strip('"')
    if not cleaned or not _NUMBER.match(cleaned):
        return None
    return float(cleaned.replace(",", ""))


def _header_start(text: str) -> int:
    """Where the last page header begins (a line whose first field is "ID")."""
    starts = [match.start() for match in re.finditer(r'(?m)^"ID",', text)]
    if not starts:
        raise NcuOutputError("ncu printed no result page (no CSV header row)" + _error_lines(text))
    return starts[-1]


def _error_lines(text: str) -> str:
    errors = [line.strip() for line in text.splitlines() if line.startswith("==ERROR==")]
    return f": {errors[0]}" if errors else ""


def parse_raw_page(text: str, metrics: tuple[str, ...] | None = None) -> list[KernelRecord]:
    """The kernels of ncu's raw CSV page in `text`; `metrics`: the metric columns to read (default: every
    column that is not one of the launch columns before the first metric, i.e. every dotted name)."""
    lines = text[_header_start(text):].splitlines()
    rows = list(csv.reader(io.StringIO("\n".join(line for line in lines if line.startswith('"')))))
    header = rows[0]
    body = rows[1:]
    units: list[str] = [""] * len(header)
    if body and body[0] and body[0][0] == "":
        units, body = body[0] + [""] * (len(header) - len(body[0])), body[1:]
    name_column = next((header.index(name) for name in NAME_COLUMNS if name in header), None)
    wanted = [name for name in header if ("__" in name and (metrics is None or name in metrics))]
    records = []
    for row in body:
        if not row or not row[0].strip().isdigit():
            continue  # not a kernel row (a message the program printed in CSV form, a truncated line)
        values = dict(zip(header, row))
        unit_of = dict(zip(header, units))
        parsed: dict[str, float | None] = {}
        for metric in wanted:
            number = parse_number(values.get(metric, ""))
            parsed[metric] = None if number is None else to_base(number, unit_of.get(metric, ""))
        launch = {name: values[name] for name in header if "__" not in name and name in values}
        name = row[name_column] if name_column is not None and name_column < len(row) else f"kernel {row[0]}"
        records.append(KernelRecord(len(records), name, parsed, launch))
    return records
