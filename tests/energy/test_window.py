"""Windows aligned to the counter's updates, on a counter that updates every 0.1 s at a known power
(NVML's behaviour as measured on the H200; NVML itself cannot run here)."""

from __future__ import annotations

import pytest

from solbench.energy.window import CounterStuck, Window, idle_window, loop_window, measure

from energy_testkit import SteppedCounter


def test_an_idle_window_gives_the_power_between_two_updates():
    counter = SteppedCounter(85.0)
    window = idle_window(counter, 0.3, clock=lambda: counter.now, sleep=counter.advance)
    assert window.steps == 0 and window.mean_power_w == pytest.approx(85.0, rel=0.01)
    assert window.seconds == pytest.approx(0.3, abs=0.001) or window.seconds == pytest.approx(0.4, abs=0.001)


@pytest.mark.parametrize("step_s", [0.001, 0.013, 0.07])
def test_joules_per_step_of_a_loop_window(step_s: float):
    counter = SteppedCounter(450.0)
    window = loop_window(counter, lambda: counter.advance(step_s), 1.0, clock=lambda: counter.now, sleep=counter.advance)
    truth = 450.0 * step_s
    assert window.seconds >= 1.0 and window.steps >= 1.0 / step_s - 1
    # half a step's energy at most, spread over the steps
    assert window.per_step_j == pytest.approx(truth, abs=0.5 * truth / window.effective_steps + 1e-3 / window.effective_steps)


def test_the_window_makes_at_least_min_steps():
    counter = SteppedCounter(300.0)
    window = loop_window(counter, lambda: counter.advance(0.2), 0.1, min_steps=12, clock=lambda: counter.now, sleep=counter.advance)
    assert window.steps >= 12


def test_a_counter_that_never_advances_is_one_line():
    stuck = SteppedCounter(0.0)
    with pytest.raises(CounterStuck, match="did not advance"):
        idle_window(stuck, 0.3, clock=lambda: stuck.now, sleep=stuck.advance)
    with pytest.raises(CounterStuck, match="did not advance"):
        loop_window(stuck, lambda: stuck.advance(0.01), 1.0, clock=lambda: stuck.now, sleep=stuck.advance)


def test_measure_runs_idle_then_blank_then_calls():
    counter = SteppedCounter(200.0)
    order: list[str] = []

    def blank() -> None:
        order.append("blank")
        counter.advance(0.002)

    def call() -> None:
        order.append("call")
        counter.advance(0.003)

    readings = measure(counter, blank, call, 0.5, 0.2, min_calls=10, clock=lambda: counter.now, sleep=counter.advance)
    assert order.index("call") > max(i for i, name in enumerate(order) if name == "blank")
    assert readings.idle.end_mj <= readings.blank.start_mj and readings.blank.end_mj <= readings.loop.start_mj
    assert readings.loop.steps == order.count("call") and readings.loop.steps >= 10
    assert Window(0, 1000, 2.0, 0).mean_power_w == 0.5 and Window(0, 1000, 1.0, 3).per_step_j == pytest.approx(1 / 2.5)


def test_a_window_keeps_its_updates_and_the_spread_of_joules_per_step():
    counter = SteppedCounter(450.0)
    window = loop_window(counter, lambda: counter.advance(0.001), 1.0, clock=lambda: counter.now, sleep=counter.advance)
    assert 9 <= len(window.updates) <= 11 and window.updates[-1] == (window.end_mj, window.steps)
    steady = window.per_step_spread_j
    assert 0 <= steady < 0.02 * window.per_step_j  # a steady power: only the one-step jitter at each update

    class Drifting(SteppedCounter):  # the power alternates between 300 W and 600 W from one update period to the next
        def read_mj(self) -> int:
            updates = int(self.clock() / self.period_s)
            return int(round(sum(300.0 if i % 2 else 600.0 for i in range(updates)) * self.period_s * 1e3))

    drifting = Drifting(0.0)
    noisy = loop_window(drifting, lambda: drifting.advance(0.001), 1.0, clock=lambda: drifting.now, sleep=drifting.advance)
    assert noisy.per_step_spread_j > 10 * max(steady, 1e-9) and noisy.per_step_spread_j > 0.05 * noisy.per_step_j
    assert Window(0, 1000, 1.0, 10, ((500, 5), (1000, 10))).per_step_spread_j == 0.0  # fewer than 3 intervals: no estimate
