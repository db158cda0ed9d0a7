"""Tables of evaluation results (traces)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from solbench.data.trace import Status, Trace
from solbench.report.units import format_ms

_STYLE = {Status.PASSED: "green", Status.TIMEOUT: "yellow", Status.REWARD_HACK: "bold magenta"}


def traces_table(traces: list[Trace], title: str = "evaluation") -> Table:
    table = Table(title=title)
    for column, justify in (("problem", "left"), ("solution", "left"), ("workload", "left"), ("status", "left"), ("latency", "right"),
                            ("IQR", "right"), ("T_SOL", "right"), ("T/T_SOL", "right"), ("max abs err", "right"), ("timer", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for trace in traces:
        evaluation = trace.evaluation
        performance = evaluation.performance if evaluation else None
        correctness = evaluation.correctness if evaluation else None
        status = evaluation.status if evaluation else None
        latency = performance.latency_ms if performance else None
        sol = performance.sol_ms if performance else None
        table.add_row(
            Text(trace.definition), Text(trace.solution or ""), Text(trace.workload.uuid),  # Text: names are never read as markup
            Text(status.value if status else "-", style=_STYLE.get(status, "red")),
            format_ms(latency), format_ms(performance.latency_iqr_ms if performance else None), format_ms(sol),
            f"{latency / sol:.2f}" if latency and sol else "", _number(correctness.max_absolute_error if correctness else None),
            Text((performance.timing_method or "") if performance else ""),
        )
    return table


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.4g}"


def first_log_line(trace: Trace) -> str:
    if not trace.evaluation or not trace.evaluation.log:
        return ""
    return next((line for line in trace.evaluation.log.splitlines() if line.strip()), "")
