"""`solbench eval` (one solution) and `solbench run` (the main job)."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import (ClockOption, CompileTimeoutOption, DeviceOption, EnergyOption, EnergyWindowOption, HardwareOption, InputProfileOption, OutputOption, PathsArgument, PolicyOption,
                  SandboxOption, SeedOption, SolFloorOption, SynthesizeOption, TimeoutOption, TrialsOption, _device_defaults, _evaluation_options, _problems_to_run, _input_profile, _print_issue,
                  _progress_line, _sandbox_mode, _trace_sink, app, console, error_console, load_log, LOAD_LOG, reports_user_errors)
from .profile import MemcheckOption, ProfileRunOption, memcheck_ready, profile_ready, profile_the_run
from .workloads import choose_workloads as _choose_workloads


@app.command("eval")
@reports_user_errors
def eval_command(
    problem_path: Annotated[Path, typer.Argument(metavar="PROBLEM", help="A problem (folder, definition, KernelBench file) or a dataset holding the solution's problem.")],
    solution_path: Annotated[Path, typer.Option("--solution", "-s", help="The solution JSON file.")],
    output: OutputOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the traces as one JSON list.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Skip workloads already in the output file.")] = False,
    workload: Annotated[Optional[list[str]], typer.Option("--workload", "-w", help="Only these workload uuids (or unique 6+ character prefixes).")] = None,
    device: DeviceOption = "auto",
    trials: TrialsOption = 5,
    timeout: TimeoutOption = 300.0,
    compile_timeout: CompileTimeoutOption = 600.0,
    seed: SeedOption = None,
    hardware: HardwareOption = None,
    reference_latency: Annotated[bool, typer.Option("--reference-latency", help="Also time the reference the same way.")] = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time solutions that pass.")] = True,
    policy: PolicyOption = "auto",
    sol_floor: SolFloorOption = True,
    input_profile: InputProfileOption = "auto",
    synthesize_missing_blobs: SynthesizeOption = False,
    hidden: Annotated[int, typer.Option(help="Hidden workloads drawn from the published axis ranges for this run (correctness only).", min=0)] = 2,
    lock_clocks: Annotated[bool, typer.Option("--lock-clocks", help="Lock the GPU's SM clock while timing, at --clock or its maximum (changes the GPU's state; needs permission). T_SOL is priced at the locked clock.")] = False,
    clock: ClockOption = None,
    static_analysis: Annotated[bool, typer.Option("--static-analysis/--no-static-analysis", help="Refuse sources that static analysis rejects (REWARD_HACK). Turn off only to test the harness itself.")] = True,
    launch_gate: Annotated[bool, typer.Option("--launch-gate/--no-launch-gate", help="Hold the stream until each call is fully enqueued, so host work between its kernels is not timed (CUDA).")] = True,
    sandbox: SandboxOption = "auto",
    energy: EnergyOption = False,
    energy_window: EnergyWindowOption = 1.0,
    memcheck: MemcheckOption = False,
) -> None:
    """Evaluate a solution on every workload of its problem: correctness, then timing; one trace each."""
    import json

    from solbench.bench.clocks import locked_clocks
    from solbench.bench.orchestrator import evaluate, resolve_device
    from solbench.profile.notes import memcheck_lines
    from solbench.report.eval_tables import traces_table
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_problems, load_solution
    from solbench.score.aggregate import score_workload
    from solbench.score.baselines import stored_baselines
    from solbench.sol.cpu_spec import run_hardware

    solution = load_solution(solution_path)
    problems = [p for p in load_problems([problem_path], synthesize_missing_blobs=synthesize_missing_blobs) if p.name == solution.definition]
    if not problems:
        raise SpecError(f"holds no problem named {solution.definition!r} (the solution's definition)", path=problem_path)
    problem = problems[0]
    try:
        chosen = [problem.workload(w) for w in workload] if workload else problem.workloads
    except KeyError as exc:
        raise SpecError(str(exc.args[0]), path=problem_path, field="workload") from None
    options = _evaluation_options(device, trials, timeout, compile_timeout, seed, hardware, reference_latency, timing, policy,
                                  static_analysis=static_analysis, launch_gate=launch_gate, sandbox=_sandbox_mode(sandbox),
                                  hidden=hidden,  # drawn only when the whole problem is evaluated (no --workload)
                                  input_profile=_input_profile(input_profile), sol_floor=sol_floor, energy=energy,
                                  energy_window_s=energy_window)
    if memcheck:  # the solution once under compute-sanitizer first, on its smallest workload (solbench.profile.memcheck)
        options = dataclasses.replace(options, memcheck=memcheck_ready(options.device))
    sink, done = _trace_sink(output, resume)
    skip = {uuid for definition, name, uuid in done if definition == problem.name and name == solution.name}
    device_name = resolve_device(options.device)
    hardware_value, spec, spec_note = run_hardware(hardware, device_name)
    if spec_note and not as_json:
        error_console.print(spec_note)
    options = dataclasses.replace(options, hardware=hardware_value)
    store = stored_baselines(spec, device_name)

    def on_trace(trace: Any) -> None:
        if store is not None:
            score_workload(trace, store.entry(trace.definition, trace.workload.uuid))  # sets performance.score where T_b is known
        sink(trace)
        if not as_json:
            _progress_line(trace)

    index = int(device_name.split(":")[1]) if ":" in device_name else 0
    with locked_clocks(index, lock_clocks and device_name.startswith("cuda"), int(clock) if clock else None) as locked:
        options = dataclasses.replace(options, clock_mhz=locked or clock)
        traces = evaluate(problem, solution, options, workloads=chosen if workload else None, skip=skip, on_trace=on_trace)
    if as_json:
        print(json.dumps([t.to_json_dict() for t in traces], indent=1))
    else:
        console.print(traces_table(traces, title=f"{solution.name} on {problem.name}"))
        for line in memcheck_lines(traces):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        for line in _energy_lines(traces):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        if skip:
            console.print(f"{len(skip & {w.uuid for w in chosen})} workload(s) skipped: already in {output}")
    if any(t.evaluation.status.value != "PASSED" for t in traces):
        raise typer.Exit(1)



def _energy_lines(traces: list[Any]) -> list[str]:
    """Per trace with energy measured: joules per call, E_SOL, powers; and each distinct reason energy is missing."""
    from solbench.report.units import format_joules

    lines, notes = [], []
    for trace in traces:
        performance = trace.evaluation.performance if trace.evaluation else None
        energy = performance.energy if performance is not None else None
        if energy is None:
            continue
        if energy.joules is not None:
            sol = f", E_SOL {format_joules(energy.sol_j)}" if energy.sol_j is not None else ""
            score = f", energy score {energy.score:.3f}" if energy.score is not None else ""
            lines.append(f"energy {trace.workload.uuid[:8]}: {format_joules(energy.joules)} per call{sol}{score} (mean power "
                         f"{energy.mean_power_w:.0f} W, idle {energy.idle_power_w:.0f} W, {energy.calls} calls in {energy.window_s:.2f} s)")
        if energy.note and energy.note not in notes:
            notes.append(energy.note)
    return lines + [f"note: {note}" for note in notes]


CompileModesOption = Annotated[str, typer.Option("--compile-modes", help="torch.compile modes among the baseline candidates, comma-separated, or none. "
                                                    "auto: default and max-autotune-no-cudagraphs on a GPU, none on a CPU (C++ builds take minutes there).")]
SUMMARY_WIDTH = 100
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _compile_modes(value: str) -> tuple[str, ...] | None:
    """The --compile-modes value: None for auto, else the modes (each one torch.compile knows)."""
    if value == "auto":
        return None
    if value == "none":
        return ()
    modes = tuple(mode.strip() for mode in value.split(",") if mode.strip())
    unknown = [mode for mode in modes if mode not in COMPILE_MODES]
    if unknown or not modes:
        raise typer.BadParameter(f"expected auto, none or a comma-separated list of {', '.join(COMPILE_MODES)}; got {value!r}", param_hint="--compile-modes")
    return modes


def _run_pipeline(pipeline: Any, inputs: Any, done: set, progress: Any, sink: Any) -> Any:
    """pipeline.run; an executor that cannot run here (no Ray, no cluster, lanes that never start) is one line, exit code 2."""
    from solbench.exec import LaneError, RayUnavailable
    from solbench.exec.pool import PoolError

    try:
        return pipeline.run(inputs, done, progress.trace, progress.error, write_extra=sink, report=_write_report, on_problem_done=progress.problem_done)
    except (LaneError, RayUnavailable, PoolError) as exc:
        print(f"error: --executor {inputs.execution.executor}: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None


def _execution(executor: str, lanes: str | None, address: str | None) -> Any:
    """The run's Execution from --executor/--lanes/--address, checked before anything runs."""
    from solbench.exec import EXECUTORS
    from solbench.exec.lanes import LaneError, parse_lanes
    from solbench.score.jobs import Execution

    if executor not in EXECUTORS:
        raise typer.BadParameter(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", param_hint="--executor")
    if lanes is not None and executor == "serial":
        executor = "pool"
    if address is not None and executor != "ray":
        raise typer.BadParameter("--address names a Ray cluster: use it with --executor ray", param_hint="--address")
    if lanes is not None and lanes != "all" and "," not in lanes:
        try:
            parse_lanes(lanes)
        except LaneError as exc:
            raise typer.BadParameter(str(exc), param_hint="--lanes") from None
    return Execution(executor, lanes, address)


GPU_CONCURRENT = 4  # evaluations in flight on one GPU by default (benchmarks/run_at_scale.py --concurrent compares)


def _concurrency(execution: Any, concurrent: int | None, device: str) -> Any:
    """--concurrent for the serial executor (the pool and Ray run one evaluation per lane or task)."""
    from solbench.bench.orchestrator import resolve_device

    if concurrent is not None and concurrent > 1 and execution.executor != "serial":
        raise typer.BadParameter(f"evaluations share a device with the serial executor only, not with --executor {execution.executor}", param_hint="--concurrent")
    try:
        on_gpu = resolve_device(device).startswith("cuda")
    except RuntimeError:
        on_gpu = False
    default = GPU_CONCURRENT if on_gpu and execution.executor == "serial" else 1
    return dataclasses.replace(execution, concurrent=concurrent if concurrent is not None else default)


@app.command("run")
@reports_user_errors
def run_command(
    paths: PathsArgument = None,
    solutions: Annotated[Optional[list[Path]], typer.Option("--solutions", "-s", help="Solution JSON files or folders of them (each a solution set, scored as a suite). Default: the problems' references.")] = None,
    hardware: HardwareOption = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="The run folder (never overwritten; --resume continues it). Default: a new runs/<timestamp>.")] = None,
    output: OutputOption = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run folder given by --run-dir: skip workloads already in its traces.")] = False,
    workloads: Annotated[str, typer.Option(help="Which workloads: all, smallest:N or spread:N (default: all on a GPU, smallest:2 on a CPU).")] = "auto",
    baselines: Annotated[Optional[Path], typer.Option("--baselines", help="Baseline folder, reused and extended (default: ./baselines or $SOLBENCH_BASELINES).")] = None,
    baseline_solutions: Annotated[Optional[Path], typer.Option("--baseline-solutions", help="A folder of registered baseline solutions (JSON files, e.g. <problem>/<name>.json): candidates for T_b.")] = None,
    rebuild_baselines: Annotated[bool, typer.Option("--rebuild-baselines", help="Measure the baselines again even where current ones exist.")] = False,
    compile_modes: CompileModesOption = "auto",
    compile_ahead: Annotated[Optional[int], typer.Option("--compile-ahead", min=0, help="Processes that compile the torch.compile candidates of the next problems while the GPU evaluates the current one (default: half the cores, up to 8, on a GPU; 0 on a CPU or to turn it off).")] = None,
    executor: Annotated[str, typer.Option("--executor", help="Where the jobs run: serial (here, one after another), pool (lanes of this host, see --lanes) or ray (tasks on a Ray cluster, see --address; pip install 'solbench[ray]').")] = "serial",
    lanes: Annotated[Optional[str], typer.Option("--lanes", "--gpus", help="Lanes of a pool: all, N or GPU indices such as 0,1 (one lane per GPU); without a GPU, N CPU lanes. Implies --executor pool.")] = None,
    address: Annotated[Optional[str], typer.Option("--address", help="With --executor ray: auto or HOST:PORT of a running cluster (default: a local Ray started for this run).")] = None,
    concurrent: Annotated[Optional[int], typer.Option("--concurrent", min=1, help=f"Evaluations in flight at once on the device (serial executor): their correctness checks share it, each timed section holds it alone (default: {GPU_CONCURRENT} on a GPU, 1 on a CPU).")] = None,
    device: DeviceOption = "auto",
    trials: TrialsOption = 3,
    timeout: TimeoutOption = 300.0,
    seed: SeedOption = None,
    sandbox: SandboxOption = "auto",
    policy: PolicyOption = "auto",
    sol_floor: SolFloorOption = True,
    input_profile: InputProfileOption = "auto",
    synthesize_missing_blobs: SynthesizeOption = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time the workloads that pass (--no-timing: correctness only, no scores).")] = True,
    energy: EnergyOption = False,
    energy_window: EnergyWindowOption = 1.0,
    memcheck: MemcheckOption = False,
    profile: ProfileRunOption = False,
) -> None:
    """The main job: evaluate the solutions (default: each problem's reference), build or reuse the
    baselines, score, write a run folder (traces, baselines, summary, report) and print a summary.
    A problem that does not load, or whose evaluation fails, is reported and the others go on."""
    from solbench.data.errors import SpecError
    from solbench.data.files import write_text_safely
    from solbench.report.problem_tables import refusal_line
    from solbench.score import pipeline
    from solbench.score.baselines import DEFAULT_DIR, solution_folder_solutions
    from solbench.sol.cpu_spec import run_hardware

    if resume and run_dir is None:
        raise typer.BadParameter("--resume continues a run folder: name it with --run-dir", param_hint="--resume")
    execution = _execution(executor, lanes, address)
    modes = _compile_modes(compile_modes)
    loading = time.monotonic()
    problems, refused = _problems_to_run(paths, synthesize_missing_blobs)
    options = _evaluation_options(device, trials, timeout, 600.0, seed, None, False, timing, policy,
                                  static_analysis=True, sandbox=_sandbox_mode(sandbox), input_profile=_input_profile(input_profile),
                                  sol_floor=sol_floor, energy=energy, energy_window_s=energy_window)
    options, device_name, workloads = _device_defaults(options, workloads)
    if memcheck:  # each submitted solution once under compute-sanitizer first (solbench.profile.memcheck)
        options = dataclasses.replace(options, memcheck=memcheck_ready(options.device))
    ncu = profile_ready(options.device) if profile else None
    execution = _concurrency(execution, concurrent, options.device)
    selection = [(problem, _choose_workloads(problem, workloads)) for problem in problems]
    given, unmatched = _solution_sets(solutions or [], {p.name for p in problems})
    for line in unmatched:
        _print_issue(line)
    registered = solution_folder_solutions(baseline_solutions) if baseline_solutions else []
    if baseline_solutions and not baseline_solutions.is_dir():
        raise SpecError("expected a folder of baseline solutions", path=baseline_solutions, field="--baseline-solutions")
    hardware_value, spec, spec_note = run_hardware(hardware, device_name)
    if spec_note:
        error_console.print(spec_note)
    options = dataclasses.replace(options, hardware=hardware_value)
    folder = run_dir or pipeline.new_run_dir()
    done = pipeline.prepare_run_dir(folder, resume)
    if refused:
        write_text_safely(folder / LOAD_LOG, load_log(refused), overwrite=True)
        error_console.print(f"{len(refused)} problem{'s' if len(refused) != 1 else ''} refused; every issue is in {folder / LOAD_LOG}")
    sink, done_elsewhere = _trace_sink(output, resume)
    inputs = pipeline.RunInputs(selection=selection, solutions=given, options=options, device=device_name, spec=spec, run_dir=folder,
                                baseline_dir=baselines or DEFAULT_DIR, registered=registered, rebuild=rebuild_baselines, resume=resume,
                                compile_modes=modes, execution=execution, load_s=round(time.monotonic() - loading, 3), compile_ahead=compile_ahead,
                                notes=[spec_note] if spec_note and spec is None else [])
    store = pipeline.open_store(inputs)[0] if timing else None
    total = pipeline.pending_counts(inputs, store, done | done_elsewhere)
    progress = _RunProgress(total, len(selection))
    try:
        with progress:
            outcome = _run_pipeline(pipeline, inputs, done | done_elsewhere, progress, sink)
    except KeyboardInterrupt:  # typer would end it with a blank line alone
        print(f"solbench run: interrupted; {_finished_problems(folder, progress.finished)} of {len(selection)} problems are scored in {folder} "
              f"(go on with: solbench run ... --resume --run-dir {folder})", file=sys.stderr)
        raise typer.Exit(130) from None
    if ncu is not None:  # run --profile: each solution profiled after the evaluations, the report drawn again with the charts
        profile_the_run(selection, inputs, ncu, folder)
        _write_report(folder)
    for line in _summary_lines(outcome.summary):
        console.print(line, highlight=False, soft_wrap=True)
    for loaded in refused:
        print(refusal_line(loaded))
    console.print(f"run folder: {folder}", highlight=False, soft_wrap=True)
    failed = any(w.status != "PASSED" for w in outcome.summary.workloads)
    failed = failed or any(status != "PASSED" for p in outcome.summary.problems for status in p.held_out)
    if failed or refused or outcome.errors or unmatched:
        raise typer.Exit(1)


