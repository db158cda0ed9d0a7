"""Compare two `solbench sol --json` outputs workload by workload (issue 11: a speed-up must not change the bounds).

    python3 benchmarks/sol_results_diff.py BEFORE.jsonl AFTER.jsonl [--rel 1e-9]

Every workload of either file is matched by (problem, workload, hardware, policy); T_SOL, FLOPs (total
and per unit), the three byte counts and the bottleneck are compared. Exit code 0 when every workload
is in both and agrees within --rel, 1 otherwise (each difference is listed, a higher T_SOL first).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

COMPARED = ("t_sol_ms", "flops", "bytes_unfused", "bytes_fused", "bytes_cache_aware", "t_unfused_ms")


def load(path: Path) -> dict[tuple, dict]:
    rows: dict[tuple, dict] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.startswith("{"):
            continue
        try:
            row = json.loads(line)
            rows[(row["problem"], row["workload"], row["hardware"], row["policy"])] = row
        except (json.JSONDecodeError, KeyError) as exc:
            raise SystemExit(f"{path}:{number}: not a solbench sol JSON line ({exc})")
    return rows


def differences(before: dict, after: dict, rel: float) -> list[str]:
    found = []
    for name in COMPARED:
        a, b = before.get(name), after.get(name)
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=rel, abs_tol=0.0)):
            found.append(f"{name} {a} -> {b}")
    units_a, units_b = before.get("flops_by_unit", {}), after.get("flops_by_unit", {})
    for unit in sorted(set(units_a) | set(units_b)):
        if not math.isclose(units_a.get(unit, 0.0), units_b.get(unit, 0.0), rel_tol=rel):
            found.append(f"flops[{unit}] {units_a.get(unit)} -> {units_b.get(unit)}")
    for name in ("bottleneck", "uncovered_ops"):
        if before.get(name) != after.get(name):
            found.append(f"{name} {before.get(name)} -> {after.get(name)}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rel", type=float, default=1e-9, help="relative tolerance of each number (default 1e-9: rounding only)")
    args = parser.parse_args()
    for path in (args.before, args.after):
        if not path.is_file():
            print(f"{path}: no such file (expected the JSON lines of `solbench sol --json`)", file=sys.stderr)
            return 2
    before, after = load(args.before), load(args.after)
    missing, extra = sorted(set(before) - set(after)), sorted(set(after) - set(before))
    changed = [(key, differences(before[key], after[key], args.rel)) for key in sorted(set(before) & set(after))]
    changed = [(key, found) for key, found in changed if found]
    changed.sort(key=lambda item: -(after[item[0]]["t_sol_ms"] / before[item[0]]["t_sol_ms"] if before[item[0]]["t_sol_ms"] else 0.0))
    for key in missing:
        print(f"only in {args.before}: {key[0]}/{key[1]}")
    for key in extra:
        print(f"only in {args.after}: {key[0]}/{key[1]}")
    for key, found in changed:
        print(f"{key[0]}/{key[1][:8]}: " + "; ".join(found))
    higher = sum(1 for key, _ in changed if after[key]["t_sol_ms"] > before[key]["t_sol_ms"] * (1 + args.rel))
    print(f"{len(before)} workloads before, {len(after)} after: {len(changed)} differ ({higher} with a higher T_SOL), "
          f"{len(missing)} missing, {len(extra)} new")
    return 1 if changed or missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
