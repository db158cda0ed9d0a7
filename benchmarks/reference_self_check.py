"""Every reference of a dataset against itself, under several seeds: `solbench run` once per seed,
then one table of what did not pass (a reference that fails its own check is a bug in solbench
unless its trace explains the reference's non-determinism: the evaluator runs a reference that was
missed a second time, and notes `reference-nondeterministic` where its two results disagree).

    python3 benchmarks/reference_self_check.py DATASET... [--seeds 1 2] [--out DIR] [--no-timing]
                                               [--workloads all|smallest:N]

Writes DIR/traces-seed<S>.jsonl and DIR/self-check.json (per seed: workloads, statuses, wall time);
exit code 1 when any workload of any seed did not pass.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from solbench.data.loaders import load_traces


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--out", type=Path, default=Path("self-check"))
    parser.add_argument("--no-timing", action="store_true", help="correctness only (faster)")
    parser.add_argument("--workloads", default="all")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"datasets": [str(d) for d in args.datasets], "seeds": {}}
    failures: list[tuple[int, str, str, str, str]] = []
    for seed in args.seeds:
        traces_path = args.out / f"traces-seed{seed}.jsonl"
        traces_path.unlink(missing_ok=True)
        command = [sys.executable, "-m", "solbench.cli", "run", *map(str, args.datasets), "--seed", str(seed), "--synthesize-missing-blobs",
                   "--workloads", args.workloads, "-o", str(traces_path)] + (["--no-timing"] if args.no_timing else [])
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.monotonic() - started
        traces = load_traces(traces_path) if traces_path.exists() else []
        statuses = Counter(t.evaluation.status.value for t in traces)
        problems = {t.definition for t in traces}
        refused = [line for line in done.stdout.splitlines() if line.startswith("refused: ")]
        nondeterministic = [f"{t.definition} / {t.workload.uuid[:12]}" for t in traces if "note [reference-nondeterministic]" in t.evaluation.log]
        for trace in traces:
            if trace.evaluation.status.value != "PASSED":
                first = next((line for line in trace.evaluation.log.splitlines() if line.strip()), "")
                failures.append((seed, trace.definition, trace.workload.uuid, trace.evaluation.status.value, first[:160]))
        report["seeds"][str(seed)] = {"exit_code": done.returncode, "wall_s": round(wall, 1), "problems": len(problems), "workloads": len(traces),
                                      "statuses": dict(statuses), "refused": refused, "s_per_workload": round(wall / max(1, len(traces)), 3),
                                      "reference_nondeterministic": nondeterministic}
        print(f"seed {seed}: {len(problems)} problems, {len(traces)} workloads, {dict(statuses)}, {len(refused)} refused, "
              f"{wall:.0f} s wall ({wall / max(1, len(traces)):.2f} s per workload), exit code {done.returncode}", flush=True)
        for line in refused:
            print(f"  {line}")
        if nondeterministic:  # explained by the trace: run twice on the same inputs, the reference disagreed with itself
            print(f"  reference non-deterministic beyond the tolerance (the trace says so): {', '.join(nondeterministic)}")
        if done.returncode not in (0, 1):
            print(done.stderr[-2000:])
    for seed, problem, workload, status, line in failures:
        print(f"seed {seed}: {problem} / {workload[:12]}: {status}: {line}")
    report["failures"] = [dict(zip(("seed", "problem", "workload", "status", "log"), f)) for f in failures]
    (args.out / "self-check.json").write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failures or any(s["refused"] for s in report["seeds"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
