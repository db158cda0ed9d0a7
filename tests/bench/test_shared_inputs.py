"""Trusted code on a CPU maps the inputs the reference worker drew (PrepareRequest.share) instead of
drawing them again; a submitted solution still draws its own, and an input that would not cross a blob
unchanged is never shared."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from solbench.bench.orchestrator import EvalOptions, reference_solution
from solbench.bench.worker import SHARE_HEADROOM, room_for, shareable
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status
from solbench.data.workload import Workload
from solbench.exec import Job, evaluate_jobs

REFERENCE = """import os
import torch


def make_inputs(N, M):
    with open({log!r}, "a") as log:
        log.write(f"{{os.getpid()}}\\n")
    return {{"x": torch.randn(N), "scale": torch.full((), 1.5), "offset": torch.arange(4 * M).reshape(4, M).t()}}


def run(x, scale, offset):
    offset[0, 0] += 1  # changes an input in place: the worker's own mapping only
    return x * scale + offset.sum()
"""


def counted_problem(log: Path) -> Problem:
    """A problem whose custom inputs leave, per draw, the drawing process's id in `log`; its `offset` is a
    transposed view (not contiguous), so the problem's inputs cannot cross as blobs as they are."""
    definition = Definition.model_validate({
        "name": "counted_inputs", "axes": {"N": {"type": "var"}, "M": {"type": "var"}},
        "inputs": {"x": {"shape": ["N"], "dtype": "float32"}, "scale": {"shape": [], "dtype": "float32"},
                   "offset": {"shape": ["M", 4], "dtype": "int64"}},
        "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
        "reference": REFERENCE.format(log=str(log)), "custom_inputs_entrypoint": "make_inputs"})
    workload = Workload.model_validate({"uuid": "n64", "axes": {"N": 64, "M": 16}, "inputs": {name: {"type": "custom"} for name in ("x", "scale", "offset")}})
    return Problem(definition, [workload])


def drawn_by(log: Path) -> list[int]:
    """The ids of the worker processes that drew inputs (this test process draws once to check the entry point)."""
    return [int(line) for line in log.read_text().split() if int(line) != os.getpid()]


def evaluate_counted(tmp_path: Path, problem: Problem, solution: Solution, trusted: bool) -> list[int]:
    log = tmp_path / "draws.log"  # where counted_problem's inputs are logged
    log.write_text("")
    options = EvalOptions(device="cpu", trials=2, timing=False, hidden=0, seed=4, static_analysis=False, cache_root=tmp_path / "cache",
                          sandbox="none")  # the solution worker logs its draws outside its folders, which bubblewrap would refuse
    (trace,) = evaluate_jobs([Job(problem, solution, problem.workloads, trusted=trusted)], options)
    assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
    return drawn_by(log)


def contiguous_variant(problem: Problem) -> Problem:
    definition = problem.definition.model_copy(update={"reference": problem.definition.reference.replace(".reshape(4, M).t()", ".reshape(M, 4)")})
    return Problem(definition, problem.workloads)


def test_a_trusted_solution_on_a_cpu_maps_the_reference_workers_inputs(tmp_path: Path) -> None:
    problem = contiguous_variant(counted_problem(tmp_path / "draws.log"))
    draws = evaluate_counted(tmp_path, problem, reference_solution(problem), trusted=True)
    assert len(draws) == 2 and len(set(draws)) == 1  # one draw per trial, both in the reference worker

    submitted = reference_solution(problem).model_copy(update={"name": "submitted"})
    draws = evaluate_counted(tmp_path, problem, submitted, trusted=False)
    assert len(draws) == 4 and len(set(draws)) == 2  # a submitted solution draws its own: nothing crosses into its process


def test_inputs_that_a_blob_would_change_are_drawn_by_each_worker(tmp_path: Path) -> None:
    problem = counted_problem(tmp_path / "draws.log")
    draws = evaluate_counted(tmp_path, problem, reference_solution(problem), trusted=True)
    assert len(draws) == 4 and len(set(draws)) == 2


def test_what_crosses_a_blob_unchanged() -> None:
    plain = torch.arange(12.0).reshape(3, 4)
    assert shareable(torch, plain) and shareable(torch, 3) and shareable(torch, 2.5) and shareable(torch, True)
    assert not shareable(torch, plain.t())  # strides
    assert not shareable(torch, plain[1:])  # a view into a larger storage
    assert not shareable(torch, plain.clone().requires_grad_())
    assert not shareable(torch, torch.nn.Parameter(plain.clone(), requires_grad=False))  # a subclass
    assert not shareable(torch, [plain]) and not shareable(torch, None)


def test_inputs_are_shared_only_where_their_folder_has_room_to_spare(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    assert room_for(tmp_path, 0) and room_for(tmp_path, 1024)
    assert not room_for(tmp_path, (free - SHARE_HEADROOM) // 2 + 2**20)  # twice the inputs and the headroom must fit
    assert not room_for(tmp_path / "gone", 1024)  # no such folder: nothing is written there
