"""solbench.sol.cpu_spec: the local CPU's spec, calibrated once and cached (kept here beside the scoring tests
that need it; it belongs in tests/sol/ by the layout rule)."""

from __future__ import annotations

from pathlib import Path

from solbench.sol.cpu_spec import cached_cpu_spec, cpu_spec_name, run_hardware


def test_spec_names_come_from_the_cpu_model():
    assert cpu_spec_name("AMD EPYC 7B13 64-Core Processor") == "cpu-amd-epyc-7b13-64-core-processor"
    assert cpu_spec_name("???") == "cpu-unknown"


def test_calibrated_once_then_loaded_from_the_cache(tmp_path: Path):
    absent, why = cached_cpu_spec(tmp_path, calibrate=False)
    assert absent is None and why.startswith("T_SOL blank: no calibrated spec for this CPU")
    spec, note = cached_cpu_spec(tmp_path)
    assert spec is not None and "calibrated now" in note
    (saved,) = tmp_path.glob("cpu-*.yaml")
    assert spec.name == saved.stem and spec.vendor == "CPU" and spec.peak_tflops["vector_fp32"] > 0 and spec.dram.bandwidth_tbps > 0
    before = saved.stat().st_mtime_ns
    again, note = cached_cpu_spec(tmp_path)
    assert again == spec and note.startswith("CPU spec") and saved.stat().st_mtime_ns == before  # not measured again
    value, resolved, _ = run_hardware(None, "cpu", tmp_path)
    assert value == str(saved) and resolved == spec
    named, h200, note = run_hardware("H200", "cpu", tmp_path)
    assert named == "H200" and h200.name == "H200" and note is None


def test_an_unreadable_cached_spec_says_why(tmp_path: Path):
    spec, _ = cached_cpu_spec(tmp_path)
    path = next(tmp_path.glob("cpu-*.yaml"))
    path.write_text("name: [unclosed")
    broken, why = cached_cpu_spec(tmp_path)
    assert broken is None and "unreadable" in why and "delete it" in why


def test_a_cached_spec_of_an_older_method_is_measured_again_and_kept_beside(tmp_path: Path):
    import yaml

    from solbench.sol.cpu_spec import CALIBRATION_METHOD

    spec, _ = cached_cpu_spec(tmp_path)
    assert spec.calibration["method"] == CALIBRATION_METHOD
    path = next(tmp_path.glob("cpu-*.yaml"))
    old = yaml.safe_load(path.read_text())
    del old["calibration"]["method"]  # as specs saved before the method was recorded
    old["peak_tflops"]["tensor_fp16"] = 1e-6
    path.write_text(yaml.safe_dump(old, sort_keys=False))
    kept, note = cached_cpu_spec(tmp_path, calibrate=False)  # not allowed to measure: the old one serves
    assert kept.peak_tflops["tensor_fp16"] == 1e-6
    fresh, note = cached_cpu_spec(tmp_path)
    assert "calibrated now" in note and "was measured by an older method: 1, now 2" in note
    assert fresh.calibration["method"] == CALIBRATION_METHOD and fresh.peak_tflops["tensor_fp16"] > 1e-6
    backup = path.with_name(path.name + ".bak")
    assert yaml.safe_load(backup.read_text())["peak_tflops"]["tensor_fp16"] == 1e-6  # nothing lost
