"""`solbench eval` (one solution) and `solbench run` (the main job)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import (ClockOption, CompileTimeoutOption, DeviceOption, InputProfileOption, OutputOption, PathsArgument, PolicyOption, SandboxOption,
                  SeedOption, SynthesizeOption, TimeoutOption, TrialsOption, _default_paths, _evaluation_options, _input_profile, _print_issue,
                  _progress_line, _sandbox_mode, _trace_sink, app, console, reports_user_errors)
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
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_problems, load_solution

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
    from solbench.data.loaders import flag_duplicate_names, scan

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
