"""compute-sanitizer's output: its reports, its summary, and how it is started as a launcher.

Every line the sanitizer prints starts with "=========". A report is a line of that prefix and one
space ("========= Invalid __global__ read of size 4 bytes") with the indented lines that follow it
("=========     at k(const float *, float *, int)+0x90", "by thread (232,0,0) in block (3,0,0)",
"Access to 0x... is out of bounds"), up to a line of the prefix alone; host backtraces are dropped.
The run ends with "ERROR SUMMARY: N errors" (racecheck adds "RACECHECK SUMMARY: N hazards displayed
(E errors, W warnings)"). Reports of the kernels' own faults (an invalid access, a race or hazard, a
misaligned address, a hardware exception, ...) are errors; those that start with "Warning" are warnings;
any other that speaks of an error or a failure is internal (the sanitizer itself could not check, e.g.
"Internal Sanitizer Error", "Device not supported"); the rest is other (notes).

The sanitizer runs with `--error-exitcode` (so that its exit code says whether it found errors, which
the solution cannot print its way around), `--report-api-errors no` (CUDA API calls that return an
error are the libraries' business and often expected: only device-side errors are judged),
`--target-processes application-only` (the worker, not the compilers a build starts) and a print limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "========="
ERROR_EXITCODE = 99
PRINT_LIMIT = 10
TOOLS = ("memcheck", "racecheck")
_BANNERS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned an error",
            "Error: process didn't terminate successfully", "No CUDA-capable device")
_DROPPED = ("Saved host backtrace", "Host Frame", "Device Frame")
# Reports of the kernels' own errors (memcheck, racecheck; synccheck and initcheck alike); any other report that says
# "error" is the sanitizer's own failure (it could not check), and the rest (API notes) is neither.
DEVICE_ERROR = re.compile(r"^(error:\s*)?(invalid\b|misaligned|out-of-range|race reported|potential \w+ hazard|hardware exception|"
                          r"illegal|barrier|uninitialized|malloc|free\b|memory leak|leaked|warp |lane )", re.IGNORECASE)
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([\d,]+)\s+error")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*([\d,]+)\s+hazards?\s+displayed\s*\(([\d,]+)\s+errors?,\s*([\d,]+)\s+warnings?\)")


@dataclass(frozen=True)
class Report:
    severity: str  # error (the kernel's) | warning | internal (the sanitizer's own failure) | other
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The report in one line (its header and detail lines, joined)."""
        return " ".join(self.lines)


@dataclass
class SanitizerOutput:
    reports: list[Report] = field(default_factory=list)
    error_summary: int | None = None  # N of "ERROR SUMMARY: N errors"; None when the run printed no summary
    race_errors: int | None = None
    race_warnings: int | None = None

    @property
    def errors(self) -> list[Report]:
        return [report for report in self.reports if report.severity == "error"]

    @property
    def internal(self) -> list[Report]:
        return [report for report in self.reports if report.severity == "internal"]


def _severity(header: str) -> str:
    lowered = header.lower()
    if lowered.startswith("warning"):
        return "warning"
    if DEVICE_ERROR.match(header):
        return "error"
    if "error" in lowered or "not supported" in lowered or "failed" in lowered:
        return "internal"
    return "other"


def parse_output(text: str) -> SanitizerOutput:
    """The reports and summaries in `text` (the sanitizer's lines amid anything else the program printed)."""
    found = SanitizerOutput()
    current: list[str] | None = None

    def close() -> None:
        nonlocal current
        if current:
            found.reports.append(Report(_severity(current[0]), tuple(current)))
        current = None

    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX):]
        content = body.strip()
        if not content:
            close()
            continue
        if summary := _ERROR_SUMMARY.search(content):
            close()
            found.error_summary = int(summary.group(1).replace(",", ""))
            continue
        if race := _RACE_SUMMARY.search(content):
            close()
            found.race_errors, found.race_warnings = int(race.group(2).replace(",", "")), int(race.group(3).replace(",", ""))
            continue
        indented = body.startswith("  ")
        if not indented:
            close()
            if not content.startswith(_BANNERS):
                current = [content]
        elif current is not None and not content.startswith(_DROPPED) and len(current) < 8:
            current.append(content)
    close()
    return found


def sanitizer_argv(sanitizer: Path, tool: str) -> list[str]:
    """The launcher's argv: compute-sanitizer and its flags, before the worker's own command."""
    if tool not in TOOLS:
        raise ValueError(f"unknown sanitizer tool {tool!r} (expected one of {', '.join(TOOLS)})")
    return [str(sanitizer), "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--print-limit", str(PRINT_LIMIT),
            "--report-api-errors", "no", "--target-processes", "application-only"]
