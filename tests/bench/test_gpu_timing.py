"""On a CUDA GPU: the launch gate keeps host work between the kernels of one call out of the
measured time, and a call that waits for the device is still timed (the gate turns itself off)."""

from __future__ import annotations

import time

import pytest
import torch

from solbench.bench.timing import CacheFlusher, CuptiTimer, EventTimer, make_gate, measure

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

HOST_GAP_S = 0.005


def _two_kernels_with_host_gap(x: torch.Tensor, y: torch.Tensor):
    def call():
        torch.mul(x, 2.0, out=y)
        time.sleep(HOST_GAP_S)  # host work between two launches
        torch.add(y, 1.0, out=y)

    return call


def _median_ms(timer, gate) -> float:
    x = torch.randn(1 << 20, device="cuda")
    y = torch.empty_like(x)
    samples = measure(lambda: _two_kernels_with_host_gap(x, y), timer, CacheFlusher("cuda"), warmup=2, min_iterations=10,
                      max_iterations=10, gate=gate)
    return samples.median_ms


@pytest.mark.parametrize("timer_class", [CuptiTimer, EventTimer])
def test_host_gap_between_kernels_is_not_timed_behind_the_gate(timer_class):
    timer = timer_class()
    gate, note = make_gate("cuda")
    assert gate is not None, note
    try:
        gated = _median_ms(timer, gate)
        ungated = _median_ms(timer, None)
    finally:
        if isinstance(timer, CuptiTimer):
            timer.close()
    assert ungated >= HOST_GAP_S * 1e3 * 0.9  # the sleep lies inside the span
    assert gated < 0.5  # two kernels over 4 MiB: tens of microseconds, no 5 ms gap
    assert gate.enabled and gate.note is None


def test_a_call_that_synchronises_is_timed_with_the_gate_turned_off():
    timer = CuptiTimer()
    gate, _ = make_gate("cuda")
    gate.watchdog_s = 0.1
    x = torch.randn(1 << 20, device="cuda")

    def prepare():
        return lambda: (x * 2).sum().item()  # .item() waits for the device

    try:
        samples = measure(prepare, timer, CacheFlusher("cuda"), warmup=1, min_iterations=5, max_iterations=5, gate=gate)
    finally:
        timer.close()
    assert not gate.enabled
    assert any("launch gate off" in note for note in samples.notes)
    assert len(samples.times_ms) == 5 and all(0 < t < 50 for t in samples.times_ms)


def test_gated_gemm_time_matches_the_kernels_own_duration():
    """torch.mm launches a memset and a GEMM with host work between them; the gated span must be
    close to the two kernels' summed durations from the profiler."""
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)
    timer = CuptiTimer()
    gate, _ = make_gate("cuda")
    try:
        samples = measure(lambda: (lambda: torch.mm(a, b, out=c)), timer, CacheFlusher("cuda"), warmup=3, min_iterations=20, max_iterations=20, gate=gate)
    finally:
        timer.close()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.mm(a, b, out=c)
        torch.cuda.synchronize()
    kernels_ms = sum(e.device_time for e in prof.events() if e.device_time > 0) / 1e3
    assert samples.median_ms == pytest.approx(kernels_ms, rel=0.05)


@pytest.mark.parametrize("joined", [True, False])
def test_cupti_timer_sees_work_that_outlives_the_callers_stream(joined: bool):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    side = torch.cuda.Stream()

    def call():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(4):  # about 1 ms of work
                torch.mm(a, a, out=c)
        if joined:
            torch.cuda.current_stream().wait_stream(side)

    timer = CuptiTimer()
    try:
        span = timer.measure(call)
    finally:
        timer.close()
    assert span > 0.3  # the side stream's GEMMs are inside the span either way
    if joined:
        assert timer.outlived_ms < 0.05
    else:
        assert timer.outlived_ms > 0.3 * span


def test_the_ungated_series_holds_the_host_gap_the_gate_hides():
    """launch_overhead_ms is made of this: behind the gate the 5 ms sleep is outside the span, in the
    ungated series that follows it is inside."""
    from solbench.bench.timing import ungated_series

    timer = CuptiTimer()
    gate, note = make_gate("cuda")
    assert gate is not None, note
    x = torch.randn(1 << 20, device="cuda")
    y = torch.empty_like(x)
    flush = CacheFlusher("cuda")
    try:
        gated = measure(lambda: _two_kernels_with_host_gap(x, y), timer, flush, warmup=2, min_iterations=10, max_iterations=10, gate=gate)
        ungated = ungated_series(lambda: _two_kernels_with_host_gap(x, y), timer, flush, 5)
    finally:
        timer.close()
    assert len(ungated) == 5
    overhead_ms = sorted(ungated)[2] - gated.median_ms
    assert HOST_GAP_S * 1e3 * 0.9 <= overhead_ms <= HOST_GAP_S * 1e3 * 3
