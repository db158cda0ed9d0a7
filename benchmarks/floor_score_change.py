"""How a run's scores change with the latency floor in T_SOL (issue 29): every scored workload of a run
folder's summary.json scored again with T_SOL = its roofline alone, beside the run's own T_SOL =
max(roofline, floor). Per problem and solution, and per suite; nothing is measured again.

    python benchmarks/floor_score_change.py RUN_DIR [RUN_DIR...] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from solbench.data.files import write_atomically
from solbench.score.formula import sol_score
from solbench.score.summary import RunSummary, WorkloadScore


def rescored(row: WorkloadScore) -> tuple[float | None, float | None]:
    """(score with the run's T_SOL, score with its roofline alone) of one workload."""
    correct = row.status == "PASSED"
    roofline = row.sol_roofline_ms if row.sol_roofline_ms is not None else row.sol_ms
    with_floor = sol_score(correct, row.latency_ms, row.sol_ms, row.baseline_ms).score
    without = sol_score(correct, row.latency_ms, roofline, row.baseline_ms).score
    return with_floor, without


def mean(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.fmean(known) if known else None


def compare(summary: RunSummary) -> dict[str, object]:
    by_problem: dict[tuple[str, str, str], list[tuple[float | None, float | None, bool]]] = defaultdict(list)
    for row in summary.workloads:
        if row.latency_ms is None and row.status == "PASSED":
            continue  # held-out workloads: correctness only
        floor_applied = row.sol_roofline_ms is not None and row.sol_ms is not None and row.sol_ms > row.sol_roofline_ms
        by_problem[(row.solution_set or "?", row.problem, row.solution)].append((*rescored(row), floor_applied))
    problems = []
    for (suite, problem, solution), rows in sorted(by_problem.items()):
        problems.append({"suite": suite, "problem": problem, "solution": solution, "workloads": len(rows),
                         "floor_applied": sum(applied for *_, applied in rows),
                         "score_with_floor": mean([row[0] for row in rows]), "score_roofline_only": mean([row[1] for row in rows])})
    suites = []
    for suite in sorted({entry["suite"] for entry in problems}):
        mine = [entry for entry in problems if entry["suite"] == suite]
        suites.append({"suite": suite, "problems": len(mine), "score_with_floor": mean([entry["score_with_floor"] for entry in mine]),
                       "score_roofline_only": mean([entry["score_roofline_only"] for entry in mine])})
    return {"hardware": summary.hardware, "sol_floor": summary.sol_floor, "problems": problems, "suites": suites}


def _number(value: object) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_table(name: str, result: dict[str, object]) -> None:
    print(f"## {name} (hardware {result['hardware']}, run with the floor: {result['sol_floor']})")
    print("| suite | problem | solution | workloads | floor applied | S with floor | S roofline only | change |")
    print("|---|---|---|---|---|---|---|---|")
    for entry in result["problems"]:
        a, b = entry["score_with_floor"], entry["score_roofline_only"]
        change = "-" if a is None or b is None else f"{a - b:+.3f}"
        print(f"| {entry['suite']} | {entry['problem']} | {entry['solution']} | {entry['workloads']} | {entry['floor_applied']} | {_number(a)} | {_number(b)} | {change} |")
    for entry in result["suites"]:
        a, b = entry["score_with_floor"], entry["score_roofline_only"]
        change = "-" if a is None or b is None else f"{a - b:+.3f}"
        print(f"suite {entry['suite']}: {entry['problems']} problems, mean S {_number(a)} with the floor, {_number(b)} roofline only ({change})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = {}
    for run in args.runs:
        path = run / "summary.json"
        if not path.is_file():
            sys.exit(f"floor_score_change: {path}: no summary.json (expected a folder written by solbench run)")
        results[str(run)] = compare(RunSummary.model_validate_json(path.read_text()))
        print_table(str(run), results[str(run)])
    if args.json:
        write_atomically(args.json, json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
