"""Timing of one call, as the worker measures it.

On CUDA the time of a call is the device-side span from the first kernel (or copy, or memset)
start to the last end among CUPTI activity records of that call, on all streams; CUDA events on
the current stream are the fallback (and miss work on other streams that is not joined back); on
a CPU, time.perf_counter. Before every call, untimed: the L2 is flushed by writing a buffer of
at least twice its size, and persisting L2 lines are reset.

On CUDA each call runs behind a launch gate (unless turned off; the first call of a workload runs
ungated): the stream waits on a flag until the whole call is enqueued, so that the time between two kernels that the host spends launching the second (a
cuBLAS heuristic, a Python loop) is not counted as device time. Measured on an H200: torch.mm of
4096x4096 bf16 issues a memset and a GEMM with ~20 us of host work between them; without the gate
the span read 199 us against the GEMM's 176 us.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator


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

    @property
    def median_rse(self) -> float:
        """The relative standard error of the median: sqrt(pi/2) * sigma / sqrt(n) over the median, with
        sigma estimated robustly as IQR / 1.349 (both exact for normal samples). It measures how well
        the median is known, not how spread the samples are: a noisy kernel stops once its median is
        known well enough, instead of running to the budget."""
        count = len(self.times_ms)
        if count < 4:
            return math.inf
        median = self.median_ms
        if median <= 0:
            return 0.0 if self.iqr_ms == 0 else math.inf
        return math.sqrt(math.pi / 2) * (self.iqr_ms / 1.349) / math.sqrt(count) / median


class LaunchGate:
    """Holds the current CUDA stream (and the streams that wait on it) until the call is enqueued.

    close() makes the stream wait (cuStreamWaitValue32) for a counter in pinned host memory, which
    the GPU reads through unified addressing; open() is a plain store to that memory, so opening
    cannot fail or block. A call that waits for the device itself (synchronize, .item(), a copy to
    the host) would wait for ever behind a closed gate, so a watchdog thread opens it after
    `watchdog_s`; from then on the gate stays off, with a note saying why. The first call after
    prime() runs ungated: CUDA's lazy module loading, Triton's JIT and cuBLAS's first use wait for
    the device on a kernel's first launch, which behind a closed gate would fire the watchdog.
    """

    STATE = frozenset({"value", "enabled", "note", "_timer", "_fired", "primed"})  # rebound as it works (solbench.bench.integrity)

    def __init__(self, device: str, watchdog_s: float = 0.5):
        import torch
        from cuda.bindings import driver

        self._driver = driver
        self._torch = torch
        self.flag = torch.zeros(1, dtype=torch.int32).pin_memory()
        self._view = self.flag.numpy()  # stores through numpy: no torch op, no CUDA call
        self.value = 0
        self.watchdog_s = watchdog_s
        self.enabled = True
        self.note: str | None = None
        self._timer: Any = None
        self._fired = False
        self.primed = False

    def prime(self) -> None:
        """The next call runs ungated (the first call of a workload: new kernels load then)."""
        self.primed = False

    def close(self) -> None:
        import threading

        self.value += 1
        self._fired = False
        stream = self._torch.cuda.current_stream().cuda_stream
        flags = self._driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ
        (error,) = self._driver.cuStreamWaitValue32(stream, self.flag.data_ptr(), self.value, flags)
        if error != self._driver.CUresult.CUDA_SUCCESS:
            self.enabled = False
            raise RuntimeError(f"cuStreamWaitValue32 failed: {error}")
        self._timer = threading.Timer(self.watchdog_s, self._watchdog)
        self._timer.daemon = True
        self._timer.start()

    def _watchdog(self) -> None:
        self._fired = True
        self.open()

    def open(self) -> None:
        self._view[0] = self.value

    def finish(self) -> None:
        """After the call returned: open the gate if the watchdog did not, and turn it off if it did."""
        self.open()
        self._timer.cancel()
        if self._fired and self.enabled:
            self.enabled = False
            self.note = (f"launch gate off: a call did not return within {self.watchdog_s:g} s behind it (it waits for the device, "
                         "e.g. synchronize/.item()/.cpu()); host launch gaps inside a call are timed")


def make_gate(device: str) -> tuple[LaunchGate | None, str | None]:
    try:
        return LaunchGate(device), None
    except Exception as exc:  # noqa: BLE001 - no driver bindings or no stream memory operations: time ungated
        return None, f"launch gate unavailable ({type(exc).__name__}: {exc}); host launch gaps inside a call are timed"


def _gated(call: Callable[[], Any], gate: LaunchGate | None, before_call: Callable[[], Any] | None = None,
           after_call: Callable[[], Any] | None = None) -> None:
    """The call between before_call and after_call, all enqueued behind the gate when there is one."""
    if gate is None or not gate.enabled or not gate.primed:
        if before_call:
            before_call()
        call()
        if after_call:
            after_call()
        if gate is not None:
            gate.primed = True
        return
    gate.close()
    try:
        if before_call:
            before_call()
        call()
        if after_call:
            after_call()
    finally:
        gate.finish()


class CpuTimer:
    method = "perf_counter"
    outlived_ms = 0.0  # no streams to outlive

    def measure(self, call: Callable[[], Any], gate: LaunchGate | None = None) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1e3


class EventTimer:
    method = "cuda_events"
    outlived_ms = 0.0  # events on the caller's stream cannot see other streams

    def measure(self, call: Callable[[], Any], gate: LaunchGate | None = None) -> float:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        _gated(call, gate, before_call=start.record)  # the start event waits behind the gate too
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)


class CuptiTimer:
    """Span of the device activity (kernels, copies, memsets) between two synchronisations.

    Also `outlived_ms` of the last call: how long its device work ran on after everything it had
    put on the caller's stream was done, i.e. work on another stream that was never joined back
    (its outputs race with whatever the caller does next)."""

    method = "cupti"
    _KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
    STATE = frozenset({"outlived_ms", "last_spans_ms"})  # rebound by every measure (solbench.bench.integrity)

    def __init__(self) -> None:
        from cupti import cupti

        self.outlived_ms = 0.0
        self.last_spans_ms: list[tuple[float, float]] = []  # the last call's activities (start, end) from its first start
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

    def measure(self, call: Callable[[], Any], gate: LaunchGate | None = None) -> float:
        import torch

        torch.cuda.synchronize()
        self._cupti.activity_flush_all(1)
        self._records.clear()
        begin = self._cupti.get_timestamp()
        caller_done = torch.cuda.Event()
        _gated(call, gate, after_call=caller_done.record)  # behind the gate: released together with the call's work
        caller_done.synchronize()
        joined = self._cupti.get_timestamp()  # the caller's stream has finished everything the call put on it
        torch.cuda.synchronize()
        finish = self._cupti.get_timestamp()
        self._cupti.activity_flush_all(1)
        inside = [(s, e) for s, e in self._records if s >= begin and e <= finish]
        self._records.clear()
        first = min((s for s, _ in inside), default=0)
        self.last_spans_ms = [((s - first) / 1e6, (e - first) / 1e6) for s, e in sorted(inside)]
        if not inside:
            self.outlived_ms = 0.0
            return 0.0  # no device work at all in this call
        last = max(e for _, e in inside)
        self.outlived_ms = max(0, last - joined) / 1e6
        return (last - min(s for s, _ in inside)) / 1e6

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No activity recorded inside: CUPTI's records cost host time at every launch, which energy
        windows would count as the calls' (static power over it) while their blank steps pay less of it."""
        import torch

        torch.cuda.synchronize()
        for kind in self._kinds:
            self._cupti.activity_disable(kind)
        self._cupti.activity_flush_all(1)
        self._records.clear()
        try:
            yield
        finally:
            for kind in self._kinds:
                self._cupti.activity_enable(kind)

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


