"""`solbench profile` (Nsight Compute joined with the SOL analysis, solbench.profile), and the checks
that `--memcheck` and `run --profile` make before anything runs: the tool is there, the device is a GPU."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import (CompileTimeoutOption, DeviceOption, HardwareOption, PolicyOption, SandboxOption, SeedOption, SolFloorOption, TimeoutOption,
                  TrialsOption, _evaluation_options, _sandbox_mode, app, console, error_console, reports_user_errors)


def need_tool(tool: Any, option: str) -> Path:
    """The tool's path; where it is missing, one line on stderr naming it and where it was looked for, exit code 2."""
    from solbench.profile.tools import ToolMissing, find_tool

    try:
        return find_tool(tool)
    except ToolMissing as exc:
        print(f"error: {option}: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None


def need_cuda(device: str, option: str) -> str:
    """The resolved device, which must be a GPU; else one line on stderr, exit code 2."""
    from solbench.bench.orchestrator import resolve_device

    try:
        resolved = resolve_device(device)
    except RuntimeError as exc:
        print(f"error: {option}: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if not resolved.startswith("cuda"):
        print(f"error: {option}: needs a CUDA device (the NVIDIA tools measure and check GPU kernels); the device here is {resolved}", file=sys.stderr)
        raise typer.Exit(2)
    return resolved


def problem_of(given: str, solution: Any) -> Any:
    """The solution's problem: from a path (a problem, or a dataset holding it) or a bundled problem's name."""
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_problems

    from .new import resolve_problem

    path = Path(given)
    if path.exists():
        problems = [p for p in load_problems([path]) if p.name == solution.definition]
        if not problems:
            raise SpecError(f"holds no problem named {solution.definition!r} (the solution's definition)", path=path)
        return problems[0]
    problem = resolve_problem(given)
    if problem.name != solution.definition:
        raise SpecError(f"the solution is for {solution.definition!r}, not for this problem", path=Path(given))
    return problem


@app.command("profile")
@reports_user_errors
def profile_command(
    problem_path: Annotated[str, typer.Argument(metavar="PROBLEM", help="A bundled problem's name, a problem (folder, definition) or a dataset holding the solution's problem.")],
    solution_path: Annotated[Path, typer.Option("--solution", "-s", help="The solution JSON file.")],
    workload: Annotated[Optional[str], typer.Option("--workload", "-w", help="The workload uuid (or a unique 6+ character prefix). Default: the smallest.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole profile as one JSON document.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also write the JSON document to this file (never overwritten).")] = None,
    device: DeviceOption = "auto",
    hardware: HardwareOption = None,
    trials: TrialsOption = 3,
    timeout: TimeoutOption = 300.0,
    compile_timeout: CompileTimeoutOption = 600.0,
    seed: SeedOption = None,
    policy: PolicyOption = "auto",
    sol_floor: SolFloorOption = True,
    sandbox: SandboxOption = "auto",
) -> None:
    """Profile a solution on one workload under Nsight Compute, in the evaluator's own sandboxed worker:
    per kernel its time, DRAM and L2 traffic, bandwidth and pipe use against the hardware's peaks,
    occupancy and registers, joined with the SOL side (compulsory bytes, FLOPs by unit, T_SOL and its
    bound), and T / T_SOL split into gaps, extra bytes, bandwidth or pipe efficiency and a remainder.
    Exit code 1 when the solution does not pass on the workload (the profile is still printed)."""
    from solbench.data.errors import SpecError
    from solbench.data.files import write_text_safely
    from solbench.data.loaders import load_solution
    from solbench.profile.memcheck import smallest_workload
    from solbench.profile.runner import ProfileError, profile_solution
    from solbench.profile.tools import NCU
    from solbench.report.profile_tables import decomposition_table, kernels_table, sol_lines
    from solbench.sol.cpu_spec import run_hardware

    solution = load_solution(solution_path)
    problem = problem_of(problem_path, solution)
    try:
        chosen = problem.workload(workload) if workload else smallest_workload(problem, problem.workloads)
    except KeyError as exc:
        raise SpecError(str(exc.args[0]), path=Path(problem_path), field="workload") from None
    except ValueError:
        raise SpecError("has no workloads", path=Path(problem_path)) from None
    if output is not None and output.exists():
        raise SpecError("exists already; choose another file (a profile is never written over a file)", path=output, field="--output")
    ncu = need_tool(NCU, "solbench profile")
    device_name = need_cuda(device, "solbench profile")
    options = _evaluation_options(device_name, trials, timeout, compile_timeout, seed, hardware, False, True, policy,
                                  sandbox=_sandbox_mode(sandbox), sol_floor=sol_floor, hidden=0)
    hardware_value, spec, spec_note = run_hardware(hardware, device_name)
    if spec_note and not as_json:
        error_console.print(spec_note)
    options = dataclasses.replace(options, hardware=hardware_value)
    try:
        report = profile_solution(problem, solution, chosen, options, spec=spec, ncu=ncu)
    except ProfileError as exc:
        print(f"error: solbench profile: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    if output is not None:
        write_text_safely(output, report.to_json_text())
    if as_json:
        print(report.to_json_text(), end="")
    else:
        console.print(kernels_table(report))
        for line in sol_lines(report):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        table = decomposition_table(report)
        if table is not None:
            console.print(table)
        for note in [*report.notes, *(report.decomposition.notes if report.decomposition else [])]:
            console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if report.status != "PASSED":
        raise typer.Exit(1)


MemcheckOption = Annotated[bool, typer.Option("--memcheck", help="First run the solution once under compute-sanitizer (memcheck; racecheck where its kernels use shared memory) on its smallest workload: an invalid access or a race makes it INCORRECT_NUMERICAL with the sanitizer's first report, even where its outputs are right (needs a GPU and compute-sanitizer; references and baselines are not sanitized).")]
ProfileRunOption = Annotated[bool, typer.Option("--profile", help="After the evaluations, profile each solution on its problem's smallest workload (solbench profile; needs a GPU and Nsight Compute): stored in RUN_DIR/profiles/, a bar chart of its gap decomposition in the report.")]


def memcheck_ready(device: str) -> bool:
    """--memcheck can run here (compute-sanitizer found, the device a GPU); else one line, exit code 2."""
    from solbench.profile.tools import SANITIZER

    need_tool(SANITIZER, "--memcheck")
    need_cuda(device, "--memcheck")
    return True


def profile_ready(device: str) -> Path:
    """ncu, where `run --profile` can run here (the device a GPU); else one line, exit code 2."""
    from solbench.profile.tools import NCU

    ncu = need_tool(NCU, "--profile")
    need_cuda(device, "--profile")
    return ncu


def profile_the_run(selection: Any, inputs: Any, ncu: Path, folder: Path) -> None:
    """run --profile: each solution of the finished run profiled and stored in the run folder; a line per solution on stderr."""
    from solbench.profile.run_profiles import profile_run
    from solbench.score import pipeline

    plan = [(problem, workloads, [solution for solution, _ in pipeline.solutions_of(inputs, problem)]) for problem, workloads in selection]
    profile_run(plan, inputs.options, inputs.spec, folder, ncu, lambda line: error_console.print(line, markup=False, highlight=False))
