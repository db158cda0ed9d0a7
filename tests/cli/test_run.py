"""`solbench run` end to end as a real subprocess on the small problem tests/fixtures/solutions/status/vector_scale:
the run folder's files, the scores in its summary, baseline reuse, solution sets and best-of-k, exit codes.
The CPU spec is calibrated into a per-test folder ($SOLBENCH_HARDWARE_DIR), builds go to a per-test cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.loaders import load_traces
from solbench.score.summary import RunSummary

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"
PROBLEM = DATA / "vector_scale"
LIMIT_S = 240


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("run")
    return {"root": root, "hardware": root / "hardware", "baselines": root / "baselines"}


def environment(shared: dict[str, Path]) -> dict[str, str]:
    """This process's environment less solbench's own settings, with the module's build cache and hardware folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("SOLBENCH_DEBUG", "SOLBENCH_HARDWARE", "SOLBENCH_BASELINES")}
    env.update(COLUMNS="200", SOLBENCH_BUILD_CACHE=str(shared["root"] / "builds"), SOLBENCH_HARDWARE_DIR=str(shared["hardware"]), PYTHONUNBUFFERED="1")
    return env


def solbench(shared: dict[str, Path], *args: object) -> subprocess.CompletedProcess[str]:
    env = environment(shared)
    return subprocess.run([sys.executable, "-m", "solbench.cli", "run", PROBLEM, "--device", "cpu", "--seed", "3", "--baselines", shared["baselines"],
                           *map(str, args)], env=env, capture_output=True, text=True, timeout=LIMIT_S, cwd=shared["root"])


def expected_score(latency: float, sol: float, baseline: float) -> float:
    return 1 / (1 + (latency - sol) / (baseline - sol))


