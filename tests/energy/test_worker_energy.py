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


def calls_taking(worker: worker_module.Worker, seconds: float) -> None:
    """The worker's solution made to take `seconds` per call: whether a window's inputs fit ahead must not
    hang on how fast this machine makes inputs against how fast it calls."""
    solution = worker.function

    def timed_call(x, alpha):
        time.sleep(seconds)
        return solution(x, alpha)

    worker.function = timed_call


def test_the_energy_request_measures_checks_and_hands_back_outputs(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    calls_taking(worker, 0.002)  # a bare x * alpha costs less than the noise of the setup subtracted from it
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


def test_a_step_of_several_calls_gives_each_its_fresh_inputs_and_the_energy_per_call(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=5, dps=False, check=[2, 9], outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=4)
    before, started = counter.read_mj(), time.monotonic()
    answer = worker.energy(request)
    elapsed, after = time.monotonic() - started, counter.read_mj()
    assert answer.batch == 4 and answer.calls == 4 * answer.loop.steps >= 12  # 10 calls at least, in whole steps
    assert len(set(worker.seen)) == len(worker.seen) == answer.calls  # every call of every step on its own fresh inputs
    last = answer.calls - 1
    assert set(answer.checked) == {"2", "9", str(last)}
    for index in (2, 9, last):  # calls inside a step come back with their own outputs
        x, alpha = generate_inputs(problem, workload, seed=5, trial=index).values()
        assert torch.equal(read_blob(answer.checked[str(index)]["y"], tmp_path), x * alpha)
    assert energy.check_answer(answer, before, after, elapsed, 700.0, batch=4) is None
    assert "not the 1 asked for" in energy.check_answer(answer, before, after, elapsed, 700.0, batch=1)
    claimed = answer.model_copy(update={"calls": answer.loop.steps})  # one call per step claimed for steps of 4
    assert "steps for" in energy.check_answer(claimed, before, after, elapsed, 700.0, batch=4)
    recorded, _ = energy.record(answer, None, None)
    idle, blank, loop, blank_after = energy.windows_of(answer)
    per_step_blank = (blank.per_step_j + blank_after.per_step_j) / 2
    assert recorded.calls_per_step == 4 and recorded.calls == answer.calls
    assert recorded.overhead_j == pytest.approx(per_step_blank / 4)
    assert recorded.joules == pytest.approx((loop.joules / loop.covered_steps - per_step_blank) / 4)


@pytest.mark.parametrize("latency_s, bytes_per_call, expected", [
    (None, 1000, 1),  # not timed: one call per step
    (0.5, 1000, 1),  # long calls: one per step, as before
    (energy.STEP_CALLS_S / 2, 1000, 2),
    (20e-6, 1000, int(energy.STEP_CALLS_S / 20e-6)),  # 20 us calls: 100 per step
    (20e-6, energy.BATCH_BYTES // 3, 3),  # bounded by the memory their inputs and outputs take
    (1e-9, 1, 1024),  # and by the request's limit
])
def test_the_calls_per_step_come_from_the_calls_time_and_size(latency_s, bytes_per_call, expected):
    assert energy.batch_size(latency_s, bytes_per_call) == expected


def test_short_calls_get_their_inputs_made_ahead_of_the_window_each_fresh_and_read_once(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    calls_taking(worker, 0.001)
    made: list[int] = []
    inputs = worker._inputs
    monkeypatch.setattr(worker, "_inputs", lambda workload, seed, trial: made.append(trial) or inputs(workload, seed, trial))
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=7, dps=False, check=[3], outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=4, pool_bytes=2**30)
    before, started = counter.read_mj(), time.monotonic()
    answer = worker.energy(request)
    elapsed, after = time.monotonic() - started, counter.read_mj()
    assert answer.note is None and 12 <= answer.calls <= answer.inputs_ahead and answer.calls == 4 * answer.loop.steps
    calibration = 2 * 4  # two steps of calls on blank trial numbers size the pool
    assert len(set(worker.seen)) == len(worker.seen) == answer.calls + calibration  # every call on inputs of its own
    assert sorted(trial for trial in made if trial >= 0) == list(range(answer.inputs_ahead))  # made once each, ahead
    assert made.index(0) > max(index for index, trial in enumerate(made) if trial < 0)  # no blank step makes inputs in this mode
    last = answer.calls - 1
    assert set(answer.checked) == {"3", str(last)}
    for index in (3, last):
        x, alpha = generate_inputs(problem, workload, seed=7, trial=index).values()
        assert torch.equal(read_blob(answer.checked[str(index)]["y"], tmp_path), x * alpha)
    assert energy.check_answer(answer, before, after, elapsed, 700.0, batch=4) is None
    overdrawn = answer.model_copy(update={"inputs_ahead": answer.calls - 4})  # more calls than inputs made for them
    assert "inputs of" in energy.check_answer(overdrawn, before, after, elapsed, 700.0, batch=4)
    recorded, _ = energy.record(answer, None, None)
    idle, blank, loop, blank_after = energy.windows_of(answer)
    assert recorded.inputs_ahead is True and recorded.calls_per_step == 4
    assert recorded.joules == pytest.approx((loop.joules / loop.covered_steps - (blank.per_step_j + blank_after.per_step_j) / 2) / 4)


def test_inputs_that_would_not_fit_in_the_pool_are_made_in_each_step(problem, monkeypatch, tmp_path: Path):
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=7, dps=False, outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=2, pool_bytes=1024)
    answer = worker.energy(request)
    assert answer.note is None and answer.inputs_ahead == 0 and answer.calls == 2 * answer.loop.steps >= 10
    assert energy.record(answer, None, None)[0].inputs_ahead is False


def test_calls_answered_from_outputs_worked_out_as_their_inputs_were_made_ahead_get_no_energy(problem, monkeypatch, tmp_path: Path):
    """A solution that patched the input generation (the static analysis and the integrity checks are off
    here) works each call's outputs out (2 ms each) as its inputs are made ahead of the window, and
    answers the window's calls from that store at once. The window was sized on calls timed on blank
    trial numbers, which it leaves honest: its calls run out before the counter's update that would end
    it, so no energy is measured (no energy score), rather than the little the window saw."""
    cheat = make_worker(problem, monkeypatch, SteppedCounter(120.0, period_s=0.02, clock=time.monotonic))
    store: dict[int, torch.Tensor] = {}
    answered: list[int] = []
    inputs = cheat._inputs

    def inputs_worked_out(workload, seed, trial):
        made = inputs(workload, seed, trial)
        if trial >= 0:
            time.sleep(0.002)
            store[id(made[0])] = made[0] * made[1]
        return made

    def answer_from_store(x, alpha):
        if id(x) in store:
            answered.append(id(x))
            return store.pop(id(x))
        time.sleep(0.002)
        return x * alpha

    monkeypatch.setattr(cheat, "_inputs", inputs_worked_out)
    cheat.function = answer_from_store
    workload = problem.workloads[0]
    answer = cheat.energy(EnergyRequest(workload=workload, seed=7, dps=False, outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                                        blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=4, pool_bytes=2**30))
    assert answer.loop is None and answer.note.startswith("energy not measured: the counter did not update within the ")
    assert len(answered) + len(store) >= 100 and len(answered) >= 10  # the inputs were made ahead and the window answered from the store


def test_inputs_are_made_ahead_in_half_of_the_device_memory_free_at_most(problem, monkeypatch, tmp_path: Path):
    """A pool of 1 GiB asked for, but 1 KiB of the device free: the window's inputs would not fit beside
    the calls' own work, so they are made in each step (a CPU worker reads the host's memory; the GPU's
    free memory is read the same way, through solbench.bench.memory.device_memory)."""
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    calls_taking(worker, 0.001)  # made ahead with the memory free (the test above)
    monkeypatch.setattr(worker_module, "device_memory", lambda device: (1024, 2**34))
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=7, dps=False, outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=2, pool_bytes=2**30)
    answer = worker.energy(request)
    assert answer.note is None and answer.inputs_ahead == 0 and answer.calls == 2 * answer.loop.steps >= 10


