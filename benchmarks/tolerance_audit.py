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

from solbench.bench.precision import oracle_arguments
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
from solbench.data.reference import reference_module
from solbench.data.selection import choose_workloads
from solbench.dataset import bundled_set_path


def fp64_bytes(inputs: list) -> int:
    return sum(8 * value.numel() for value in inputs if isinstance(value, torch.Tensor) and value.is_floating_point())


def outputs(problem, result) -> dict[str, torch.Tensor]:
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    return dict(zip(problem.definition.outputs, values))


def audit(problem, max_bytes: int, seed: int) -> dict:
    workload = choose_workloads(problem, "smallest:1")[0]
    tolerance = workload.effective_tolerance
    inputs = list(generate_inputs(problem, workload, seed=seed, device="cpu").values())
    row = {"problem": problem.name, "workload": workload.uuid, "atol": tolerance.max_atol, "rtol": tolerance.max_rtol,
           "allowed_share": round(1 - tolerance.required_matched_ratio, 6)}
    if fp64_bytes(inputs) > max_bytes:
        return {**row, "skipped": f"fp64 inputs {fp64_bytes(inputs) / 2**30:.1f} GiB"}
    run = reference_module(problem.definition).run
    started = time.perf_counter()
    with torch.enable_grad():  # backward problems differentiate inside run
        native = outputs(problem, run(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]))
        exact = outputs(problem, run(*oracle_arguments(inputs)))
    shares = {}
    for name, value in native.items():
        if not (isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel()):
            continue
        truth = exact[name].detach().double()
        error = (value.detach().double() - truth).abs()
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
            row = {"problem": problem.name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"}
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
