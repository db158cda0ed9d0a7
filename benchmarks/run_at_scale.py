"""`solbench run` over a whole dataset as a user runs it, measured from outside (issue 28's targets).

Runs `solbench run PATHS --workloads W --baselines B --run-dir R` as a subprocess, reads R/summary.json
every second while it runs (it is rewritten as each problem finishes) and reports: when the first
problem was scored, how many problems were scored by when, the wall time, seconds per workload, the
summary's seconds per phase, per baseline candidate how many problems it PASSED on, and the host's CPU
busy share and the GPU's utilisation (NVML) sampled each second. With --again
the same run is made a second time over the same baselines folder (nothing to build: no compile) and
the two walls are compared.

    python3 benchmarks/run_at_scale.py solbench:models --workloads smallest:1 --limit 480 --again --out $OUT/scale.json
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def read_summary(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all the host's cores from /proc/stat (None where there is none)."""
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def gpu_reader():
    """A function giving the GPU's utilisation in percent (NVML, device 0), or None where NVML is not there."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
    except Exception:  # no package, no driver, no device: the run is measured without it
        return None


def utilisation(samples: list[tuple[float, float | None, float | None]], bucket_s: float = 30.0) -> dict:
    """The host's CPU busy share and the GPU's utilisation over the run: medians, and means per bucket_s
    seconds (is the cold run bound by the cores, by the GPU, or by neither?)."""
    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 1) if values else None
    buckets: dict[int, list[tuple[float | None, float | None]]] = {}
    for seconds, cpu, gpu in samples:
        buckets.setdefault(int(seconds // bucket_s), []).append((cpu, gpu))
    def mean(values: list[float | None]) -> float | None:
        present = [value for value in values if value is not None]
        return round(sum(present) / len(present), 1) if present else None
    return {"cpu_busy_pct_median": median([cpu for _, cpu, _ in samples if cpu is not None]),
            "gpu_util_pct_median": median([gpu for _, _, gpu in samples if gpu is not None]),
            f"per_{int(bucket_s)}s": [[int(index * bucket_s), mean([c for c, _ in rows]), mean([g for _, g in rows])] for index, rows in sorted(buckets.items())]}


def one_run(paths: list[str], workloads: str, baselines: Path, run_dir: Path, limit_s: float, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "solbench.cli", "run", *paths, "--workloads", workloads, "--baselines", str(baselines), "--run-dir", str(run_dir),
               *extra]
    started = time.monotonic()
    log = (run_dir.parent / f"{run_dir.name}.stderr").open("w")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    first_scored, timeline, last = None, [], -1
    read_gpu, cpu_before, samples = gpu_reader(), cpu_times(), []
    while process.poll() is None:
        if time.monotonic() - started > limit_s:
            stop(process)
            break
        time.sleep(1.0)
        cpu_now = cpu_times()
        cpu_busy = (100.0 * (cpu_now[0] - cpu_before[0]) / max(1, cpu_now[1] - cpu_before[1])) if cpu_now and cpu_before else None
        cpu_before = cpu_now
        samples.append((time.monotonic() - started, cpu_busy, read_gpu() if read_gpu else None))
        summary = read_summary(run_dir)
        finished = (summary or {}).get("progress", {}).get("finished", 0)
        if finished and first_scored is None:
            first_scored = time.monotonic() - started
        if finished != last:
            timeline.append((round(time.monotonic() - started, 1), finished))
            last = finished
    wall = time.monotonic() - started
    out = process.stdout.read() if process.stdout else ""
    summary = read_summary(run_dir) or {}
    rows = summary.get("workloads", [])
    failures = summary.get("baseline_failures", [])
    problems = {row["problem"] for row in rows}
    failed_by_candidate = Counter(f["candidate"] for f in failures)
    return {
        "command": " ".join(command), "exit_code": process.returncode, "cut_at_limit": wall >= limit_s, "wall_s": round(wall, 1),
        "first_problem_scored_s": round(first_scored, 1) if first_scored is not None else None, "timeline": timeline,
        "problems_scored": summary.get("progress", {}).get("finished"), "problems": summary.get("progress", {}).get("problems"),
        "workloads": len(rows), "passed": sum(row["status"] == "PASSED" for row in rows),
        "s_per_workload": round(wall / len(rows), 3) if rows else None, "phases_s": summary.get("phases_s", {}),
        "candidate_failed_problems": dict(failed_by_candidate),
        "candidate_passed_share": {name: round(1 - count / len(problems), 3) for name, count in failed_by_candidate.items()} if problems else {},
        "baseline_failures": failures[:60], "notes": summary.get("notes", [])[:20], "compiles_ahead": compiles_ahead(run_dir / "compile-ahead.jsonl"),
        "utilisation": utilisation(samples),
        "stdout_tail": out[-3000:],
    }


def stop(process: subprocess.Popen, grace_s: float = 30.0) -> None:
    """Cut a run as a user does (Ctrl-C: the run ends its compile processes and their workers, which
    would otherwise go on beside the next run), killed if it has not left within grace_s."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def compiles_ahead(log: Path) -> dict:
    """What the run's compile processes finished (its compile-ahead.jsonl): how many, failed, seconds
    summed, per mode, the ten slowest, and the pauses for timed requests (how many, the wait for the
    processes to hold, the SIGSTOPs; None where the log has no such line)."""
    try:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return {}
    rows = [row for row in lines if "problem" in row]
    pauses = next((row for row in lines if "pauses" in row), None)  # written as the compiles end (a run cut at its limit too)
    by_mode: dict[str, list[float]] = {}
    for row in rows:
        by_mode.setdefault(row["mode"], []).append(row["seconds"])
    slowest = sorted(rows, key=lambda row: -row["seconds"])[:10]
    return {"finished": len(rows), "failed": sum(row["error"] is not None for row in rows), "seconds": round(sum(row["seconds"] for row in rows), 1),
            "by_mode": {mode: {"count": len(values), "seconds": round(sum(values), 1), "median_s": round(statistics.median(values), 2)}
                        for mode, values in by_mode.items()},
            "last_ended_s": max((row["ended_s"] for row in rows), default=None),
            "slowest": [f"{row['problem']} {row['mode']}: {row['seconds']:.1f} s" for row in slowest], "pauses": pauses}


