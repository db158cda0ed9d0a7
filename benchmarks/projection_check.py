"""How far `solbench sol --project` is off, checked on times measured on the H200 (issue 31, item 3).

Locked clocks are not allowed on the lent H200, so the two "GPUs" of the check are two specs of the
same chip: the datasheet H200 (src/solbench/sol/hardware/h200.yaml) and the H200 with its measured
ceilings (benchmarks/results/2026-11-29-h200-calibrated.yaml, given the latency floors measured on the
same chip so that the two differ in their ceilings alone). Every time was measured on one chip, so a
perfect projection from one spec to the other returns the measured time; what it returns instead is
the projection's error when the target's ceilings are off by as much as a datasheet's are from what
the chip attains. The check projects each measured workload both ways through the real code
(solbench.sol.projection.project, the SOL analysis of each reference on both specs) and reports
|T_proj / T - 1| per bottleneck on the target, and the workloads whose bottleneck changes between
the specs (where the constant-efficiency assumption is weakest).

The measured times are the reference times of an H200 `solbench sol --verify` run (default
benchmarks/results/2026-12-02b-h200-verify-all.jsonl: the SOL-ExecBench layout fixture, the bundled
problems and the synthetic dataset at spread:2). The synthetic dataset is written again here
(python3 -m solbench.dataset.synthetic); a record whose workload is not found is counted and skipped.

    python3 benchmarks/projection_check.py [--verify FILE] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
VERIFY = ROOT / "benchmarks/results/2026-12-02b-h200-verify-all.jsonl"
CALIBRATED = ROOT / "benchmarks/results/2026-11-29-h200-calibrated.yaml"
FIXTURE = ROOT / "tests/fixtures/sol_execbench_layout"


def _calibrated_with_floors(scratch: Path) -> Path:
    """The calibrated spec with the latency floors the datasheet spec carries (both measured on an H200)."""
    from solbench.sol.hardware import get_hardware

    spec = yaml.safe_load(CALIBRATED.read_text())
    datasheet = get_hardware("H200")
    spec["launch_floor_s"], spec["dram_latency_floor_s"] = datasheet.launch_floor_s, datasheet.dram_latency_floor_s
    path = scratch / "h200-calibrated-with-floors.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _traces(records: list[dict], problems: dict) -> tuple[list, int]:
    """A PASSED trace per measured workload (its latency the fastest time measured), and how many records found no workload."""
    from solbench.data.trace import Trace

    traces, missing = [], 0
    for record in records:
        problem = problems.get(record["problem"])
        workload = next((w for w in problem.workloads if w.uuid == record["workload"]), None) if problem else None
        if workload is None or record.get("self_check") != "PASSED" or not record.get("times_ms"):
            missing += 1
            continue
        latency = min(record["times_ms"].values())
        traces.append(Trace.model_validate({
            "definition": problem.name, "workload": workload.to_json_dict(), "solution": record.get("fastest") or "reference",
            "evaluation": {"status": "PASSED", "environment": {"hardware": "H200", "precision_policy": "auto"},
                           "performance": {"latency_ms": latency, "sol_floor_applied": True}},
        }))
    return traces, missing


def _summary(projections: list, label: str) -> dict:
    by_bottleneck: dict[str, list[float]] = defaultdict(list)
    changed = unchanged = 0
    for item in projections:
        unchanged += abs(item.projected_ms / item.latency_ms - 1) < 1e-9  # the same latency floor bounds both specs
        by_bottleneck[item.target_bottleneck].append(abs(item.projected_ms / item.latency_ms - 1))
        changed += bool(item.notes)
    every = [error for errors in by_bottleneck.values() for error in errors]
    rows = {name: {"workloads": len(errors), "median": statistics.median(errors), "p90": _quantile(errors, 0.9), "max": max(errors)}
            for name, errors in sorted(by_bottleneck.items(), key=lambda pair: -len(pair[1]))}
    return {"direction": label, "workloads": len(every), "median": statistics.median(every), "p90": _quantile(every, 0.9),
            "max": max(every), "bottleneck_changed": changed, "floor_bound": unchanged, "by_target_bottleneck": rows}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _print(summary: dict) -> None:
    print(f"{summary['direction']}: {summary['workloads']} workloads, |T_proj/T - 1| median {summary['median']:.1%}, "
          f"p90 {summary['p90']:.1%}, max {summary['max']:.1%}; bottleneck differs between the specs on {summary['bottleneck_changed']}; "
          f"{summary['floor_bound']} bound by the same latency floor on both (projected = measured)")
    for name, row in summary["by_target_bottleneck"].items():
        print(f"    {name:<28} {row['workloads']:>4} workloads  median {row['median']:6.1%}  p90 {row['p90']:6.1%}  max {row['max']:6.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", type=Path, default=VERIFY, help="an H200 `sol --verify` JSONL file")
    parser.add_argument("--json", type=Path, help="write the summaries here")
    args = parser.parse_args()

    from solbench.data.errors import Issue
    from solbench.dataset import bundled_problems_path
    from solbench.dataset.synthetic import generate_dataset
    from solbench.sol.hardware import get_hardware
    from solbench.data.loaders import load_problems
    from solbench.sol.projection import ASSUMPTION, project

    records = [json.loads(line) for line in args.verify.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as scratch:
        generate_dataset(Path(scratch) / "synthetic")
        loaded = load_problems([FIXTURE, bundled_problems_path(), Path(scratch) / "synthetic"], synthesize_missing_blobs=True)  # as verify-all ran
        problems = {problem.name: problem for problem in loaded}
        traces, missing = _traces(records, problems)
        datasheet, calibrated = get_hardware("H200"), get_hardware(str(_calibrated_with_floors(Path(scratch))))
        print(f"{len(records)} measured workloads in {args.verify.name}; {len(traces)} projected, {missing} skipped (workload not found or not PASSED)")
        summaries = []
        for source, target in ((datasheet, calibrated), (calibrated, datasheet)):
            items = list(project(traces, problems, target, source))
            issues = [item for item in items if isinstance(item, Issue)]
            for issue in issues[:5]:
                print(f"  issue: {issue.message}", file=sys.stderr)
            summaries.append(_summary([item for item in items if not isinstance(item, Issue)], f"{source.name} -> {target.name}"))
            _print(summaries[-1])
    print(f"assumption: {ASSUMPTION}")
    if args.json:
        args.json.write_text(json.dumps({"verify": str(args.verify), "skipped": missing, "summaries": summaries}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
