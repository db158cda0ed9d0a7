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


def _profile(dataset: Path, top: int, verbose: bool = False) -> int:
    from solbench.sol.analysis import analyze, decomposition_for
    from solbench.sol.capture import Captures
    from solbench.sol.hardware import get_hardware
    from solbench.data.loaders import load_problems

    hardware = get_hardware("H200")
    problems = load_problems([dataset], synthesize_missing_blobs=True)
    rows = []
    started = time.monotonic()
    failures = 0
    for problem in problems:
        began = time.monotonic()
        captures = Captures(problem, decomposition_for)
        for workload in sorted(problem.workloads, key=lambda w: _size(problem, w)):  # as solbench sol does: small first
            try:
                analyze(problem, workload, hardware, "relaxed", captures)
            except Exception as exc:  # noqa: BLE001 - counted and shown, the others go on
                failures += 1
                print(f"{problem.name}/{workload.uuid[:8]}: {type(exc).__name__}: {str(exc)[:160]}")
        rows.append((time.monotonic() - began, problem.name, len(problem.workloads), captures.captured, captures.concrete_only or ""))
        if verbose:
            print(f"{rows[-1][0]:7.2f} s  {problem.name}: {rows[-1][2]} workloads, {rows[-1][3]} captures  {rows[-1][4][:100]}", flush=True)
    total = time.monotonic() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workloads = sum(r[2] for r in rows)
    captured = sum(r[3] for r in rows)
    print(f"{len(problems)} problems, {workloads} workloads in {total:.1f} s ({captured} captures), peak RSS {peak_mb:.0f} MB, {failures} failures")
    for seconds, name, count, made, why in sorted(rows, reverse=True)[:top]:
        print(f"  {seconds:6.2f} s  {name}: {count} workloads, {made} captures  {why[:90]}")
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dataset = _dataset(args.dataset, Path(scratch))
        return _profile(dataset, args.top, args.verbose) if args.profile else _subprocess_run(dataset)


if __name__ == "__main__":
    sys.exit(main())
