"""Hardware specs: the built-in datasheets, lookup, fallbacks, and `solbench hw` through the CLI."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sol_testkit import sol
from solbench.cli import app
from solbench.sol.hardware import catalogue, get_hardware
from solbench.data.errors import SpecError

BUILT_IN = ["B200", "H200", "H100-SXM", "H100-PCIe", "A100-SXM", "L40S", "RTX-4090", "MI300X"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def _no_user_specs(tmp_path, monkeypatch):
    """Keep calibrated specs of this machine's user out of the catalogue."""
    import solbench.sol.hardware as hardware

    monkeypatch.setattr(hardware, "USER_HARDWARE_DIR", tmp_path / "user-hardware")


@pytest.mark.parametrize("name", BUILT_IN)
def test_built_in_spec_loads(name: str) -> None:
    spec = get_hardware(name)
    assert spec.name == name
    assert spec.peak_tflops["vector_fp32"] > 0
    assert spec.bandwidth_bytes_per_s > 0
    assert spec.on_chip_bytes > 0
    assert spec.on_chip_bytes >= spec.on_chip.l2_bytes
    for unit in ("tensor_fp32", "tensor_bf16", "tensor_fp16", "vector_fp32", "vector_fp16", "sfu", "tensor_fp8"):
        for policy in ("strict", "relaxed"):
            rate, how = spec.rate(unit, policy)
            assert rate > 0 and how


def test_the_eight_built_in_specs_are_in_the_catalogue() -> None:
    names = {spec.name for _, spec in catalogue().values()}
    assert set(BUILT_IN) <= names


def test_h200_numbers() -> None:
    h200 = get_hardware("H200")
    assert h200.bandwidth_bytes_per_s == 4.8e12
    # 60 MiB L2 + 132 SMs x (256 KiB shared/L1 + 256 KiB registers)
    assert h200.on_chip_bytes == 62914560 + 132 * (262144 + 262144)


@pytest.mark.parametrize("spelling", ["h200", "H200", "h100-sxm", "H100_SXM", "a100-sxm", "rtx-4090", "Mi300x", "h100-pcie", "b200"])
def test_lookup_is_case_insensitive(spelling: str) -> None:
    assert get_hardware(spelling).name.lower().replace("_", "-") == spelling.lower().replace("_", "-")


def test_unknown_hardware_names_the_known_ones() -> None:
    with pytest.raises(SpecError, match="unknown hardware 'nope'.*H200"):
        get_hardware("nope")


def test_fp8_matmul_on_a100_falls_back_to_fp16_rate() -> None:
    a100 = get_hardware("A100-SXM")
    assert "tensor_fp8" not in a100.peak_tflops
    rate, how = a100.rate("tensor_fp8")
    assert rate == pytest.approx(312e12)
    assert "tensor_fp16" in how and "no tensor_fp8" in how
    inputs = {"a": ([4096, 4096], "float8_e4m3fn"), "b": ([4096, 4096], "float8_e4m3fn"), "sa": ([], "float32"), "sb": ([], "float32")}
    reference = ("import torch\n\n\ndef run(a, b, sa, sb):\n"
                 "    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)\n")
    result = sol(reference, inputs, {"c": ([4096, 4096], "bfloat16")}, hardware="A100-SXM")
    flops = 2 * 4096**3
    assert result.flops_by_unit["tensor_fp8"] == flops
    assert "no tensor_fp8" in result.rate_notes["tensor_fp8"]
    # tensor_fp8 at 312 T/s, concurrent with the scale per output on A100's 16-bit vector units (78 T/s)
    assert result.t_compute_s == pytest.approx(max(flops / 312e12, 4096 * 4096 / 78e12))
    on_h200 = sol(reference, inputs, {"c": ([4096, 4096], "bfloat16")}, hardware="H200")
    assert on_h200.rate_notes["tensor_fp8"] == "tensor_fp8"


def test_missing_units_fall_back_along_the_chain() -> None:
    rtx = get_hardware("RTX-4090")  # no fp64 tensor cores: fp64 contractions run on the fp64 ALUs
    assert rtx.rate("tensor_fp64")[0] == pytest.approx(1.29e12)
    l40s = get_hardware("L40S")
    assert l40s.rate("tensor_fp4")[0] == pytest.approx(733e12)  # fp4 -> fp8
    a100 = get_hardware("A100-SXM")
    assert a100.rate("tensor_fp4")[0] == pytest.approx(312e12)  # fp4 -> fp8 -> fp16


