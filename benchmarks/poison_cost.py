"""What poisoning costs per correctness trial (issue 29), outside any timed call.

Two fills run before a solution's correctness calls: the memory its own output allocations will get
(`Worker._poison_free_memory`: allocate blocks the size of each output, fill them, free them) and, in
the first trial's repeated call, the first call's outputs (`_poison_storages`). Each is timed here at
several output sizes in the worker class itself, on this machine's device, as the median of 9.

    python3 benchmarks/poison_cost.py [--device cuda] [--out poison.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from solbench.bench.messages import OutputSpec
from solbench.bench.worker import Worker, _poison_storages


def median_ms(function, synchronize, repeats: int = 9) -> float:
    function()
    synchronize()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        synchronize()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    worker = Worker("solution", args.device)
    synchronize = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    sizes_mib = [1, 64, 1024] if args.device.startswith("cuda") else [1, 16, 256]
    rows = []
    for mib in sizes_mib:
        elements = mib * 1024 * 1024 // 4
        specs = {"y": OutputSpec(shape=[elements], dtype="float32")}
        free_ms = median_ms(lambda: worker._poison_free_memory(specs), synchronize)
        output = {"y": torch.empty(elements, device=worker.device)}
        storages_ms = median_ms(lambda: _poison_storages(output), synchronize)
        rows.append({"output_mib": mib, "poison_free_memory_ms": round(free_ms, 4), "poison_outputs_ms": round(storages_ms, 4),
                     "fill_gbps": round(mib * 1024 * 1024 / (storages_ms / 1e3) / 1e9, 1)})
        print(f"{mib:6d} MiB output: allocator blocks poisoned {free_ms:9.3f} ms, first call's outputs poisoned {storages_ms:9.3f} ms "
              f"({rows[-1]['fill_gbps']} GB/s)", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps({"device": worker.device, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
