"""Every reference of a dataset against itself, under several seeds: `solbench run` for each seed
(correctness only with --no-timing), then one table of what did not pass (a reference that fails its
own check is a bug in solbench unless its trace explains the reference's non-determinism: the
evaluator runs a reference that was missed again (up to 3 times), and notes `reference-nondeterministic`
where its two results disagree).

    python3 benchmarks/reference_self_check.py DATASET... [--seeds 1 2] [--out DIR] [--no-timing]
                                               [--workloads all|smallest:N] [--shards K] [--parallel P]
                                               [--limit S] [--resume [--retry-failures]] [--no-retry-memory]

`--shards K` splits the problem folders into K groups of about equal workload counts and runs one
`solbench run` per group and seed, P of them at a time: correctness-only sweeps of a whole dataset
share one GPU this way (never use it with timing: timed runs must have the GPU alone). Correctness-only
runs get SOLBENCH_SHARED_DEVICE=1: each process hands its allocator's cached device memory back after
every request (one problem's largest workload does not keep its memory from the other runs, nor the
reference worker's from the solution worker), and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless
set already (freed large blocks are not split up by small tensors). The problems
whose traces say they ran out of device memory beside the others are then run again, half as many at
a time, and what still ran out, alone (their new traces replace the old; --no-retry-memory turns
this off). `--limit S` stops what still runs after S seconds; the traces written so far are kept and
counted, and `--resume` (same --out, same options) evaluates only the workloads they lack, so a sweep
can span several sittings; workloads that ran out of device memory in an earlier sitting are
evaluated again (their traces are moved to traces-*.memory-failures.jsonl); with --retry-failures, every
workload that did not pass is (traces-*.earlier-failures.jsonl): a sweep resumed after a fix. The split
into shards is kept in DIR/sweep-plan.json, and a resume that would split the problems otherwise (another
dataset list or --shards) stops with an error; a dataset path that does not exist stops the sweep too.

Writes DIR/traces-seed<S>[-shard<i>].jsonl, each run's folder and log, and DIR/self-check.json (per
seed: problems, workloads, statuses, wall time, problems not reached and, with --workloads all, the
workloads of reached problems that have no trace); exit code 1 when any workload of any seed did not
pass or was not reached.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from solbench.bench.memory import says_out_of_memory, shared_device_environment
from solbench.data.loaders import load_traces
from solbench.dataset import resolve_set_paths


def problem_folders(datasets: list[Path]) -> list[Path]:
    """The problem folders under each dataset path (a folder holding definition.json), in a stable order.
    A path that does not exist is an error: a sweep must not quietly cover less than it was asked to."""
    folders: list[Path] = []
    for given, path in zip(datasets, resolve_set_paths(datasets)):
        if not path.exists():
            raise SystemExit(f"reference_self_check.py: error: {given}: no such dataset folder")
        found = [path] if (path / "definition.json").is_file() else sorted(d.parent for d in path.rglob("definition.json"))
        folders += [f for f in found if f not in folders]
    return folders


def workload_uuids(folder: Path) -> set[str]:
    """The workloads a problem folder declares (its workload.jsonl; none where it has none or cannot be read)."""
    uuids = set()
    try:
        for line in (folder / "workload.jsonl").read_text().splitlines():
            entry = json.loads(line) if line.strip() else None
            if isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
                uuids.add(entry["uuid"])
    except (OSError, ValueError):
        pass
    return uuids


def same_plan_or_exit(out: Path, groups: list[list[Path]], resume: bool) -> None:
    """A resumed sweep must split the problems as the sitting before did: its traces are kept per shard, and
    other shards would evaluate again what is done and leave undone what the old shards lacked. The plan is
    kept in OUT/sweep-plan.json."""
    plan_file = out / "sweep-plan.json"
    plan = [[str(folder) for folder in group] for group in groups]
    if resume and plan_file.exists():
        try:
            earlier = json.loads(plan_file.read_text()).get("shards")
        except (OSError, ValueError, AttributeError):
            earlier = None
        if earlier != plan:
            raise SystemExit(f"reference_self_check.py: error: {plan_file}: this sweep was split into other shards of other problem "
                             "folders; resume it with the same datasets and --shards, or use another --out")
    plan_file.write_text(json.dumps({"shards": plan}, indent=1) + "\n")


def definition_name(folder: Path) -> str:
    try:
        return str(json.loads((folder / "definition.json").read_text()).get("name", folder.name))
    except (OSError, ValueError, AttributeError):
        return folder.name


def shards_of(folders: list[Path], count: int) -> list[list[Path]]:
    """`count` groups of about equal workload counts (the largest problems placed first, each on the lightest group)."""
    def weight(folder: Path) -> int:
        return len(workload_uuids(folder)) or 1

    groups: list[list[Path]] = [[] for _ in range(max(1, min(count, len(folders))))]
    loads = [0] * len(groups)
    for folder in sorted(folders, key=weight, reverse=True):
        lightest = loads.index(min(loads))
        groups[lightest].append(folder)
        loads[lightest] += weight(folder)
    return [sorted(group) for group in groups if group]


# Besides the allocators' own reports: cuBLAS/cuDNN handles and CUDA contexts that could not be made on a full device,
# and cuDNN's internal error (seen only in crowded sweeps: 036_sdpa_prefill_causal, 2026-12-02; the run alone tells).
CROWDED_DEVICE = ("ALLOC_FAILED", "CUDA-capable device(s) is/are busy", "CUDNN_STATUS_INTERNAL_ERROR")


def ran_out_of_memory(log: str) -> bool:
    return says_out_of_memory(log) or any(phrase in log for phrase in CROWDED_DEVICE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--out", type=Path, default=Path("self-check"))
    parser.add_argument("--no-timing", action="store_true", help="correctness only (faster)")
    parser.add_argument("--workloads", default="all")
    parser.add_argument("--shards", type=int, default=1, help="split the problems into this many groups, one run each")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time (with --no-timing only)")
    parser.add_argument("--limit", type=float, default=None, help="seconds after which runs still going are stopped")
    parser.add_argument("--resume", action="store_true",
                        help="keep the traces already in --out and evaluate only the workloads they lack (a sweep longer than one sitting)")
    parser.add_argument("--retry-failures", action="store_true",
                        help="with --resume: evaluate again every workload whose trace did not pass (after a fix), not only memory failures")
    parser.add_argument("--no-retry-memory", dest="retry_memory", action="store_false",
                        help="with --parallel: do not run again, alone, the problems that ran out of device memory beside the others")
    args = parser.parse_args()
    if args.retry_failures and not args.resume:
        parser.error("--retry-failures goes with --resume (without it every workload is evaluated anyway)")
    if args.parallel > 1 and not args.no_timing:
        parser.error("--parallel above 1 needs --no-timing: timed runs must have the device alone")
    args.out.mkdir(parents=True, exist_ok=True)
    folders = problem_folders(args.datasets)
    groups = shards_of(folders, args.shards) if args.shards > 1 and folders else [list(args.datasets)]  # no problem folders (a FlashInfer-Trace folder): one run
    started = time.monotonic()
    same_plan_or_exit(args.out, groups, args.resume)
    deadline = started + args.limit if args.limit else None
    runs = [(seed, f"seed{seed}" + (f"-shard{index}" if len(groups) > 1 else ""), group) for seed in args.seeds for index, group in enumerate(groups)]
    if args.resume:
        for _, stem, _ in runs:
            set_failures_aside(args.out, stem, every_failure=args.retry_failures)
    done = run_all(args, runs, args.parallel, deadline)
    retried: list[str] = []  # the retry runs, in the order their traces win
    names = {definition_name(folder): folder for folder in folders}
    for parallel in sorted({max(1, args.parallel // 2), 1}, reverse=True) if args.parallel > 1 and args.retry_memory else []:
        again = sorted({(seed, trace.definition) for stem, (seed, _, traces_path, _) in done.items() if traces_path.exists()
                        and (not retried or stem in retried) for trace in load_traces(traces_path)
                        if trace.evaluation.status.value != "PASSED" and ran_out_of_memory(trace.evaluation.log)})
        label = "alone" if parallel == 1 else f"by{parallel}"
        runs = [(seed, f"seed{seed}-{label}-{name}", [names[name]]) for seed, name in again if name in names]
        if runs:
            print(f"{len(runs)} problem runs ran out of device memory beside the others: each again, "
                  + ("alone" if parallel == 1 else f"{parallel} at a time"), flush=True)
        if args.resume:
            for _, stem, _ in runs:
                set_failures_aside(args.out, stem)
        done.update(run_all(args, runs, parallel, deadline))
        retried += [stem for _, stem, _ in runs]
    return report(args, folders, done, retried, time.monotonic() - started)


def set_failures_aside(out: Path, stem: str, every_failure: bool = False) -> None:
    """For a resumed sweep: a run's traces that ran out of device memory (with `every_failure`, all that did
    not pass) are moved to traces-<stem>.memory-failures.jsonl (.earlier-failures.jsonl), from the traces
    file and the run folder's, so those workloads are evaluated again."""
    what, suffix = ("did not pass", "earlier-failures") if every_failure else ("ran out of device memory", "memory-failures")
    for path in (out / f"traces-{stem}.jsonl", out / f"run-{stem}" / "traces.jsonl"):
        if not path.exists():
            continue
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        traces = load_traces(path)
        if len(traces) != len(lines):  # not one trace per line: left as it is
            continue
        again = [trace.evaluation is not None and trace.evaluation.status.value != "PASSED"
                 and (every_failure or ran_out_of_memory(trace.evaluation.log)) for trace in traces]
        failed = [line for line, redo in zip(lines, again) if redo]
        if not failed:
            continue
        kept = [line for line, redo in zip(lines, again) if not redo]
        if path.parent == out:
            with (out / f"traces-{stem}.{suffix}.jsonl").open("a") as aside:
                aside.write("".join(line + "\n" for line in failed))
        path.write_text("".join(line + "\n" for line in kept))
        print(f"{path}: {len(failed)} workloads that {what} are evaluated again", flush=True)


