"""The typer app and what its commands share: consoles, options, error reporting, evaluation options."""

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
    typer.Argument(help="Problem folders, dataset folders, FlashInfer-Trace folders, KernelBench-style .py files, solutions (.json) or traces (.jsonl); solbench:models for the bundled set made from real models. Default: the bundled problems."),
]


def _default_paths(paths: list[Path] | None) -> list[Path]:
    """The paths given (a bundled set named as solbench:NAME resolved), or the bundled problems."""
    from solbench.dataset import bundled_problems_path, resolve_set_paths

    if paths:
        return resolve_set_paths(paths)
    return [bundled_problems_path()]


def _print_issue(issue: object) -> None:
    # One plain line per issue (no wrapping), so that tools and people can grep it.
    print(str(issue), file=sys.stderr)


def reports_user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """A SpecError from a command becomes one line per issue and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from solbench.data.errors import SpecError

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
SolFloorOption = Annotated[bool, typer.Option("--sol-floor/--no-sol-floor", help="T_SOL = max(roofline, the hardware's latency floor: the shortest span of a kernel on the chip; the default), or the roofline alone, as bounds published without a floor are. Scores and the faster-than-sol check use the same T_SOL.")]
ClockOption = Annotated[Optional[float], typer.Option("--clock", help="SM clock in MHz at which to price T_SOL (compute peaks scale with it; the spec's peaks hold at its boost clock). With --lock-clocks, the clock to lock.", min=1)]
TABLE_LIMIT = 30  # validate lists every item in a table up to this many; a whole dataset gets a line per subset



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
    if more.get("energy") and not timing:
        raise typer.BadParameter("energy is measured after timing, on the timed calls: drop --no-timing", param_hint="--energy")
    if more.get("energy_window_s", 1.0) != 1.0 and not more.get("energy"):
        raise typer.BadParameter("sets the windows of the energy measurement: add --energy", param_hint="--energy-window")
    return EvalOptions(device=device, trials=trials, timeout_s=timeout, compile_timeout_s=compile_timeout, seed=seed,
                       hardware=hardware, reference_latency=reference_latency, timing=timing, policy=policy, **more)


def _trace_sink(output: Optional[Path], resume: bool) -> tuple[Any, set[tuple[str, str | None, str]]]:
    """Where traces go (appended as soon as known) and what a resumed run has done already."""
    from solbench.data.errors import SpecError
    from solbench.data.files import append_jsonl
    from solbench.data.loaders import load_traces

    done: set[tuple[str, str | None, str]] = set()
    if output is not None and output.exists():
        if not resume:
            raise SpecError("exists already; pass --resume to continue it, or choose another file", path=output)
        done = {(t.definition, t.solution, t.workload.uuid) for t in load_traces(output) if t.evaluation is not None}
    return (lambda trace: append_jsonl(output, trace.to_json_dict())) if output is not None else (lambda trace: None), done


def _progress_line(trace: Any) -> None:
    from solbench.report.eval_tables import first_log_line
    from solbench.report.units import format_ms

    evaluation = trace.evaluation
    latency = evaluation.performance.latency_ms if evaluation.performance and evaluation.performance.latency_ms is not None else None
    detail = format_ms(latency) if latency is not None else first_log_line(trace)[:160]
    error_console.print(f"{trace.definition} / {trace.workload.uuid[:8]}: {evaluation.status.value}  {detail}", markup=False)


HardwareOption = Annotated[Optional[str], typer.Option("--hardware", envvar="SOLBENCH_HARDWARE", show_envvar=True,
                                                       help="Hardware spec (name or YAML) that prices T_SOL. Default: the GPU's datasheet entry; "
                                                            "on a CPU, a spec of this CPU calibrated once and cached.")]
DeviceOption = Annotated[str, typer.Option(help="auto (cuda if available), cpu, cuda or cuda:N.")]
PolicyOption = Annotated[str, typer.Option(help="Precision policy: relaxed (any precision within the tolerance; the default), strict (fp32 work must keep fp32 accuracy; downgrades are REWARD_HACK), or auto (the problem's own precision_policy, else relaxed). Also prices T_SOL.")]
InputProfileOption = Annotated[str, typer.Option("--input-profile", help="How random inputs without a declared distribution are drawn: plain, sol-execbench (the public harness's rules), or auto (sol-execbench for data in the public layout, plain for solbench's own).")]


def _input_profile(value: str) -> str:
    from solbench.data.profiles import PROFILES

    if value != "auto" and value not in PROFILES:
        raise typer.BadParameter(f"expected auto, {', '.join(PROFILES)}; got {value!r}", param_hint="--input-profile")
    return value
TrialsOption = Annotated[int, typer.Option(help="Correctness trials per workload, each with fresh inputs.")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="Seconds per workload (correctness and timing).")]
CompileTimeoutOption = Annotated[float, typer.Option("--compile-timeout", help="Seconds for building the solution.")]
SeedOption = Annotated[Optional[int], typer.Option(help="Input seed (default: a fresh random one, recorded in the traces).")]
OutputOption = Annotated[Optional[Path], typer.Option("--output", "-o", help="Append traces to this JSONL file as each is known.")]
EnergyOption = Annotated[bool, typer.Option("--energy", help="After timing, measure each workload's energy per call on the GPU's energy counter (NVML; pip install 'solbench[energy]'), its bound E_SOL and the energy score; about 0.5 s + 3 x --energy-window more per workload. Without a counter (a CPU, no driver) the traces say why.")]
EnergyWindowOption = Annotated[float, typer.Option("--energy-window", min=0.2, max=60.0, help="With --energy: seconds of each energy window (the calls' setup, the calls, the setup again); longer windows average the counter's 0.1 s updates over more calls.")]
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


def _problems_to_run(paths: list[Path] | None, synthesize_missing_blobs: bool = False) -> tuple[list[Any], list[Any]]:
    """The problems under the paths (default: the bundled ones) and those refused, each refused one's errors
    printed one per line (its missing safetensors files in one line; `load_log` has them all): a problem
    that does not load never stops the others."""
    from solbench.data.loaders import flag_duplicate_names, scan
    from solbench.data.problem import missing_blobs_in_one

    found = [loaded for path in _default_paths(paths) for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs)]
    flag_duplicate_names(found)
    refused = [loaded for loaded in found if not loaded.ok and loaded.kind not in {"solution", "traces"}]
    for loaded in refused:
        for issue in missing_blobs_in_one(list(loaded.errors)):
            _print_issue(issue)
    return [loaded.problem for loaded in found if loaded.problem is not None], refused


LOAD_LOG = "load.log"


def load_log(refused: list[Any]) -> str:
    """Every issue of every refused problem, one per line (what stderr said in short)."""
    return "".join(f"{issue}\n" for loaded in refused for issue in loaded.errors)


def _device_defaults(options: Any, workloads: str) -> tuple[Any, str, str]:
    """(options, device, workloads) for a run on the resolved device: workloads auto is all on a GPU and the two
    smallest on a CPU, where the timing budget is smaller too."""
    from solbench.bench.orchestrator import resolve_device

    device = resolve_device(options.device)
    if workloads == "auto":
        workloads = "all" if device.startswith("cuda") else "smallest:2"
    if device == "cpu":
        options = dataclasses.replace(options, budget_s=2.0, min_iterations=5, verify_timed=1)
    return options, device, workloads
