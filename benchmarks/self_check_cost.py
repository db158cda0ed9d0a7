"""What the test suite's self-check costs: every reference of a set against itself (trusted jobs, one
worker pair, correctness only, as tests/dataset/test_models_set.py runs it), seconds per problem and
per evaluation phase. Its per-problem seconds balance the test's shares
(tests/dataset/models_self_check_seconds.json is written with --write-balance).

    python benchmarks/self_check_cost.py [SET_OR_PATH ...] [--workloads smallest:1] [--json OUT.json] [--write-balance]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from solbench.bench.orchestrator import EvalOptions, reference_solution
from solbench.data.files import write_atomically
from solbench.data.loaders import load_problems
from solbench.data.selection import choose_workloads
from solbench.data.trace import Trace
from solbench.dataset import bundled_set_path
from solbench.exec import Job, evaluate_jobs

BALANCE = Path(__file__).resolve().parent.parent / "tests" / "dataset" / "models_self_check_seconds.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["solbench:models"])
    parser.add_argument("--workloads", default="smallest:1")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--write-balance", action="store_true", help=f"write the per-problem seconds to {BALANCE}")
    args = parser.parse_args()
    paths = [bundled_set_path(path.split(":", 1)[1]) if path.startswith("solbench:") else Path(path) for path in args.paths]
    started = time.monotonic()
    problems = load_problems(paths)
    loaded = time.monotonic()
    options = EvalOptions(device="cpu", trials=1, timing=False, hidden=0, seed=5, static_analysis=False)
    jobs = [Job(problem, reference_solution(problem), choose_workloads(problem, args.workloads), trusted=True) for problem in problems]
    seconds: dict[str, float] = {}
    phases: dict[str, float] = {}
    statuses: dict[str, int] = {}
    last = [time.monotonic()]

    def on_trace(trace: Trace) -> None:
        now = time.monotonic()
        seconds[trace.definition] = round(seconds.get(trace.definition, 0.0) + now - last[0], 3)
        last[0] = now
        for phase, value in (trace.evaluation.phases or {}).items():
            phases[phase] = phases.get(phase, 0.0) + value
        statuses[trace.evaluation.status.value] = statuses.get(trace.evaluation.status.value, 0) + 1

    last[0] = time.monotonic()
    evaluate_jobs(jobs, options, on_trace=on_trace)
    total = time.monotonic() - loaded
    print(f"{len(problems)} problems loaded in {loaded - started:.1f} s; evaluated in {total:.1f} s wall; statuses {statuses}")
    print("phases summed (s): " + ", ".join(f"{name} {value:.1f}" for name, value in sorted(phases.items(), key=lambda item: -item[1])))
    print("the slowest 10 problems:")
    for name, value in sorted(seconds.items(), key=lambda item: -item[1])[:10]:
        print(f"  {value:7.2f} s  {name}")
    result = {"problems": len(problems), "wall_s": round(total, 2), "load_s": round(loaded - started, 2), "statuses": statuses,
              "phases_s": {name: round(value, 2) for name, value in phases.items()}, "seconds": seconds}
    if args.json:
        write_atomically(args.json, json.dumps(result, indent=1))
    if args.write_balance:
        write_atomically(BALANCE, json.dumps(dict(sorted(seconds.items())), indent=1) + "\n")


if __name__ == "__main__":
    main()