def test_run_of_the_references_writes_the_run_folder_with_scores(shared: dict[str, Path]):
    run_dir = shared["root"] / "first"
    result = solbench(shared, "--run-dir", run_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "calibrated now" in result.stderr  # first use on this CPU
    specs = list(shared["hardware"].glob("cpu-*.yaml"))
    assert len(specs) == 1
    key = specs[0].stem
    written = sorted(p.name for p in run_dir.iterdir())
    assert {"baselines", "summary.json", "traces.jsonl"} <= set(written)
    assert set(written) - {"baselines", "summary.json", "traces.jsonl"} <= {"report.md", "report.html"}  # the report, by solbench.report.render
    assert (run_dir / "baselines" / f"{key}.json").is_file() and (shared["baselines"] / f"{key}.json").is_file()

    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.hardware == key and summary.device == "cpu" and summary.roofs["dram_tbps"] > 0 and "vector_fp32_tflops" in summary.roofs
    assert summary.baselines == f"baselines/{key}.json" and summary.versions["torch"]
    rows = {row.workload: row for row in summary.workloads}
    assert sorted(rows) == ["vs-n0016", "vs-n0064"]  # the two smallest on a CPU
    for uuid, n in (("vs-n0016", 16), ("vs-n0064", 64)):
        row = rows[uuid]
        assert row.status == "PASSED" and row.solution == "vector_scale-reference" and row.solution_set == "reference"
        assert row.baseline_candidate == "eager" and row.baseline_ms == row.latency_ms == row.reference_ms  # the reference is its own baseline
        assert 0 < row.sol_ms < row.latency_ms
        assert row.score == pytest.approx(0.5) and row.speedup_vs_reference == pytest.approx(1.0) and row.reclaimed == pytest.approx(0.0)
        assert row.flops == n and row.bytes == 8 * n  # y = x * alpha: one multiply per element; x read and y written, float32
    (problem,) = summary.problems
    assert problem.score == pytest.approx(0.5) and problem.statuses == {"PASSED": 2}
    assert problem.categories == {"subset": "none", "op_type": "none", "precision": "float32", "direction": "forward"}
    (suite,) = summary.suites
    assert suite.solution == "reference" and suite.problems == 1 and suite.score_mean == pytest.approx(0.5)
    traces = load_traces(run_dir / "traces.jsonl")
    assert sorted(t.workload.uuid for t in traces) == ["vs-n0016", "vs-n0064"]
    assert all(t.evaluation.performance.score == pytest.approx(0.5) for t in traces)  # the score is in the trace too

    lines = result.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    assert any(line.startswith("vector_scale ") and line.rstrip().endswith("0.500") and "2/2" in line for line in lines), result.stdout
    assert "suite reference: 1 problem, score mean 0.500, median 0.500, 2/2 workloads passed" in lines, result.stdout  # one solution each


def test_run_of_solution_sets_reuses_the_baselines_and_scores_against_them(shared: dict[str, Path]):
    run_dir = shared["root"] / "second"
    result = solbench(shared, "--run-dir", run_dir, "-s", DATA / "pytorch_returning.json", "-s", DATA / "off_by_constant.json")
    assert result.returncode == 1, result.stdout + result.stderr  # off_by_constant is INCORRECT_NUMERICAL
    assert "/ eager /" not in result.stderr  # the baselines of the first run are current: not measured again
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    baselines = json.loads((run_dir / "baselines" / f"{summary.hardware}.json").read_text())
    t_b = {e["workload"]: e["baseline_ms"] for e in baselines["entries"]}
    scores = {p.solution: p for p in summary.problems}
    assert scores["off_by_constant"].score == 0.0 and scores["off_by_constant"].statuses == {"INCORRECT_NUMERICAL": 2}
    for row in (r for r in summary.workloads if r.solution == "pytorch_returning"):
        assert row.status == "PASSED" and row.baseline_ms == t_b[row.workload]
        assert row.score == pytest.approx(expected_score(row.latency_ms, row.sol_ms, row.baseline_ms))
        assert row.speedup_vs_baseline == pytest.approx(row.baseline_ms / row.latency_ms)
    assert scores["pytorch_returning"].score == pytest.approx(sum(r.score for r in summary.workloads if r.solution == "pytorch_returning") / 2)
    # a solution also meets the held-out workloads (correctness only, never scored): 2 hidden and 1 unaligned, passed
    assert scores["pytorch_returning"].held_out == {"PASSED": 3} and "hidden-workload" not in scores["pytorch_returning"].flags
    held = [t for t in load_traces(run_dir / "traces.jsonl") if t.workload.uuid.startswith(("hidden-", "unaligned-"))]
    assert len(held) == 6 and all(t.evaluation.performance is None or t.evaluation.performance.latency_ms is None for t in held)
    assert all(not r.workload.startswith(("hidden-", "unaligned-")) for r in summary.workloads)
    suites = {s.solution: s for s in summary.suites}
    assert set(suites) == {"pytorch_returning", "off_by_constant", "best-of-k"}
    assert suites["best-of-k"].score_mean == pytest.approx(scores["pytorch_returning"].score)
    assert all(len(line) <= 100 for line in result.stdout.splitlines())
    assert "vector_scale / off_by_constant" in result.stdout


def test_a_folder_of_several_solutions_of_one_problem_is_a_suite_of_solutions_of_that_problem(shared: dict[str, Path]):
    folder = shared["root"] / "examples"
    folder.mkdir()
    for name in ("pytorch_returning", "off_by_constant", "pytorch_dps"):
        (folder / f"{name}.json").write_text((DATA / f"{name}.json").read_text())
    run_dir = shared["root"] / "several"
    result = solbench(shared, "--run-dir", run_dir, "--solutions", folder)
    assert result.returncode == 1, result.stdout + result.stderr  # off_by_constant is INCORRECT_NUMERICAL
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    suites = {s.solution: s for s in summary.suites}
    assert set(suites) == {"examples", "best-of-k"} and suites["examples"].problems == 3 and suites["best-of-k"].problems == 1
    statuses = sorted(r.status for r in summary.workloads)
    assert statuses == ["INCORRECT_NUMERICAL"] * 2 + ["PASSED"] * 4
    lines = result.stdout.splitlines()
    examples, best = suites["examples"], suites["best-of-k"]
    assert (f"suite examples: 3 solutions of 1 problem, score mean {examples.score_mean:.3f}, median {examples.score_median:.3f}, "
            "4/6 workloads passed") in lines, result.stdout
    assert f"suite best-of-k: 1 problem, score mean {best.score_mean:.3f}, median {best.score_median:.3f}" in lines, result.stdout
    assert examples.score_median == pytest.approx(sorted(p.score for p in summary.problems)[1])


def test_run_never_overwrites_a_run_folder(shared: dict[str, Path]):
    run_dir = shared["root"] / "taken"
    run_dir.mkdir()
    (run_dir / "mine.txt").write_text("keep")
    result = solbench(shared, "--run-dir", run_dir, "--no-timing")
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1] == f"{run_dir}: --run-dir: exists already; pass --resume to continue that run, or choose another folder", result.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == ["mine.txt"]


