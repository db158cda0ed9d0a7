"""`solbench run` without its display: evaluate the given solutions (by default the problems'
references), build or reuse the baselines, score, and write the run folder.

Order: first every missing baseline (one evaluate_jobs call over the candidates), then the solutions
(a second call), so that each solution trace is scored before it is written. The eager reference is
a baseline candidate; where the reference is also a solution of the run, its candidate trace is
used as the solution's trace instead of evaluating it twice.
"""

from __future__ import annotations

import dataclasses

import datetime
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from solbench.bench.orchestrator import EvalOptions, reference_solution
from solbench.data.errors import SpecError
from solbench.data.files import append_jsonl, dump_json, write_text_safely
from solbench.data.hidden import is_held_out
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.data.workload import Workload
from solbench.score.aggregate import score_workload
from solbench.score.baselines import (GPU_COMPILE_MODES, BaselineFile, baseline_path, hardware_key, load_baselines, now,
                                      versions)
from solbench.score.build import BuildOutcome, baseline_jobs, build_baselines
from solbench.score.jobs import Execution, Job, evaluate_jobs
from solbench.score.run_summary import build_summary
from solbench.score.summary import RunSummary
from solbench.sol.hardware import HardwareSpec

REFERENCE_SET = "reference"
TRACES = "traces.jsonl"
SUMMARY = "summary.json"


@dataclass
class RunInputs:
    selection: list[tuple[Problem, list[Workload]]]  # the problems and the workloads chosen of each
    solutions: dict[str, list[tuple[Solution, str]]]  # problem name -> (solution, its set); empty: the references
    options: EvalOptions
    device: str
    spec: HardwareSpec | None
    run_dir: Path
    baseline_dir: Path
    registered: list[Solution] = field(default_factory=list)  # registered baseline solutions
    rebuild: bool = False
    compile_modes: tuple[str, ...] | None = None  # torch.compile modes among the candidates; None: compile_modes_for(device)
    resume: bool = False
    notes: list[str] = field(default_factory=list)
    execution: Execution = field(default_factory=Execution)  # where the jobs run (serial, a pool of lanes, Ray)


@dataclass
class RunOutcome:
    summary: RunSummary
    traces: list[Trace]
    errors: list[str]
    files: list[Path]


