"""The run summary's closing note on --memcheck: how many solutions were sanitized, what was found,
and what it cost per solution (from the `environment.memcheck` record of their traces)."""

from __future__ import annotations

import statistics
from typing import Iterable

from solbench.data.trace import Trace


def memcheck_notes(traces: Iterable[Trace]) -> list[str]:
    records: dict[tuple[str, str], dict] = {}
    for trace in traces:
        record = ((trace.evaluation.environment or {}) if trace.evaluation is not None else {}).get("memcheck")
        if isinstance(record, dict):
            records.setdefault((trace.definition, trace.solution or ""), record)
    if not records:
        return []
    results = [record.get("result", "?") for record in records.values()]
    counts = ", ".join(f"{results.count(result)} {result}" for result in ("clean", "errors", "incomplete", "skipped") if result in results)
    costs = [sum(float(value) for value in (record.get("seconds") or {}).values()) for record in records.values() if record.get("seconds")]
    cost = f"; cost per solution {statistics.median(costs):.1f} s median, {max(costs):.1f} s max" if costs else ""
    first = next((f" (first: {problem} / {solution}: {record.get('first_report', '')[:160]})"
                  for (problem, solution), record in records.items() if record.get("result") == "errors"), "")
    return [f"memcheck: {len(records)} solution(s) under compute-sanitizer on their smallest workload: {counts}{first}{cost}"]


def memcheck_lines(traces: Iterable[Trace]) -> list[str]:
    """The memcheck verdict of each solution among the traces, one line each (as `solbench eval` prints it)."""
    lines = []
    for trace in traces:
        record = ((trace.evaluation.environment or {}) if trace.evaluation is not None else {}).get("memcheck")
        line = record.get("line") if isinstance(record, dict) else None
        if line and line not in lines:
            lines.append(line)
    return lines
