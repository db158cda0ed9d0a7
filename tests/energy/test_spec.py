"""Hardware specs with and without energy figures: loading, the one-line error for malformed figures, and
E_SOL in `solbench sol` (its table and its JSON) only where the spec has figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.errors import SpecError
from solbench.sol.hardware import get_hardware, load_hardware_file

from energy_testkit import FIGURES, VECTOR_SCALE, write_spec


def test_a_spec_with_figures_loads_them(energy_spec: Path):
    spec = load_hardware_file(energy_spec)
    assert spec.energy is not None and spec.energy.dram_pj_per_byte == 40.0 and spec.energy.op_pj["tensor_bf16"] == 0.5
    assert spec.energy.op_energy_j("tensor_bf16") == pytest.approx(0.5e-12)
    assert spec.at_clock(1500).energy == spec.energy  # kept at another clock


def test_only_the_h200_spec_carries_measured_energy_figures():
    for name in ("B200", "H100-SXM", "A100-SXM"):
        assert get_hardware(name).energy is None
    measured = get_hardware("H200").energy
    assert measured is not None and measured.date == "2026-12-04" and measured.device == "NVIDIA H200"
    assert 20 < measured.dram_pj_per_byte < 200 and 50 < measured.static_power_w < 300 and measured.max_residual < 0.1


@pytest.mark.parametrize("change, field, words", [
    ({"dram_pj_per_byte": -1.0}, "energy.dram_pj_per_byte", "greater than or equal to 0"),
    ({"op_pj": {"tensor_bf16": -0.5}}, "energy.op_pj.tensor_bf16", "greater than or equal to 0"),
    ({"op_pj": {"tensor_bf17": 0.5}}, "energy.op_pj", "unknown unit 'tensor_bf17'"),
    ({"static_power_w": "lots"}, "energy.static_power_w", "valid number"),
    ({"date": None}, "energy.date", "valid string"),
])
def test_malformed_figures_are_one_clear_error(tmp_path: Path, change: dict, field: str, words: str):
    path = write_spec(tmp_path, energy={**FIGURES, **change})
    with pytest.raises(SpecError) as caught:
        load_hardware_file(path)
    issue = caught.value.issues[0]
    assert issue.field == field and words in issue.message and issue.path == path


def test_energy_that_is_no_mapping_is_an_error(tmp_path: Path):
    with pytest.raises(SpecError) as caught:
        load_hardware_file(write_spec(tmp_path, energy=[1, 2]))
    assert caught.value.issues[0].field == "energy"


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    env.pop("SOLBENCH_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "solbench.cli", *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


def test_sol_shows_e_sol_where_the_spec_has_figures(energy_spec: Path):
    shown = cli("sol", VECTOR_SCALE, "--hardware", energy_spec)
    assert shown.returncode == 0, shown.stderr
    assert "energy bound on H200-energy" in shown.stdout and "energy figures of 2026-12-04" in shown.stdout
    rows = [json.loads(line) for line in cli("sol", VECTOR_SCALE, "--hardware", energy_spec, "--json").stdout.splitlines()]
    assert rows and all(row["e_sol_j"] > 0 and set(row["e_sol_parts_j"]) == {"dram", "l2", "compute", "static"} for row in rows)
    first = rows[0]
    assert first["e_sol_parts_j"]["static"] == pytest.approx(80.0 * first["t_sol_ms"] / 1e3)
    assert first["e_sol_j"] == pytest.approx(sum(first["e_sol_parts_j"].values()))


def test_sol_says_a_datasheet_spec_has_no_energy_bound():
    shown = cli("sol", VECTOR_SCALE, "--hardware", "B200")
    assert shown.returncode == 0 and "no E_SOL: the hardware spec B200 has no energy figures (datasheet only)" in shown.stdout
    rows = [json.loads(line) for line in cli("sol", VECTOR_SCALE, "--hardware", "B200", "--json").stdout.splitlines()]
    assert rows and not any("e_sol_j" in row for row in rows)


def test_a_malformed_spec_on_the_command_line_is_one_line_and_exit_1(tmp_path: Path):
    path = write_spec(tmp_path, energy={**FIGURES, "l2_pj_per_byte": -3})
    shown = cli("hw", "show", path)
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and "energy.l2_pj_per_byte" in lines[0] and str(path) in lines[0]
