"""Is E_SOL a valid bound on a real GPU, and how tight is it? (The energy counterpart of `sol --verify`.)

1. `solbench run --energy` over the problems (default: the bundled ones): every workload chosen gets its
   baseline candidates evaluated with energy on (the eager reference and each torch.compile mode), in
   the hardened evaluator, with E_SOL priced on the hardware spec (it must carry energy figures:
   `solbench hw calibrate --energy -o SPEC.yaml`, then `--hardware SPEC.yaml` here).
2. Every candidate's measured joules per call against its E_SOL: below it by more than the reading's
   resolution is a violation (the bound, or the measurement, is wrong); a ratio below 1 within the
   resolution is listed as such. The least and median ratio per op class say how tight the bound is,
   over the readings finer than their own value (a reading within its resolution, a call far smaller
   than its setup, is counted apart as unresolved).
3. Repeatability: one workload (the first of `--repeat-problem`) evaluated `--repeats` times in one
   evaluation (same worker, fresh inputs each time): the spread of its joules per call, of its mean
   power and of its latency.

    python benchmarks/energy_bound.py --hardware SPEC.yaml --out DIR [PATHS...] [--workloads spread:2]
        [--compile-modes default] [--repeats 5] [--repeat-problem NAME] [--no-repeat] [--limit S] [--device auto]

DIR gets energy_bound.json (every row, the per-class table, the repeat series) and energy_bound.txt
(the same as text), and the run's log (run.log); the run folder and baselines go to a temporary folder
unless --keep names one. Exit code 1 on a violation, on a run that failed to start, or when nothing
could be measured (no counter: the run's notes say why).

`--reprice EARLIER/energy_bound.json` runs nothing: the rows measured then are priced again with
today's E_SOL on --hardware (a changed bound checked against joules already measured, on any machine;
each row keeps the E_SOL it had as `earlier_sol_j`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="problem or dataset folders (default: the bundled problems)")
    parser.add_argument("--hardware", help="a spec with energy figures (name or YAML file); without one, no E_SOL (energies only)")
    parser.add_argument("--out", type=Path, required=True, help="folder for energy_bound.json, energy_bound.txt and run.log")
    parser.add_argument("--workloads", default="spread:2", help="all, smallest:N or spread:N (default spread:2)")
    parser.add_argument("--compile-modes", default="default", help="torch.compile modes among the candidates (default: default; none: eager only)")
    parser.add_argument("--repeats", type=int, default=5, help="evaluations of the repeat workload (default 5)")
    parser.add_argument("--repeat-problem", help="the problem whose first workload is repeated (default: the first problem)")
    parser.add_argument("--no-repeat", action="store_true", help="skip the repeatability series")
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds the run may take before it is stopped (default 1800)")
    parser.add_argument("--keep", type=Path, help="keep the run folder and baselines here (default: a temporary folder)")
    parser.add_argument("--device", default="auto", help="auto, cuda, cuda:N or cpu (on a CPU there is no counter: the notes say so)")
    parser.add_argument("--reprice", type=Path, help="an earlier energy_bound.json: its rows priced again on --hardware, nothing run")
    return parser.parse_args(argv)


def run_candidates(args: argparse.Namespace, work: Path) -> tuple[int, Path, Path]:
    """`solbench run --energy` into work/run with baselines in work/baselines; its exit code and those folders."""
    run_dir, baselines = work / "run", work / "baselines"
    command = [sys.executable, "-m", "solbench.cli", "run", *args.paths, "--energy", "--workloads", args.workloads, "--compile-modes",
               args.compile_modes, "--run-dir", str(run_dir), "--baselines", str(baselines), "--device", args.device]
    if args.hardware:
        command += ["--hardware", args.hardware]
    with (args.out / "run.log").open("w") as log:
        log.write(" ".join(command) + "\n")
        log.flush()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = process.wait(timeout=args.limit)
        except subprocess.TimeoutExpired:  # the run and what it started (workers, compiles ahead) off the GPU before the repeats:
            os.killpg(process.pid, signal.SIGINT)  # interrupted, it closes its workers (their own sessions) on the way out
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            log.write(f"\nstopped at the limit of {args.limit:g} s\n")
            code = 124
    return code, run_dir, baselines


def candidate_rows(baselines: Path, problems: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per candidate trace with energy: problem, op class, candidate, workload, joules, E_SOL, ratio."""
    from solbench.data.loaders import load_traces
    from solbench.score.categories import categories_of

    rows = []
    for path in sorted(baselines.glob("*.traces.jsonl")):
        for trace in load_traces(path):
            performance = trace.evaluation.performance if trace.evaluation is not None else None
            energy = performance.energy if performance is not None else None
            if energy is None:
                continue
            problem = problems.get(trace.definition)
            op_class = categories_of(problem)["op_type"] if problem is not None else "(unknown)"
            ratio = energy.joules / energy.sol_j if energy.joules is not None and energy.sol_j else None
            rows.append({"problem": trace.definition, "op_class": op_class, "candidate": trace.solution, "workload": trace.workload.uuid,
                         "status": trace.evaluation.status.value, "latency_ms": performance.latency_ms, "sol_ms": performance.sol_ms,
                         "joules": energy.joules, "sol_j": energy.sol_j, "ratio": ratio, "mean_power_w": energy.mean_power_w,
                         "idle_power_w": energy.idle_power_w, "window_s": energy.window_s, "calls": energy.calls,
                         "overhead_j": energy.overhead_j, "resolution_j": energy.resolution_j, "calls_per_step": energy.calls_per_step,
                         "inputs_ahead": energy.inputs_ahead, "note": energy.note})
    return rows


