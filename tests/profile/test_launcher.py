"""The hook that profile and memcheck start the solution worker through: a launcher program before the
worker's command, inside the sandbox, with variables of its own (on the CPU, with `env` as the launcher:
a real program that starts the worker as a profiler or sanitizer would). The worker is asked to exit at
the end, so the launcher's exit code is the worker's."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, EvaluationRun
from solbench.bench.processes import Launcher
from solbench.bench.workers import WorkerPair
from solbench.data.loaders import load_problems, load_solution
from solbench.data.trace import Status
from solbench.profile.memcheck import memcheck_first

STATUS = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"
PROBLEM = load_problems([STATUS / "vector_scale"])[0]
SOLUTION = load_solution(STATUS / "pytorch_dps.json")


@pytest.fixture
def options(tmp_path: Path) -> EvalOptions:
    return EvalOptions(device="cpu", trials=1, timing=False, hidden=0, cache_root=tmp_path / "cache", seed=1)


def test_the_solution_worker_starts_under_the_launcher_and_ends_with_its_exit_code(options: EvalOptions):
    env = shutil.which("env")
    with WorkerPair.for_options("cpu", options) as pair:
        pair.launch_under(SOLUTION, Launcher((env, "SOLBENCH_LAUNCHED_BY=test"), {"SOLBENCH_PROBE_VARIABLE": "1"}))
        run = EvaluationRun(PROBLEM, SOLUTION, options, pair)
        run.start()
        trace = run.evaluate_workload(PROBLEM.workloads[0])
        assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
        (launched,) = pair.launched
        assert launched.launcher.argv[0] == env and env in launched.process.args
        assert launched.finish(60) == 0 and not launched.alive
        run.close()
        pair.launch_under(SOLUTION, None)
        assert pair.launched == []
        again = EvaluationRun(PROBLEM, SOLUTION, options, pair)  # the next worker of the solution starts as usual
        again.start()
        assert again.evaluate_workload(PROBLEM.workloads[0]).evaluation.status == Status.PASSED
        assert pair.worker.launcher is None and env not in pair.worker.process.args
        again.close()


def test_a_trusted_worker_started_under_a_launcher_is_never_kept(options: EvalOptions):
    with WorkerPair.for_options("cpu", options) as pair:
        pair.trust(SOLUTION)
        pair.launch_under(SOLUTION, Launcher((shutil.which("env"),), {}))
        run = EvaluationRun(PROBLEM, SOLUTION, options, pair)
        run.start()
        run.close()  # detach: a trusted solution's healthy worker would be kept for the next trusted solution, but not this one
        assert pair._kept_trusted is None


def test_memcheck_is_not_for_trusted_code_nor_for_the_cpu(options: EvalOptions):
    with WorkerPair.for_options("cpu", options) as pair:
        verdict = memcheck_first(PROBLEM, SOLUTION, dataclasses.replace(options, memcheck=True), pair, PROBLEM.workloads)
        assert verdict.result == "skipped" and "runs on cpu" in verdict.skipped
        assert memcheck_first(PROBLEM, SOLUTION, options, pair, PROBLEM.workloads, skip={w.uuid for w in PROBLEM.workloads}) is None
        pair.trust(SOLUTION)
        assert memcheck_first(PROBLEM, SOLUTION, options, pair, PROBLEM.workloads) is None
        assert pair.started_workers == 0  # nothing was started for any of it