def new_run_dir(root: Path = Path("runs")) -> Path:
    """A fresh timestamped folder under root (a suffix where that name is taken)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, count = root / stamp, 1
    while candidate.exists():
        count += 1
        candidate = root / f"{stamp}-{count}"
    return candidate


def prepare_run_dir(run_dir: Path, resume: bool) -> set[tuple[str, str | None, str]]:
    """Create the run folder (never over an existing one, unless resuming it); what it holds already."""
    from solbench.data.loaders import load_traces

    if run_dir.exists() and not resume:
        raise SpecError("exists already; pass --resume to continue that run, or choose another folder", path=run_dir, field="--run-dir")
    if run_dir.exists() and not run_dir.is_dir():
        raise SpecError("is not a folder", path=run_dir, field="--run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    traces = run_dir / TRACES
    return {(t.definition, t.solution, t.workload.uuid) for t in load_traces(traces) if t.evaluation is not None} if traces.exists() else set()


def open_store(inputs: RunInputs) -> tuple[BaselineFile, Path]:
    key = hardware_key(inputs.spec.name if inputs.spec else None, inputs.device)
    path = baseline_path(inputs.baseline_dir, key)
    store = load_baselines(path)
    if store is None:
        cuda = inputs.device.startswith("cuda")
        store = BaselineFile(hardware=key, device=inputs.device, created=now(), versions=versions(), clock_mhz=inputs.options.clock_mhz)
        if not cuda:
            skipped = [mode for mode in GPU_COMPILE_MODES if mode not in modes_for(inputs)]
            if skipped:
                store.notes.append(f"on a CPU: torch.compile modes {', '.join(skipped)} not candidates by default (each compiles C++ per graph: "
                                   "20 s to minutes per problem); pass --compile-modes to include them")
    return store, path


def modes_for(inputs: RunInputs) -> tuple[str, ...]:
    from solbench.score.baselines import compile_modes_for

    return compile_modes_for(inputs.device) if inputs.compile_modes is None else inputs.compile_modes


def solutions_of(inputs: RunInputs, problem: Problem) -> list[tuple[Solution, str]]:
    if not inputs.solutions:
        return [(reference_solution(problem), REFERENCE_SET)]
    return inputs.solutions.get(problem.name, [])


def run(inputs: RunInputs, done: set[tuple[str, str | None, str]], on_trace: Callable[[Job, Trace], None], on_error: Callable[[Job, str], None],
        write_extra: Callable[[Trace], None] = lambda trace: None, report: Callable[[Path], list[Path]] | None = None) -> RunOutcome:
    """The main job (see the module docstring); `done`: (problem, solution, workload) already in the run folder."""
    started = time.monotonic()
    created = now()
    errors: list[str] = []
    store: BaselineFile | None = None
    outcome = BuildOutcome()
    if inputs.options.timing:
        store, store_path = open_store(inputs)
        outcome = build_baselines(inputs.selection, store, store_path, inputs.options, inputs.registered, inputs.rebuild,
                                  compile_modes=modes_for(inputs), on_trace=on_trace, on_error=on_error, execution=inputs.execution)
        errors += outcome.errors
    else:
        inputs.notes.append("--no-timing: no latencies, so no baselines and no scores")
    traces_path = inputs.run_dir / TRACES
    sets: dict[tuple[str, str], str] = {}

    def keep(job: Job, trace: Trace) -> None:
        if store is not None:
            score_workload(trace, store.entry(trace.definition, trace.workload.uuid))  # sets performance.score
        append_jsonl(traces_path, trace.to_json_dict())
        write_extra(trace)

    jobs = []
    for problem, workloads in inputs.selection:
        for solution, set_name in solutions_of(inputs, problem):
            sets[(problem.name, solution.name)] = set_name
            skip = {uuid for definition, name, uuid in done if definition == problem.name and name == solution.name}
            trusted = set_name == REFERENCE_SET
            job = Job(problem, solution, workloads, skip=frozenset(skip), trusted=trusted, tag=set_name,
                      held_out=not trusted and inputs.options.hidden > 0)  # a solution also meets workloads in no file it can read
            if set_name == REFERENCE_SET:  # the eager candidate's trace, where the baselines were built now
                for workload in workloads:
                    reused = outcome.eager_traces.get((problem.name, workload.uuid))
                    if reused is not None and workload.uuid not in skip:
                        keep(job, reused.model_copy(deep=True))
                        skip.add(workload.uuid)
                job = dataclasses.replace(job, skip=frozenset(skip))
            if job.pending:
                jobs.append(job)

    def solution_trace(job: Job, trace: Trace) -> None:
        keep(job, trace)
        on_trace(job, trace)

    for result in evaluate_jobs(jobs, inputs.options, solution_trace, on_error, inputs.execution):
        if result.error is not None:
            errors.append(result.error)
    return finish(inputs, store, sets, created, started, errors, report)


def finish(inputs: RunInputs, store: BaselineFile | None, sets: dict[tuple[str, str], str], created: str, started: float, errors: list[str],
           report: Callable[[Path], list[Path]] | None) -> RunOutcome:
    """Score every trace of the run folder (a resumed run's earlier ones too) and write the summary,
    the baselines used and the report."""
    from solbench.data.loaders import load_traces

    traces_path = inputs.run_dir / TRACES
    traces = [t for t in (load_traces(traces_path) if traces_path.exists() else []) if (t.definition, t.solution or "") in sets]
    files = [traces_path] if traces_path.exists() else []
    relative = None
    if store is not None:
        copy = inputs.run_dir / "baselines" / f"{store.hardware}.json"
        write_text_safely(copy, dump_json(store.to_json_dict()), overwrite=True)
        traces_file = baseline_path(inputs.baseline_dir, store.hardware).with_suffix(".traces.jsonl")
        if traces_file.exists():
            shutil.copyfile(traces_file, copy.with_suffix(".traces.jsonl"))
        relative = str(copy.relative_to(inputs.run_dir))
        files.append(copy)
    problems = {problem.name: problem for problem, _ in inputs.selection}
    summary = build_summary(traces, problems, store, inputs.spec, inputs.device, lambda t: sets.get((t.definition, t.solution or ""), ""),
                            policy=inputs.options.policy, created=created, wall_s=round(time.monotonic() - started, 3),
                            notes=[*inputs.notes, *errors], baselines=relative)
    summary_path = inputs.run_dir / SUMMARY
    write_text_safely(summary_path, dump_json(summary.to_json_dict()), overwrite=True)
    files.append(summary_path)
    if report is not None:
        files += report(inputs.run_dir)
    return RunOutcome(summary, traces, errors, files)


def pending_counts(inputs: RunInputs, store: BaselineFile | None, done: set[tuple[str, str | None, str]]) -> int:
    """Workload evaluations the run will make (for the progress bar): missing baselines' candidates and solutions."""
    total = 0
    if store is not None:
        jobs = baseline_jobs(inputs.selection, store, inputs.device, inputs.registered, inputs.rebuild, modes_for(inputs))
        total += sum(job.pending for job in jobs)
        eager = {(j.problem.name, w.uuid) for j in jobs if j.tag == "eager" for w in j.workloads}
    else:
        eager = set()
    held_out = inputs.options.hidden + (1 if inputs.options.unaligned else 0)  # at most (a problem may have no unaligned workload)
    for problem, workloads in inputs.selection:
        for solution, set_name in solutions_of(inputs, problem):
            if set_name != REFERENCE_SET and inputs.options.hidden > 0:
                total += max(0, held_out - sum(1 for d, name, uuid in done if d == problem.name and name == solution.name
                                               and is_held_out(uuid)))
            for workload in workloads:
                if (problem.name, solution.name, workload.uuid) in done:
                    continue
                if set_name == REFERENCE_SET and (problem.name, workload.uuid) in eager:
                    continue
                total += 1
    return total
