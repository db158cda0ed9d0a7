"""`solbench optimize`: the optimisation loop over one problem (solbench.optimize)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .profile import MemcheckOption, memcheck_ready, profile_ready
from .app import (DeviceOption, HardwareOption, PolicyOption, SandboxOption, SeedOption, TimeoutOption, TrialsOption, _device_defaults, _evaluation_options,
                  _sandbox_mode, app, console, error_console, reports_user_errors)
from .workloads import choose_workloads


@app.command("optimize")
@reports_user_errors
def optimize_command(
    problem: Annotated[str, typer.Argument(metavar="PROBLEM", help="A bundled problem's name (see `solbench show`) or a problem folder / definition.json.")],
    proposer: Annotated[Optional[str], typer.Option("--proposer", help="builtin (no model: registered solutions, then torch.compile modes), or the base URL of an OpenAI-compatible chat-completions endpoint (e.g. http://127.0.0.1:8000/v1). Default: $SOLBENCH_PROPOSER_URL or $OPENAI_BASE_URL, else builtin.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="The chat model (default: $SOLBENCH_MODEL or $OPENAI_MODEL, else the first the server lists).")] = None,
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="The environment variable holding the endpoint's API key (none set: no Authorization header).")] = "OPENAI_API_KEY",
    iterations: Annotated[int, typer.Option("--iterations", "-n", min=1, help="Attempts in all (a resumed loop counts the earlier ones).")] = 10,
    budget_s: Annotated[Optional[float], typer.Option("--budget-s", min=0, help="Wall seconds after which no new attempt starts (this sitting).")] = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="The run folder (default: a new runs/optimize-<problem>-<timestamp>); --resume continues it.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the loop in --run-dir: finished attempts are kept, not redone.")] = False,
    solutions: Annotated[Optional[list[Path]], typer.Option("--solutions", "-s", help="With the builtin proposer: registered solutions to try (files or folders of JSON files), besides those kept in the problem's folder.")] = None,
    compile_modes: Annotated[str, typer.Option("--compile-modes", help="With the builtin proposer: torch.compile modes to try, comma-separated, or none (default: default on a CPU; default, max-autotune-no-cudagraphs, reduce-overhead, max-autotune on a GPU).")] = "auto",
    workloads: Annotated[str, typer.Option(help="The published workloads the loop uses: all, smallest:N or spread:N (default: all on a GPU, smallest:2 on a CPU).")] = "auto",
    hardware: HardwareOption = None,
    device: DeviceOption = "auto",
    trials: TrialsOption = 3,
    timeout: TimeoutOption = 300.0,
    hidden: Annotated[int, typer.Option(min=1, help="Hidden workloads drawn per attempt (plus the unaligned one); never shown to the proposer.")] = 2,
    seed: SeedOption = None,
    policy: PolicyOption = "auto",
    sandbox: SandboxOption = "auto",
    timing_budget: Annotated[Optional[float], typer.Option("--timing-budget", min=0.01, help="Seconds of timed calls per workload (default: the evaluator's, 2 on a CPU).")] = None,
    request_timeout: Annotated[float, typer.Option("--request-timeout", min=1, help="Seconds to wait for the endpoint's reply.")] = 600.0,
    memcheck: MemcheckOption = False,
    profile: Annotated[bool, typer.Option("--profile", help="Profile each correct attempt under Nsight Compute on its smallest workload (a GPU and ncu): the proposer gets its kernels and gap decomposition.")] = False,
) -> None:
    """An optimisation loop: a proposer gets the problem (reference, signature, workloads, SOL breakdown,
    hardware), proposes a solution, gets the evaluator's feedback, and tries again. Every attempt is
    evaluated with every defence on; the best eligible solution, every trace, a plot and a report are
    written to the run folder. Exit code 1 when no attempt is eligible, 2 when the proposer fails."""
    from solbench.optimize import LoopSettings, optimize
    from solbench.sol.cpu_spec import run_hardware

    from .evaluate import _compile_modes
    from .new import resolve_problem

    if resume and run_dir is None:
        raise typer.BadParameter("--resume continues a run folder: name it with --run-dir", param_hint="--resume")
    chosen_problem = resolve_problem(problem)
    modes = _compile_modes(compile_modes)
    options = _evaluation_options(device, trials, timeout, 600.0, seed, None, False, True, policy, static_analysis=True,
                                  sandbox=_sandbox_mode(sandbox), hidden=hidden)
    try:
        options, device_name, workloads = _device_defaults(options, workloads)
    except RuntimeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    if timing_budget is not None:
        options = dataclasses.replace(options, budget_s=timing_budget)
    if memcheck:  # each attempt once under compute-sanitizer first: its verdict is on the traces and in the feedback
        options = dataclasses.replace(options, memcheck=memcheck_ready(options.device))
    ncu = profile_ready(options.device) if profile else None
    selected = choose_workloads(chosen_problem, workloads)
    chosen_problem = dataclasses.replace(chosen_problem, workloads=selected, workload_lines=[])
    hardware_value, spec, spec_note = run_hardware(hardware, device_name)
    if spec_note:
        error_console.print(spec_note)
    options = dataclasses.replace(options, hardware=hardware_value)
    the_proposer = _proposer(proposer, model, api_key_env, request_timeout, chosen_problem, solutions or [], modes, device_name)
    folder = run_dir or _new_run_dir(chosen_problem.name)
    settings = LoopSettings(iterations=iterations, budget_s=budget_s, resume=resume, profile=ncu)
    outcome = optimize(chosen_problem, the_proposer, options, spec, folder, settings, on_attempt=_attempt_line)
    if outcome.error and not outcome.records:
        print(f"error: proposer: {outcome.error}", file=sys.stderr)
        raise typer.Exit(2)
    if outcome.best is not None:
        console.print(f"best: attempt {outcome.best.attempt}, score {outcome.best.feedback.score:.3f}: {outcome.best_path}", highlight=False, soft_wrap=True)
    else:
        console.print("no eligible solution", highlight=False)
    console.print(f"run folder: {folder} (report {outcome.report}, plot {outcome.plot}); {len(outcome.records)} attempts, loop {outcome.stopped}",
                  highlight=False, soft_wrap=True)
    if outcome.error:
        print(f"error: proposer: {outcome.error}; finished attempts are kept: --resume --run-dir {folder} continues", file=sys.stderr)
        raise typer.Exit(2)
    if outcome.best is None:
        raise typer.Exit(1)


def _proposer(given: str | None, model: str | None, api_key_env: str, timeout_s: float, problem: Any, solution_paths: list[Path],
              modes: tuple[str, ...] | None, device: str) -> Any:
    from solbench.data.errors import SpecError
    from solbench.optimize.builtin import BuiltinProposer, default_modes
    from solbench.optimize.chat import BASE_URL_ENV, MODEL_ENV, ChatProposer, first_env
    from solbench.optimize.proposers import ProposerError

    given = given or first_env(BASE_URL_ENV) or "builtin"
    if given == "builtin":
        registered = _registered(problem, solution_paths)
        return BuiltinProposer(problem, registered, default_modes(device) if modes is None else modes)
    try:
        return ChatProposer(given, model or first_env(MODEL_ENV), os.environ.get(api_key_env) or None, timeout_s)
    except ProposerError as exc:
        raise SpecError(str(exc).removeprefix("--proposer: "), field="--proposer") from None


def _registered(problem: Any, paths: list[Path]) -> list[Any]:
    """The solutions of `problem` given with --solutions, and those kept in its folder."""
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_solution, scan

    found = []
    for path in paths:
        if not path.exists():
            raise SpecError("does not exist", path=path, field="--solutions")
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        found += [load_solution(file) for file in files]
    if problem.source is not None:
        found += [loaded.solution for loaded in scan(problem.source) if loaded.kind == "solution" and loaded.solution is not None]
    mine = [s for s in found if s.definition == problem.name]
    for other in (s for s in found if s.definition != problem.name):
        error_console.print(f"solution {other.name} names problem {other.definition!r}, not {problem.name!r}: not tried")
    return mine


def _new_run_dir(problem: str) -> Path:
    import datetime

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"optimize-{problem}-{stamp}"


def _attempt_line(record: Any) -> None:
    feedback = record.feedback
    score = f"{feedback.score:.3f}" if feedback.score is not None else "-"
    why = "" if record.eligible else f"  ({record.why_not})"
    first = feedback.message.splitlines()[0][:160] if feedback.message and feedback.status != "PASSED" else ""
    error_console.print(f"attempt {record.attempt} [{record.proposal.candidate or '-'}]: {feedback.status}  score {score}{why}"
                        + (f"  {first}" if first else ""), markup=False, highlight=False)
