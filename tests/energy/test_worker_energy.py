"""The worker's energy request in process, on the CPU, with a counter that updates like NVML's (NVML cannot
run without a driver): the windows come in order, every call gets fresh inputs, the checked calls' and the
last call's outputs come back and are right, and the trusted side's checks accept the answer and make the
trace's Energy record from it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from solbench.bench import worker as worker_module
from solbench.bench.messages import EnergyRequest, LoadProblemRequest, OutputSpec
from solbench.bench.shm import read_blob
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
from solbench.energy import evaluate as energy
from solbench.energy.counter import METHOD

from energy_testkit import SEEN_WITHIN_S, VECTOR_SCALE, SteppedCounter


@pytest.fixture
def problem():
    return load_problems([VECTOR_SCALE])[0]


def make_worker(problem, monkeypatch, counter) -> worker_module.Worker:
    monkeypatch.setattr(worker_module.energy_counter, "open_counter", lambda device: (counter, None))
    worker = worker_module.Worker("solution", "cpu")
    worker.load_problem(LoadProblemRequest(definition=problem.definition.to_json_dict(), root=str(problem.root)))
    seen: list[float] = []

    def run(x, alpha):  # a solution that returns its output (not destination-passing)
        seen.append(float(x[0]))
        return x * alpha

    worker.function = run
    worker.seen = seen
    return worker


def test_the_energy_request_measures_checks_and_hands_back_outputs(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=11, dps=False, check=[1, 4], outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10)
    before = counter.read_mj()
    started = time.monotonic()
    answer = worker.energy(request)
    elapsed, after = time.monotonic() - started, counter.read_mj()
    assert answer.note is None and answer.calls == answer.loop.steps >= 10
    assert answer.idle.end_mj <= answer.blank.start_mj and answer.blank.end_mj <= answer.loop.start_mj
    assert len(set(worker.seen)) == len(worker.seen) == answer.calls  # fresh inputs for every call
    last = answer.calls - 1
    assert set(answer.checked) == {"1", "4", str(last)}
    for index in (1, 4, last):
        x, alpha = generate_inputs(problem, workload, seed=11, trial=index).values()
        handed = read_blob(answer.checked[str(index)]["y"], tmp_path)
        assert torch.equal(handed, x * alpha)
    assert energy.check_answer(answer, before, after, elapsed, 700.0) is None
    recorded, lines = energy.record(answer, 1e-9, None)
    assert recorded.method == METHOD and recorded.calls == answer.calls and recorded.idle_power_w == pytest.approx(120.0, rel=0.2)
    idle, blank, loop, blank_after = energy.windows_of(answer)  # the setup measured before and after the calls, averaged
    assert recorded.overhead_j == pytest.approx((blank.per_step_j + blank_after.per_step_j) / 2)
    assert recorded.joules == pytest.approx(loop.joules / loop.covered_steps - recorded.overhead_j)
    assert answer.loop.steps - 1 - SEEN_WITHIN_S / (loop.seconds / loop.covered_steps) <= loop.covered_steps <= answer.loop.steps
    assert not any("below-energy-sol" in line for line in lines)


def test_an_answer_claiming_other_calls_than_steps_is_refused(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=3, dps=False, outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.05, idle_s=0.05)
    answer = worker.energy(request)
    doctored = answer.model_copy(update={"calls": answer.calls * 10})
    assert "steps for" in energy.check_answer(doctored, 0, counter.read_mj(), 10.0, 700.0)
    inflated = answer.model_copy(update={"loop": answer.loop.model_copy(update={"covered_steps": answer.calls * 3.0})})
    assert "steps' time inside it" in energy.check_answer(inflated, 0, counter.read_mj(), 10.0, 700.0)


def test_a_worker_without_a_counter_answers_with_the_reason(problem, monkeypatch, tmp_path: Path):
    monkeypatch.setattr(worker_module.energy_counter, "open_counter", lambda device: (None, "energy not measured: because"))
    worker = worker_module.Worker("solution", "cpu")
    workload = problem.workloads[0]
    answer = worker.energy(EnergyRequest(workload=workload, seed=1, dps=False, outputs={}, blob_dir=str(tmp_path)))
    assert answer.note == "energy not measured: because" and answer.loop is None and answer.calls == 0