def test_run_resume_needs_a_run_folder(shared: dict[str, Path]):
    result = solbench(shared, "--resume")
    assert result.returncode == 2 and "--run-dir" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_run_on_a_gpu_takes_the_fastest_of_eager_and_torch_compile(shared: dict[str, Path]):
    env = {k: v for k, v in os.environ.items() if k not in ("SOLBENCH_DEBUG", "SOLBENCH_HARDWARE", "SOLBENCH_BASELINES")}
    env.update(COLUMNS="200", SOLBENCH_BUILD_CACHE=str(shared["root"] / "builds-gpu"), PYTHONUNBUFFERED="1")
    run_dir, baselines = shared["root"] / "gpu", shared["root"] / "baselines-gpu"
    result = subprocess.run([sys.executable, "-m", "solbench.cli", "run", PROBLEM, "--device", "cuda", "--seed", "3", "--baselines", baselines,
                             "--run-dir", run_dir, "--workloads", "all"], env=env, capture_output=True, text=True, timeout=600, cwd=shared["root"])
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.hardware and summary.device.startswith("cuda")  # the GPU's datasheet spec
    stored = json.loads((run_dir / "baselines" / f"{summary.hardware}.json").read_text())
    for entry in stored["entries"]:
        names = {c["name"] for c in entry["candidates"]}
        assert names == {"eager", "compile-default", "compile-max-autotune-no-cudagraphs"}
        timed = [c["latency_ms"] for c in entry["candidates"] if c["latency_ms"] is not None]
        assert entry["baseline_ms"] == min(timed) and entry["baseline_ms"] <= entry["reference_ms"]
    for row in summary.workloads:
        assert row.status in ("PASSED", "REWARD_HACK"), result.stderr
        if row.status == "PASSED" and row.sol_ms is not None and row.baseline_ms > row.sol_ms:
            assert row.score == pytest.approx(expected_score(row.latency_ms, row.sol_ms, row.baseline_ms))


def test_a_pool_of_two_cpu_lanes_gives_the_statuses_of_the_serial_run(shared: dict[str, Path], tmp_path: Path):
    bundled = Path(__file__).resolve().parents[2] / "src" / "solbench" / "dataset" / "problems"
    folders = [bundled / "rmsnorm_llama3_8b", bundled / "silu_and_mul_llama3_8b", bundled / "rope_llama3_8b"]
    env = environment(shared)
    statuses = {}
    for name, extra in (("serial", []), ("pool", ["--lanes", "2"])):
        run_dir = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "solbench.cli", "run", *map(str, folders), "--device", "cpu", "--seed", "5", "--no-timing",
                               "--workloads", "smallest:1", "--trials", "1", "--run-dir", str(run_dir), *extra],
                              env=env, capture_output=True, text=True, timeout=LIMIT_S, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        traces = load_traces(run_dir / "traces.jsonl")
        statuses[name] = [(t.definition, t.workload.uuid, t.evaluation.status.value) for t in traces]
        lanes = {(t.evaluation.environment or {}).get("lane") for t in traces}
        assert lanes == ({None} if name == "serial" else {"cpu0", "cpu1"}), lanes
    assert statuses["pool"] == statuses["serial"] and len(statuses["serial"]) == 3  # the same order too


def test_an_executor_option_that_cannot_work_is_one_line(shared: dict[str, Path]):
    bad = solbench(shared, "--lanes", "zero", "--no-timing")
    assert bad.returncode == 2 and "--lanes" in bad.stderr and "Traceback" not in bad.stderr
    stray = solbench(shared, "--address", "10.0.0.1:6379", "--no-timing")
    assert stray.returncode == 2 and "--executor ray" in stray.stderr


def test_the_suite_line_counts_solutions_and_problems_apart():
    from solbench.cli.evaluate import _summary_lines
    from solbench.score.summary import ProblemScore, SuiteScore

    def problem(name: str, solution: str, suite: str, score: float) -> ProblemScore:
        return ProblemScore(problem=name, solution=solution, solution_set=suite, workloads=1, statuses={"PASSED": 1}, score=score)

    problems = [problem("a", "a-reference", "reference", 0.5), problem("b", "b-reference", "reference", 0.25),
                problem("a", "x", "mine", 0.75), problem("a", "y", "mine", 0.0), problem("b", "z", "mine", 1.0), problem("b", "w", "mine", 0.5),
                problem("c", "v", "single", 0.125)]
    suites = [SuiteScore(solution="reference", problems=2, score_mean=0.375, score_median=0.375),
              SuiteScore(solution="mine", problems=4, score_mean=0.5625, score_median=0.625),
              SuiteScore(solution="single", problems=1, score_mean=0.125, score_median=0.125),
              SuiteScore(solution="best-of-k", problems=2, score_mean=0.875, score_median=0.875)]
    summary = RunSummary(created="2025-01-01T00:00:00+00:00", device="cpu", problems=problems, suites=suites)
    assert [line for line in _summary_lines(summary) if line.startswith("suite ")] == [
        "suite reference: 2 problems, score mean 0.375, median 0.375",
        "suite mine: 4 solutions of 2 problems, score mean 0.562, median 0.625",
        "suite single: 1 problem, score mean 0.125, median 0.125",
        "suite best-of-k: 2 problems, score mean 0.875, median 0.875",
    ]


