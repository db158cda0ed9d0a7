"""How long `solbench sol` takes over whole datasets in the public layout, and how much memory.

By default it writes the synthetic 241-problem dataset (python3 -m solbench.dataset.synthetic) to a
temporary folder and runs `solbench sol SYNTHETIC solbench:models --hardware B200 --json` (about
382 problems) once as a subprocess per run; it reports the wall time, the time to the first JSON
line, the peak resident memory (all the processes together, and the largest one), the problems and
workloads analysed, the problems that failed (their stderr lines) and the slowest problems, from the
`problem_analysis_s` field that every JSON line carries (the seconds its problem's analysis took in
its worker). With --runs N the figures are given for each run and their median. `--profile`
analyses in this process instead and lists the slowest problems with how many captures each took.

    python3 benchmarks/sol_dataset_speed.py [PATH...] [--runs 3] [--top 10] [--jobs N] [--problem-timeout S] [--max-memory-gb G]
    python3 benchmarks/sol_dataset_speed.py [PATH...] --profile [--top 15]

Target (issue 28): about 400 problems in at most 2 minutes on the 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SETS = ["solbench:models"]  # beside the synthetic dataset written for the run


def _paths(given: list[str], scratch: Path) -> list[str]:
    if given:
        return given
    from solbench.dataset.synthetic import generate_dataset

    target = scratch / "synthetic"
    generate_dataset(target)
    return [str(target), *DEFAULT_SETS]


def _rss_by_pid(pid: int) -> dict[int, float]:
    """Resident memory (MB) of a process and each of its descendants, from /proc (Linux)."""
    found, stack = {}, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            found[current] = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return found


@dataclass
class Run:
    """What one `solbench sol --json` run printed and took."""

    wall_s: float
    cpu_s: float  # user + system seconds of the run's processes, all of them (what a busy machine does not change much)
    first_line_s: float | None
    peak_total_mb: float
    peak_process_mb: float
    exit_code: int
    rows: list[dict] = field(repr=False)
    errors: list[str] = field(repr=False)


def _one_run(command: list[str]) -> Run:
    started, cpu = time.monotonic(), _children_cpu_s()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = [0.0, 0.0]
    errors: list[str] = []

    def sample() -> None:  # the peak of the whole process tree (the analysis runs in worker processes)
        while process.poll() is None:
            sizes = _rss_by_pid(process.pid)
            peaks[0], peaks[1] = max(peaks[0], sum(sizes.values())), max([peaks[1], *sizes.values()])
            time.sleep(0.2)

    def read_stderr() -> None:
        errors.extend(line.rstrip("\n") for line in process.stderr)  # type: ignore[union-attr]

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for thread in threads:
        thread.start()
    rows, first = [], None
    for line in process.stdout:  # type: ignore[union-attr]
        if line.startswith("{"):
            first = first if first is not None else time.monotonic() - started
            rows.append(json.loads(line))
    process.wait()
    wall = time.monotonic() - started
    for thread in threads:
        thread.join()
    return Run(wall, _children_cpu_s() - cpu, first, peaks[0], peaks[1], process.returncode, rows, [line for line in errors if line.strip()])


def _children_cpu_s() -> float:
    """CPU seconds of the ended children (and theirs, once waited for): the CLI joins its worker processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _print_run(number: int, run: Run, top: int) -> None:
    problems = {row["problem"]: row for row in run.rows}
    uncovered = Counter(op for row in run.rows for op in row["uncovered_ops"])
    first = f"{run.first_line_s:.1f} s" if run.first_line_s is not None else "never"
    print(f"run {number}: {len(problems)} problems ({len(run.rows)} workloads) in {run.wall_s:.1f} s wall ({run.cpu_s:.0f} s CPU), first line after {first}, "
          f"exit code {run.exit_code}; peak RSS {run.peak_total_mb:.0f} MB all processes together, {run.peak_process_mb:.0f} MB the largest")
    print(f"  {len(run.errors)} failure lines; {sum(1 for r in run.rows if r['partial'])} partial results; uncovered ops: {dict(uncovered) or 'none'}")
    for line in run.errors[:20]:
        print(f"  {line[:240]}")
    workloads = Counter(row["problem"] for row in run.rows)
    slowest = sorted(problems.values(), key=lambda row: -row.get("problem_analysis_s", 0.0))[:top]
    print(f"  the slowest {len(slowest)} problems (problem_analysis_s):")
    for row in slowest:
        print(f"    {row.get('problem_analysis_s', float('nan')):7.2f} s  {row['problem']} ({workloads[row['problem']]} workloads)")


