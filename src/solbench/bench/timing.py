"""Timing of one call, as the worker measures it.

On CUDA the time of a call is the device-side span from the first kernel (or copy, or memset)
start to the last end among CUPTI activity records of that call, on all streams; CUDA events on
the current stream are the fallback (and miss work on other streams that is not joined back); on
a CPU, time.perf_counter. Before every call, untimed: the L2 is flushed by writing a buffer of
at least twice its size, and persisting L2 lines are reset.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Samples:
    method: str  # cupti | cuda_events | perf_counter
    times_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def iqr_ms(self) -> float:
        if len(self.times_ms) < 4:
            return 0.0
        quartiles = statistics.quantiles(self.times_ms, n=4)
        return quartiles[2] - quartiles[0]


class CpuTimer:
    method = "perf_counter"

    def measure(self, call: Callable[[], Any]) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1e3


class EventTimer:
    method = "cuda_events"

    def measure(self, call: Callable[[], Any]) -> float:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)


class CuptiTimer:
    """Span of the device activity (kernels, copies, memsets) between two synchronisations."""

    method = "cupti"
    _KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")

    def __init__(self) -> None:
        from cupti import cupti

        self._cupti = cupti
        self._records: list[tuple[int, int]] = []
        self._kinds = [getattr(cupti.ActivityKind, name) for name in self._KINDS]

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: list) -> None:
            for activity in activities:
                if activity.kind in self._kinds:
                    self._records.append((activity.start, activity.end))

        cupti.activity_register_callbacks(requested, completed)
        for kind in self._kinds:
            cupti.activity_enable(kind)

    def measure(self, call: Callable[[], Any]) -> float:
        import torch

        torch.cuda.synchronize()
        self._cupti.activity_flush_all(1)
        self._records.clear()
        begin = self._cupti.get_timestamp()
        call()
        torch.cuda.synchronize()
        finish = self._cupti.get_timestamp()
        self._cupti.activity_flush_all(1)
        inside = [(s, e) for s, e in self._records if s >= begin and e <= finish]
        self._records.clear()
        if not inside:
            return 0.0  # no device work at all in this call
        return (max(e for _, e in inside) - min(s for s, _ in inside)) / 1e6

    def close(self) -> None:
        for kind in self._kinds:
            try:
                self._cupti.activity_disable(kind)
            except Exception:  # noqa: BLE001 - shutting down; nothing to do about it
                pass


def make_timer(device: str, preference: str = "auto") -> tuple[Any, list[str]]:
    """The best timer available here, and notes on what was not."""
    notes: list[str] = []
    if not device.startswith("cuda"):
        return CpuTimer(), notes
    if preference in ("auto", "cupti"):
        try:
            return CuptiTimer(), notes
        except Exception as exc:  # noqa: BLE001 - any failure means: fall back to events
            notes.append(f"CUPTI unavailable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); timed with CUDA events")
            if preference == "cupti":
                raise
    return EventTimer(), notes


class CacheFlusher:
    """Writes a buffer of at least twice the L2 size, then reads another as large, and resets
    persisting L2 lines. The read leaves the L2 holding clean lines: otherwise the timed call would
    pay for writing back the flush's dirty lines (measured on an H200: memory-bound kernels of
    10-40 us read 3-9% slower than under Nsight Compute, whose flush invalidates)."""

    def __init__(self, device: str):
        import torch

        self.device = device
        self.buffer = None
        self.clean = None
        self.reset_persisting = None
        if device.startswith("cuda"):
            properties = torch.cuda.get_device_properties(torch.device(device))
            size = max(2 * properties.L2_cache_size, 64 * 1024 * 1024)
            self.buffer = torch.empty(size, dtype=torch.uint8, device=device)
            self.clean = torch.zeros(size // 4, dtype=torch.float32, device=device)
            try:
                from cuda.bindings import runtime

                self.reset_persisting = runtime.cudaCtxResetPersistingL2Cache
            except ImportError:
                self.reset_persisting = None

    def __call__(self) -> None:
        if self.buffer is None:
            return
        if self.reset_persisting is not None:
            self.reset_persisting()
        self.buffer.fill_(1)
        self.clean.sum()


def measure(prepare: Callable[[], Callable[[], Any]], timer: Any, flush: CacheFlusher, *, warmup: int = 3,
            min_iterations: int = 20, max_iterations: int = 1000, budget_s: float = 10.0, target_spread: float = 0.02) -> Samples:
    """Time `call` until the interquartile range over the median is within target_spread (after at
    least min_iterations) or the budget is spent. `prepare()` runs untimed before each call (fresh
    inputs at fresh addresses) and returns the zero-argument callable to time."""
    import torch

    samples = Samples(timer.method)
    for _ in range(warmup):
        prepare()()
    cuda = flush.buffer is not None
    started = time.monotonic()
    while len(samples.times_ms) < max_iterations:
        bound = prepare()
        flush()
        if cuda:
            torch.cuda.synchronize()
        samples.times_ms.append(timer.measure(bound))
        count = len(samples.times_ms)
        if count >= min_iterations:
            if samples.iqr_ms <= target_spread * samples.median_ms:
                break
            if time.monotonic() - started > budget_s:
                samples.notes.append(f"stopped at the {budget_s:g} s budget with spread {samples.iqr_ms / max(samples.median_ms, 1e-12):.1%}")
                break
    return samples
