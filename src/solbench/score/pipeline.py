"""`solbench run` without its display: evaluate the given solutions (by default the problems'
references), build or reuse the baselines, score, and write the run folder.

The run goes problem by problem: a problem's missing baseline candidates are its first jobs, its
solutions follow, and once its last job is done the problem is finished (its baseline entries saved,
its traces scored and written, summary.json rewritten, the report rewritten at most every
REPORT_INTERVAL_S), so a run cut at any moment leaves every finished problem scored and `--resume`
redoes none of it. All jobs go to the executor at once in that order, so a pool of lanes works ahead.
The eager reference is a baseline candidate; where the reference is also a solution of the run, its
candidate trace is the solution's trace (the reference is timed once per workload).
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import shutil
import time
from collections import Counter
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
from solbench.score.baselines import (EAGER, GPU_COMPILE_MODES, BaselineFile, baseline_path, candidate_solutions, hardware_key, load_baselines,
                                      now, save_baselines, versions)
from solbench.score.build import BuildOutcome, missing_workloads, put_entries
from solbench.score.jobs import Execution, Job, JobResult, evaluate_jobs
from solbench.score.run_summary import build_summary, candidate_failures, phase_of
from solbench.score.summary import RunSummary
from solbench.sol.hardware import HardwareSpec

REFERENCE_SET = "reference"
TRACES = "traces.jsonl"
SUMMARY = "summary.json"
COMPILE_LOG = "compile-ahead.jsonl"  # a line per compile made ahead (solbench.exec.precompile.Precompiler)
REPORT_INTERVAL_S = 30.0  # the report of a running run is rewritten at most this often (and at the end)


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
    load_s: float = 0.0  # seconds spent loading the problems (for the summary's phases)
    compile_ahead: int | None = None  # processes that compile the torch.compile candidates ahead (None: precompile.default_processes)


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


@dataclass
class ProblemPlan:
    """One problem's jobs: the baseline candidates of its workloads without a current entry, then its
    solutions; `eager_reused`: the reference set's traces are the eager candidate's (workload uuids)."""

    problem: Problem
    candidates: list[Job] = field(default_factory=list)
    solutions: list[Job] = field(default_factory=list)
    eager_reused: set[str] = field(default_factory=set)
    candidate_results: list[JobResult] = field(default_factory=list)
    held_eager: list[Trace] = field(default_factory=list)  # eager traces waiting for the problem's entries, to be scored as the reference's

    @property
    def jobs(self) -> list[Job]:
        return [*self.candidates, *self.solutions]


def plan_problems(inputs: RunInputs, store: BaselineFile | None, done: set[tuple[str, str | None, str]]) -> list[ProblemPlan]:
    """Each problem's jobs, in the selection's order (see ProblemPlan)."""
    plans = []
    for problem, workloads in inputs.selection:
        plan = ProblemPlan(problem)
        if store is not None:
            candidates = candidate_solutions(problem, inputs.device, inputs.registered, modes_for(inputs))
            missing = missing_workloads(store, problem, workloads, inputs.rebuild, [name for name, _, _ in candidates], inputs.options.energy)
            if missing:
                plan.candidates = [Job(problem, solution, missing, trusted=trusted, tag=name) for name, solution, trusted in candidates]
        eager_uuids = {w.uuid for job in plan.candidates if job.tag == EAGER for w in job.workloads or []}
        for solution, set_name in solutions_of(inputs, problem):
            skip = {uuid for definition, name, uuid in done if definition == problem.name and name == solution.name}
            trusted = set_name == REFERENCE_SET
            if trusted:
                plan.eager_reused = {w.uuid for w in workloads if w.uuid in eager_uuids and w.uuid not in skip}
                skip |= plan.eager_reused
            job = Job(problem, solution, workloads, skip=frozenset(skip), trusted=trusted, tag=set_name,
                      held_out=not trusted and inputs.options.hidden > 0)  # a solution also meets workloads in no file it can read
            if job.pending:
                plan.solutions.append(job)
        plans.append(plan)
    return plans


_CONVOLUTIONS = re.compile(r"\b\w*conv(?:olution)?\w*(?:\.\w+)?\s*\(")  # F.conv2d(, aten.convolution_backward.default(
_MATMULS = re.compile(r"\b(?:mm|bmm|addmm|baddbmm|addbmm|matmul|linear|einsum|_?scaled_mm|\w*grouped_mm|\w*scaled_dot_product\w*|_?int_mm)"
                      r"(?:\.\w+)?\s*\(|[\w)\]][ \t]*@[ \t]*[\w(]")  # torch.mm(, aten.mm.default(, a @ b (not a decorator)
CONVOLUTION_WEIGHT = 3  # max-autotune tunes a convolution's Triton templates too: on an H200 a ResNet bottleneck took 175 s, an MoE 33 s


def compile_cost(plan: ProblemPlan) -> tuple[int, int]:
    """How costly the plan's torch.compile candidates look to build, for ordering alone: (0, 0) without
    any; else the matmuls and convolutions of the reference (each tuned by max-autotune, a convolution
    counting CONVOLUTION_WEIGHT) and the reference's length. Written both ways: torch calls and the
    aten calls of extracted references (torch.ops.aten.conv2d.default(...))."""
    if not any(job.tag.startswith("compile-") for job in plan.candidates):
        return (0, 0)
    reference = plan.problem.definition.reference
    return (1 + CONVOLUTION_WEIGHT * len(_CONVOLUTIONS.findall(reference)) + len(_MATMULS.findall(reference)), len(reference))


def cheapest_first(plans: list[ProblemPlan]) -> list[ProblemPlan]:
    """The plans ordered by compile_cost, ties in the selection's order: problems without compiled
    candidates to build first (nothing to wait for), then those whose compiles look quickest, so the
    first problem is scored within seconds of the compile processes' start and problems go on being
    scored while the costliest ones compile (half of the compile processes take the queue from its far
    end: solbench.exec.precompile). Runs without compiled candidates keep their order."""
    return sorted(plans, key=compile_cost)


class RunState:
    """What a running run keeps: its traces (those of a resumed run too), which problems are done, when
    the report was last written; and the writing of the run folder as problems finish."""

    def __init__(self, inputs: RunInputs, store: BaselineFile | None, created: str, started: float,
                 report: Callable[[Path], list[Path]] | None, sets: dict[tuple[str, str], str]):
        from solbench.data.loaders import load_traces

        self.inputs, self.store, self.created, self.started, self.report, self.sets = inputs, store, created, started, report, sets
        path = inputs.run_dir / TRACES
        self.traces: list[Trace] = load_traces(path) if path.exists() else []
        self.errors: list[str] = []
        self.build = BuildOutcome()
        self.work_cache: dict[tuple[str, str], tuple[float, float] | None] = {}  # flops and bytes per (problem, workload)
        self.report_written = 0.0
        self.problems_done = 0
        self.phases: Counter[str] = Counter({"load": inputs.load_s})

    def add_phases(self, job: Job, trace: Trace) -> None:
        for phase, seconds in ((trace.evaluation.phases or {}) if trace.evaluation is not None else {}).items():
            self.phases[phase_of(job.tag, phase)] += seconds

    def keep(self, trace: Trace, write_extra: Callable[[Trace], None]) -> None:
        """Score a solution's trace against its workload's entry, append it to the run's traces."""
        if self.store is not None:
            score_workload(trace, self.store.entry(trace.definition, trace.workload.uuid))  # sets performance.score
        append_jsonl(self.inputs.run_dir / TRACES, trace.to_json_dict())
        self.traces.append(trace)
        write_extra(trace)

    def summary(self, final: bool) -> RunOutcome:
        """Write summary.json (and the baselines used, and the report where due) from what is known now."""
        inputs, store = self.inputs, self.store
        traces = [t for t in self.traces if (t.definition, t.solution or "") in self.sets]
        traces_path = inputs.run_dir / TRACES
        files = [traces_path] if traces_path.exists() else []
        relative = None
        if store is not None:
            copy = inputs.run_dir / "baselines" / f"{store.hardware}.json"
            write_text_safely(copy, dump_json(store.to_json_dict()), overwrite=True)
            if final:
                traces_file = baseline_path(inputs.baseline_dir, store.hardware).with_suffix(".traces.jsonl")
                if traces_file.exists():
                    shutil.copyfile(traces_file, copy.with_suffix(".traces.jsonl"))
            relative = str(copy.relative_to(inputs.run_dir))
            files.append(copy)
        problems = {problem.name: problem for problem, _ in inputs.selection}
        summary = build_summary(traces, problems, store, inputs.spec, inputs.device, lambda t: self.sets.get((t.definition, t.solution or ""), ""),
                                policy=inputs.options.policy, created=self.created, wall_s=round(time.monotonic() - self.started, 3),
                                notes=[*inputs.notes, *self.errors], baselines=relative, work_cache=self.work_cache,
                                sol_floor=inputs.options.sol_floor)
        summary.phases_s = {phase: round(seconds, 3) for phase, seconds in self.phases.items()}
        chosen = {problem.name: {w.uuid for w in workloads} for problem, workloads in inputs.selection}
        summary.baseline_failures = candidate_failures(store, chosen) if store is not None else []
        summary.progress = {"problems": len(inputs.selection), "finished": self.problems_done, "complete": final}
        summary_path = inputs.run_dir / SUMMARY
        write_text_safely(summary_path, dump_json(summary.to_json_dict()), overwrite=True)
        files.append(summary_path)
        if self.report is not None and (final or time.monotonic() - self.report_written >= REPORT_INTERVAL_S):
            files += self.report(inputs.run_dir)
            self.report_written = time.monotonic()
        return RunOutcome(summary, traces, self.errors, files)