def _solution_sets(paths: list[Path], problem_names: set[str]) -> tuple[dict[str, list[tuple[Any, str]]], list[str]]:
    """problem name -> (solution, set name) for each --solutions path (a file, or a folder of JSON files:
    the set is named after it), and one line per solution whose problem is not in the run."""
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_solution

    sets: dict[str, list[tuple[Any, str]]] = {}
    unmatched = []
    for path in paths:
        if not path.exists():
            raise SpecError("does not exist", path=path, field="--solutions")
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        if not files:
            raise SpecError("holds no solution JSON file", path=path, field="--solutions")
        name = path.stem if path.is_file() else path.name
        for file in files:
            solution = load_solution(file)
            if solution.definition not in problem_names:
                unmatched.append(f"{file}: names problem {solution.definition!r}, which is not among the problems of this run; not evaluated")
                continue
            sets.setdefault(solution.definition, []).append((solution, name))
    return sets, unmatched


def _write_report(run_dir: Path) -> list[Path]:
    try:
        from solbench.report.render import write_report
    except ImportError as exc:
        error_console.print(f"report not written: solbench.report.render is not available ({exc})")
        return []
    try:
        return [Path(p) for p in write_report(run_dir)]
    except Exception as exc:  # noqa: BLE001 - the numbers are in summary.json already; a report failure must not lose them
        error_console.print(f"report not written: {type(exc).__name__}: {exc}")
        return []


