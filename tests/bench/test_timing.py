"""The timing loop's stopping rule (bench/timing.py), on the CPU timer with real calls: it stops once the
median is known well enough (its relative standard error), not once the samples are tightly spread."""

from __future__ import annotations

import math
import random
import time

import pytest

from solbench.bench.timing import CacheFlusher, CpuTimer, Samples, measure


def test_the_relative_standard_error_of_the_median_follows_the_normal_formula() -> None:
    samples = Samples("perf_counter", [float(v) for v in range(1, 17)])  # median 8.5, quartiles 4.25 and 12.75
    expected = math.sqrt(math.pi / 2) * (8.5 / 1.349) / math.sqrt(16) / 8.5
    assert samples.median_rse == pytest.approx(expected, rel=1e-12)
    assert Samples("perf_counter", [2.0] * 30).median_rse == 0.0
    assert Samples("perf_counter", [1.0, 2.0]).median_rse == math.inf  # too few samples to say


def _noisy_sleep(generator: random.Random):
    def prepare():
        duration = generator.uniform(0.0010, 0.0016)  # a call whose time spreads by ~25% around its median
        return lambda: time.sleep(duration)
    return prepare


def test_a_noisy_call_stops_when_its_median_is_known_well_enough() -> None:
    samples = measure(_noisy_sleep(random.Random(7)), CpuTimer(), CacheFlusher("cpu"), warmup=1, min_iterations=10,
                      max_iterations=2000, budget_s=30.0, target_rse=0.02)
    spread = samples.iqr_ms / samples.median_ms
    assert spread > 0.1  # the samples stay widely spread: a spread criterion of 2% would have run to the budget
    assert samples.median_rse <= 0.02
    assert 10 <= len(samples.times_ms) < 400, len(samples.times_ms)
    assert not samples.notes


def test_an_unreachable_target_stops_at_max_iterations_or_the_budget() -> None:
    capped = measure(_noisy_sleep(random.Random(3)), CpuTimer(), CacheFlusher("cpu"), warmup=0, min_iterations=5, max_iterations=25,
                     budget_s=30.0, target_rse=1e-9)
    assert len(capped.times_ms) == 25
    timed_out = measure(_noisy_sleep(random.Random(3)), CpuTimer(), CacheFlusher("cpu"), warmup=0, min_iterations=5, max_iterations=10_000,
                        budget_s=0.05, target_rse=1e-9)
    assert 5 <= len(timed_out.times_ms) < 10_000
    assert timed_out.notes and "budget" in timed_out.notes[0] and "target 0.00%" in timed_out.notes[0]
