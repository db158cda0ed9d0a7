"""The whole energy path on a CPU, where no energy counter can be read (CI): `eval --energy` and `run --energy`
succeed with a clear note in every trace and no energy score; the summary says why and the report renders.
And the scoring of measured energy end to end (traces as the evaluator writes them on a GPU): energy scores
per workload, problem and suite, the summary, and the report's energy section and time-vs-energy scatter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.loaders import load_problems, load_traces
from solbench.data.trace import Trace
from solbench.report.render import write_report
from solbench.score.baselines import BaselineFile, candidate_result, make_entry
from solbench.score.run_summary import build_summary
from solbench.score.summary import RunSummary

from energy_testkit import VECTOR_SCALE

SOLUTION = VECTOR_SCALE.parent / "pytorch_returning.json"
LIMIT_S = 300


def solbench(root: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SOLBENCH_DEBUG", "SOLBENCH_HARDWARE", "SOLBENCH_BASELINES")}
    env.update(COLUMNS="200", SOLBENCH_BUILD_CACHE=str(root / "builds"), SOLBENCH_HARDWARE_DIR=str(root / "hardware"), PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "solbench.cli", *map(str, args)], env=env, capture_output=True, text=True, timeout=LIMIT_S, cwd=root)


def counter_absent(note: str | None) -> bool:
    return bool(note) and note.startswith("energy not measured: ") and "\n" not in note


def test_eval_with_energy_on_a_cpu_notes_the_missing_counter(tmp_path: Path):
    out = tmp_path / "traces.jsonl"
    result = solbench(tmp_path, "eval", VECTOR_SCALE, "--solution", SOLUTION, "--device", "cpu", "--hidden", "0", "--energy", "--energy-window", "0.5", "-o", out)
    assert result.returncode == 0, result.stdout + result.stderr
    traces = load_traces(out)
    assert len(traces) == len(load_problems([VECTOR_SCALE])[0].workloads)
    for trace in traces:
        energy = trace.evaluation.performance.energy
        assert counter_absent(energy.note) and energy.joules is None and energy.score is None
        assert f"note [energy]: {energy.note}" in trace.evaluation.log
        assert trace.evaluation.performance.latency_ms > 0  # timing is untouched
    assert f"note: {traces[0].evaluation.performance.energy.note}" in result.stdout
    assert "Traceback" not in result.stderr


def test_energy_without_timing_is_one_line_and_exit_2(tmp_path: Path):
    result = solbench(tmp_path, "eval", VECTOR_SCALE, "--solution", SOLUTION, "--device", "cpu", "--energy", "--no-timing")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "energy is measured after timing" in result.stderr


def test_run_with_energy_on_a_cpu_writes_notes_and_no_energy_score(tmp_path: Path):
    run_dir, baselines = tmp_path / "run", tmp_path / "baselines"
    result = solbench(tmp_path, "run", VECTOR_SCALE, "--device", "cpu", "--seed", "2", "--energy", "--run-dir", run_dir, "--baselines", baselines)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    notes = [note for note in summary.notes if note.startswith("energy not measured: ")]
    assert len(notes) == 1 and notes[0].endswith("(2 workloads): no energy score there"), summary.notes
    assert all(row.energy_j is None and row.energy_score is None and row.score is not None for row in summary.workloads)
    assert summary.problems[0].energy_score is None and summary.suites[0].energy_score_mean is None
    (store,) = [json.loads(path.read_text()) for path in baselines.glob("*.json")]
    assert all(entry["energy_asked"] and entry.get("baseline_energy_j") is None for entry in store["entries"])
    markdown = (run_dir / "report.md").read_text()
    assert "energy not measured" in markdown and "## Energy" not in markdown  # nothing measured: no energy section
    assert (run_dir / "report.html").is_file()
    again = solbench(tmp_path, "run", VECTOR_SCALE, "--device", "cpu", "--seed", "2", "--energy", "--run-dir", tmp_path / "again",
                     "--baselines", baselines)
    assert again.returncode == 0 and "/ eager /" not in again.stderr  # entries made with --energy are current for --energy


def measured_trace(workload: str, solution: str, joules: float | None, sol_j: float | None, latency: float, sol_ms: float,
                   status: str = "PASSED") -> Trace:
    energy = {"joules": joules, "sol_j": sol_j, "mean_power_w": 400.0, "idle_power_w": 85.0, "window_s": 1.02, "calls": 900,
              "overhead_j": 0.01, "resolution_j": 1e-6, "method": "nvml-total-energy"}
    performance = {"latency_ms": latency, "latency_iqr_ms": 0.0, "sol_ms": sol_ms, "energy": energy} if status == "PASSED" else None
    return Trace.model_validate({"definition": "vector_scale", "solution": solution, "workload": {"uuid": workload, "axes": {"N": 16}, "inputs": {}},
                                 "evaluation": {"status": status, "performance": performance, "log": ""}})


def test_measured_energy_is_scored_summarised_and_reported(tmp_path: Path):
    problem = load_problems([VECTOR_SCALE])[0]
    store = BaselineFile(hardware="H200", device="cuda:0")
    for uuid in ("w1", "w2"):
        eager = measured_trace(uuid, "vector_scale-reference", 0.030, 0.010, 0.02, 0.01)
        compiled = measured_trace(uuid, "compiled", 0.020, 0.010, 0.03, 0.01)
        entry = make_entry(problem, uuid, [candidate_result("eager", eager), candidate_result("compile-default", compiled)], 0.01)
        assert entry.baseline_energy_j == 0.020 and entry.energy_candidate == "compile-default" and entry.energy_asked
        assert entry.baseline_ms == 0.02 and entry.candidate == "eager"  # time and energy baselines are chosen apart
        store.put(entry)
    traces = [measured_trace("w1", "mine", 0.015, 0.010, 0.015, 0.01), measured_trace("w2", "mine", None, 0.010, 0.0, 0.01, status="RUNTIME_ERROR"),
              measured_trace("w1", "cheat", 0.004, 0.010, 0.015, 0.01), measured_trace("w2", "cheat", 0.011, 0.010, 0.015, 0.01)]
    summary = build_summary(traces, {"vector_scale": problem}, store, None, "cuda:0", lambda t: t.solution, created="2026-12-04T00:00:00")
    rows = {(r.solution, r.workload): r for r in summary.workloads}
    assert rows["mine", "w1"].energy_score == pytest.approx(1 / (1 + (0.015 - 0.010) / (0.020 - 0.010)))
    assert traces[0].evaluation.performance.energy.score == rows["mine", "w1"].energy_score  # in the trace too
    assert rows["mine", "w1"].energy_baseline_j == 0.020 and rows["mine", "w1"].energy_sol_j == 0.010
    assert rows["cheat", "w1"].energy_score == 0.0 and "below-energy-sol" in rows["cheat", "w1"].flags
    problems = {p.solution: p for p in summary.problems}
    assert problems["mine"].energy_score == pytest.approx(rows["mine", "w1"].energy_score / 2)  # the failed workload counts 0
    assert problems["cheat"].energy_score == pytest.approx((0.0 + 1 / (1 + 0.001 / 0.010)) / 2)
    assert problems["mine"].median_energy_ratio_to_sol == pytest.approx(1.5)
    suites = {s.solution: s for s in summary.suites}
    assert suites["mine"].energy_score_mean == pytest.approx(problems["mine"].energy_score)

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(summary.to_json())
    markdown_path, html_path = write_report(run_dir)
    markdown, html = markdown_path.read_text(), html_path.read_text()
    assert "## Energy" in markdown and "15 mJ" in markdown and "mean S_E" in markdown
    assert 'id="energy"' in html and html.count('data-plot="time-vs-energy"') == 2  # a scatter per suite with measured energy
    assert "distance to SOL in energy" in html


def test_readings_within_their_resolution_set_no_baseline_and_get_no_score():
    """A candidate's reading not above its resolution is kept on the candidate and never becomes E_b (the H100's
    embedding reference read -0.0016 J, resolution 0.086 J); a solution's such reading gets no energy score and
    the flag energy-unresolved, where it had scored 1 below E_SOL "within the margin"."""
    problem = load_problems([VECTOR_SCALE])[0]
    store = BaselineFile(hardware="H200", device="cuda:0")
    noisy = measured_trace("w1", "vector_scale-reference", -0.0016, 0.010, 0.02, 0.01)
    noisy.evaluation.performance.energy.resolution_j = 0.086
    compiled = measured_trace("w1", "compiled", 0.120, 0.010, 0.03, 0.01)
    results = [candidate_result("eager", noisy), candidate_result("compile-default", compiled)]
    assert results[0].energy_j is None and results[0].energy_unresolved == -0.0016
    entry = make_entry(problem, "w1", results, 0.01)
    assert entry.baseline_energy_j == 0.120 and entry.energy_candidate == "compile-default"
    store.put(entry)
    short = measured_trace("w1", "short", 0.006, 0.010, 0.015, 0.01)
    short.evaluation.performance.energy.resolution_j = 0.039
    long = measured_trace("w1", "long", 0.065, 0.010, 0.015, 0.01)
    summary = build_summary([short, long], {"vector_scale": problem}, store, None, "cuda:0", lambda t: t.solution, created="2026-12-07T00:00:00")
    rows = {r.solution: r for r in summary.workloads}
    assert rows["short"].energy_score is None and "energy-unresolved" in rows["short"].flags and rows["short"].energy_j == 0.006
    assert short.evaluation.performance.energy.score is None
    assert rows["long"].energy_score == pytest.approx(1 / (1 + (0.065 - 0.010) / (0.120 - 0.010)))
    assert "energy-unresolved" not in rows["long"].flags


def test_summary_notes_tell_missing_energy_from_notes_on_the_bound():
    from solbench.energy.notes import summary_notes
    from solbench.sol.hardware import get_hardware

    absent = measured_trace("w1", "a", None, None, 0.01, 0.01)
    absent.evaluation.performance.energy.note = "energy not measured: NVML is not available here (NVMLError_LibraryNotFound)"
    fallback = measured_trace("w2", "a", 0.02, 0.01, 0.01, 0.01)
    fallback.evaluation.performance.energy.note = "no energy figure for sfu: priced at the least measured energy per operation"
    unpriced = measured_trace("w3", "a", 0.02, None, 0.01, 0.01)
    notes = summary_notes([absent, fallback, unpriced], get_hardware("B200"))
    assert notes == ["energy not measured: NVML is not available here (NVMLError_LibraryNotFound) (1 workload): no energy score there",
                     "E_SOL: no energy figure for sfu: priced at the least measured energy per operation (1 workload)",
                     "no E_SOL: the hardware spec B200 has no energy figures (datasheet only); `solbench hw calibrate --energy` measures them on the GPU"]


def test_baseline_build_with_energy_on_a_cpu_asks_for_energy_and_keeps_it_current(tmp_path: Path):
    baselines = tmp_path / "baselines"
    result = solbench(tmp_path, "baseline", "build", VECTOR_SCALE, "--device", "cpu", "--seed", "2", "--energy", "--energy-window", "0.5",
                      "--baselines", baselines)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "E_b" in result.stdout and "Traceback" not in result.stderr
    (store,) = [json.loads(path.read_text()) for path in baselines.glob("*.json")]
    assert store["entries"] and all(entry["energy_asked"] and entry.get("baseline_energy_j") is None for entry in store["entries"])
    again = solbench(tmp_path, "baseline", "build", VECTOR_SCALE, "--device", "cpu", "--seed", "2", "--energy", "--baselines", baselines)
    assert again.returncode == 0 and "0 entries measured" in again.stdout, again.stdout + again.stderr
    window_alone = solbench(tmp_path, "baseline", "build", VECTOR_SCALE, "--device", "cpu", "--energy-window", "2", "--baselines", baselines)
    assert window_alone.returncode == 2 and "add --energy" in window_alone.stderr and "Traceback" not in window_alone.stderr