def run_all(args: argparse.Namespace, runs: list[tuple[int, str, list[Path]]], parallel: int, deadline: float | None) -> dict:
    """Each run (seed, name, problem paths) as one `solbench run`, `parallel` at a time, until the deadline:
    name -> (seed, exit code, traces file, stopped at the deadline)."""
    waiting, going, done = list(runs), {}, {}
    while waiting or going:
        while waiting and len(going) < parallel and (deadline is None or time.monotonic() < deadline):
            seed, stem, paths = waiting.pop(0)
            traces_path = args.out / f"traces-{stem}.jsonl"
            if not args.resume:
                traces_path.unlink(missing_ok=True)
            run_dir = args.out / f"run-{stem}"
            if run_dir.exists() and not args.resume:
                print(f"{stem}: the earlier run in {run_dir} is replaced (--resume continues it instead)", flush=True)
                shutil.rmtree(run_dir)
            command = [sys.executable, "-m", "solbench.cli", "run", *map(str, paths), "--seed", str(seed), "--synthesize-missing-blobs",
                       "--workloads", args.workloads, "-o", str(traces_path), "--run-dir", str(run_dir)]
            command += (["--no-timing"] if args.no_timing else []) + (["--resume"] if args.resume else [])
            log = (args.out / f"run-{stem}.log").open("a" if args.resume else "w")
            environment = shared_device_environment(dict(os.environ)) if args.no_timing else None  # alone too: a run's two workers share the device
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=environment)
            going[stem] = (seed, process, time.monotonic(), traces_path, log)
        if deadline is not None and time.monotonic() > deadline:
            waiting.clear()
        for stem, (seed, process, begun, traces_path, log) in list(going.items()):
            expired = deadline is not None and time.monotonic() > deadline
            if process.poll() is None and not expired:
                continue
            if process.poll() is None:  # the run and its workers (its own process group)
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            log.close()
            done[stem] = (seed, process.returncode, traces_path, expired)
            del going[stem]
            print(f"{stem}: exit code {process.returncode} after {time.monotonic() - begun:.0f} s" + (" (stopped at --limit)" if expired else ""), flush=True)
        time.sleep(0.5)
    return done