def run(inputs: RunInputs, done: set[tuple[str, str | None, str]], on_trace: Callable[[Job, Trace], None], on_error: Callable[[Job, str], None],
        write_extra: Callable[[Trace], None] = lambda trace: None, report: Callable[[Path], list[Path]] | None = None,
        on_problem_done: Callable[[str], None] = lambda name: None) -> RunOutcome:
    """The main job (see the module docstring); `done`: (problem, solution, workload) already in the run folder."""
    started = time.monotonic()
    store: BaselineFile | None = None
    store_path: Path | None = None
    if inputs.options.timing:
        store, store_path = open_store(inputs)
        store.candidates = list(dict.fromkeys([*store.candidates, EAGER, *(f"compile-{mode}" for mode in modes_for(inputs))]))
    else:
        inputs.notes.append("--no-timing: no latencies, so no baselines and no scores")
    if store is not None and inputs.options.compile_cache is None:  # trusted compiles share a cache kept beside the baselines
        inputs.options = dataclasses.replace(inputs.options, compile_cache=(inputs.baseline_dir / "compile-cache" / store.hardware).absolute())
    plans = cheapest_first(plan_problems(inputs, store, done))
    sets = {(problem.name, solution.name): set_name for problem, _ in inputs.selection for solution, set_name in solutions_of(inputs, problem)}
    state = RunState(inputs, store, now(), started, report, sets)
    jobs: list[Job] = []
    owner: list[ProblemPlan] = []  # the plan of each job
    for plan in plans:
        jobs += plan.jobs
        owner += [plan] * len(plan.jobs)
    left = Counter(id(plan) for plan in owner)  # jobs not yet done per plan
    for plan in plans:
        if not left[id(plan)]:
            state.problems_done += 1  # nothing left to do for it (a resumed run)

    def trace_arrived(job: Job, trace: Trace) -> None:
        plan = plan_of[id(job)]
        state.add_phases(job, trace)
        if job in plan.candidates:  # a baseline candidate's trace is recorded with the problem's entries
            if job.tag == EAGER and trace.workload.uuid in plan.eager_reused:
                plan.held_eager.append(trace.model_copy(deep=True))
        else:
            state.keep(trace, write_extra)
        on_trace(job, trace)

    def job_done(result: JobResult) -> None:
        plan = plan_of[id(result.job)]
        if result.job in plan.candidates:
            plan.candidate_results.append(result)
            if len(plan.candidate_results) == len(plan.candidates):  # the problem's entries, then the reference's traces scored against them
                assert store is not None and store_path is not None
                made = BuildOutcome()  # this problem's alone: its eager traces are in plan.held_eager, not kept for the whole run
                state.build.built += put_entries(store, store_path, plan.candidate_results, made)
                state.build.errors += made.errors
                save_baselines(store_path, store)
                for trace in plan.held_eager:
                    state.keep(trace, write_extra)
                plan.held_eager.clear()
        elif result.error is not None:
            state.errors.append(result.error)
        left[id(plan)] -= 1
        if left[id(plan)] == 0:
            state.problems_done += 1
            state.summary(final=False)
            on_problem_done(plan.problem.name)

    plan_of = {id(job): plan for job, plan in zip(jobs, owner)}
    ahead = start_compiling_ahead(inputs, plans)

    def before_job(job: Job) -> None:  # a compiled candidate waits for its compile made ahead, then loads it
        if ahead is not None:
            ahead.wait_for(id(job), inputs.options.compile_timeout_s)

    try:
        evaluate_jobs(jobs, inputs.options, trace_arrived, on_error, inputs.execution, on_job_done=job_done, before_job=before_job)
    finally:
        if ahead is not None:
            outcome = ahead.close()
            state.phases["compile ahead"] += outcome.seconds
            inputs.notes.append(f"compiled ahead: {outcome.compiled} candidate(s) in {ahead.processes} process(es)"
                                + (f"; {len(outcome.failed)} failed there (their evaluation says why), e.g. {outcome.failed[0]}" if outcome.failed else "")
                                + (f"; paused for {outcome.pauses} timed request(s), {outcome.pause_wait_s:.1f} s waited for their device work to drain,"
                                   f" {outcome.stopped} stop(s) with SIGSTOP" if outcome.pauses else ""))
    state.errors += [error for error in state.build.errors if error not in state.errors]
    return state.summary(final=True)


