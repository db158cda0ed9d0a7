"""Measure attainable ceilings on the local device and derive a hardware spec from them.

On a GPU: DRAM copy and read bandwidth, matmul rate per dtype (bf16, fp16, tf32, fp32 without
tf32, fp8 through _scaled_mm where supported) by CUDA events; and the latency floors (the shortest
CUPTI span of an empty kernel, and of a kernel reading one cache line from DRAM) with the evaluator's
own timer. On a CPU (no GPU): memory copy and read bandwidth and matmul rates, so that the whole
pipeline works without a GPU (no floors: a CPU call is timed by the host's clock).
Measured numbers replace the datasheet's where measured; the rest is kept from the base spec.
"""

from __future__ import annotations

import datetime
import itertools
import os
import platform
import statistics
import time
from typing import Any, Callable

from solbench.sol.hardware import HardwareSpec, get_hardware

GIB = 1024**3
FLOOR_LAUNCHES = 1000  # launches per latency floor: the floor is the shortest span among them
FLOORS = ("launch_floor_s", "dram_latency_floor_s")
FLOOR_BUFFER_BYTES = 64 * 1024**2  # the buffer whose lines the DRAM floor reads, one fresh line per launch
FLOOR_WARMUP_S = 0.5  # seconds of matmuls before each floor: the GPU at its working clock
FLOOR_LINE_STEP = 4099  # lines between two launches' lines (prime: the lines visit every channel of the buffer)


def _median_seconds(function: Callable[[], Any], synchronize: Callable[[], None], repeats: int, timer: Callable[[Callable[[], Any]], float] | None = None) -> float:
    function()  # warm-up
    synchronize()
    samples = []
    for _ in range(repeats):
        if timer is not None:
            samples.append(timer(function))
        else:
            start = time.perf_counter()
            function()
            synchronize()
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _cuda_timer(function: Callable[[], Any]) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    function()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def measure_floors(device: str, launches: int = FLOOR_LAUNCHES) -> dict[str, float]:
    """The latency floors of a CUDA device, in seconds: 'launch_floor_s', the shortest span of an empty
    kernel, and 'dram_latency_floor_s', the shortest span of a kernel that reads one 128-byte line which
    the L2 does not hold (the L2 is flushed before each launch, as the evaluator flushes it before each
    timed call). Each launch reads a fresh line of a large buffer: DRAM latency differs between
    addresses (by ~65 ns on an H200), and the floor must be the least of them. Spans are CUPTI's,
    through the evaluator's own timer (solbench.bench.timing), so that a floor is in the units solutions
    are timed in. Empty without CUPTI: CUDA events also time the host's launch, and a floor from them
    could exceed a CUPTI-timed span."""
    import torch

    from solbench.bench.timing import CacheFlusher, CuptiTimer

    try:
        timer = CuptiTimer()
    except Exception:  # noqa: BLE001 - no CUPTI here: no floors measured (the base spec's are kept)
        return {}
    try:
        from solbench.sol import floor_kernels

        flush = CacheFlusher(device)
        lines = FLOOR_BUFFER_BYTES // (4 * floor_kernels.LINE_FLOATS)
        source = torch.ones(lines * floor_kernels.LINE_FLOATS, device=device)
        target = torch.empty(floor_kernels.LINE_FLOATS, device=device)
        launched = itertools.count(1)

        def fresh_line() -> None:
            line = next(launched) * FLOOR_LINE_STEP % lines
            floor_kernels.launch_one_line(source[line * floor_kernels.LINE_FLOATS:], target)

        found = {
            "launch_floor_s": _shortest_span(device, lambda: floor_kernels.launch_empty(target), timer, launches),
            "dram_latency_floor_s": _shortest_span(device, fresh_line, timer, launches, flush),
        }
    finally:
        timer.close()
    return {name: value for name, value in found.items() if value > 0}


def _raise_clocks(device: str, seconds: float = FLOOR_WARMUP_S) -> None:
    """Keep the GPU busy for a moment: an idle GPU runs at a low clock, and its kernels start later (an
    empty kernel's span read 0.543 µs from idle and 0.511 µs after matmuls on an H200), but a floor must
    be the least span a solution can see."""
    import torch

    a = torch.randn(2048, 2048, device=device, dtype=torch.bfloat16)
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(8):
            a @ a
        torch.cuda.synchronize()


def _shortest_span(device: str, call: Callable[[], Any], timer: Any, launches: int, before: Callable[[], None] | None = None) -> float:
    """The shortest device span of `call` over `launches` timed launches (`before` runs untimed ahead of
    each), in seconds; 0 when no launch left an activity record."""
    import torch

    call()  # compiles and loads the kernel
    torch.cuda.synchronize()
    _raise_clocks(device)
    spans = []
    for _ in range(launches):
        if before is not None:
            before()
            torch.cuda.synchronize()
        spans.append(timer.measure(call))
    recorded = [span for span in spans if span > 0]
    return min(recorded) / 1e3 if recorded else 0.0