def ungated_series(prepare: Callable[[], Callable[[], Any]], timer: Any, flush: CacheFlusher, calls: int) -> list[float]:
    """Spans of `calls` more calls timed without the launch gate (flushed and synchronised as timed
    calls are): the host's launch gaps between a call's kernels are inside them."""
    import torch

    times = []
    for _ in range(calls):
        bound = prepare()
        flush()
        if flush.buffer is not None:
            torch.cuda.synchronize()
        times.append(timer.measure(bound, None))
    return times


def measure(prepare: Callable[[], Callable[[], Any]], timer: Any, flush: CacheFlusher, *, warmup: int = 3,
            min_iterations: int = 20, max_iterations: int = 1000, budget_s: float = 10.0, target_rse: float = 0.01,
            gate: LaunchGate | None = None) -> Samples:
    """Time `call` until the median's relative standard error is at most target_rse (after at least
    min_iterations), max_iterations are done or the budget is spent. `prepare()` runs untimed before each call (fresh
    inputs at fresh addresses) and returns the zero-argument callable to time."""
    import torch

    samples = Samples(timer.method)
    for _ in range(warmup):  # gated too: a call that waits for the device turns the gate off here, not in a timed call
        _gated(prepare(), gate)
    cuda = flush.buffer is not None
    started = time.monotonic()
    while len(samples.times_ms) < max_iterations:
        bound = prepare()
        flush()
        if cuda:
            torch.cuda.synchronize()
        samples.times_ms.append(timer.measure(bound, gate))
        count = len(samples.times_ms)
        if count >= min_iterations:
            if samples.median_rse <= target_rse:
                break
            if time.monotonic() - started > budget_s:
                samples.notes.append(f"stopped at the {budget_s:g} s budget with the median known to {samples.median_rse:.2%} "
                                     f"(relative standard error; target {target_rse:.2%})")
                break
    if gate is not None and gate.note:
        samples.notes.append(gate.note)
    return samples
