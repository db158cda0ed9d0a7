"""How long `solbench sol` takes over a whole dataset in the public layout, and how much memory.

By default it writes the synthetic 235-problem dataset (python3 -m solbench.dataset.synthetic) to a
temporary folder, runs `solbench sol DIR --json` once as a subprocess and reports its wall time,
peak memory (max RSS of the children), workloads analysed, failures and uncovered ops. `--profile`
analyses in this process instead and lists the slowest problems with how many captures each took.

    python3 benchmarks/sol_dataset_speed.py [DATASET] [--profile] [--top 15]

Targets (issue 11): every workload analysed with no uncovered op in at most 2 minutes and 2 GB on
the 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def _dataset(path: Path | None, scratch: Path) -> Path:
    if path is not None:
        return path
    from solbench.dataset.synthetic import generate_dataset

    target = scratch / "synthetic"
    generate_dataset(target)
    return target


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, from /proc (Linux)."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _subprocess_run(dataset: Path) -> int:
    import threading

    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "solbench.cli", "sol", str(dataset), "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    peak = [0.0]

    def sample() -> None:  # the peak of the whole process tree (the analysis runs in several processes)
        while process.poll() is None:
            peak[0] = max(peak[0], _tree_rss_mb(process.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    sampler.join()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    wall = time.monotonic() - started
    peak_mb = peak[0]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failures = [line for line in done.stderr.splitlines() if "cannot analyse" in line or ": " in line and "error" in line.lower()]
    uncovered = Counter(op for row in rows for op in row["uncovered_ops"])
    print(f"solbench sol {dataset}: {len(rows)} workloads in {wall:.1f} s wall, peak RSS of all its processes {peak_mb:.0f} MB, "
          f"exit code {done.returncode}")
    print(f"  {len(failures)} failure lines; {sum(1 for r in rows if r['partial'])} partial results; uncovered ops: {dict(uncovered) or 'none'}")
    for line in failures[:20]:
        print(f"  {line[:240]}")
    return 0 if done.returncode == 0 and not uncovered else 1


def _profile_problem(task: tuple) -> tuple:
    """One problem analysed as `solbench sol` does: (CPU s, wall s, name, workloads, captures, why concrete, failures)."""
    from solbench.sol.analysis import analyze, problem_captures
    from solbench.sol.api import policy_for

    problem, hardware = task
    began, cpu = time.monotonic(), time.process_time()
    captures = problem_captures(problem)
    failures = []
    for workload in sorted(problem.workloads, key=lambda w: _size(problem, w)):  # as solbench sol does: small first
        try:
            analyze(problem, workload, hardware, policy_for(problem), captures)
        except Exception as exc:  # noqa: BLE001 - counted and shown, the others go on
            failures.append(f"{problem.name}/{workload.uuid[:8]}: {type(exc).__name__}: {str(exc)[:160]}")
    return (time.process_time() - cpu, time.monotonic() - began, problem.name, len(problem.workloads), captures.captured,
            captures.concrete_only or "", failures)


def _profile(dataset: Path, top: int, verbose: bool = False, jobs: int = 1, save: Path | None = None) -> int:
    from solbench.sol.hardware import get_hardware
    from solbench.data.loaders import load_problems

    hardware = get_hardware("H200")
    problems = load_problems([dataset], synthesize_missing_blobs=True)
    started = time.monotonic()
    tasks = [(problem, hardware) for problem in problems]
    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = pool.map(_profile_problem, tasks)
            rows = []
            for row in done:
                rows.append(row)
                if verbose:
                    print(f"{row[0]:7.2f} s CPU  {row[2]}: {row[3]} workloads, {row[4]} captures  {row[5][:100]}", flush=True)
    else:
        rows = []
        for task in tasks:
            rows.append(_profile_problem(task))
            if verbose:
                row = rows[-1]
                print(f"{row[0]:7.2f} s CPU  {row[2]}: {row[3]} workloads, {row[4]} captures  {row[5][:100]}", flush=True)
    total = time.monotonic() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workloads = sum(r[3] for r in rows)
    captured = sum(r[4] for r in rows)
    failures = [line for r in rows for line in r[6]]
    for line in failures:
        print(line)
    print(f"{len(problems)} problems, {workloads} workloads in {total:.1f} s wall, {sum(r[0] for r in rows):.1f} s CPU in the analyses "
          f"({captured} captures), peak RSS {peak_mb:.0f} MB (this process), {len(failures)} failures")
    for cpu, wall, name, count, made, why, _ in sorted(rows, reverse=True)[:top]:
        print(f"  {cpu:6.2f} s CPU {wall:6.2f} s wall  {name}: {count} workloads, {made} captures  {why[:90]}")
    if save is not None:
        save.write_text(json.dumps([{"problem": r[2], "cpu_s": r[0], "wall_s": r[1], "workloads": r[3], "captures": r[4]} for r in rows], indent=1))
    return 1 if failures else 0


def _size(problem, workload) -> int:
    import math

    axes = problem.axes(workload)
    return sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes))) for spec in problem.definition.inputs.values() if spec.shape is not None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path)
    parser.add_argument("--profile", action="store_true", help="analyse in this process and list the slowest problems")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--verbose", action="store_true", help="with --profile: a line per problem as it is done")
    parser.add_argument("--jobs", type=int, default=1, help="with --profile: problems analysed in this many processes (CPU times stay per problem)")
    parser.add_argument("--save", type=Path, help="with --profile: write each problem's CPU and wall time to this JSON file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dataset = _dataset(args.dataset, Path(scratch))
        return _profile(dataset, args.top, args.verbose, args.jobs, args.save) if args.profile else _subprocess_run(dataset)


if __name__ == "__main__":
    sys.exit(main())
