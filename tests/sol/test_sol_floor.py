"""The latency floor of T_SOL: T_SOL = max(roofline, floor), the floor that applies (DRAM latency, launch,
none), specs without floors, the roofline-only option, `solbench sol` output and calibrated specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sol_testkit import make_problem
from solbench.cli import app
from solbench.data.errors import SpecError
from solbench.report.units import format_seconds
from solbench.sol.analysis import analyze
from solbench.sol.api import sol_time_ms, sol_times
from solbench.sol.calibrate import calibrated_spec
from solbench.sol.hardware import HardwareSpec, get_hardware, load_hardware_file

F32 = "float32"
H200 = get_hardware("H200")
LINEAR = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "01_linear.py"
ENV = {"COLUMNS": "250", "SOLBENCH_HARDWARE": "H200"}


def _add(n: int):
    return make_problem("def run(a, b):\n    return a + b\n", {"a": ([n], F32), "b": ([n], F32)}, {"c": ([n], F32)})


def _result(problem, hardware: HardwareSpec = H200, floor: bool = True):
    return analyze(problem, problem.workloads[0], hardware, "strict", floor=floor)


def _floored(tmp_path: Path, **fields: float) -> Path:
    """The H200 spec with other floors, written as a user's YAML file."""
    data = H200.model_dump(mode="json")
    data.update(name="H200-floored", **fields)
    path = tmp_path / "floored.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_bundled_h200_has_measured_floors_and_the_dram_one_is_the_longer() -> None:
    assert 0 < H200.launch_floor_s < H200.dram_latency_floor_s < 50e-6
    assert H200.latency_floor_s(reads_dram=True) == H200.dram_latency_floor_s
    assert H200.latency_floor_s(reads_dram=False) == H200.launch_floor_s


def test_a_tiny_workload_is_bounded_by_the_dram_floor_and_a_big_one_by_the_roofline() -> None:
    tiny = _result(_add(64))  # 768 bytes: a fraction of a nanosecond at 4.8 TB/s
    assert tiny.t_roofline_s < 1e-9 and tiny.floor == "dram-latency"
    assert tiny.t_floor_s == H200.dram_latency_floor_s == tiny.t_sol_s
    assert tiny.floor_bound and tiny.bottleneck == "memory"  # the roofline's bottleneck is kept
    n = 1 << 24  # 192 MiB read and written: tens of microseconds
    big = _result(_add(n))
    assert big.t_sol_s == big.t_roofline_s == big.t_cache_aware_s > 10 * H200.dram_latency_floor_s
    assert big.t_floor_s == H200.dram_latency_floor_s and not big.floor_bound


def test_the_roofline_only_option_gives_the_bound_without_a_floor() -> None:
    problem = _add(64)
    roofline = _result(problem, floor=False)
    assert roofline.t_sol_s == roofline.t_cache_aware_s < H200.dram_latency_floor_s
    assert roofline.t_floor_s == H200.dram_latency_floor_s and not roofline.floor_applied and not roofline.floor_bound
    times = sol_times(problem, problem.workloads[0], H200, "strict", floor=False)
    assert times.sol_ms == times.roofline_ms == roofline.t_cache_aware_s * 1e3 and times.floor_ms == H200.dram_latency_floor_s * 1e3
    assert not times.floor_applied
    assert sol_time_ms(problem, problem.workloads[0], H200, "strict") == H200.dram_latency_floor_s * 1e3


def test_a_workload_that_reads_no_input_gets_the_launch_floor_and_one_that_does_nothing_none() -> None:
    writes_only = make_problem("import torch\n\ndef run(a):\n    return torch.zeros_like(a)\n", {"a": ([64], F32)}, {"c": ([64], F32)})
    result = _result(writes_only)
    assert result.floor == "launch" and result.t_sol_s == result.t_floor_s == H200.launch_floor_s
    view = make_problem("def run(a):\n    return a.t()\n", {"a": ([8, 8], F32)}, {"c": ([8, 8], F32)})
    nothing = _result(view)
    assert nothing.floor == "no-device-work" and nothing.t_floor_s == 0 and nothing.t_sol_s == 0  # a call that launches nothing is timed at 0


def test_the_dram_floor_is_never_below_the_launch_floor(tmp_path: Path) -> None:
    spec = load_hardware_file(_floored(tmp_path, launch_floor_s=2e-6, dram_latency_floor_s=0.0))
    assert spec.latency_floor_s(reads_dram=True) == 2e-6
    assert _result(_add(64), spec).t_sol_s == 2e-6


def test_an_old_spec_without_floors_loads_and_has_none(tmp_path: Path) -> None:
    data = H200.model_dump(mode="json")
    for name in ("launch_floor_s", "dram_latency_floor_s"):
        del data[name]
    data["name"] = "H200-2025"
    path = tmp_path / "old.json"  # a user's JSON file from before the floors
    path.write_text(json.dumps(data))
    spec = get_hardware(str(path))
    assert spec.launch_floor_s == spec.dram_latency_floor_s == 0 and not spec.has_floor
    result = _result(_add(64), spec)
    assert result.floor == "not-in-spec" and result.t_floor_s == 0 and result.t_sol_s == result.t_cache_aware_s


