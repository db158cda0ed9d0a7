"""`solbench sol`: speed-of-light bounds, and `--verify` of them against measured times."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from .app import (ClockOption, PathsArgument, SolFloorOption, SynthesizeOption, _default_paths, _evaluation_options, _print_issue, _progress_line, app,
                  console, reports_user_errors)
from .workloads import choose_workloads as _choose_workloads


@app.command()
@reports_user_errors
def sol(
    paths: PathsArgument = None,
    hardware: Annotated[Optional[str], typer.Option("--hardware", "-H", help="Hardware spec name or YAML file (default: $SOLBENCH_HARDWARE or H200).")] = None,
    workload: Annotated[Optional[list[str]], typer.Option("--workload", "-w", help="Only these workload uuids (a unique prefix of 6+ characters is enough).")] = None,
    policy: Annotated[str, typer.Option(help="Precision policy: strict, relaxed, or auto (the problem's own precision_policy, else relaxed).")] = "auto",
    explain: Annotated[bool, typer.Option("--explain", help="Add the per-op breakdown.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per workload (JSON lines), as each problem is done; problem_analysis_s is the seconds its problem's analysis took.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also append each workload's result to this JSONL file as it is known.")] = None,
    synthesize_missing_blobs: SynthesizeOption = False,
    clock: ClockOption = None,
    sol_floor: SolFloorOption = True,
    verify: Annotated[bool, typer.Option("--verify", help="On a GPU: time the eager reference, torch.compile and any --solutions through the evaluator and list every workload faster than T_SOL.")] = False,
    solutions: Annotated[Optional[list[Path]], typer.Option("--solutions", help="With --verify: solution files (or folders of them) timed as well.")] = None,
    compile_mode: Annotated[Optional[list[str]], typer.Option("--compile-mode", help="With --verify: torch.compile modes to time (default: default; 'none' for none).")] = None,
    workloads: Annotated[str, typer.Option(help="With --verify: all, smallest:N or spread:N (smallest, largest, evenly between).")] = "all",
    budget: Annotated[float, typer.Option(help="With --verify: seconds of timed calls per workload and candidate.", min=0.05)] = 1.0,
    compile_workloads: Annotated[str, typer.Option(help="With --verify: where torch.compile is timed too (all, smallest:N, spread:N; each shape compiles once).")] = "spread:1",
    in_evaluator: Annotated[bool, typer.Option("--in-evaluator", help="With --verify: time the reference and torch.compile through the evaluator's workers too (default: in this process, with the evaluator's timer).")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes that analyse problems side by side (0: one per core, up to 4, for a dataset).", min=0)] = 0,
    problem_timeout: Annotated[float, typer.Option("--problem-timeout", help="Seconds one problem's analysis may take before it is stopped (one line on stderr; 0: no limit).", min=0)] = 60.0,
    max_memory_gb: Annotated[float, typer.Option("--max-memory-gb", help="Resident memory (GB) a worker process may use before its problem is stopped (with --jobs 2 or more; 0: no cap).", min=0)] = 4.0,
    project: Annotated[Optional[Path], typer.Option("--project", help="Project the measured times of these traces (a traces JSONL file or a run folder) to the spec named by --to; PATHS are where their problems are found (default: the bundled sets).")] = None,
    to: Annotated[Optional[str], typer.Option("--to", help="With --project: the target hardware spec.")] = None,
    from_hardware: Annotated[Optional[str], typer.Option("--from", help="With --project: price T_SOL(measured) on this spec instead of taking the trace's own.")] = None,
) -> None:
    """Speed-of-light bounds of each workload: FLOPs by unit, bytes, unfused/fused/cache-aware (roofline) times, the
    hardware's latency floor and T_SOL = max(roofline, floor). Results stream out problem by problem as each is done; a problem that fails, or is stopped at its time or memory
    budget, is one line on stderr, the others go on."""
    import json

    if project is not None or to is not None:
        _project(project, to, from_hardware, paths, as_json)
        return
    if verify:
        _verify_bounds(_default_paths(paths), hardware, policy, clock, solutions or [], compile_mode, workloads, output, as_json, synthesize_missing_blobs,
                       budget, compile_workloads, in_evaluator, workload, sol_floor)
        return

    from solbench.sol.api import default_jobs, iter_problem_analyses
    from solbench.sol.budget import Limits
    from solbench.sol.hardware import default_hardware_name, get_hardware
    from solbench.data.errors import Issue, SpecError
    from solbench.data.files import append_jsonl

    if policy not in {"auto", "strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict, relaxed or auto, got {policy!r}", param_hint="--policy")
    if output is not None and output.exists():
        raise SpecError("exists already; choose another file (results are appended as they are known)", path=output)
    spec = get_hardware(hardware or default_hardware_name())
    if clock:
        spec = spec.at_clock(clock)
    if not as_json:  # JSON rows carry it: t_floor_ms, floor (not-in-spec where the spec has none), floor_applied
        from solbench.report.energy_tables import figures_line

        console.print(floor_line(spec, sol_floor), style="dim", markup=False, highlight=False)
        console.print(figures_line(spec), style="dim", markup=False, highlight=False)  # JSON rows carry e_sol_j where the spec has figures
    paths = _default_paths(paths)
    if jobs == 0:
        jobs = 1 if explain else default_jobs(sum(1 for path in paths for _ in (path.rglob("definition.json") if path.is_dir() else [path])))
    limits = Limits(timeout_s=problem_timeout or None, max_memory_bytes=int(max_memory_gb * (1 << 30)) or None)
    failures = 0
    analyses = iter_problem_analyses(paths, spec, policy, workload, progress=not as_json, synthesize_missing_blobs=synthesize_missing_blobs,
                                     jobs=jobs, keep_nodes=explain, limits=limits, floor=sol_floor)
    for done in _or_spec_error(analyses):
        items = [done] if isinstance(done, Issue) else done.items
        for item in items:
            if isinstance(item, Issue):
                if item.severity == "error":
                    failures += 1
                    _print_issue(item)
                continue
            row = {**item.to_json(), **_energy_bound_json(item, spec), "problem_analysis_s": round(done.elapsed_s, 3)}
            if as_json:
                print(json.dumps(row), flush=True)
            if output is not None:
                append_jsonl(output, row)
        if not as_json:
            _print_problem_tables([item for item in items if not isinstance(item, Issue)], explain)
            _print_energy_table([item for item in items if not isinstance(item, Issue)], spec)
    if failures:
        raise typer.Exit(1)


def _energy_bound_json(result: Any, spec: Any) -> dict[str, Any]:
    """e_sol_j, its parts and notes, where the spec has energy figures (nothing otherwise)."""
    from solbench.energy.bound import bound_for_spec

    bound, _ = bound_for_spec(result, spec)
    return bound.to_json() if bound is not None else {}


def _print_energy_table(results: list[Any], spec: Any) -> None:
    from solbench.energy.bound import bound_for_spec
    from solbench.report.energy_tables import energy_table

    if not results or spec.energy is None:
        return
    bounds = [bound_for_spec(result, spec)[0] for result in results]
    console.print(energy_table(results, bounds, spec.name))
    for note in dict.fromkeys(note for bound in bounds for note in bound.notes):
        console.print(f"E_SOL: {note}", style="dim", markup=False)


def _project(traces_path: Path | None, to: str | None, source: str | None, paths: list[Path] | None, as_json: bool) -> None:
    """`solbench sol --project TRACES --to SPEC`: measured times projected by efficiency against the bottleneck (solbench.sol.projection)."""
    import json

    from rich.table import Table

    from solbench.data.errors import Issue, SpecError
    from solbench.dataset import bundled_problems_path, bundled_set_path
    from solbench.sol.hardware import get_hardware
    from solbench.sol.projection import ASSUMPTION, load_trace_files, problems_by_name, project

    if traces_path is None or to is None:
        raise SpecError("--project TRACES and --to SPEC go together", field="--project" if traces_path is None else "--to")
    target, measured = get_hardware(to), get_hardware(source) if source else None
    traces = load_trace_files(traces_path)
    problems = problems_by_name(_default_paths(paths) if paths else [bundled_problems_path(), bundled_set_path("models")])
    table = Table(title=f"projected to {target.name}")
    for column in ("problem", "solution", "workload", "measured on", "T ms", "T_SOL ms", "T_SOL/T", f"T_SOL {target.name} ms", "projected ms"):
        table.add_column(column, justify="left" if column in ("problem", "solution", "workload", "measured on") else "right")
    rows = errors = 0
    notes: list[str] = []
    for item in project(traces, problems, target, measured):
        if isinstance(item, Issue):
            errors += item.severity == "error"
            _print_issue(item.located(traces_path))
            continue
        rows += 1
        if as_json:
            print(json.dumps(item.to_json()), flush=True)
            continue
        table.add_row(item.problem, item.solution or "-", item.workload[:12], item.measured_hardware or "-", f"{item.latency_ms:.4g}", f"{item.sol_ms:.4g}",
                      f"{item.efficiency:.3f}", f"{item.target_sol_ms:.4g}", f"{item.projected_ms:.4g}")
        notes += [f"{item.problem}/{item.workload[:12]}: {note}" for note in item.notes]
    if not as_json:
        console.print(table)
        for note in notes:
            console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
        console.print(f"assumption: {ASSUMPTION}", markup=False, highlight=False, soft_wrap=True)
        console.print(f"{rows} of {len(traces)} traces projected (the others failed, were held out or were not timed)", markup=False, highlight=False)
    if not rows and not errors:
        _print_issue(Issue(f"no trace could be projected: none of the {len(traces)} is a timed, correct one of a problem given", traces_path, field="--project"))
    if errors or not rows:
        raise typer.Exit(1)


def floor_line(spec: Any, applied: bool) -> str:
    """One line on the latency floor of a spec, and whether T_SOL takes it into account."""
    if not spec.has_floor:
        return (f"{spec.name} has no latency floor (launch_floor_s and dram_latency_floor_s are 0: not measured, or a spec from before "
                "the floors): T_SOL is the roofline alone; `solbench hw calibrate` measures them")
    floors = f"launch {spec.launch_floor_s * 1e6:.3g} µs, DRAM latency {spec.latency_floor_s(reads_dram=True) * 1e6:.3g} µs"
    if not applied:
        return f"{spec.name} latency floors ({floors}) shown, not applied (--no-sol-floor): T_SOL is the roofline alone"
    return f"{spec.name} latency floors: {floors}; T_SOL = max(roofline, floor)"


def _or_spec_error(analyses: Iterator[Any]) -> Iterator[Any]:
    """The analyses; worker processes that cannot start are one line (SpecError), not a traceback."""
    from solbench.sol.budget import WorkerStartError
    from solbench.data.errors import SpecError

    try:
        yield from analyses
    except WorkerStartError as exc:
        raise SpecError(str(exc), field="jobs") from None


def _print_problem_tables(results: list[Any], explain: bool) -> None:
    """One problem's results as a table, with its notes (and the per-op breakdown with --explain)."""
    from solbench.report.sol_tables import explain_table, sol_table

    if not results:
        return
    console.print(sol_table(results))
    for result in results:
        for note in result.notes:
            console.print(f"{result.problem}/{result.workload[:8]}: {note}", style="dim", markup=False)
        if result.partial:
            console.print(f"{result.problem}/{result.workload[:8]}: partial, no cost rule for {', '.join(result.uncovered_ops)}", style="yellow", markup=False)
        if explain:
            console.print(explain_table(result))


