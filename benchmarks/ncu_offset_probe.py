"""Why does the harness read ~1 us less than Nsight Compute on short kernels?

Measures a few short kernels (fp32 x*2 at 5M and 9M elements, bf16 GEMM 1536 and 2048, and a tiny
x*2 of 1024 elements) with solbench's CUPTI timer under several conditions, and with
`ncu --clock-control none` under both cache-control settings, with the SM clock ncu saw.

    python benchmarks/ncu_offset_probe.py [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time

CASES = {"mem5M": ("memory", 5_000_000 // 1024 * 1024), "mem9M": ("memory", 9_011_200), "gemm1536": ("gemm", 1536),
         "gemm2048": ("gemm", 2048), "tiny": ("memory", 1024),
         "gemm4096": ("gemm", 4096), "gemm5120": ("gemm", 5120), "mem2600M": ("memory", 2599999488)}
CALLS = 9


def make(kind: str, size: int):
    import torch

    if kind == "gemm":
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        return lambda: torch.mm(a, b, out=c)
    x = torch.randn(size, device="cuda")
    y = torch.empty_like(x)
    return lambda: torch.mul(x, 2.0, out=y)


def target(name: str) -> None:
    import torch

    kind, size = CASES[name]
    for _ in range(CALLS):
        call = make(kind, size)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("call")
        call()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()


def ncu(name: str, cache: str) -> dict:
    metrics = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.max"
    if os.environ.get("PROBE_NAMES"):
        done = subprocess.run(["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--nvtx", "--nvtx-include", "call/",
                               sys.executable, __file__, "--target", name], capture_output=True, text=True)
        names = sorted({line.strip()[:100] for line in done.stdout.splitlines() if "(" in line and "Context" in line})
        return {"kernels": names}
    command = ["ncu", "--clock-control", "none", "--cache-control", cache, "--metrics", metrics, "--csv", "--nvtx",
               "--nvtx-include", "call/", sys.executable, __file__, "--target", name]
    done = subprocess.run(command, capture_output=True, text=True)
    text = done.stdout[done.stdout.find('"ID"'):]
    values: dict[str, list[float]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        unit = row.get("Metric Unit", "")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "cycle/second": 1e-9, "cycle/nsecond": 1.0, "cycle/usecond": 1e-3,
                 "Ghz": 1.0, "Mhz": 1e-3, "hz": 1e-9}.get(unit, 1.0)
        values.setdefault(row["Metric Name"] + f" [{unit}]", []).append(value * scale)
    if not values:
        return {"error": (done.stderr or done.stdout)[-1500:]}
    return {key: statistics.median(v[1:] if len(v) > 2 else v) for key, v in values.items()}


def harness(name: str, condition: str) -> float | str:
    import torch

    from solbench.bench.timing import CacheFlusher, CuptiTimer, EventTimer

    kind, size = CASES[name]
    if condition == "names":  # which kernels one call launches, and their durations
        from torch.profiler import ProfilerActivity, profile

        call = make(kind, size)
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        return "; ".join(f"{e.name[:90]} {e.device_time:.1f}" for e in prof.events() if e.device_time > 0)
    if condition == "stream":  # throughput: 50 calls back to back, no flush, events around all
        call = make(kind, size)
        for _ in range(5):
            call()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            call()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3 / 50
    timer = EventTimer() if condition == "events" else CuptiTimer()
    flush = CacheFlusher("cuda")
    times = []
    for index in range(60):
        call = make(kind, size)
        if condition != "noflush":
            flush()
        torch.cuda.synchronize()
        if condition.startswith("idle"):
            time.sleep(float(condition.partition(":")[2] or 10) / 1e3)
        if condition == "busy":
            torch.cuda._sleep(200_000)  # keep the GPU busy right up to the call (not timed: separate sync)
            torch.cuda.synchronize()
        times.append(timer.measure(call) * 1e3)
    if isinstance(timer, CuptiTimer):
        timer.close()
    return statistics.median(times[5:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target")
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--conditions", default="flush,noflush,idle,events", help="harness conditions; idle:MS sleeps MS ms before each call")
    parser.add_argument("--no-ncu", action="store_true")
    args = parser.parse_args()
    if args.target:
        target(args.target)
        return
    results = {}
    for name in args.cases.split(",") if args.cases else CASES:
        row = {}
        for condition in args.conditions.split(","):
            # each condition in its own process: one CUPTI subscriber per process
            code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import ncu_offset_probe as p; "
                    f"print(p.harness({name!r}, {condition!r}))")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            last = done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else done.stderr[-800:]
            try:
                row[f"harness_{condition}_us"] = float(last)
            except ValueError:
                row[f"harness_{condition}_us"] = last
        for cache in () if args.no_ncu else ("all", "none"):
            row[f"ncu_cache_{cache}"] = ncu(name, cache)
        results[name] = row
        print(name, json.dumps(row), flush=True)
    if args.json_path:
        with open(args.json_path, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
