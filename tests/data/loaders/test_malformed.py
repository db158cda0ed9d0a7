"""Every malformed file under tests/fixtures/malformed/ gives exactly the expected error, as one located line.

Each case is broken in ONE way. The table below records, per case, the error(s) it must produce:
(file name suffix, line or None, field or None, message fragment). The suffix is relative to
tests/fixtures/malformed/. A field is None only where the broken thing has no field: a file that is not
valid JSON, or a KernelBench-style Python file.

Each case is checked twice: in-process with `scan()` (which must not raise), and with
`solbench validate PATH` as a real subprocess (exit code 1, the error lines on stderr and nothing else
there, each line `<path>[:<line>]: <field>: <message>`, no traceback).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from solbench.data.loaders import scan

DATA = Path(__file__).resolve().parents[2] / "fixtures"
MALFORMED = DATA / "malformed"


class Expected(NamedTuple):
    suffix: str  # the file the error names, relative to tests/fixtures/malformed/
    line: int | None
    field: str | None
    fragment: str  # a part of the message


def case(path: str, *expected: tuple, bug: str | None = None):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"BUG: {bug}")] if bug else []
    return pytest.param(path, [Expected(*e) for e in expected], id=path, marks=marks)


# The ONE table: case (file or problem folder under tests/fixtures/malformed/) -> expected error lines.
CASES = [
    # --- definition.json --------------------------------------------------------------------------
    case("definition_invalid_json", ("definition_invalid_json/definition.json", 28, None, "invalid JSON: Expecting property name")),
    case("axis_unknown_type", ("axis_unknown_type/definition.json", None, "axes.D", "expected an axis {type: const, value}")),
    case("axis_expression_forbidden", ("axis_expression_forbidden/definition.json", None, "axes.E.expression", "only the functions abs, cdiv, ceil_div, max, min may be called")),
    case("axis_expression_cycle", ("axis_expression_cycle/definition.json", None, "axes", "depend on each other in a cycle: E, F")),
    case("shape_undeclared_axis", ("shape_undeclared_axis/definition.json", None, "inputs.y.shape", "unknown axis 'K' (declared axes: B, D)")),
    case("dtype_unknown", ("dtype_unknown/definition.json", None, "inputs.x.dtype", "(got 'float12')")),
    case("constraint_unknown_axis", ("constraint_unknown_axis/definition.json", None, "constraints.1", "uses unknown axis max_batch")),
    case("reference_syntax_error", ("reference_syntax_error/definition.json", None, "reference", "reference does not parse: expected ':' (reference line 3)")),
    case("reference_run_parameter_order", ("reference_run_parameter_order/definition.json", None, "reference", "run() takes (y, x) but the inputs are (x, y), in this order")),
    case("reference_differs_from_file", ("reference_differs_from_file/definition.json", None, "reference", "differs from reference.py")),
    # --- workload.jsonl ---------------------------------------------------------------------------
    case("workload_invalid_json_line3", ("workload_invalid_json_line3/workload.jsonl", 3, None, "invalid JSON: Expecting ',' delimiter")),
    case("custom_input_without_entrypoint", ("custom_input_without_entrypoint/workload.jsonl", 2, "inputs.y", "a custom input needs custom_inputs_entrypoint")),
    case("workload_missing_var_axis", ("workload_missing_var_axis/workload.jsonl", 2, "axes.B", "var axis 'B' is not bound")),
    case("workload_missing_input", ("workload_missing_input/workload.jsonl", 2, "inputs.y", "input 'y' of the definition is not described")),
    case("constraint_violated", ("constraint_violated/workload.jsonl", 2, "axes", "constraint 'B % 2 == 0' does not hold for {'B': 3}")),
    case("tolerance_negative", ("tolerance_negative/workload.jsonl", 2, "tolerance.max_atol", "greater than or equal to 0 (got -0.001)")),
    case("tolerance_ratio_above_one", ("tolerance_ratio_above_one/workload.jsonl", 2, "tolerance.required_matched_ratio", "less than or equal to 1 (got 1.5)")),
    case("tolerance_ratio_alias_conflict", ("tolerance_ratio_alias_conflict/workload.jsonl", 2, "tolerance", "both required_matched_ratio and required_match_ratio (its alias) are given, with different values")),
    case("workload_duplicate_uuid", ("workload_duplicate_uuid/workload.jsonl", 3, "uuid", "'workload_duplicate_uuid-1' repeats workload 1")),
    case("scalar_wrong_type", ("scalar_wrong_type/workload.jsonl", 2, "inputs.n.value", "an int32 input needs an integer value, got 1.5")),
    case("safetensors_for_python_scalar", ("safetensors_for_python_scalar/workload.jsonl", 2, "inputs.n", "is a Python scalar (shape null); describe it as scalar, random or custom")),
    case("safetensors_missing_file", ("safetensors_missing_file/workload.jsonl", 2, "inputs.y.path", "missing.safetensors' does not exist")),
    case("fp4_odd_last_dimension", ("fp4_odd_last_dimension/workload.jsonl", 2, "inputs.x", "needs an even last dimension")),
    # --- solutions ----------------------------------------------------------------------------------
    case("solution_mixed_languages.json", ("solution_mixed_languages.json", None, "spec.languages", "mix the Python and C++ families (triton, cuda_cpp)")),
    case("solution_entry_point_not_in_sources.json", ("solution_entry_point_not_in_sources.json", None, "spec.entry_point", "entry file 'kernel.py' is not among the sources")),
    case("solution_entry_symbol_missing.json", ("solution_entry_symbol_missing.json", None, "spec.entry_point", "the entry file 'main.py' defines no top-level 'run'")),
    case("solution_parent_path.json", ("solution_parent_path.json", None, "sources.1.path", "'../util.py' must be a plain relative path")),
    # --- traces -------------------------------------------------------------------------------------
    case("trace_unknown_status.jsonl", ("trace_unknown_status.jsonl", 2, "evaluation.status", "(got 'SLOW')")),
    # --- KernelBench-style files --------------------------------------------------------------------
    case("kernelbench_import_raises.py", ("kernelbench_import_raises.py", 26, None, "importing it failed: RuntimeError: this module needs a GPU")),
    case("kernelbench_get_inputs_dict.py", ("kernelbench_get_inputs_dict.py", None, None, "get_inputs() must return a list or tuple, got dict")),
]

# One error line: <path>[:<line>]: [<field>: ]<message>, on one line.
ERROR_LINE = re.compile(r"^(?P<path>[^:\s][^:]*?)(?::(?P<line>\d+))?: (?:(?P<field>[A-Za-z_][\w.\-]*): )?(?P<message>\S.*)$")


def _expected_prefix(expected: Expected, base: Path | None) -> str:
    path = MALFORMED / expected.suffix if base is None else Path(os.path.relpath(MALFORMED / expected.suffix, base))
    where = f"{path}:{expected.line}" if expected.line is not None else str(path)
    return f"{where}: {expected.field}: " if expected.field else f"{where}: "


def _matches(line: str, expected: Expected, base: Path | None) -> bool:
    prefix = _expected_prefix(expected, base)
    return line.startswith(prefix) and expected.fragment in line[len(prefix) :]


def test_the_table_covers_every_malformed_file():
    on_disk = {p.name for p in MALFORMED.iterdir() if not p.name.startswith((".", "__"))}
    in_table = {param.values[0] for param in CASES}
    assert on_disk == in_table
    assert len(CASES) >= 20


@pytest.mark.parametrize("path, expected", CASES)
def test_scan_reports_exactly_the_expected_errors(path: str, expected: list[Expected]):
    results = scan(MALFORMED / path)  # must not raise
    errors = [issue for loaded in results for issue in loaded.errors]
    assert len(errors) == len(expected), "\n".join(str(e) for e in errors)
    assert not any(loaded.ok for loaded in results)
    assert all(loaded.problem is None and loaded.solution is None for loaded in results)
    for want in expected:
        found = [e for e in errors if e.path == MALFORMED / want.suffix and e.line == want.line and e.field == want.field and want.fragment in e.message]
        assert found, f"expected {want}, got:\n" + "\n".join(repr(e) for e in errors)
    for error in errors:
        text = str(error)
        assert "\n" not in text
        assert ERROR_LINE.match(text), text
        assert text == _expected_prefix(Expected(str(error.path.relative_to(MALFORMED)), error.line, error.field, ""), None) + error.message


@pytest.mark.parametrize("path, expected", CASES)
def test_validate_subprocess_prints_one_line_per_error(path: str, expected: list[Expected]):
    done = subprocess.run(
        [sys.executable, "-m", "solbench.cli", "validate", path],
        cwd=MALFORMED,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 1, output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == len(expected), done.stderr
    for want in expected:
        assert any(_matches(line, want, MALFORMED) for line in lines), f"expected {want}, stderr:\n{done.stderr}"
    for line in lines:
        assert ERROR_LINE.match(line), line
        assert ": warning: " not in line
    assert "invalid" in done.stdout
    assert "0 of 1 valid" in done.stdout


def test_validate_all_malformed_files_at_once():
    """One run over the whole folder: every case is listed, each with its error lines, and nothing is valid."""
    done = subprocess.run(
        [sys.executable, "-m", "solbench.cli", "validate", "."],
        cwd=MALFORMED,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert all(ERROR_LINE.match(line) for line in lines), done.stderr
    assert len(lines) == sum(len(param.values[1]) for param in CASES)
    assert f"0 of {len(CASES)} valid (0 problems, 0 workloads)" in done.stdout
    for param in CASES:
        path, expected = param.values
        if param.marks:  # the known bug changes the message, not the count
            continue
        for want in expected:
            assert any(_matches(line, want, MALFORMED) for line in lines), f"{path}: expected {want}"