def test_long_calls_whose_inputs_fit_fewer_times_than_the_calls_the_window_must_hold_are_made_in_each_step(problem, monkeypatch, tmp_path: Path):
    """0.1 s calls whose inputs fit 5 times in the pool: enough for the window's time, not for the 10
    calls it must hold (min_calls), so the inputs are made step by step instead of running out."""
    counter = SteppedCounter(120.0, period_s=0.02, clock=time.monotonic)
    worker = make_worker(problem, monkeypatch, counter)
    calls_taking(worker, 0.1)
    workload = problem.workloads[0]
    per_call = sum(value.nbytes for value in generate_inputs(problem, workload, seed=1, trial=0).values() if isinstance(value, torch.Tensor))
    request = EnergyRequest(workload=workload, seed=7, dps=False, check=[9], outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.1, idle_s=0.05, min_calls=10, batch=1, pool_bytes=5 * per_call)
    answer = worker.energy(request)
    assert answer.note is None and answer.inputs_ahead == 0 and answer.calls == answer.loop.steps >= 10
    assert set(answer.checked) == {"9", str(answer.calls - 1)}


@pytest.mark.parametrize("pool_bytes", [0, 2**30], ids=["per-step", "made-ahead"])
def test_both_ways_of_making_inputs_give_the_joules_of_one_call(problem, monkeypatch, tmp_path: Path, pool_bytes: int):
    """A counter whose power rises by CALL_W while a call runs (BASE_W always): joules per call are the
    call's own power and the static power over its time, within 25%, whichever way its inputs are made."""
    base_w, call_w, call_s = 50.0, 500.0, 0.002
    started, calls = time.monotonic(), []

    class BusyCounter:
        def read_mj(self) -> int:
            update = int((time.monotonic() - started) / 0.02) * 0.02
            busy = sum(max(0.0, min(end, update) - begin) for begin, end in list(calls))
            return int(round((base_w * update + call_w * busy) * 1e3))

    worker = make_worker(problem, monkeypatch, BusyCounter())

    def run(x, alpha):
        began = time.monotonic() - started
        time.sleep(call_s)
        calls.append((began, time.monotonic() - started))
        return x * alpha

    worker.function = run
    workload = problem.workloads[0]
    request = EnergyRequest(workload=workload, seed=2, dps=False, outputs={"y": OutputSpec(shape=[workload.axes["N"]], dtype="float32")},
                            blob_dir=str(tmp_path), window_s=0.2, idle_s=0.05, min_calls=10, batch=4, pool_bytes=pool_bytes)
    answer = worker.energy(request)
    assert (answer.inputs_ahead > 0) == (pool_bytes > 0)
    recorded, _ = energy.record(answer, None, None)
    mean_call_s = sum(end - begin for begin, end in calls) / len(calls)
    assert recorded.joules == pytest.approx((base_w + call_w) * mean_call_s, rel=0.25)
