"""benchmarks/energy_method_probe.py on a CPU: its three ways of stepping an energy window, measured through
the real windows (solbench.energy.window, a poller thread, wall-clock updates) on a counter whose power rises
while a call runs, give the joules of one call whether a step holds one call or a batch of them."""

from __future__ import annotations

import threading
import time
from types import ModuleType

import pytest

BASE_W, CALL_W, PERIOD_S, CALL_S = 50.0, 500.0, 0.02, 0.002


class BusyCounter:
    """A counter updated every PERIOD_S of the wall clock: BASE_W all the time, CALL_W more while a call runs."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.calls: list[tuple[float, float]] = []  # (start, end) of each call, since `started`
        self.lock = threading.Lock()

    def call(self, *arguments: object) -> None:
        began = time.monotonic() - self.started
        time.sleep(CALL_S)
        with self.lock:
            self.calls.append((began, time.monotonic() - self.started))

    def read_mj(self) -> int:
        update = int((time.monotonic() - self.started) / PERIOD_S) * PERIOD_S
        with self.lock:
            busy = sum(max(0.0, min(end, update) - start) for start, end in self.calls)
        return int(round((BASE_W * update + CALL_W * busy) * 1e3))


def test_every_method_gives_the_joules_of_one_call(energy_method_probe: ModuleType) -> None:
    probe = energy_method_probe
    counter = BusyCounter()
    made: list[int] = []
    stepped = probe.steppers(counter.call, lambda trial: made.append(trial) or [trial], lambda: None, 4, lambda: None)
    assert set(stepped) == {"per-step", "batched", "pooled"} and made == [-1, -2, -3, -4]  # the pool, drawn once
    for method, (blank_step, call_step) in stepped.items():
        counter.calls.clear()
        calls_per_step = 1 if method == "per-step" else 4
        row = probe.measure_method(counter, blank_step, call_step, calls_per_step, 0.2, 2, CALL_S, idle_s=0.05)
        mean_call_s = sum(end - start for start, end in counter.calls) / len(counter.calls)
        expected = (BASE_W + CALL_W) * mean_call_s  # the call's own power and the static power over its time
        assert row["batch"] == calls_per_step and len(row["joules"]) == 2
        assert row["median_j"] == pytest.approx(expected, rel=0.25), (method, row)
        assert row["implied_power_w"] == pytest.approx(row["median_j"] / CALL_S)
    fresh = [trial for trial in made if trial > 0]
    assert len(fresh) == len(set(fresh))  # the per-step and batched methods draw every step's inputs afresh
