"""The solbench command line: one typer app over every stage."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer
from rich.console import Console

from solbench import __version__

app = typer.Typer(
    name="solbench",
    help="Benchmark GPU kernels against the hardware's speed of light.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
class _LazyConsole:
    """A rich Console made at first use in each command, so that it sees the environment of that
    call (COLUMNS, the streams of a test runner); piped output gets 200 columns instead of 80."""

    def __init__(self, stderr: bool = False):
        self.stderr = stderr

    def print(self, *objects: Any, **kwargs: Any) -> None:
        stream = sys.stderr if self.stderr else sys.stdout
        width = None if stream.isatty() or os.environ.get("COLUMNS") else 200
        Console(file=stream, width=width, soft_wrap=self.stderr).print(*objects, **kwargs)


console = _LazyConsole()
error_console = _LazyConsole(stderr=True)

PathsArgument = Annotated[
    Optional[list[Path]],
    typer.Argument(help="Problem folders, dataset folders, FlashInfer-Trace folders, KernelBench-style .py files, solutions (.json) or traces (.jsonl). Default: the bundled problems."),
]


def _default_paths(paths: list[Path] | None) -> list[Path]:
    if paths:
        return paths
    from solbench.dataset import bundled_problems_path

    return [bundled_problems_path()]


def _print_issue(issue: object) -> None:
    # One plain line per issue (no wrapping), so that tools and people can grep it.
    print(str(issue), file=sys.stderr)


def reports_user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A SpecError from a command becomes one line per issue and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from solbench.spec.errors import SpecError

        try:
            return command(*args, **kwargs)
        except SpecError as exc:
            for issue in exc.issues:
                _print_issue(issue)
            raise typer.Exit(1) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        print(f"solbench {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """solbench: is the kernel correct, how fast is it really, and how close to the speed of light?"""


SynthesizeOption = Annotated[bool, typer.Option("--synthesize-missing-blobs", help="Draw safetensors inputs whose file is absent from the definition (valid index pointers and indices); every trace says so.")]
ClockOption = Annotated[Optional[float], typer.Option("--clock", help="SM clock in MHz at which to price T_SOL (compute peaks scale with it; the spec's peaks hold at its boost clock). With --lock-clocks, the clock to lock.", min=1)]
TABLE_LIMIT = 30  # validate lists every item in a table up to this many; a whole dataset gets a line per subset


@app.command()
@reports_user_errors
def validate(paths: PathsArgument = None, synthesize_missing_blobs: SynthesizeOption = False) -> None:
    """Check problems, datasets, solutions and traces; exit code 1 if anything is invalid."""
    from solbench.report.problem_tables import refusal_line, subset_summaries, validation_table
    from solbench.spec.loaders import flag_duplicate_names, scan

    results = [loaded for path in _default_paths(paths) for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs)]
    flag_duplicate_names(results)
    if len(results) <= TABLE_LIMIT:
        console.print(validation_table(results))
    invalid = [loaded for loaded in results if not loaded.ok]
    for loaded in results:
        for issue in loaded.issues:
            _print_issue(issue)
    for line in subset_summaries(results):
        print(line)
    for loaded in invalid:
        print(refusal_line(loaded))
    problems = sum(1 for loaded in results if loaded.problem is not None)
    workloads = sum(len(loaded.problem.workloads) for loaded in results if loaded.problem is not None)
    summary = f"{len(results) - len(invalid)} of {len(results)} valid ({problems} problems, {workloads} workloads)"
    console.print(summary, style="red" if invalid else "green")
    if invalid:
        raise typer.Exit(1)


@app.command()
@reports_user_errors
def show(paths: PathsArgument = None) -> None:
    """Axes, inputs, outputs and workloads of each problem (a summary table for the bundled set)."""
    from solbench.report.problem_tables import problem_details, problems_summary
    from solbench.spec.loaders import load_problems

    problems = load_problems(_default_paths(paths))
    if not problems:
        error_console.print("no problem found")
        raise typer.Exit(1)
    if not paths:
        console.print(problems_summary(problems))
        return
    for problem in problems:
        console.print(problem_details(problem))
        console.print()


@app.command()
@reports_user_errors
def sol(
    paths: PathsArgument = None,
    hardware: Annotated[Optional[str], typer.Option("--hardware", "-H", help="Hardware spec name or YAML file (default: $SOLBENCH_HARDWARE or H200).")] = None,
    workload: Annotated[Optional[list[str]], typer.Option("--workload", "-w", help="Only these workload uuids (a unique prefix of 6+ characters is enough).")] = None,
    policy: Annotated[str, typer.Option(help="Precision policy: strict, relaxed, or auto (the problem's own precision_policy, else relaxed).")] = "auto",
    explain: Annotated[bool, typer.Option("--explain", help="Add the per-op breakdown.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per workload (JSON lines), as each is known.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also append each workload's result to this JSONL file as it is known.")] = None,
    synthesize_missing_blobs: SynthesizeOption = False,
    clock: ClockOption = None,
    verify: Annotated[bool, typer.Option("--verify", help="On a GPU: time the eager reference, torch.compile and any --solutions through the evaluator and list every workload faster than T_SOL.")] = False,
    solutions: Annotated[Optional[list[Path]], typer.Option("--solutions", help="With --verify: solution files (or folders of them) timed as well.")] = None,
    compile_mode: Annotated[Optional[list[str]], typer.Option("--compile-mode", help="With --verify: torch.compile modes to time (default: default; 'none' for none).")] = None,
    workloads: Annotated[str, typer.Option(help="With --verify: all, smallest:N or spread:N (smallest, largest, evenly between).")] = "all",
    budget: Annotated[float, typer.Option(help="With --verify: seconds of timed calls per workload and candidate.", min=0.05)] = 1.0,
    compile_workloads: Annotated[str, typer.Option(help="With --verify: where torch.compile is timed too (all, smallest:N, spread:N; each shape compiles once).")] = "spread:1",
    in_evaluator: Annotated[bool, typer.Option("--in-evaluator", help="With --verify: time the reference and torch.compile through the evaluator's workers too (default: in this process, with the evaluator's timer).")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes that analyse problems side by side (0: one per core, up to 4, for a dataset).", min=0)] = 0,
) -> None:
    """Speed-of-light bounds of each workload: FLOPs by unit, bytes, unfused/fused/cache-aware times.
    Results stream out problem by problem; a problem that fails is one line on stderr, the others go on."""
    import json

    if verify:
        _verify_bounds(_default_paths(paths), hardware, policy, clock, solutions or [], compile_mode, workloads, output, as_json, synthesize_missing_blobs,
                       budget, compile_workloads, in_evaluator, workload)
        return

    from solbench.report.sol_tables import explain_table, sol_table
    from solbench.sol.api import iter_analyses
    from solbench.sol.hardware import default_hardware_name, get_hardware
    from solbench.spec.errors import Issue, SpecError
    from solbench.spec.files import append_jsonl

    if policy not in {"auto", "strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict, relaxed or auto, got {policy!r}", param_hint="--policy")
    if output is not None and output.exists():
        raise SpecError("exists already; choose another file (results are appended as they are known)", path=output)
    spec = get_hardware(hardware or default_hardware_name())
    if clock:
        spec = spec.at_clock(clock)
    failures = 0
    pending: list[Any] = []  # the current problem's results, printed as one table when it is done

    def flush() -> None:
        if pending and not as_json:
            console.print(sol_table(pending))
            for result in pending:
                for note in result.notes:
                    console.print(f"[dim]{result.problem}/{result.workload[:8]}: {note}[/dim]")
                if result.partial:
                    console.print(f"[yellow]{result.problem}/{result.workload[:8]}: partial, no cost rule for {', '.join(result.uncovered_ops)}[/yellow]")
                if explain:
                    console.print(explain_table(result))
        pending.clear()

    paths = _default_paths(paths)
    if jobs == 0:
        from solbench.sol.api import default_jobs

        jobs = 1 if explain else default_jobs(sum(1 for path in paths for _ in (path.rglob("definition.json") if path.is_dir() else [path])))
    for item in iter_analyses(paths, spec, policy, workload, progress=not as_json, synthesize_missing_blobs=synthesize_missing_blobs,
                              jobs=jobs, keep_nodes=explain):
        if isinstance(item, Issue):
            if item.severity == "error":
                failures += 1
                _print_issue(item)
            continue
        if pending and pending[-1].problem != item.problem:
            flush()
        pending.append(item)
        if as_json:
            print(json.dumps(item.to_json()), flush=True)
        if output is not None:
            append_jsonl(output, item.to_json())
    flush()
    if failures:
        raise typer.Exit(1)


def _verify_bounds(paths: list[Path], hardware: str | None, policy: str, clock: float | None, solution_paths: list[Path],
                   compile_modes: list[str] | None, workloads: str, output: Path | None, as_json: bool, synthesize: bool,
                   budget: float = 1.0, compile_workloads: str = "spread:1", in_evaluator: bool = False, only: list[str] | None = None) -> None:
    """`solbench sol --verify`: measured times against T_SOL (see solbench.bench.verify)."""
    import json

    from rich.table import Table

    from solbench.bench.orchestrator import resolve_device
    from solbench.bench.verify import check_problem, ratio_summary
    from solbench.report.sol_tables import explain_table
    from solbench.sol.analysis import analyze
    from solbench.sol.api import policy_for
    from solbench.sol.calibrate import spec_for_run
    from solbench.spec.errors import SpecError
    from solbench.spec.files import append_jsonl
    from solbench.spec.loaders import load_problems, load_solution

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
                                  clock_mhz=clock, budget_s=budget, min_iterations=10, verify_timed=1)
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
            console.print(f"[red]{problem.name}: not checked: {type(exc).__name__}: {str(exc)[:300]}[/red]")
            broken += 1
            continue
        for check in found_checks:
            if check.self_check not in (None, "PASSED"):
                console.print(f"[red]{problem.name}/{check.workload[:8]}: the reference does not match itself: {check.self_check}[/red]")
            elif not as_json:
                times = ", ".join(f"{name} {ms:.4g} ms" for name, ms in check.times_ms.items())
                failed = "".join(f"; {name} {why}" for name, why in check.failures.items())
                console.print(f"[dim]{problem.name}/{check.workload[:8]}: T_SOL {check.sol_ms or float('nan'):.4g} ms; {times}{failed}[/dim]")
            checks.append(check)
            if output is not None:
                append_jsonl(output, check.to_json())
            if as_json:
                print(json.dumps(check.to_json()), flush=True)
            if check.violated:
                workload = problem.workload(check.workload)
                result = analyze(problem, workload, spec, policy_for(problem, policy))
                console.print(f"[red]VIOLATION {problem.name}/{check.workload[:8]}: {check.fastest[0]} ran {check.fastest[1]:.4g} ms, "
                              f"T_SOL {check.sol_ms:.4g} ms (ratio {check.ratio:.3f})[/red]")
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


def _evaluation_options(device: str, trials: int, timeout: float, compile_timeout: float, seed: Optional[int], hardware: Optional[str],
                        reference_latency: bool, timing: bool, policy: str, **more: Any) -> Any:
    """EvalOptions from command-line values (checked here for messages that name the option; the
    dataclass checks everything again)."""
    from solbench.bench.orchestrator import EvalOptions

    if trials < 1:
        raise typer.BadParameter("at least 1 trial", param_hint="--trials")
    if timeout <= 0 or compile_timeout <= 0:
        raise typer.BadParameter("timeouts are positive numbers of seconds", param_hint="--timeout")
    if policy not in {"auto", "strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict, relaxed or auto, got {policy!r}", param_hint="--policy")
    return EvalOptions(device=device, trials=trials, timeout_s=timeout, compile_timeout_s=compile_timeout, seed=seed,
                       hardware=hardware, reference_latency=reference_latency, timing=timing, policy=policy, **more)


def _trace_sink(output: Optional[Path], resume: bool) -> tuple[Any, set[tuple[str, str | None, str]]]:
    """Where traces go (appended as soon as known) and what a resumed run has done already."""
    from solbench.spec.errors import SpecError
    from solbench.spec.files import append_jsonl
    from solbench.spec.loaders import load_traces

    done: set[tuple[str, str | None, str]] = set()
    if output is not None and output.exists():
        if not resume:
            raise SpecError("exists already; pass --resume to continue it, or choose another file", path=output)
        done = {(t.definition, t.solution, t.workload.uuid) for t in load_traces(output) if t.evaluation is not None}
    return (lambda trace: append_jsonl(output, trace.to_json_dict())) if output is not None else (lambda trace: None), done


def _progress_line(trace: Any) -> None:
    from solbench.report.eval_tables import first_log_line

    evaluation = trace.evaluation
    latency = evaluation.performance.latency_ms if evaluation.performance and evaluation.performance.latency_ms is not None else None
    detail = f"{latency:.4g} ms" if latency is not None else first_log_line(trace)[:160]
    error_console.print(f"{trace.definition} / {trace.workload.uuid[:8]}: {evaluation.status.value}  {detail}")


DeviceOption = Annotated[str, typer.Option(help="auto (cuda if available), cpu, cuda or cuda:N.")]
PolicyOption = Annotated[str, typer.Option(help="Precision policy: relaxed (any precision within the tolerance; the default), strict (fp32 work must keep fp32 accuracy; downgrades are REWARD_HACK), or auto (the problem's own precision_policy, else relaxed). Also prices T_SOL.")]
InputProfileOption = Annotated[str, typer.Option("--input-profile", help="How random inputs without a declared distribution are drawn: plain, sol-execbench (the public harness's rules), or auto (sol-execbench for data in the public layout, plain for solbench's own).")]


def _input_profile(value: str) -> str:
    from solbench.spec.profiles import PROFILES

    if value != "auto" and value not in PROFILES:
        raise typer.BadParameter(f"expected auto, {', '.join(PROFILES)}; got {value!r}", param_hint="--input-profile")
    return value
TrialsOption = Annotated[int, typer.Option(help="Correctness trials per workload, each with fresh inputs.")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="Seconds per workload (correctness and timing).")]
CompileTimeoutOption = Annotated[float, typer.Option("--compile-timeout", help="Seconds for building the solution.")]
SeedOption = Annotated[Optional[int], typer.Option(help="Input seed (default: a fresh random one, recorded in the traces).")]
OutputOption = Annotated[Optional[Path], typer.Option("--output", "-o", help="Append traces to this JSONL file as each is known.")]
SandboxOption = Annotated[str, typer.Option("--sandbox", help="OS sandbox of the solution worker: auto (bubblewrap where it works, else a weaker fallback), bwrap (required) or none.")]


def _sandbox_mode(mode: str) -> str:
    """The --sandbox value, checked before anything runs: one that cannot be had here is one line on stderr, exit code 2."""
    from solbench.bench.sandbox import SandboxError, available_level

    try:
        available_level(mode)
    except SandboxError as exc:
        print(f"error: --sandbox {mode}: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    return mode


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
    hardware: Annotated[Optional[str], typer.Option(help="Hardware spec for T_SOL (default: matched from the GPU).")] = None,
    reference_latency: Annotated[bool, typer.Option("--reference-latency", help="Also time the reference the same way.")] = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time solutions that pass.")] = True,
    policy: PolicyOption = "auto",
    input_profile: InputProfileOption = "auto",
    synthesize_missing_blobs: SynthesizeOption = False,
    hidden: Annotated[int, typer.Option(help="Hidden workloads drawn from the published axis ranges for this run (correctness only).", min=0)] = 2,
    lock_clocks: Annotated[bool, typer.Option("--lock-clocks", help="Lock the GPU's SM clock while timing, at --clock or its maximum (changes the GPU's state; needs permission). T_SOL is priced at the locked clock.")] = False,
    clock: ClockOption = None,
    static_analysis: Annotated[bool, typer.Option("--static-analysis/--no-static-analysis", help="Refuse sources that static analysis rejects (REWARD_HACK). Turn off only to test the harness itself.")] = True,
    launch_gate: Annotated[bool, typer.Option("--launch-gate/--no-launch-gate", help="Hold the stream until each call is fully enqueued, so host work between its kernels is not timed (CUDA).")] = True,
    sandbox: SandboxOption = "auto",
) -> None:
    """Evaluate a solution on every workload of its problem: correctness, then timing; one trace each."""
    import json

    from solbench.bench.clocks import locked_clocks
    from solbench.bench.orchestrator import evaluate, resolve_device
    from solbench.report.eval_tables import traces_table
    from solbench.spec.errors import SpecError
    from solbench.spec.loaders import load_problems, load_solution

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
                                  input_profile=_input_profile(input_profile))
    sink, done = _trace_sink(output, resume)
    skip = {uuid for definition, name, uuid in done if definition == problem.name and name == solution.name}

    def on_trace(trace: Any) -> None:
        sink(trace)
        if not as_json:
            _progress_line(trace)

    device_name = resolve_device(options.device)
    index = int(device_name.split(":")[1]) if ":" in device_name else 0
    with locked_clocks(index, lock_clocks and device_name.startswith("cuda"), int(clock) if clock else None) as locked:
        options = dataclasses.replace(options, clock_mhz=locked or clock)
        traces = evaluate(problem, solution, options, workloads=chosen if workload else None, skip=skip, on_trace=on_trace)
    if as_json:
        print(json.dumps([t.to_json_dict() for t in traces], indent=1))
    else:
        console.print(traces_table(traces, title=f"{solution.name} on {problem.name}"))
        if skip:
            console.print(f"{len(skip & {w.uuid for w in chosen})} workload(s) skipped: already in {output}")


@app.command("run")
@reports_user_errors
def run_command(
    paths: PathsArgument = None,
    output: OutputOption = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip workloads already in the output file.")] = False,
    workloads: Annotated[str, typer.Option(help="Which workloads: all, smallest:N or spread:N (default: all on a GPU, smallest:2 on a CPU).")] = "auto",
    device: DeviceOption = "auto",
    trials: TrialsOption = 3,
    timeout: TimeoutOption = 300.0,
    seed: SeedOption = None,
    sandbox: SandboxOption = "auto",
    policy: PolicyOption = "auto",
    input_profile: InputProfileOption = "auto",
    synthesize_missing_blobs: SynthesizeOption = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time the workloads that pass (--no-timing: correctness only).")] = True,
) -> None:
    """The main job: evaluate each problem's reference (its baseline) on its workloads and print the results.
    A problem that does not load, or whose evaluation fails, is reported and the others go on."""
    from solbench.bench.orchestrator import evaluate, reference_solution, resolve_device
    from solbench.report.eval_tables import traces_table
    from solbench.report.problem_tables import refusal_line
    from solbench.spec.loaders import flag_duplicate_names, scan

    found = [loaded for path in _default_paths(paths) for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs)]
    flag_duplicate_names(found)
    refused = [loaded for loaded in found if not loaded.ok and loaded.kind not in {"solution", "traces"}]
    for loaded in refused:
        for issue in loaded.errors:
            _print_issue(issue)
    problems = [loaded.problem for loaded in found if loaded.problem is not None]
    options = _evaluation_options(device, trials, timeout, 600.0, seed, None, False, timing, policy,
                                  static_analysis=False,  # the problems' own references: trusted code
                                  sandbox=_sandbox_mode(sandbox), input_profile=_input_profile(input_profile))
    device_name = resolve_device(options.device)
    if workloads == "auto":
        workloads = "all" if device_name.startswith("cuda") else "smallest:2"
    if device_name == "cpu":
        options = dataclasses.replace(options, budget_s=2.0, min_iterations=5, verify_timed=1)
    sink, done = _trace_sink(output, resume)
    traces = []
    broken: list[str] = []
    for problem in problems:
        chosen = _choose_workloads(problem, workloads)
        solution = reference_solution(problem)
        skip = {uuid for definition, name, uuid in done if definition == problem.name and name == solution.name}

        def on_trace(trace: Any) -> None:
            sink(trace)
            _progress_line(trace)

        try:
            traces += evaluate(problem, solution, options, workloads=chosen, skip=skip, on_trace=on_trace)
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the others
            broken.append(f"{problem.source}: evaluation stopped: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
            _print_issue(broken[-1])
    if traces:
        console.print(traces_table(traces, title=f"reference solutions on {device_name}"))
    for loaded in refused:
        print(refusal_line(loaded))
    failed = [t for t in traces if t.evaluation.status.value != "PASSED"]
    summary = f"{len(traces) - len(failed)} of {len(traces)} workloads passed"
    if refused or broken:
        summary += f"; {len(refused)} problem(s) refused, {len(broken)} stopped"
    console.print(summary, style="red" if failed or refused or broken else "green")
    if failed or refused or broken:
        raise typer.Exit(1)


def _choose_workloads(problem: Any, which: str) -> list[Any]:
    """all; smallest:N (the N with the fewest input elements); spread:N (smallest, largest and evenly between)."""
    kind, _, count_text = which.partition(":")
    if which == "all":
        return problem.workloads
    if kind in {"smallest", "spread"} and count_text.isdigit() and int(count_text) > 0:
        count = int(count_text)
        ordered = sorted(problem.workloads, key=lambda w: _input_elements(problem, w))
        if kind == "smallest" or count >= len(ordered):
            return ordered[:count]
        if count == 1:
            return [ordered[-1]]
        picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
        return [ordered[i] for i in picks]
    raise typer.BadParameter(f"expected all, smallest:N or spread:N (N >= 1), got {which!r}", param_hint="--workloads")


def _input_elements(problem: Any, workload: Any) -> int:
    from math import prod

    axes = problem.axes(workload)
    return sum(prod(spec.resolve_shape(axes)) for spec in problem.definition.inputs.values() if spec.shape is not None)


@app.command()
@reports_user_errors
def audit(
    solutions: Annotated[list[Path], typer.Argument(help="Solution JSON files.")],
    policy: Annotated[str, typer.Option(help="Precision policy the solutions would be evaluated under: relaxed (precision flags are warnings) or strict (they are refused).")] = "relaxed",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON list: per solution its path, refused, and the findings (rule, severity, file, line, message).")] = False,
) -> None:
    """Static analysis of solutions' sources: every finding with its rule, file and line; exit code 1
    if any solution has a finding that the evaluator would refuse (REWARD_HACK)."""
    import json

    from solbench.bench.guards.static import analyze_solution
    from solbench.spec.loaders import load_solution

    if policy not in {"strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict or relaxed, got {policy!r}", param_hint="--policy")
    report = []
    for path in solutions:
        findings = analyze_solution(load_solution(path), policy)
        rejects = [f for f in findings if f.severity == "reject"]
        report.append({"path": str(path), "refused": bool(rejects),
                       "findings": [{"rule": f.rule, "severity": f.severity, "file": f.path, "line": f.line, "message": f.message} for f in findings]})
        if as_json:
            continue
        for finding in findings:
            print(f"{path}: {finding.path}:{finding.line}: {finding.severity} [{finding.rule}] {finding.message}")
        console.print(f"{path}: {'refused' if rejects else 'accepted'} ({len(rejects)} reject, {len(findings) - len(rejects)} warn)",
                      style="red" if rejects else "green")
    if as_json:
        print(json.dumps(report, indent=1))
    if any(entry["refused"] for entry in report):
        raise typer.Exit(1)


hw_app = typer.Typer(help="Hardware specs: list, show, calibrate.", no_args_is_help=True)
app.add_typer(hw_app, name="hw")


@hw_app.command("list")
@reports_user_errors
def hw_list() -> None:
    """Every known spec: the built-in datasheets and the calibrated ones."""
    from solbench.report.sol_tables import hardware_table
    from solbench.sol.hardware import catalogue

    console.print(hardware_table([(str(path), spec) for path, spec in catalogue().values()]))


@hw_app.command("show")
@reports_user_errors
def hw_show(name: Annotated[str, typer.Argument(help="Spec name or YAML file.")]) -> None:
    """Peaks per unit and the rates each precision policy uses."""
    from solbench.report.sol_tables import hardware_details
    from solbench.sol.hardware import get_hardware

    console.print(hardware_details(get_hardware(name)))


@hw_app.command("calibrate")
@reports_user_errors
def hw_calibrate(
    base: Annotated[Optional[str], typer.Option(help="Datasheet spec to derive from (default: matched from the GPU's name; none on a CPU).")] = None,
    device: Annotated[Optional[str], typer.Option(help="cuda, cuda:N or cpu (default: cuda if available).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write the spec (default: the user spec folder).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    scale: Annotated[float, typer.Option(help="Scale of the test sizes (smaller is faster, less exact).")] = 1.0,
) -> None:
    """Measure attainable ceilings here and save a spec derived from the datasheet entry."""
    import torch
    import yaml

    from solbench.sol.calibrate import calibrated_spec, default_base_for, measure
    from solbench.sol.hardware import USER_HARDWARE_DIR, get_hardware
    from solbench.spec.files import write_text_safely

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    base_spec = get_hardware(base) if base else default_base_for(device)
    error_console.print(f"measuring on {device} (base spec: {base_spec.name if base_spec else 'none, a CPU spec'})...")
    measured = measure(device, size_scale=scale)
    spec = calibrated_spec(base_spec, device, measured)
    target = output or USER_HARDWARE_DIR / f"{spec.name.lower()}.yaml"
    write_text_safely(target, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), overwrite=force)
    for key, value in measured.items():
        console.print(f"{key:>14}: {value:10.3f} {'TB/s' if key.endswith('tbps') else 'TFLOP/s'}")
    console.print(f"saved {spec.name} to {target}")


def main() -> None:
    """Console entry point: never a traceback for the user (SOLBENCH_DEBUG=1 shows one)."""
    try:
        app()
    except KeyboardInterrupt:
        print("solbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last line of defence against tracebacks
        if os.environ.get("SOLBENCH_DEBUG"):
            raise
        print(f"solbench: internal error: {type(exc).__name__}: {exc} (set SOLBENCH_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
