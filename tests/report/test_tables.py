"""The CLI's tables: user text is never read as rich markup, times carry a readable unit, and the
per-op breakdown is numbered 1..n."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from solbench.data.inline import inline_problem
from solbench.data.trace import Trace
from solbench.report.eval_tables import traces_table
from solbench.report.problem_tables import problem_details, problems_summary, validation_table
from solbench.report.sol_tables import explain_table, sol_table
from solbench.report.units import format_ms, format_seconds
from solbench.sol.analysis import analyze
from solbench.sol.hardware import get_hardware


def _text(renderable) -> str:
    console = Console(width=250, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(("milliseconds", "expected"), [
    (1234.5, "1.23 s"), (4.56, "4.56 ms"), (0.00789, "7.89 µs"), (0.00032, "320 ns"), (3.4e-6, "3.4 ns"),
    (0.9999, "1 ms"), (0.9994, "999 µs"), (999.9996, "1 s"), (12.3456, "12.3 ms"), (0.1, "100 µs"),
    (0.0, "0 ms"), (-0.005, "-5 µs"), (None, ""),
])
def test_format_ms_picks_a_readable_unit(milliseconds: float | None, expected: str) -> None:
    assert format_ms(milliseconds) == expected


def test_format_seconds_is_format_ms_of_the_milliseconds() -> None:
    assert format_seconds(2.5e-6) == "2.5 µs"
    assert format_seconds(3.0) == "3 s"
    assert format_seconds(None) == ""


def _problem():
    """A small problem whose free text (op_type, model, description) holds rich markup look-alikes."""
    reference = ("import torch\n\n\ndef run(x, w):\n"
                 "    y = x.reshape(-1, x.shape[-1]).t().contiguous().t()\n"
                 "    return torch.relu(y * w).view(x.shape)\n")
    problem = inline_problem("odd_problem", reference,
                             {"x": (["num_tokens", "hidden_size"], "float32"), "w": (["hidden_size"], "float32")},
                             {"out": (["num_tokens", "hidden_size"], "float32")},
                             axes={"num_tokens": {"type": "var"}, "hidden_size": {"type": "const", "value": 64}},
                             workload_axes=[{"num_tokens": 8}])
    problem.definition = problem.definition.model_copy(update={"op_type": "[bold]relu[/bold]", "hf_id": "org/[model]",
                                                               "description": "y = relu(x * w) over [num_tokens, hidden_size]"})
    return problem


def test_show_keeps_shapes_and_bracketed_names() -> None:
    problem = _problem()
    details = _text(problem_details(problem))
    assert "[num_tokens, hidden_size]" in details
    assert "[hidden_size]" in details
    assert "[bold]relu[/bold]" in details and "org/[model]" in details
    assert "over [num_tokens, hidden_size]" in details
    summary = _text(problems_summary([problem]))
    assert "[bold]relu[/bold]" in summary and "org/[model]" in summary


def test_validation_table_keeps_bracketed_paths(tmp_path) -> None:
    from solbench.data.loaders import scan

    folder = tmp_path / "[red]x"
    folder.mkdir()
    (folder / "solution.json").write_text("{}")
    text = _text(validation_table(list(scan(folder / "solution.json"))))
    assert "[red]x" in text


def _trace(latency_ms: float, sol_ms: float) -> Trace:
    problem = _problem()
    return Trace.model_validate({
        "definition": problem.name, "solution": "[i]mine[/i]", "workload": problem.workloads[0].to_json_dict(),
        "evaluation": {"status": "PASSED", "performance": {"latency_ms": latency_ms, "latency_iqr_ms": latency_ms / 50, "sol_ms": sol_ms,
                                                            "timing_method": "cupti"},
                       "correctness": {"max_absolute_error": 0.0, "max_relative_error": 0.0}},
    })


def test_traces_table_shows_small_times_in_microseconds_and_names_verbatim() -> None:
    text = _text(traces_table([_trace(0.0034, 0.00125)]))
    assert "3.4 µs" in text and "68 ns" in text and "1.25 µs" in text
    assert "2.72" in text  # latency / T_SOL
    assert "e-0" not in text
    assert "[i]mine[/i]" in text


def test_sol_tables_use_units_and_number_ops_without_gaps() -> None:
    problem = _problem()
    result = analyze(problem, problem.workloads[0], get_hardware("H200"), "strict")
    costed = [r for r in result.nodes if r.cost is None or r.cost.flops or r.cost.reads or r.cost.writes]
    assert len(costed) < len(result.nodes)  # views and free ops are captured, and left out of the breakdown
    explained = _text(explain_table(result))
    rows = [line for line in explained.splitlines() if re.match(r"^│\s*\d+\s*│", line)]
    numbers = [int(re.match(r"^│\s*(\d+)", row)[1]) for row in rows]
    assert numbers == list(range(1, len(costed) + 1))
    assert any("aten.relu" in row for row in rows)
    assert re.search(r"\d (ns|µs)\b", explained)
    table = _text(sol_table([result]))
    assert re.search(r"\d (ns|µs) ", table)  # an 8x64 workload on an H200 is far below a millisecond
    assert "e-0" not in table
