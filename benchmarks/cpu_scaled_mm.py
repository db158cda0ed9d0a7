"""CPU fp8 `torch._scaled_mm`: oneDNN's kernel against PyTorch's own CPU path (what the CPU workers call,
solbench.bench.cpu_scaled_mm), side by side on the fp8 GEMMs of solbench:models at their smallest
workload: median seconds per call of each, their ratio, and how many bf16 outputs differ.

    python benchmarks/cpu_scaled_mm.py [--repeats 3] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from solbench.bench.cpu_scaled_mm import route_cpu_scaled_mm
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
from solbench.data.reference import reference_module
from solbench.data.selection import choose_workloads
from solbench.dataset import bundled_set_path


def median_seconds(call, repeats: int) -> tuple[float, torch.Tensor]:
    seconds, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    problems = [p for p in load_problems([bundled_set_path("models")]) if "torch._scaled_mm(" in p.definition.reference]
    onednn = torch._scaled_mm
    route_cpu_scaled_mm(torch)
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.repeats} calls")
    for problem in sorted(problems, key=lambda p: p.name):
        workload = choose_workloads(problem, "smallest:1")[0]
        inputs = generate_inputs(problem, workload, seed=5, device="cpu")
        run = reference_module(problem.definition).run
        torch._scaled_mm = onednn
        slow, expected = median_seconds(lambda: run(**inputs), args.repeats)
        route_cpu_scaled_mm(torch)
        fast, routed = median_seconds(lambda: run(**inputs), args.repeats)
        differ = int((expected != routed).sum())
        rows.append({"problem": problem.name, "onednn_s": round(slow, 4), "routed_s": round(fast, 4), "ratio": round(slow / fast, 1),
                     "outputs": expected.numel(), "differ": differ, "max_abs_diff": float((expected.float() - routed.float()).abs().max())})
        print(f"{problem.name:32s} oneDNN {slow:8.3f} s  routed {fast:7.3f} s  {slow / fast:6.1f}x  {differ}/{expected.numel()} outputs differ")
    if args.json:
        args.json.write_text(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "repeats": args.repeats, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