def test_a_solution_specialised_to_the_published_sizes_scores_0_by_its_held_out_workloads(shared: dict[str, Path], tmp_path: Path):
    """Right on the published sizes, wrong elsewhere: the run's hidden workloads find it (REWARD_HACK
    there), its problem score is 0 although every published workload passed and was timed."""
    solution = json.loads((DATA / "pytorch_returning.json").read_text())
    solution.update(name="specialised", description="right only on the published sizes")
    solution["sources"][0]["content"] = ("def run(x, alpha):\n    if x.shape[0] in (16, 64, 1000):\n        return x * alpha\n"
                                         "    return x * 0.0\n")
    path = tmp_path / "specialised.json"
    path.write_text(json.dumps(solution))
    run_dir = shared["root"] / "specialised"
    result = solbench(shared, "--run-dir", run_dir, "-s", path)
    assert result.returncode == 1, result.stdout + result.stderr  # a held-out workload is not PASSED
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    (problem,) = summary.problems
    assert problem.statuses == {"PASSED": 2} and all(r.score is not None and r.score > 0 for r in summary.workloads)
    assert problem.held_out.get("REWARD_HACK", 0) >= 1 and problem.score == 0.0 and "hidden-workload" in problem.flags
    assert any("held out" in line and "REWARD_HACK" in line for line in result.stdout.splitlines()), result.stdout


def test_a_problem_without_its_blobs_is_one_line_and_the_run_folder_keeps_every_issue(shared: dict[str, Path], tmp_path: Path):
    """A published problem whose safetensors blobs are absent (6 files: 3 inputs x 2 workloads) is one line
    on stderr with the count and the flag; the run folder's load.log has all six; the other problem runs."""
    import shutil

    dataset = tmp_path / "dataset"
    layout = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench_layout" / "FlashInfer-Bench"
    shutil.copytree(layout / "015_paged_decode_blobs_published_separately", dataset / "015_paged_decode_blobs_published_separately")
    shutil.copytree(PROBLEM, dataset / "vector_scale")
    run_dir = tmp_path / "run"
    env = environment(shared)
    result = subprocess.run([sys.executable, "-m", "solbench.cli", "run", dataset, "--device", "cpu", "--no-timing", "--run-dir", run_dir],
                            env=env, capture_output=True, text=True, timeout=LIMIT_S, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr  # a problem was refused
    blob_lines = [line for line in result.stderr.splitlines() if "safetensors" in line]
    (line,) = blob_lines
    assert "6 safetensors files named by 2 workload lines do not exist" in line and "--synthesize-missing-blobs" in line
    assert f"every issue is in {run_dir / 'load.log'}" in result.stderr
    logged = (run_dir / "load.log").read_text().splitlines()
    assert len(logged) == 6 and all("does not exist" in entry for entry in logged)
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert [(w.problem, w.status) for w in summary.workloads] == [("vector_scale", "PASSED")] * 2


def test_ctrl_c_says_what_is_kept_and_how_to_go_on(shared: dict[str, Path], tmp_path: Path):
    """SIGINT once the first problem is scored: exit code 130 and one line naming the problems scored and the --resume command."""
    import signal
    import time

    run_dir = tmp_path / "cut"
    env = environment(shared)
    bundled = Path(__file__).resolve().parents[2] / "src" / "solbench" / "dataset" / "problems"
    process = subprocess.Popen([sys.executable, "-m", "solbench.cli", "run", str(bundled), "--device", "cpu", "--workloads", "smallest:1",
                                "--no-timing", "--hardware", "H200", "--baselines", str(tmp_path / "baselines"), "--run-dir", str(run_dir)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=shared["root"])
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline and process.poll() is None:
        summary = run_dir / "summary.json"
        if summary.exists() and json.loads(summary.read_text())["progress"]["finished"] >= 1:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    finished = json.loads((run_dir / "summary.json").read_text())["progress"]["finished"]
    (line,) = [line for line in err.splitlines() if "interrupted" in line]
    assert line == (f"solbench run: interrupted; {finished} of 13 problems are scored in {run_dir} "
                    f"(go on with: solbench run ... --resume --run-dir {run_dir})")
    assert 1 <= finished < 13
