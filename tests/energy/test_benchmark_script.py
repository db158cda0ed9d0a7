"""benchmarks/energy_bound.py end to end on a CPU (no counter: it runs, writes its files, says why nothing was
measured and exits 1), and its table per op class and violations on rows as a GPU run makes them."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

import pytest

from energy_testkit import VECTOR_SCALE

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "energy_bound.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("energy_bound", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(problem: str, op: str, workload: str, candidate: str, joules: float, sol_j: float, status: str = "PASSED") -> dict:
    return {"problem": problem, "op_class": op, "candidate": candidate, "workload": workload, "status": status, "latency_ms": 0.1, "sol_ms": 0.05,
            "joules": joules, "sol_j": sol_j, "ratio": joules / sol_j, "mean_power_w": 400.0, "idle_power_w": 85.0, "window_s": 1.0, "calls": 900,
            "overhead_j": 0.01, "resolution_j": 1e-6, "calls_per_step": 1, "inputs_ahead": False, "note": None}


def test_per_class_takes_each_workloads_least_energy_candidate(bench: ModuleType):
    rows = [row("a", "gemm", "w1", "eager", 3.0, 1.0), row("a", "gemm", "w1", "compile", 2.0, 1.0), row("a", "gemm", "w2", "eager", 4.0, 1.0),
            row("b", "norm", "w1", "eager", 1.5, 1.0), row("b", "norm", "w2", "eager", 0.5, 1.0, status="INCORRECT_NUMERICAL")]
    table = bench.per_class(rows)
    assert table == {"gemm": {"workloads": 2, "least": 2.0, "median": 3.0, "unresolved": 0}, "norm": {"workloads": 1, "least": 1.5, "median": 1.5, "unresolved": 0}}
    text = bench.text_of({"hardware": "H200-calibrated", "rows": rows, "violations": [rows[4]], "run_exit_code": 0, "wall_s": 12.0, "per_class": table,
                          "repeat": {"problem": "a", "workload": "w1", "repeats": 3, "joules": [1.0, 1.1, 0.9], "spread": 0.2, "cv": 0.1, "notes": []}})
    assert "gemm" in text and "VIOLATION b/w2" in text and "spread (max-min)/median 20.00%" in text
    assert "a/w1 eager: PASSED T 0.1 ms, E 3 J, E_SOL 1 J, ratio 3.000, 400 W, 900 calls, 1 per step, inputs per step" in text
    short = {**row("c", "norm", "w3", "eager", 2.0, 1.0), "calls_per_step": 400, "inputs_ahead": True}
    assert "900 calls, 400 per step, inputs made ahead" in bench.text_of({"hardware": None, "rows": [short], "violations": [], "run_exit_code": 0,
                                                                           "wall_s": 1.0, "per_class": {}, "repeat": None})


def test_a_violation_is_below_e_sol_beyond_the_readings_resolution(bench: ModuleType):
    """The H100's eager fp8 GEMM read 0.0017 J against an E_SOL of 0.0095 J, lost in 0.31 J of setup per call: below
    E_SOL within its resolution is no violation, and such unresolved readings stay out of the bound's tightness."""
    lost = {**row("f", "gemm_fp8", "w1", "eager", 0.0017, 0.0095), "resolution_j": 0.0375}
    below = {**row("f", "gemm_fp8", "w1", "compile", 0.0070, 0.0095), "resolution_j": 0.001}
    fine = row("g", "gemm", "w1", "eager", 0.02, 0.01)
    assert [bench.below_beyond_resolution(r) for r in (lost, below, fine)] == [False, True, False]
    table = bench.per_class([lost, fine])
    assert table["gemm_fp8"]["unresolved"] == 1 and table["gemm_fp8"]["workloads"] == 0 and table["gemm"]["least"] == 2.0
    text = bench.text_of({"hardware": "H100-calibrated", "rows": [lost, below, fine], "violations": [below], "below_within_resolution": [lost],
                          "run_exit_code": 0, "wall_s": 1.0, "per_class": table, "repeat": None})
    assert "VIOLATION f/w1 compile: 0.007 J per call (resolution 0.001 J)" in text
    assert "BELOW E_SOL WITHIN THE RESOLUTION f/w1 eager: 0.0017 J per call (resolution 0.0375 J)" in text