def _verify_bounds(paths: list[Path], hardware: str | None, policy: str, clock: float | None, solution_paths: list[Path],
                   compile_modes: list[str] | None, workloads: str, output: Path | None, as_json: bool, synthesize: bool,
                   budget: float = 1.0, compile_workloads: str = "spread:1", in_evaluator: bool = False, only: list[str] | None = None,
                   sol_floor: bool = True) -> None:
    """`solbench sol --verify`: measured times against T_SOL (see solbench.bench.verify)."""
    import json

    from rich.table import Table

    from solbench.bench.orchestrator import resolve_device
    from solbench.bench.verify import check_problem, ratio_summary
    from solbench.report.sol_tables import explain_table
    from solbench.sol.analysis import analyze
    from solbench.sol.api import policy_for
    from solbench.sol.calibrate import spec_for_run
    from solbench.data.errors import SpecError
    from solbench.data.files import append_jsonl
    from solbench.data.loaders import load_problems, load_solution

    device = resolve_device("auto")
    if not device.startswith("cuda"):
        raise SpecError("--verify times real kernels: it needs a CUDA GPU, and none is available here", field="verify")
    if output is not None and output.exists():
        raise SpecError("exists already; choose another file (results are appended as they are known)", path=output)
    problems = load_problems(paths, synthesize_missing_blobs=synthesize)
    found = [p for path in solution_paths for p in ([path] if path.is_file() else sorted(path.rglob("*.json")))]
    solutions = [load_solution(path) for path in found]
    modes = [m for m in (compile_modes or ["default"]) if m != "none"]
    spec = spec_for_run(hardware, device, clock)
    options = _evaluation_options("cuda", 1, 300.0, 600.0, None, hardware or (spec.name if spec else None), False, True, policy,
                                  clock_mhz=clock, budget_s=budget, min_iterations=10, verify_timed=1, sol_floor=sol_floor)
    checks = []
    broken = 0
    for problem in problems:
        chosen = [problem.workload(w) for w in only] if only else _choose_workloads(problem, workloads)
        mine = [s for s in solutions if s.definition == problem.name]
        compiled_at = {w.uuid for w in _choose_workloads(problem, compile_workloads)} & {w.uuid for w in chosen}
        try:
            found_checks = check_problem(problem, options, mine, modes, chosen, on_trace=_progress_line, in_process=not in_evaluator,
                                         compile_workloads=compiled_at)
        except Exception as exc:  # noqa: BLE001 - one problem that breaks must not stop the dataset
            console.print(f"{problem.name}: not checked: {type(exc).__name__}: {str(exc)[:300]}", style="red", markup=False)
            broken += 1
            continue
        for check in found_checks:
            if check.self_check not in (None, "PASSED"):
                console.print(f"{problem.name}/{check.workload[:8]}: the reference does not match itself: {check.self_check}", style="red", markup=False)
            elif not as_json:
                times = ", ".join(f"{name} {ms:.4g} ms" for name, ms in check.times_ms.items())
                failed = "".join(f"; {name} {why}" for name, why in check.failures.items())
                console.print(f"{problem.name}/{check.workload[:8]}: T_SOL {check.sol_ms or float('nan'):.4g} ms; {times}{failed}", style="dim", markup=False)
            checks.append(check)
            if output is not None:
                append_jsonl(output, check.to_json())
            if as_json:
                print(json.dumps(check.to_json()), flush=True)
            if check.violated:
                workload = problem.workload(check.workload)
                result = analyze(problem, workload, spec, policy_for(problem, policy), floor=sol_floor)
                console.print(f"VIOLATION {problem.name}/{check.workload[:8]}: {check.fastest[0]} ran {check.fastest[1]:.4g} ms, "
                              f"T_SOL {check.sol_ms:.4g} ms (ratio {check.ratio:.3f})", style="red", markup=False)
                console.print(explain_table(result))
    table = Table(title=f"fastest / T_SOL by op class ({spec.name if spec else 'unknown spec'})")
    for column in ("op class", "workloads", "median", "least"):
        table.add_column(column, justify="right" if column != "op class" else "left")
    for op, row in ratio_summary(checks).items():
        table.add_row(op, str(row["workloads"]), f"{row['median']:.2f}", f"{row['least']:.2f}", style="red" if row["least"] < 1 else None)
    if not as_json:
        console.print(table)
    violations = [c for c in checks if c.violated]
    unmeasured = [c for c in checks if c.fastest is None]
    inconsistent = [c for c in checks if c.self_check not in (None, "PASSED")]
    console.print(f"{len(checks)} workloads checked, {len(violations)} faster than T_SOL, {len(unmeasured)} with no correct timed candidate, "
                  f"{len(inconsistent)} where the reference does not match itself, {broken} problems not checked",
                  style="red" if violations or inconsistent or broken else "green")
    if violations or inconsistent or broken:
        raise typer.Exit(1)