@pytest.mark.parametrize(("value", "message"), [(-1e-6, "greater than or equal to 0"), (5, "expected seconds below 0.001"),
                                                ("fast", "valid number")])
def test_a_bad_floor_is_one_clear_error(tmp_path: Path, value, message: str) -> None:
    path = _floored(tmp_path, launch_floor_s=value)
    with pytest.raises(SpecError) as raised:
        load_hardware_file(path)
    (issue,) = raised.value.issues
    assert "launch_floor_s" in str(issue) and message in str(issue) and "\n" not in str(issue)
    result = CliRunner().invoke(app, ["sol", str(LINEAR), "-H", str(path)], env=ENV)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert [line for line in result.stderr.splitlines() if line.strip()] == [str(issue)]


def test_sol_json_shows_the_roofline_the_floor_and_whether_it_applies() -> None:
    runner = CliRunner()
    (row,) = [json.loads(line) for line in runner.invoke(app, ["sol", str(LINEAR), "--json"], env=ENV).stdout.splitlines()]
    assert row["t_roofline_ms"] == row["t_cache_aware_ms"] < row["t_floor_ms"] == pytest.approx(H200.dram_latency_floor_s * 1e3)
    assert row["t_sol_ms"] == row["t_floor_ms"] and row["floor"] == "dram-latency" and row["floor_applied"] and row["floor_bound"]
    (plain,) = [json.loads(line) for line in runner.invoke(app, ["sol", str(LINEAR), "--json", "--no-sol-floor"], env=ENV).stdout.splitlines()]
    assert plain["t_sol_ms"] == plain["t_roofline_ms"] == row["t_roofline_ms"] and plain["t_floor_ms"] == row["t_floor_ms"]
    assert not plain["floor_applied"] and not plain["floor_bound"]


def test_sol_table_shows_the_roofline_and_the_floor() -> None:
    runner = CliRunner()
    table = runner.invoke(app, ["sol", str(LINEAR)], env=ENV)
    assert table.exit_code == 0, table.output
    launch, dram = H200.launch_floor_s * 1e6, H200.dram_latency_floor_s * 1e6
    assert f"H200 latency floors: launch {launch:.3g} µs, DRAM latency {dram:.3g} µs; T_SOL = max(roofline, floor)" in table.stdout
    header = next(line for line in table.stdout.splitlines() if line.startswith("┃") and "roofline" in line)
    assert header.index("roofline") < header.index("floor") < header.index("T_SOL")
    row = next(line for line in table.stdout.splitlines() if "01_linear" in line)
    floor = format_seconds(H200.dram_latency_floor_s)
    assert "123 ns" in row and f"{floor} (DRAM)" in row and row.count(floor) == 2 and "latency floor" in row  # roofline 123 ns; floor = T_SOL
    unfloored = runner.invoke(app, ["sol", str(LINEAR), "--no-sol-floor"], env=ENV)
    assert "shown, not applied (--no-sol-floor)" in unfloored.stdout and "floor not applied: roofline alone" in unfloored.stdout
    row = next(line for line in unfloored.stdout.splitlines() if "01_linear" in line)
    assert row.count(format_seconds(H200.dram_latency_floor_s)) == 1 and "latency floor" not in row and "memory" in row
    none = runner.invoke(app, ["sol", str(LINEAR), "-H", "H100-SXM"], env=ENV)
    assert "H100-SXM has no latency floor" in none.stdout and "– (not in spec)" in none.stdout


def test_a_calibrated_spec_takes_the_measured_floors(tmp_path: Path) -> None:
    measured = {"copy_tbps": 4.2, "read_tbps": 4.3, "tensor_bf16": 800.0, "launch_floor_s": 6.1234e-7, "dram_latency_floor_s": 1.02e-6}
    spec = calibrated_spec(get_hardware("H100-SXM"), "cpu", measured)
    assert spec.launch_floor_s == 6.123e-7 and spec.dram_latency_floor_s == 1.02e-6  # 4 significant digits
    assert "launch_floor_s" not in spec.peak_tflops and spec.calibration["measured"]["launch_floor_s"] == 6.123e-7
    path = tmp_path / "calibrated.yaml"
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    assert load_hardware_file(path).dram_latency_floor_s == 1.02e-6
    kept = calibrated_spec(H200, "cpu", {"copy_tbps": 4.2})  # floors not measured (no CUPTI): the base spec's are kept
    assert kept.launch_floor_s == H200.launch_floor_s and kept.dram_latency_floor_s == H200.dram_latency_floor_s


def test_a_lower_clock_keeps_the_floors() -> None:
    slow = H200.at_clock(1500)
    assert slow.launch_floor_s == H200.launch_floor_s and slow.dram_latency_floor_s == H200.dram_latency_floor_s