def test_the_benchmark_on_a_cpu_says_why_nothing_was_measured(bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SOLBENCH_HARDWARE_DIR", str(tmp_path / "hardware"))
    monkeypatch.setenv("SOLBENCH_BUILD_CACHE", str(tmp_path / "builds"))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code = bench.main([str(VECTOR_SCALE), "--out", str(out), "--device", "cpu", "--workloads", "smallest:1", "--compile-modes", "none",
                       "--repeats", "2", "--keep", str(tmp_path / "work")])
    assert code == 1  # nothing measured: no counter on a CPU
    assert sorted(p.name for p in out.iterdir()) == ["energy_bound.json", "energy_bound.txt", "run.log"]
    result = json.loads((out / "energy_bound.json").read_text())
    assert result["run_exit_code"] == 0 and result["violations"] == []
    assert result["rows"] and all(r["joules"] is None and r["note"].startswith("energy not measured: ") for r in result["rows"])
    assert any(note.startswith("energy not measured: ") for note in result["run_notes"])
    assert result["repeat"]["repeats"] == 2 and result["repeat"]["joules"] == [] and result["repeat"]["notes"]
    assert os.path.getsize(out / "energy_bound.txt") > 0


def test_reprice_prices_earlier_rows_again_on_a_spec_and_keeps_the_earlier_bound(bench: ModuleType, tmp_path: Path):
    """--reprice runs nothing: the earlier rows' E_SOL is priced again as the evaluator prices it (here on a
    spec whose fit's lower envelope is 0.9), so a row between the two bounds is a violation no more."""
    from solbench.data.loaders import load_problems
    from solbench.energy.evaluate import sol_energy
    from solbench.sol.api import policy_for
    from solbench.sol.hardware import load_hardware_file

    from energy_testkit import FIGURES, write_spec

    samples = [{"kernel": "matmul", "measured_j": 0.9, "fitted_j": 1.0, "residual": 0.111}, {"kernel": "copy", "measured_j": 1.0, "fitted_j": 1.0, "residual": 0.0}]
    spec_path = write_spec(tmp_path, "H200-enveloped", {**FIGURES, "samples": samples})
    problem = load_problems([VECTOR_SCALE])[0]
    workload = problem.workloads[0]
    enveloped, _ = sol_energy(problem, workload, load_hardware_file(spec_path), policy_for(problem, None), None, True)
    unscaled, _ = sol_energy(problem, workload, load_hardware_file(write_spec(tmp_path, "H200-plain")), policy_for(problem, None), None, True)
    assert enveloped < unscaled
    earlier = {"run_exit_code": 0, "run_dir": str(tmp_path / "gone"),
               "rows": [row(problem.name, "elementwise", workload.uuid, "eager", (enveloped + unscaled) / 2, unscaled)]}
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    code = bench.main(["--reprice", str(tmp_path / "earlier.json"), "--hardware", str(spec_path), "--out", str(tmp_path / "out"), str(VECTOR_SCALE)])
    result = json.loads((tmp_path / "out" / "energy_bound.json").read_text())
    (repriced,) = result["rows"]
    assert repriced["earlier_sol_j"] == pytest.approx(unscaled) and repriced["sol_j"] == pytest.approx(enveloped)
    assert repriced["ratio"] == pytest.approx((enveloped + unscaled) / 2 / enveloped) and repriced["ratio"] > 1
    assert code == 0 and result["violations"] == [] and "x 0.900 (the fit's lower envelope)" in (tmp_path / "out" / "energy_bound.txt").read_text()
    assert bench.main(["--reprice", str(tmp_path / "earlier.json"), "--out", str(tmp_path / "out2")]) == 2  # no spec: one line, exit 2