def resolved(row: dict[str, Any]) -> bool:
    """A reading larger than its resolution (else the call is lost in its setup's energy): the score's rule."""
    from solbench.energy.score import resolved as above_resolution

    return above_resolution(row["joules"], row.get("resolution_j"))


def below_beyond_resolution(row: dict[str, Any]) -> bool:
    """Below E_SOL by more than the reading's resolution: the score's margin (solbench.score.formula) with no
    allowance for the bound's own uncertainty, since the bound is what is checked here."""
    from solbench.score.formula import below_sol_margin

    return row["ratio"] is not None and row["status"] == "PASSED" and below_sol_margin(row["joules"], row["sol_j"], row.get("resolution_j"), 0.0)


def per_class(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per op class: workloads, the least and median E_k / E_SOL (the fastest-in-energy candidate of each
    workload, among its resolved readings), and the candidate readings left out as unresolved."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    unresolved: dict[str, int] = {}
    for row in rows:
        if row["ratio"] is None or row["status"] != "PASSED":
            continue
        if not resolved(row):
            unresolved[row["op_class"]] = unresolved.get(row["op_class"], 0) + 1
            continue
        key = (row["problem"], row["workload"])
        if key not in best or row["ratio"] < best[key]["ratio"]:
            best[key] = row
    table: dict[str, list[float]] = {}
    for row in best.values():
        table.setdefault(row["op_class"], []).append(row["ratio"])
    table.update({name: [] for name in unresolved if name not in table})
    return {name: {"workloads": len(ratios), "least": min(ratios, default=math.nan), "median": statistics.median(ratios) if ratios else math.nan,
                   "unresolved": unresolved.get(name, 0)} for name, ratios in sorted(table.items())}


def repeat_series(args: argparse.Namespace, problems: list[Any]) -> dict[str, Any]:
    """The first workload of the repeat problem evaluated args.repeats times in one evaluation (the reference as the solution)."""
    from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution

    chosen = next((p for p in problems if p.name == args.repeat_problem), None) if args.repeat_problem else (problems[0] if problems else None)
    if chosen is None:
        return {"error": f"no problem named {args.repeat_problem!r}" if args.repeat_problem else "no problem"}
    workload = chosen.workloads[0]
    options = EvalOptions(device=args.device, energy=True, hidden=0, hardware=args.hardware)
    traces = evaluate(chosen, reference_solution(chosen), options, workloads=[workload] * args.repeats, held_out=False)
    measured = [t.evaluation.performance for t in traces if t.evaluation.performance is not None and t.evaluation.performance.energy is not None]
    joules = [p.energy.joules for p in measured if p.energy.joules is not None]
    series = {"problem": chosen.name, "workload": workload.uuid, "repeats": args.repeats, "joules": joules,
              "mean_power_w": [p.energy.mean_power_w for p in measured if p.energy.joules is not None],
              "latency_ms": [p.latency_ms for p in measured], "notes": sorted({p.energy.note for p in measured if p.energy.note})}
    if len(joules) >= 2:
        middle = statistics.median(joules)
        series["spread"] = (max(joules) - min(joules)) / middle if middle else None
        series["cv"] = statistics.stdev(joules) / statistics.mean(joules) if statistics.mean(joules) else None
    return series


def reprice(rows: list[dict[str, Any]], problems: dict[str, Any], hardware: str) -> list[dict[str, Any]]:
    """The rows with E_SOL priced again on `hardware` as the evaluator prices it (solbench.energy.evaluate.sol_energy,
    the problem's precision policy, the latency floor on), the earlier E_SOL kept as earlier_sol_j."""
    from solbench.energy.evaluate import sol_energy
    from solbench.sol.api import policy_for
    from solbench.sol.hardware import get_hardware

    spec = get_hardware(hardware)  # a name or a YAML file
    priced = []
    for row in rows:
        row = {**row, "earlier_sol_j": row["sol_j"]}
        problem = problems.get(row["problem"])
        workload = next((w for w in problem.workloads if w.uuid == row["workload"]), None) if problem is not None else None
        if workload is not None:
            row["sol_j"], _ = sol_energy(problem, workload, spec, policy_for(problem, None), None, True)
            row["ratio"] = row["joules"] / row["sol_j"] if row["joules"] is not None and row["sol_j"] else None
        priced.append(row)
    return priced


def figures_of(hardware: str | None) -> str | None:
    """The spec's energy figures in one line (solbench.report.energy_tables.figures_line), or None."""
    from solbench.report.energy_tables import figures_line
    from solbench.sol.hardware import get_hardware

    if not hardware:
        return None
    try:
        return figures_line(get_hardware(hardware))
    except Exception as exc:  # noqa: BLE001 - the check goes on; the line says why the figures are missing
        return f"energy figures of {hardware} not read: {exc}"


def text_of(result: dict[str, Any]) -> str:
    lines = [(f"energy bound check on {result['hardware'] or 'no spec (no E_SOL)'}: {len(result['rows'])} candidate traces with energy, "
              f"{len(result['violations'])} below E_SOL, run exit code {result['run_exit_code']}, {result['wall_s']:.0f} s")]
    if result.get("figures"):
        lines.append(result["figures"])
    lines.append(f"{'op class':<28} {'workloads':>9} {'least':>8} {'median':>8} {'unresolved':>10}")
    for name, row in result["per_class"].items():
        lines.append(f"{name:<28} {row['workloads']:>9} {row['least']:>8.3f} {row['median']:>8.3f} {row.get('unresolved', 0):>10}")
    for label, key in (("VIOLATION", "violations"), ("BELOW E_SOL WITHIN THE RESOLUTION", "below_within_resolution")):
        for row in result.get(key, []):
            lines.append(f"{label} {row['problem']}/{row['workload'][:8]} {row['candidate']}: {row['joules']:.4g} J per call "
                         f"(resolution {row.get('resolution_j') or 0:.3g} J), E_SOL {row['sol_j']:.4g} J (ratio {row['ratio']:.3f})")
    for row in result["rows"]:
        lines.append(f"{row['problem']}/{row['workload'][:8]} {row['candidate']}: {row['status']} T {row['latency_ms'] or 0:.4g} ms, "
                     f"E {row['joules'] if row['joules'] is not None else float('nan'):.4g} J, E_SOL {row['sol_j'] if row['sol_j'] else float('nan'):.4g} J, "
                     f"ratio {row['ratio'] if row['ratio'] is not None else float('nan'):.3f}, {row['mean_power_w'] or 0:.0f} W"
                     + (f", {row['calls']} calls, {row.get('calls_per_step') or 1} per step, inputs {'made ahead' if row.get('inputs_ahead') else 'per step'}"
                        if row.get("calls") else "")
                     + (f"; {row['note']}" if row["note"] else ""))
    repeat = result.get("repeat")
    if repeat:
        if "error" in repeat:
            lines.append(f"repeatability: {repeat['error']}")
        else:
            joules = ", ".join(f"{value:.4g}" for value in repeat["joules"])
            spread = f"spread (max-min)/median {repeat['spread']:.2%}, CV {repeat['cv']:.2%}" if repeat.get("spread") is not None else "no spread"
            lines.append(f"repeatability: {repeat['problem']}/{repeat['workload'][:8]} x{repeat['repeats']}: joules per call [{joules}]; {spread}"
                         + (f"; notes: {'; '.join(repeat['notes'])}" if repeat["notes"] else ""))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    from solbench.data.loaders import load_problems
    from solbench.dataset import bundled_problems_path

    paths = [Path(p) for p in args.paths] or [bundled_problems_path()]
    problems = load_problems(paths)
    if args.reprice:
        if not args.hardware:
            print("energy_bound.py: --reprice needs --hardware (a spec with energy figures)", file=sys.stderr)
            return 2
        earlier = json.loads(args.reprice.read_text())
        code, run_dir, baselines = earlier.get("run_exit_code"), Path(earlier.get("run_dir", "")), None
        rows = reprice(earlier["rows"], {p.name: p for p in problems}, args.hardware)
        args.no_repeat = True
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="energy-bound-"))
        code, run_dir, baselines = run_candidates(args, work)
        rows = candidate_rows(baselines, {p.name: p for p in problems})
    violations = [row for row in rows if below_beyond_resolution(row)]
    within = [row for row in rows if row["ratio"] is not None and row["ratio"] < 1 and row["status"] == "PASSED" and not below_beyond_resolution(row)]
    result: dict[str, Any] = {"hardware": args.hardware, "paths": [str(p) for p in paths], "workloads": args.workloads,
                              "compile_modes": args.compile_modes, "run_exit_code": code, "run_dir": str(run_dir), "rows": rows,
                              "per_class": per_class(rows), "violations": violations, "below_within_resolution": within,
                              "figures": figures_of(args.hardware)}
    if args.reprice:
        result["repriced_from"] = str(args.reprice)
    summary = run_dir / "summary.json"
    if summary.is_file() and not args.reprice:
        result["run_notes"] = json.loads(summary.read_text()).get("notes", [])
    if not args.no_repeat and args.repeats > 0:
        result["repeat"] = repeat_series(args, problems)
    result["wall_s"] = time.monotonic() - started
    (args.out / "energy_bound.json").write_text(json.dumps(result, indent=1, default=str))
    text = text_of(result) + "".join(f"run note: {note}\n" for note in result.get("run_notes", []))
    (args.out / "energy_bound.txt").write_text(text)
    print(text, end="")
    measured = any(row["joules"] is not None for row in rows)
    return 1 if violations or code not in (0, 1) or not measured else 0


if __name__ == "__main__":
    sys.exit(main())