def report(args: argparse.Namespace, folders: list[Path], done: dict, retried: list[str], wall: float) -> int:
    """Per seed: the traces of every run, those of a problem run again replacing its earlier ones (the later retry wins)."""
    summary: dict[str, object] = {"datasets": [str(d) for d in args.datasets], "parallel": args.parallel, "wall_s": round(wall, 1), "seeds": {}}
    failures: list[tuple[int, str, str, str, str]] = []
    incomplete = False
    names = {folder: definition_name(folder) for folder in folders}
    # with every workload asked for, a problem whose traces lack some of its workloads was not wholly reached
    declared = {folder: workload_uuids(folder) if args.workloads == "all" else set() for folder in folders}
    for seed in args.seeds:
        runs = {stem: entry for stem, entry in done.items() if entry[0] == seed}
        by_workload: dict[tuple[str, str], object] = {}
        refused: list[str] = []
        for stem in sorted(runs, key=lambda name: retried.index(name) + 1 if name in retried else 0):  # retries last: their traces win
            _, _, traces_path, _ = runs[stem]
            for trace in load_traces(traces_path) if traces_path.exists() else []:
                by_workload[(trace.definition, trace.workload.uuid)] = trace
            log = args.out / f"run-{stem}.log"
            refused += [line for line in log.read_text().splitlines() if line.startswith("refused: ")] if log.exists() else []
        traces = list(by_workload.values())
        statuses = Counter(t.evaluation.status.value for t in traces)
        problems = {t.definition for t in traces}
        not_reached = [str(folder) for folder, name in names.items()
                       if name not in problems and not any(str(folder) in line for line in refused)]
        traced: dict[str, set[str]] = {}
        for trace in traces:
            traced.setdefault(trace.definition, set()).add(trace.workload.uuid)
        missing = sorted((name, len(declared[folder] - traced[name])) for folder, name in names.items()
                         if name in problems and declared[folder] - traced[name])
        incomplete = incomplete or bool(not_reached) or bool(missing)
        nondeterministic = [f"{t.definition} / {t.workload.uuid[:12]}" for t in traces if "note [reference-nondeterministic]" in t.evaluation.log]
        for trace in traces:
            if trace.evaluation.status.value != "PASSED":
                first = next((line for line in trace.evaluation.log.splitlines() if line.strip()), "")
                failures.append((seed, trace.definition, trace.workload.uuid, trace.evaluation.status.value, first[:160]))
        codes = [runs[stem][1] for stem in sorted(runs)]
        summary["seeds"][str(seed)] = {"runs": len(runs), "run_again": sorted(stem for stem in runs if stem in retried), "exit_codes": codes,
                                        "problems": len(problems), "workloads": len(traces), "statuses": dict(statuses), "refused": refused,
                                        "not_reached": not_reached, "workloads_not_reached": dict(missing),
                                        "reference_nondeterministic": nondeterministic}
        print(f"seed {seed}: {len(problems)} problems, {len(traces)} workloads, {dict(statuses)}, {len(refused)} refused"
              + (f", {len(not_reached)} problems not reached" if not_reached else "")
              + (f", {sum(count for _, count in missing)} workloads of {len(missing)} problems not reached" if missing else "")
              + (f", {sum(stem in retried for stem in runs)} problem runs again after running out of memory" if retried else ""), flush=True)
        for line in refused:
            print(f"  {line}")
        for name, count in missing:
            print(f"  not reached: {count} workloads of {name}")
        if nondeterministic:  # explained by the trace: run twice on the same inputs, the reference disagreed with itself
            print(f"  reference non-deterministic beyond the tolerance (the trace says so): {', '.join(nondeterministic)}")
    print(f"{wall:.0f} s wall, {args.parallel} run(s) at a time")
    for seed, problem, workload, status, line in failures:
        print(f"seed {seed}: {problem} / {workload[:12]}: {status}: {line}")
    summary["failures"] = [dict(zip(("seed", "problem", "workload", "status", "log"), f)) for f in failures]
    (args.out / "self-check.json").write_text(json.dumps(summary, indent=1) + "\n")
    refused_any = any(s["refused"] for s in summary["seeds"].values())
    return 1 if failures or refused_any or incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
