"""What Nsight Compute is asked for, and how it is started as the solution worker's launcher.

ncu runs with `--clock-control none` (solbench never changes the GPU's clocks), profiles only the
solution worker itself (`--target-processes application-only`: not the compilers a build starts) and
only kernels inside the NVTX range that the worker pushes around the profiled call (RANGE), and prints
one raw CSV row per kernel in base units (`--page raw --print-units base`) into its log file. Each
kernel is replayed as often as the metrics need, with caches flushed before each pass (ncu's default
`--cache-control all`), so DRAM bytes are those of a kernel that starts with a cold L2, as a timed call
of the evaluator does (it flushes the L2 before each call).
"""

from __future__ import annotations

from pathlib import Path

RANGE = "solbench_call"  # the NVTX push/pop range around the profiled call; ncu's include expression is RANGE + "/"
MAX_KERNELS = 256  # kernels profiled at most per call (ncu --launch-count): each is replayed several times

DURATION = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_BYTES = "lts__t_bytes.sum"
DRAM_THROUGHPUT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
TENSOR_HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"  # mma.sync tensor work
TENSOR_GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"  # Hopper wgmma (n/a elsewhere)
FMA_PIPE = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"  # achieved occupancy
REGISTERS = "launch__registers_per_thread"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"

METRICS = (DURATION, DRAM_READ, DRAM_WRITE, L2_BYTES, DRAM_THROUGHPUT, SM_THROUGHPUT, TENSOR_HMMA, TENSOR_GMMA, FMA_PIPE, OCCUPANCY,
           REGISTERS, GRID, BLOCK)



def metrics_for(capability: tuple[int, int]) -> tuple[str, ...]:
    """The metrics to ask for on a GPU of this compute capability (wgmma exists from Hopper, 9.0, on:
    ncu refuses a metric the chip does not have, and then profiles nothing)."""
    return tuple(name for name in METRICS if name != TENSOR_GMMA or capability >= (9, 0))


# Units ncu may print, to the base unit of their kind (with --print-units base they are mostly base already).
_SCALES = {
    "nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1.0, "s": 1.0,
    "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3,
    "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3,
}


def to_base(value: float, unit: str) -> float:
    """A value in seconds for times and bytes for sizes; percentages and counts unchanged."""
    return value * _SCALES.get(unit.strip().lower(), 1.0)


def ncu_argv(ncu: Path, log_file: Path, metrics: tuple[str, ...] = METRICS) -> list[str]:
    """The launcher's argv: ncu and its flags, before the worker's own command."""
    return [str(ncu), "--clock-control", "none", "--target-processes", "application-only", "--metrics", ",".join(metrics),
            "--nvtx", "--nvtx-include", f"{RANGE}/", "--launch-count", str(MAX_KERNELS), "--csv", "--page", "raw", "--print-units", "base",
            "--log-file", str(log_file)]