def measure(device: str, size_scale: float = 1.0, repeats: int = 10, floors: bool = True) -> dict[str, float]:
    """Ceilings on this device: '<unit>' -> TFLOP/s, 'copy_tbps' and 'read_tbps' -> TB/s; on CUDA (with
    `floors`) also the latency floors in seconds (measure_floors)."""
    import torch

    cuda = device.startswith("cuda")
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    timer = _cuda_timer if cuda else None
    found: dict[str, float] = {}
    bytes_per_buffer = int((2 * GIB if cuda else 256 * 1024**2) * size_scale)
    source = torch.randn(bytes_per_buffer // 4, device=device)
    target = torch.empty_like(source)
    seconds = _median_seconds(lambda: target.copy_(source), synchronize, repeats, timer)
    found["copy_tbps"] = 2 * bytes_per_buffer / seconds / 1e12
    seconds = _median_seconds(lambda: source.sum(), synchronize, repeats, timer)
    found["read_tbps"] = bytes_per_buffer / seconds / 1e12
    del source, target

    n = int((8192 if cuda else 1024) * size_scale ** 0.5) // 64 * 64 or 64
    matmuls = {"tensor_bf16": torch.bfloat16, "tensor_fp16": torch.float16, "vector_fp32": torch.float32}
    if cuda:
        matmuls["tensor_tf32"] = torch.float32
    else:
        matmuls["vector_fp64"] = torch.float64
    for unit, dtype in matmuls.items():
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = unit == "tensor_tf32"
        try:  # a @ b and a @ b.T (an nn.Linear's layout), the faster: on a CPU, torch's fp16 a @ b is 20-40x slower than a @ b.T
            seconds = min(_median_seconds(lambda: a @ b, synchronize, repeats, timer), _median_seconds(lambda: a @ b.t(), synchronize, repeats, timer))
        except RuntimeError:
            continue
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        found[unit] = 2 * n**3 / seconds / 1e12
    if cuda:
        try:
            a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device=device)
            seconds = _median_seconds(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), synchronize, repeats, timer)
            found["tensor_fp8"] = 2 * n**3 / seconds / 1e12
        except (RuntimeError, AttributeError):
            pass
        if floors:
            found.update(measure_floors(device))
    return found


def calibrated_spec(base: HardwareSpec | None, device: str, measured: dict[str, float]) -> HardwareSpec:
    """The base spec with measured ceilings in place of datasheet peaks (a CPU gets a spec of its own)."""
    if base is None:
        base = _cpu_base_spec()
    data = base.model_dump(mode="json")
    peaks = dict(data["peak_tflops"])
    for unit, value in measured.items():
        if unit in ("copy_tbps", "read_tbps", *FLOORS):
            continue
        if value > 0:  # a rate too small for 3 decimals keeps its significant digits (never 0: a rate divides)
            peaks[unit] = float(f"{value:.4g}") if value < 0.01 else round(value, 3)
    if "vector_fp32" in measured and base.vendor == "CPU":
        peaks.setdefault("vector_fp16", peaks["vector_fp32"])
        peaks.setdefault("vector_int32", peaks["vector_fp32"])
        peaks.setdefault("sfu", peaks["vector_fp32"] / 8)
    data["peak_tflops"] = peaks
    bandwidth = max(measured.get("copy_tbps", 0.0), measured.get("read_tbps", 0.0))
    if bandwidth:
        data["dram"]["bandwidth_tbps"] = round(bandwidth, 4)
    for name in FLOORS:
        if measured.get(name, 0.0) > 0:
            data[name] = float(f"{measured[name]:.4g}")
    data["name"] = f"{base.name}-calibrated"
    data["calibration"] = {
        "date": datetime.date.today().isoformat(),
        "device": _device_name(device),
        "base": base.name,
        "measured": {k: float(f"{v:.4g}") if k in FLOORS else round(v, 4) for k, v in measured.items()},
        "note": "peaks, DRAM bandwidth and latency floors replaced by measured values where measured; the rest from the base spec",
    }
    return HardwareSpec.model_validate(data)


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or platform.machine()


def _cpu_base_spec() -> HardwareSpec:
    cores = os.cpu_count() or 1
    cache = _cpu_last_level_cache()
    return HardwareSpec(
        name="CPU",
        vendor="CPU",
        architecture=platform.machine(),
        sm_count=cores,
        boost_clock_ghz=1.0,
        dram={"capacity_gb": _memory_gb(), "bandwidth_tbps": 0.01},
        on_chip={"l2_bytes": cache, "shared_memory_per_sm_bytes": 0, "registers_per_sm_bytes": 0},
        peak_tflops={"vector_fp32": 0.1},
    )


def _cpu_last_level_cache() -> int:
    largest = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            with open(os.path.join(base, entry, "size")) as handle:
                text = handle.read().strip()
            value = int(text.rstrip("KMG")) * {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1], 1)
            largest = max(largest, value)
    except (OSError, ValueError):
        pass
    return largest or 32 * 1024**2


def _memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError):
        return 1.0


def spec_for_run(hardware: str | None, device: str, clock_mhz: float | None = None) -> HardwareSpec | None:
    """The spec that bounds a run: the one named, else the local GPU's datasheet entry (None on a
    CPU), priced at `clock_mhz` when the run locks the clock there."""
    spec = get_hardware(hardware) if hardware else default_base_for(device)
    return spec.at_clock(clock_mhz) if spec is not None and clock_mhz else spec


def default_base_for(device: str) -> HardwareSpec | None:
    """The datasheet entry matching the local GPU's name (None on a CPU)."""
    if not device.startswith("cuda"):
        return None
    name = _device_name(device).upper()
    for candidate in ("B200", "H200", "H100 PCIE", "H100", "A100", "L40S", "4090", "MI300X"):
        if candidate in name:
            lookup = {"H100 PCIE": "H100-PCIe", "H100": "H100-SXM", "A100": "A100-SXM", "4090": "RTX-4090"}.get(candidate, candidate)
            return get_hardware(lookup)
    return get_hardware("H100-SXM")