def start_compiling_ahead(inputs: RunInputs, plans: list[ProblemPlan]):
    """A Precompiler with every plan's torch.compile candidates queued in order, where the run has any,
    runs on a GPU in this process (the serial executor) and may use processes for it; else None."""
    from solbench.exec.precompile import Precompiler, default_processes

    processes = default_processes(inputs.device) if inputs.compile_ahead is None else inputs.compile_ahead
    queued = [(plan.problem, job) for plan in plans for job in plan.candidates if job.tag.startswith("compile-")]
    if processes <= 0 or not queued or inputs.execution.executor != "serial" or inputs.options.compile_cache is None:
        return None
    ahead = Precompiler(inputs.options.compile_cache, inputs.device, processes, seed=inputs.options.seed or 0,
                        input_profile=inputs.options.input_profile, log=inputs.run_dir / COMPILE_LOG)
    for problem, job in queued:
        ahead.submit(problem, job.workloads or [], job.tag.removeprefix("compile-"), key=id(job))
    return ahead


def pending_counts(inputs: RunInputs, store: BaselineFile | None, done: set[tuple[str, str | None, str]]) -> int:
    """Workload evaluations the run will make (for the progress bar): missing baselines' candidates and solutions."""
    total = 0
    held_out = inputs.options.hidden + (1 if inputs.options.unaligned else 0)  # at most (a problem may have no unaligned workload)
    for plan in plan_problems(inputs, store, done):
        total += sum(job.pending for job in plan.jobs)
        for job in plan.solutions:
            if job.held_out:
                total += max(0, held_out - sum(1 for d, name, uuid in done if d == plan.problem.name and name == job.solution.name
                                               and is_held_out(uuid)))
    return total
