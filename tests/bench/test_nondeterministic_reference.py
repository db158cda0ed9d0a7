"""A reference that disagrees with itself (atomics, split reductions) is run again (up to 3 times) on the
same inputs when a solution misses it: the trace says so, and outputs matching any of the reference's
own results pass. A deterministic reference changes nothing. Real worker processes on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

# Each call of the reference adds 1 or 0, in turn: two runs in a row always differ (far beyond the tolerance).
FLIPPING = """import torch

_calls = [0]


def run(x):
    _calls[0] += 1
    return x + float(_calls[0] % 2)
"""
# Every third call of the reference adds 1, the others 0: a single rerun after a miss agrees with the first result.
RARELY_DIFFERENT = """import torch

_calls = [0]


def run(x):
    _calls[0] += 1
    return x + float(_calls[0] % 3 == 0)
"""
STEADY = "import torch\n\n\ndef run(x):\n    return x + 1.0\n"
NOTE = "note [reference-nondeterministic]"


def _problem(name: str, reference: str):
    # bf16 output: no fp64 oracle call, so the reference is called exactly once per result
    return inline_problem(name, reference, {"x": (["N"], "bfloat16")}, {"y": (["N"], "bfloat16")}, axes={"N": {"type": "var"}},
                          workload_axes=[{"N": 4096}], tolerance={"max_atol": 1e-3, "max_rtol": 1e-3})


def _solution(problem, body: str):
    return inline_solution(f"{problem.name}-sol", problem.name, "pytorch", "kernel.py::run",
                           {"kernel.py": f"import torch\n\n\ndef run(x):\n    return {body}\n"}, dps=False)


def _evaluate(problem, solution, tmp_path: Path, timing: bool = True):
    options = EvalOptions(device="cpu", trials=3, min_iterations=3, budget_s=0.3, warmup=1, timeout_s=60.0, seed=5, hidden=0,
                          static_analysis=False, timing=timing, cache_root=tmp_path / "builds")
    (trace,) = evaluate(problem, solution, options)
    return trace.evaluation


def test_outputs_that_match_one_of_the_references_own_results_pass_with_a_note(tmp_path: Path):
    problem = _problem("flipping_reference", FLIPPING)
    evaluation = _evaluate(problem, _solution(problem, "x.clone()"), tmp_path)
    assert evaluation.status == Status.PASSED, evaluation.log
    assert NOTE in evaluation.log and "they match the last of these" in evaluation.log, evaluation.log
    assert evaluation.correctness.verified_timed_calls >= 1  # the timed calls' outputs were checked the same way


def test_outputs_that_match_neither_result_still_fail(tmp_path: Path):
    problem = _problem("flipping_reference", FLIPPING)
    evaluation = _evaluate(problem, _solution(problem, "x + 3.0"), tmp_path, timing=False)
    assert evaluation.status == Status.INCORRECT_NUMERICAL, evaluation.log
    assert NOTE in evaluation.log and "they miss each of its results" in evaluation.log, evaluation.log


def test_a_disagreement_that_one_rerun_would_miss_is_found_by_the_next(tmp_path: Path):
    """Each trial: the first result (x) misses outputs x + 1; the first rerun agrees with it (x), the second is x + 1."""
    problem = _problem("rarely_different_reference", RARELY_DIFFERENT)
    evaluation = _evaluate(problem, _solution(problem, "x + 1.0"), tmp_path, timing=False)
    assert evaluation.status == Status.PASSED, evaluation.log
    notes = [line for line in evaluation.log.splitlines() if NOTE in line]
    assert len(notes) == 3 and all("(1 of 2 further runs;" in line and "they match the last of these" in line for line in notes), evaluation.log


@pytest.mark.parametrize("body", ["x.clone()", "x + 3.0"])
def test_a_deterministic_reference_gets_no_second_chance(tmp_path: Path, body: str):
    problem = _problem("steady_reference", STEADY)
    evaluation = _evaluate(problem, _solution(problem, body), tmp_path, timing=False)
    assert evaluation.status == Status.INCORRECT_NUMERICAL, evaluation.log
    assert NOTE not in evaluation.log
