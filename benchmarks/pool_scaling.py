"""One dataset through `solbench run` on one lane, on every lane of the host, and on a local Ray:
wall times, speed-up per lane, whether the statuses are identical, and how far the latency of the same
workload measured on different lanes (GPUs) is from the one-lane run; with --kill-lane, one more run
on every lane whose first lane process is killed (SIGKILL, its workers with it) after the first trace:
it must end with every workload of the one-lane run and the same statuses.

    python3 benchmarks/pool_scaling.py DATASET... [--workloads smallest:2] [--no-timing] [--ray] [--kill-lane]
                                      [--device cuda|cpu] [--cpu-lanes N] [--out DIR]

On GPUs the lanes are `--gpus 1` and `--gpus all`; on a CPU (--device cpu) `--lanes 1` and
`--lanes N`. Every run has the same seed. The spread: for each workload with a latency in both the
one-lane run and the other, |t_other / t_one - 1|; its median per lane of the other run (on one GPU the
lanes are the same GPU, so the figure is the run-to-run spread, a floor for the spread across GPUs).
Writes OUT/pool-scaling.json and each run's traces, folder and log under OUT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from solbench.data.loaders import load_traces

LANE_PROCESS = b"solbench.exec.lane_process"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--workloads", default="smallest:2")
    parser.add_argument("--timing", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--ray", action="store_true", help="also --executor ray (a local Ray started for the run; pip install 'solbench[ray]')")
    parser.add_argument("--kill-lane", action="store_true", help="also a run on every lane with one lane process killed mid-run")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--cpu-lanes", type=int, default=2, help="with --device cpu: the lanes of the many-lane runs")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("pool-scaling"))
    args = parser.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"pool_scaling.py: error: {args.out}: exists and is not empty; choose another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    many = ["--gpus", "all"] if args.device == "cuda" else ["--device", "cpu", "--lanes", str(args.cpu_lanes)]
    one = ["--gpus", "1"] if args.device == "cuda" else ["--device", "cpu", "--lanes", "1"]
    plan = [("one-lane", one, False), ("all-lanes", many, False)]
    if args.ray:
        plan.append(("ray", ["--executor", "ray"] + (["--device", "cpu"] if args.device == "cpu" else []), False))
    if args.kill_lane:
        plan.append(("all-lanes-one-killed", many, True))
    runs = {name: run(args, name, options, kill) for name, options, kill in plan}
    summary = compare(runs)
    (args.out / "pool-scaling.json").write_text(json.dumps({"datasets": args.datasets, "workloads": args.workloads, "timing": args.timing,
                                                           "device": args.device, "runs": summary}, indent=1) + "\n")
    base = summary["one-lane"]
    for name, figures in summary.items():
        line = f"{name}: {figures['wall_s']:.1f} s wall, {figures['workloads']} workloads on lanes {', '.join(figures['lanes']) or '-'}, exit code {figures['exit_code']}"
        if name != "one-lane":
            line += (f"; speed-up {figures['speed_up']:.2f}x ({figures['speed_up_per_lane']:.2f} per lane); statuses identical: "
                     f"{figures['statuses_identical']}, {figures['missing']} workloads missing")
            if figures["latency_spread"]:
                line += "; median |t/t_one - 1| " + ", ".join(f"{lane} {value:.1%} (n={n})" for lane, (value, n) in figures["latency_spread"].items())
        if figures.get("killed"):
            line += f"; killed lane process {figures['killed']}, lane deaths said: {figures['deaths_said']}"
        print(line, flush=True)
    print(f"written: {args.out / 'pool-scaling.json'} (one-lane run: {base['workloads']} workloads)")
    bad = [name for name, figures in summary.items() if name != "one-lane" and (not figures["statuses_identical"] or figures["missing"])]
    return 1 if bad else 0


def run(args: argparse.Namespace, name: str, options: list[str], kill: bool) -> dict:
    traces, folder, log = args.out / f"traces-{name}.jsonl", args.out / f"run-{name}", args.out / f"run-{name}.log"
    command = [sys.executable, "-m", "solbench.cli", "run", *args.datasets, "--workloads", args.workloads, "--seed", str(args.seed),
               "-o", str(traces), "--run-dir", str(folder), *options] + ([] if args.timing else ["--no-timing"])
    print(f"{name}: {' '.join(command[1:])}", flush=True)
    started = time.perf_counter()
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        killed = None
        while process.poll() is None:
            if kill and killed is None and traces.exists() and traces.stat().st_size > 0:
                killed = kill_one_lane(process.pid)
            time.sleep(0.2)
    wall = time.perf_counter() - started
    said = [line for line in log.read_text().splitlines() if " died (" in line and " while evaluating " in line]  # exec.jobs.retried_after_death
    return {"wall_s": wall, "exit_code": process.returncode, "traces": load_traces(traces) if traces.exists() else [],
            "killed": killed, "deaths_said": len(said)}


def kill_one_lane(run_pid: int) -> int | None:
    """SIGKILL the first lane process of the run (a child of the `solbench run` process); its pid."""
    for child in sorted(children(run_pid)):
        try:
            if LANE_PROCESS in Path(f"/proc/{child}/cmdline").read_bytes():
                os.kill(child, signal.SIGKILL)
                return child
        except OSError:
            continue
    return None


def children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found |= {int(child) for child in (task / "children").read_text().split()}
    except OSError:
        pass
    return found


def compare(runs: dict[str, dict]) -> dict[str, dict]:
    """Per run: wall time, workloads, lanes, speed-up over the one-lane run, identical statuses, missing
    workloads, and the median latency spread against the one-lane run per lane."""
    base = runs["one-lane"]
    base_status = {key(t): t.evaluation.status.value for t in base["traces"]}
    base_latency = {key(t): latency(t) for t in base["traces"]}
    summary = {}
    for name, result in runs.items():
        traces = result["traces"]
        lanes = sorted({(t.evaluation.environment or {}).get("lane", "-") for t in traces})
        status = {key(t): t.evaluation.status.value for t in traces}
        spreads: dict[str, list[float]] = {}
        for trace in traces:
            mine, theirs = latency(trace), base_latency.get(key(trace))
            if mine and theirs:
                spreads.setdefault((trace.evaluation.environment or {}).get("lane", "-"), []).append(abs(mine / theirs - 1))
        speed_up = base["wall_s"] / result["wall_s"] if result["wall_s"] else 0.0
        summary[name] = {
            "wall_s": round(result["wall_s"], 2), "exit_code": result["exit_code"], "workloads": len(status), "lanes": lanes,
            "speed_up": round(speed_up, 3), "speed_up_per_lane": round(speed_up / max(1, len(lanes)), 3),
            "statuses_identical": status == base_status, "missing": len(set(base_status) - set(status)),
            "differing": sorted(f"{d} / {w[:8]}: {base_status.get((d, w))} -> {s}" for (d, w), s in status.items() if base_status.get((d, w)) != s),
            "latency_spread": {lane: (round(statistics.median(values), 4), len(values)) for lane, values in sorted(spreads.items())},
            "killed": result["killed"], "deaths_said": result["deaths_said"]}
    return summary


def key(trace) -> tuple[str, str]:
    return trace.definition, trace.workload.uuid


def latency(trace) -> float | None:
    performance = trace.evaluation.performance
    return performance.latency_ms if performance is not None else None


if __name__ == "__main__":
    sys.exit(main())
