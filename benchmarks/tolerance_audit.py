"""Which problems' tolerances fail their own reference against an fp64 run of it (CPU, one draw of each
problem's smallest workload)?

A tolerance below the reference's own rounding error fails honest kernels that round differently (a
fused SwiGLU MLP that keeps silu(gate) * up in fp32 is closer to fp64 than the eager reference, and still
fails against it). For each problem: the share of each floating output's elements outside
`max_atol + max_rtol * |fp64|` of the fp64 run, against the share the workload's
`required_matched_ratio` allows; problems over it are listed first, with what
`solbench calibrate-tolerance` would be the tool to fix.

    python benchmarks/tolerance_audit.py [SET_OR_PATH ...] [--only SUBSTRING ...] [--max-gb 4] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from solbench.data.dtypes import DType
from solbench.data.loaders import load_problems
from solbench.data.selection import choose_workloads
from solbench.dataset import bundled_set_path
from solbench.dataset.catalog.analyse import input_bytes
from solbench.dataset.tolerance import against_fp64


def fp64_bytes(problem, workload) -> int:
    """Bytes of the inputs and of the fp64 copies the oracle run makes of the floating ones (fp8 and fp4 stay as they are)."""
    widened = {DType.float16: 4, DType.bfloat16: 4, DType.float32: 2}
    return sum(size * (1 + widened.get(dtype, 0)) for dtype, size in input_bytes(problem, workload).items())


def audit(problem, max_bytes: int, seed: int) -> dict:
    workload = choose_workloads(problem, "smallest:1")[0]
    tolerance = workload.effective_tolerance
    row = {"problem": problem.name, "workload": workload.uuid, "atol": tolerance.max_atol, "rtol": tolerance.max_rtol,
           "allowed_share": round(1 - tolerance.required_matched_ratio, 6)}
    if fp64_bytes(problem, workload) > max_bytes:
        return {**row, "skipped": f"inputs and their fp64 copies {fp64_bytes(problem, workload) / 2**30:.1f} GiB"}
    started = time.perf_counter()
    native, exact = against_fp64(problem, workload, seed=seed)
    shares = {}
    for name, value in native.items():
        if not (isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel()):
            continue
        truth = exact[name].double()
        error = (value.double() - truth).abs()
        outside = ~(error <= tolerance.max_atol + tolerance.max_rtol * truth.abs())  # NaN counts as outside
        shares[name] = round(float(outside.double().mean()), 6)
    worst = max(shares.values(), default=0.0)
    return {**row, "outside_share": shares, "over": worst > row["allowed_share"], "seconds": round(time.perf_counter() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["solbench:models"])
    parser.add_argument("--only", action="append", default=[], help="problems whose name contains this (repeatable)")
    parser.add_argument("--max-gb", type=float, default=4.0, help="skip problems whose fp64 inputs exceed this")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    paths = [bundled_set_path(path.split(":", 1)[1]) if path.startswith("solbench:") else Path(path) for path in args.paths]
    problems = [p for p in load_problems(paths) if not args.only or any(part in p.name for part in args.only)]
    rows = []
    for problem in problems:
        try:
            row = audit(problem, int(args.max_gb * 2**30), args.seed)
        except Exception as exc:  # noqa: BLE001 - one problem's failure is its line
            row = {"problem": problem.name, "error": str(exc).splitlines()[0][:200] if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"[:200]}
        rows.append(row)
        shown = row.get("skipped") or row.get("error") or f"outside {row['outside_share']} allowed {row['allowed_share']}" + ("  OVER" if row["over"] else "")
        print(f"{problem.name:48s} {shown}", flush=True)
    over = [row for row in rows if row.get("over")]
    print(f"\n{len(over)} of {len(rows)} problems: the reference itself is outside its tolerance against fp64 more often than "
          f"its matched ratio allows (calibrate with `solbench calibrate-tolerance`):")
    for row in sorted(over, key=lambda r: -max(r["outside_share"].values())):
        print(f"  {row['problem']:46s} {max(row['outside_share'].values()):.4f} > {row['allowed_share']} (atol {row['atol']}, rtol {row['rtol']})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