class _RunProgress:
    """A live progress bar on stderr (problems scored, workloads done of all, elapsed and remaining
    time), with one line per trace above it."""

    def __init__(self, total: int, problems: int):
        self.total, self.problems = total, problems
        self.finished = 0

    def __enter__(self) -> "_RunProgress":
        import sys

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console = Console(file=sys.stderr, soft_wrap=True)
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("workloads"),
                            TimeElapsedColumn(), TextColumn("elapsed,"), TimeRemainingColumn(), TextColumn("left"),
                            console=self.console, transient=True)
        self.bar.start()
        self.task = self.bar.add_task(self._description(), total=max(self.total, 1))
        return self

    def _description(self) -> str:
        return f"problems scored {self.finished}/{self.problems}"

    def problem_done(self, name: str) -> None:
        self.finished += 1
        self.bar.update(self.task, description=self._description())

    def trace(self, job: Any, trace: Any) -> None:
        from solbench.report.eval_tables import first_log_line

        evaluation = trace.evaluation
        performance = evaluation.performance
        latency = performance.latency_ms if performance is not None else None
        detail = f"{latency:.4g} ms" if latency is not None else first_log_line(trace)[:160]
        self.console.print(f"{trace.definition} / {job.tag} / {trace.workload.uuid[:8]}: {evaluation.status.value}  {detail}",
                           highlight=False, markup=False)
        self.bar.update(self.task, advance=1, description=self._description())

    def error(self, job: Any, message: str) -> None:
        self.bar.advance(self.task, job.pending)
        self.console.print(message, highlight=False, markup=False)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