def test_a_missing_unit_takes_the_fastest_substitute_so_the_bound_stays_a_lower_bound(tmp_path) -> None:
    """A CPU-like spec without fp8 whose fp16 matrix rate is a hundredth of its bf16 one (torch's CPU fp16
    matmul, calibrated on a 2-core EPYC): fp8 work is priced at the bf16 rate, not fp16's. Seen on the
    synthetic fp8 block-scaled GEMM: priced at fp16, its eager reference ran at 0.46 x T_SOL."""
    import yaml

    from solbench.sol.hardware import load_hardware_file

    data = yaml.safe_load(yaml.safe_dump(get_hardware("H200").model_dump(exclude_none=True)))
    data.update(name="slow-fp16", peak_tflops={"tensor_bf16": 3.0, "tensor_fp16": 0.007, "vector_fp32": 0.7, "vector_fp16": 0.7})
    data.pop("energy", None)
    path = tmp_path / "slow-fp16.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_hardware_file(path)
    for unit in ("tensor_fp8", "tensor_fp4"):
        rate, how = spec.rate(unit)
        assert rate == pytest.approx(3.0e12) and how == f"tensor_bf16 (no {unit} on slow-fp16)"
    assert spec.rate("tensor_fp16")[0] == pytest.approx(0.007e12)  # a unit the chip has keeps its own rate


def test_hw_list(runner: CliRunner) -> None:
    result = runner.invoke(app, ["hw", "list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for name in BUILT_IN:
        assert name in result.output


def test_hw_show_h200(runner: CliRunner) -> None:
    result = runner.invoke(app, ["hw", "show", "H200"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "H200" in result.output
    assert "3xTF32" in result.output
    assert "tensor_bf16" in result.output and "989.4" in result.output


def test_hw_show_unknown_is_one_line_and_exit_1(runner: CliRunner) -> None:
    result = runner.invoke(app, ["hw", "show", "nope"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "unknown hardware 'nope'" in lines[0]
    assert "Traceback" not in result.output


def test_hw_calibrate_cpu_writes_a_loadable_spec(runner: CliRunner, tmp_path) -> None:
    target = tmp_path / "cpu.yaml"
    args = ["hw", "calibrate", "--device", "cpu", "--scale", "0.05", "--output", str(target)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert target.is_file()
    spec = get_hardware(str(target))
    assert spec.name == "CPU-calibrated"
    assert spec.vendor == "CPU"
    measured = spec.calibration["measured"]
    assert measured["copy_tbps"] > 0 and measured["read_tbps"] > 0 and measured["vector_fp32"] > 0
    # the measured ceilings replaced the placeholders
    # (to 3 decimals, or 4 significant digits below 0.01 TFLOP/s: a rate is never rounded to 0; `measured` keeps 4 decimals)
    assert spec.peak_tflops["vector_fp32"] > 0
    assert spec.peak_tflops["vector_fp32"] == pytest.approx(measured["vector_fp32"], rel=0.01, abs=1e-4)
    assert spec.dram.bandwidth_tbps == round(max(measured["copy_tbps"], measured["read_tbps"]), 4)
    assert spec.bandwidth_bytes_per_s > 0 and spec.on_chip_bytes > 0
    # usable for an analysis
    reference = "import torch\n\n\ndef run(a, b):\n    return a @ b\n"
    analysed = sol(reference, {"a": ([64, 64], "float32"), "b": ([64, 64], "float32")}, {"c": ([64, 64], "float32")}, hardware=str(target))
    assert analysed.hardware == "CPU-calibrated"
    assert analysed.t_sol_s > 0

    before = target.read_text()
    again = runner.invoke(app, args)
    assert again.exit_code == 1
    assert "refusing to overwrite" in again.output
    assert target.read_text() == before  # untouched
    forced = runner.invoke(app, args + ["--force"])
    assert forced.exit_code == 0, forced.output
    assert get_hardware(str(target)).name == "CPU-calibrated"


def test_a_spec_with_a_zero_rate_is_refused_with_one_line(runner: CliRunner, tmp_path) -> None:
    import yaml

    data = get_hardware("H200").model_dump(mode="json")
    data["peak_tflops"]["vector_fp16"] = 0.0
    path = tmp_path / "zero.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="expected a positive rate in TFLOP/s for vector_fp16"):
        get_hardware(str(path))
    result = runner.invoke(app, ["hw", "show", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "positive rate" in result.output