def _subprocess_runs(paths: list[str], runs: int, top: int, extra: list[str]) -> int:
    command = [sys.executable, "-m", "solbench.cli", "sol", *paths, "--json", *extra]
    print("$ " + " ".join(command[2:]))
    done = []
    for number in range(1, runs + 1):
        done.append(_one_run(command))
        _print_run(number, done[-1], top)
    if runs > 1:
        firsts = [run.first_line_s for run in done if run.first_line_s is not None]
        print(f"median of {runs} runs: {statistics.median(r.wall_s for r in done):.1f} s wall ({statistics.median(r.cpu_s for r in done):.0f} s CPU), first line after "
              f"{statistics.median(firsts) if firsts else float('nan'):.1f} s, peak RSS {statistics.median(r.peak_total_mb for r in done):.0f} MB "
              f"all processes, {statistics.median(r.peak_process_mb for r in done):.0f} MB the largest")
    return 0 if all(run.exit_code == 0 and not any(row["uncovered_ops"] for row in run.rows) for run in done) else 1


def _profile_problem(task: tuple) -> tuple:
    """One problem analysed as `solbench sol` does: (CPU s, wall s, name, workloads, captures, why concrete, failures)."""
    from solbench.sol.analysis import analyze, problem_captures
    from solbench.sol.api import fewer_collections, policy_for

    problem, hardware = task
    began, cpu = time.monotonic(), time.process_time()
    captures = problem_captures(problem)
    failures = []
    with fewer_collections():  # the garbage collector's setting of solbench sol's analyses
        for workload in sorted(problem.workloads, key=lambda w: _size(problem, w)):  # as solbench sol does: small first
            try:
                analyze(problem, workload, hardware, policy_for(problem), captures)
            except Exception as exc:  # noqa: BLE001 - counted and shown, the others go on
                failures.append(f"{problem.name}/{workload.uuid[:8]}: {type(exc).__name__}: {str(exc)[:160]}")
    return (time.process_time() - cpu, time.monotonic() - began, problem.name, len(problem.workloads), captures.captured,
            captures.concrete_only or "", failures)


def _profile(paths: list[str], top: int, verbose: bool = False, jobs: int = 1, save: Path | None = None) -> int:
    from solbench.dataset import resolve_set_paths
    from solbench.sol.hardware import get_hardware
    from solbench.data.loaders import load_problems

    hardware = get_hardware("H200")
    problems = load_problems(resolve_set_paths([Path(p) for p in paths]), synthesize_missing_blobs=True)
    started = time.monotonic()
    tasks = [(problem, hardware) for problem in problems]
    rows = []

    def keep(row: tuple) -> None:
        rows.append(row)
        if verbose:
            print(f"{row[0]:7.2f} s CPU  {row[2]}: {row[3]} workloads, {row[4]} captures  {row[5][:100]}", flush=True)

    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for row in pool.map(_profile_problem, tasks):
                keep(row)
    else:
        for task in tasks:
            keep(_profile_problem(task))
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
    parser.add_argument("paths", nargs="*", help="datasets or sets (default: the synthetic dataset and solbench:models)")
    parser.add_argument("--hardware", default="B200")
    parser.add_argument("--runs", type=int, default=1, help="runs of the whole thing, one after the other (their median is given)")
    parser.add_argument("--top", type=int, default=10, help="the slowest problems listed")
    parser.add_argument("--jobs", type=int, help="passed on to solbench sol --jobs (with --profile: processes of this script)")
    parser.add_argument("--problem-timeout", type=float, help="passed on to solbench sol")
    parser.add_argument("--max-memory-gb", type=float, help="passed on to solbench sol")
    parser.add_argument("--profile", action="store_true", help="analyse in this process and list the slowest problems")
    parser.add_argument("--verbose", action="store_true", help="with --profile: a line per problem as it is done")
    parser.add_argument("--save", type=Path, help="with --profile: write each problem's CPU and wall time to this JSON file")
    args = parser.parse_args()
    extra = ["--hardware", args.hardware]
    for option, value in (("--jobs", args.jobs), ("--problem-timeout", args.problem_timeout), ("--max-memory-gb", args.max_memory_gb)):
        extra += [option, str(value)] if value is not None else []
    with tempfile.TemporaryDirectory() as scratch:
        paths = _paths(args.paths, Path(scratch))
        if args.profile:
            return _profile(paths, args.top, args.verbose, args.jobs or 1, args.save)
        return _subprocess_runs(paths, args.runs, args.top, extra)


if __name__ == "__main__":
    sys.exit(main())