def seconds_to(timeline: list[tuple[float, int]], finished: int) -> float | None:
    """When the run had finished this many problems (from its timeline of (seconds, problems finished))."""
    return next((seconds for seconds, done in timeline if done >= finished), None)


def second_run_speedup(first: dict, again: dict) -> dict:
    """Both runs whole: the ratio of their walls. Either cut: the ratio of the seconds each took to finish the
    problems both finished (the cut run's finished problems are the ones the second run had baselines for)."""
    both = min(first["problems_scored"] or 0, again["problems_scored"] or 0)
    if not (first["cut_at_limit"] or again["cut_at_limit"]):
        return {"problems": both, "first_s": first["wall_s"], "again_s": again["wall_s"], "ratio": round(first["wall_s"] / again["wall_s"], 2)}
    both = min(both, *(max((done for _, done in run["timeline"]), default=0) for run in (first, again)))  # a problem finished after the last sample has no time
    if both == 0:  # nothing in common to compare
        return {"problems": 0, "first_s": None, "again_s": None, "ratio": None}
    first_s, again_s = seconds_to(first["timeline"], both), seconds_to(again["timeline"], both)
    ratio = round(first_s / again_s, 2) if first_s and again_s else None
    return {"problems": both, "first_s": first_s, "again_s": again_s, "ratio": ratio}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--workloads", default="smallest:1")
    parser.add_argument("--limit", type=float, default=480.0, help="seconds before a run is cut (its finished problems still count)")
    parser.add_argument("--again", action="store_true", help="run a second time over the same baselines folder")
    parser.add_argument("--again-limit", type=float, default=None, help="seconds before the second run is cut (default: --limit)")
    parser.add_argument("--work", type=Path, default=None, help="folder for baselines and run folders (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=Path("run-at-scale.json"))
    args, extra = parser.parse_known_args()  # options this script does not know go to solbench run
    work = args.work or Path(tempfile.mkdtemp(prefix="run-at-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {"first": one_run(args.paths, args.workloads, work / "baselines", work / "first", args.limit, extra)}
    print(json.dumps({k: v for k, v in results["first"].items() if k not in ("baseline_failures", "stdout_tail", "timeline")}, indent=1), flush=True)
    if args.again:
        results["again"] = one_run(args.paths, args.workloads, work / "baselines", work / "again", args.again_limit or args.limit, extra)
        results["speedup_of_the_second_run"] = second_run_speedup(results["first"], results["again"])
        print(json.dumps({k: v for k, v in results["again"].items() if k not in ("baseline_failures", "stdout_tail", "timeline")}, indent=1))
        print("second run:", results["speedup_of_the_second_run"])
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