def _finished_problems(folder: Path, counted: int) -> int:
    """The problems the run folder's summary.json says are finished (a resumed run's earlier ones too),
    else those counted here."""
    import json

    from solbench.score.pipeline import SUMMARY

    try:
        return int(json.loads((folder / SUMMARY).read_text())["progress"]["finished"])
    except (OSError, ValueError, KeyError, TypeError):
        return counted


def _summary_lines(summary: Any) -> list[str]:
    """The compact summary (at most SUMMARY_WIDTH columns): one line per problem and solution, one per suite, the notes."""
    several = len({p.solution for p in summary.problems}) > len({p.problem for p in summary.problems})
    lines = [f"{'problem':<44} {'passed':<28} {'T/T_SOL':>9} {'score':>7}"]
    for problem in summary.problems:
        label = f"{problem.problem} / {problem.solution}" if several else problem.problem
        passed = problem.statuses.get("PASSED", 0)
        status = f"{passed}/{problem.workloads}"
        others = sorted(((n, s) for s, n in problem.statuses.items() if s != "PASSED"), reverse=True)
        if others:
            status += ", " + ", ".join(f"{n} {s}" for n, s in others)
        if problem.held_out:
            hacks = problem.held_out.get("REWARD_HACK", 0)
            status += f"; held out {hacks} REWARD_HACK" if hacks else f"; held out {problem.held_out.get('PASSED', 0)}/{sum(problem.held_out.values())}"
        ratio = f"{problem.median_ratio_to_sol:.3g}" if problem.median_ratio_to_sol is not None else "-"
        score = f"{problem.score:.3f}" if problem.score is not None else "-"
        verdict = summary.problem_verdicts.get(problem.problem, "")
        mark = {"solved": " solved", "bound-to-audit": " audit"}.get(verdict, "")
        lines.append(f"{_fit(label, 44):<44} {_fit(status, 28):<28} {ratio:>9} {score:>7}{mark}")
    for suite in summary.suites:
        mean = f"{suite.score_mean:.3f}" if suite.score_mean is not None else "-"
        median = f"{suite.score_median:.3f}" if suite.score_median is not None else "-"
        rows = [w for w in summary.workloads if (w.solution_set or "") == suite.solution] if suite.solution != "best-of-k" else []
        passed = f", {sum(w.status == 'PASSED' for w in rows)}/{len(rows)} workloads passed" if rows else ""
        energy = f", energy score mean {suite.energy_score_mean:.3f}" if suite.energy_score_mean is not None else ""
        lines.append(_fit(f"suite {suite.solution}: {_suite_size(summary, suite)}, score mean {mean}, median {median}{passed}{energy}", SUMMARY_WIDTH))
    hardware = summary.hardware or "none"
    lines.append(_fit(f"T_SOL on {hardware}; device {summary.device}; {summary.wall_s or 0:.0f} s", SUMMARY_WIDTH))
    lines += [_fit(f"note: {note}", SUMMARY_WIDTH) for note in summary.notes]
    return lines


def _suite_size(summary: Any, suite: Any) -> str:
    """What a suite is made of: "N problems", or "K solutions of N problems" where some problem has
    several of its solutions (best-of-k keeps one per problem)."""
    members = [p for p in summary.problems if (p.solution_set or "") == suite.solution] if suite.solution != "best-of-k" else []
    solutions = len(members) or suite.problems
    problems = len({p.problem for p in members}) or suite.problems
    counted = f"{problems} problem{'' if problems == 1 else 's'}"
    return counted if solutions == problems else f"{solutions} solution{'' if solutions == 1 else 's'} of {counted}"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
