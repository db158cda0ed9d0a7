"""benchmarks/sol_dataset_speed.py: the figures of one `solbench sol --json` run (wall, first line, CPU,
memory, the slowest problems), on two small problems run for real."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sol_dataset_speed.py"


def _script():
    spec = importlib.util.spec_from_file_location("sol_dataset_speed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_one_run_is_measured_and_its_slowest_problems_listed(capsys) -> None:
    speed = _script()
    command = [sys.executable, "-m", "solbench.cli", "sol", str(KERNELBENCH / "01_linear.py"), str(KERNELBENCH / "06_layernorm.py"), "--json"]
    run = speed._one_run(command)
    assert run.exit_code == 0 and not run.errors
    assert sorted(row["problem"] for row in run.rows) == ["01_linear", "06_layernorm"]
    assert 0 < run.first_line_s <= run.wall_s and run.cpu_s > 0
    assert 0 < run.peak_process_mb <= run.peak_total_mb
    speed._print_run(1, run, top=1)
    said = capsys.readouterr().out
    assert "run 1: 2 problems (2 workloads)" in said and "first line after" in said
    assert "the slowest 1 problems (problem_analysis_s):" in said
