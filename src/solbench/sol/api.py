"""The Python API of the speed-of-light analysis, as the evaluator, the scorer and the CLI use it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from solbench.cores import usable_cores
from solbench.sol.analysis import SolResult, analyze, problem_captures
from solbench.sol.budget import Done, Limits, Report, Stopped, WorkerPool, first_line, run_here
from solbench.sol.capture import Captures, input_bytes
from solbench.sol.hardware import HardwareSpec, Policy, get_hardware
from solbench.data.errors import Issue
from solbench.data.loaders import scan
from solbench.data.problem import Problem
from solbench.data.workload import Workload


def policy_for(problem: Problem, requested: str = "auto") -> Policy:
    """The precision policy in force: the caller's, else the problem's own `precision_policy`, else
    relaxed (the benchmark's convention: lower precision is allowed where the tolerance is met)."""
    if requested in ("strict", "relaxed"):
        return requested  # type: ignore[return-value]
    declared = getattr(problem.definition, "precision_policy", None) or (problem.definition.model_extra or {}).get("precision_policy")
    if declared in ("strict", "relaxed"):
        return declared
    return "relaxed"


@dataclass(frozen=True)
class SolTimes:
    """What a trace records of a workload's bound, in milliseconds."""

    sol_ms: float  # T_SOL: what the score and the faster-than-sol check use
    roofline_ms: float  # the cache-aware roofline
    floor_ms: float  # the hardware's latency floor for this workload (0: none)
    floor_applied: bool  # whether sol_ms = max(roofline, floor), else the roofline alone


def sol_times(problem: Problem, workload: Workload, hardware: str | HardwareSpec, policy: str = "auto", captures: Captures | None = None,
              floor: bool = True) -> SolTimes:
    """T_SOL, its roofline and its floor (`captures` of the problem let workloads share them; `floor`
    False: T_SOL is the roofline alone)."""
    spec = get_hardware(hardware) if isinstance(hardware, str) else hardware
    result = analyze(problem, workload, spec, policy_for(problem, policy), captures, floor)
    return SolTimes(result.t_sol_s * 1e3, result.t_roofline_s * 1e3, result.t_floor_s * 1e3, result.floor_applied)


def sol_time_ms(problem: Problem, workload: Workload, hardware: str | HardwareSpec, policy: str = "auto", captures: Captures | None = None,
                floor: bool = True) -> float:
    """T_SOL in milliseconds: what the scorer needs (see sol_times)."""
    return sol_times(problem, workload, hardware, policy, captures, floor).sol_ms


def analyze_paths(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False, floor: bool = True) -> tuple[list[SolResult], list[Issue]]:
    """Analyse everything the paths hold; a problem that fails gets one issue, the others still run."""
    results: list[SolResult] = []
    failures: list[Issue] = []
    for item in iter_analyses(paths, hardware, policy, workloads, progress, synthesize_missing_blobs, floor=floor):
        (failures if isinstance(item, Issue) else results).append(item)
    return results, failures


@dataclass
class ProblemAnalysis:
    """One problem's results and issues (its workloads in its own order), and how long its analysis took."""

    problem: Problem
    position: int  # among the problems analysed, in the paths' order
    items: list[SolResult | Issue]
    elapsed_s: float


def iter_analyses(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False, jobs: int = 1, keep_nodes: bool = True, limits: Limits | None = None,
                  ordered: bool = True, floor: bool = True) -> Iterator[SolResult | Issue]:
    """Each workload's result (or the issue that stopped a problem or workload), problem by problem: a
    dataset streams, and one bad problem never stops the others. `ordered` keeps the problems' order
    (a problem done early waits for those before it); else each comes as soon as it is done. See
    iter_problem_analyses for jobs, keep_nodes, limits and floor."""
    done = iter_problem_analyses(paths, hardware, policy, workloads, progress, synthesize_missing_blobs, jobs, keep_nodes, limits, floor)
    for analysis in (_in_order(done) if ordered else done):
        yield from [analysis] if isinstance(analysis, Issue) else analysis.items


def iter_problem_analyses(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None,
                          progress: bool = False, synthesize_missing_blobs: bool = False, jobs: int = 1, keep_nodes: bool = True,
                          limits: Limits | None = None, floor: bool = True) -> Iterator[ProblemAnalysis | Issue]:
    """Each problem's analysis as soon as it is done, in the order problems finish (issues of loading
    first). With jobs > 1 problems run in that many worker processes, the costliest-looking first,
    their results without the per-op breakdown unless keep_nodes; a problem over `limits` (default
    Limits(): 60 s, 4 GB) is ended and becomes one issue. With one job they run here, where only the
    time budget is kept. `floor` False: T_SOL is the roofline alone (no latency floor)."""
    limits = limits or Limits()
    problems: list[Problem] = []
    for path in paths:
        for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs):
            yield from loaded.errors
            if loaded.problem is not None:
                problems.append(loaded.problem)
    tasks = [(problem, chosen, hardware, policy, keep_nodes, floor) for problem in problems if (chosen := _chosen(problem, workloads))]
    order = _start_order(tasks) if jobs > 1 else list(range(len(tasks)))
    total = sum(len(task[1]) for task in tasks)
    with _progress(total, enabled=progress and total > 8) as advance, _runner(min(jobs, len(tasks)), limits) as run:
        for outcome in run([tasks[i] for i in order]):
            position = order[outcome.index]
            problem, chosen = tasks[position][:2]
            items = outcome.value if isinstance(outcome, Done) else [_stopped_issue(problem, outcome, limits)]
            advance(len(chosen))
            yield ProblemAnalysis(problem, position, items, outcome.elapsed_s)
    if workloads and not tasks:
        yield Issue(f"no workload matches {', '.join(workloads)}", field="workload")


def default_jobs(problems: int) -> int:
    """Processes for a dataset: one per core this process may use, up to 4, when there are enough problems to share."""
    return max(1, min(usable_cores(), 4, problems // 4 or 1))


def _start_order(tasks: list[tuple]) -> list[int]:
    """The costliest-looking problems first (so that no worker is left with a long one at the end),
    after the cheapest-looking one (so that the first results come within seconds)."""
    order = sorted(range(len(tasks)), key=lambda i: -_expected_cost(tasks[i][0], len(tasks[i][1])))
    return order[-1:] + order[:-1]


@contextlib.contextmanager
def _runner(jobs: int, limits: Limits) -> Iterator[Callable[[list[tuple]], Iterator[Done | Stopped]]]:
    """How tasks run: here with one job, else in a pool of worker processes (ended when done)."""
    if jobs <= 1:
        yield lambda tasks: run_here(tasks, limits, analyze_problem_workloads, prepare=_warm_up)
        return
    with WorkerPool(jobs, limits, analyze_problem_workloads, prepare=_warm_up) as pool:
        yield pool.run


def _in_order(analyses: Iterator[ProblemAnalysis | Issue]) -> Iterator[ProblemAnalysis | Issue]:
    """The problems in the paths' order: each as soon as it and all before it are done."""
    waiting: dict[int, ProblemAnalysis] = {}
    following = 0
    for analysis in analyses:
        if isinstance(analysis, Issue):
            yield analysis
            continue
        waiting[analysis.position] = analysis
        while following in waiting:
            yield waiting.pop(following)
            following += 1


def _stopped_issue(problem: Problem, stopped: Stopped, limits: Limits) -> Issue:
    """One line for a problem that did not finish: which, why (the limit and what was seen), and in which pass."""
    match stopped.reason:
        case "time":
            why = f"stopped at the time budget of {limits.timeout_s:g} s per problem"
        case "memory":
            why = f"stopped at the memory cap of {_gb(limits.max_memory_bytes or 0)} per worker (peak {_gb(stopped.peak_bytes)} seen)"
        case "died":
            why = f"its worker process died ({stopped.detail})"
        case _:
            why = f"cannot be analysed: {stopped.detail}"
    return Issue(f"problem {problem.name}: {why}, in {stopped.where} after {stopped.elapsed_s:.1f} s", problem.source)


def _gb(size: int) -> str:
    return f"{size / (1 << 30):.2f} GB"


def _warm_up() -> None:
    """A worker analyses a tiny problem before it says it is ready, so that what a first capture
    costs once per process (importing torch, sympy and the rest) is in no problem's time budget."""
    from solbench.sol.hardware import get_hardware
    from solbench.data import Definition, Workload
    from solbench.data.files import parse_model

    vector = {"shape": ["N"], "dtype": "float32"}
    definition, _ = parse_model(Definition, {"name": "warm_up", "axes": {"N": {"type": "var"}}, "inputs": {"a": vector, "b": vector},
                                             "outputs": {"c": vector}, "reference": "def run(a, b):\n    return a + b\n"})
    workload, _ = parse_model(Workload, {"uuid": "warm-up", "axes": {"N": 64}, "inputs": {"a": {"type": "random"}, "b": {"type": "random"}}})
    assert definition is not None and workload is not None
    problem = Problem(definition, [workload])
    analyze_problem_workloads((problem, [workload], get_hardware("H200"), "auto", False, True))


def _expected_cost(problem: Problem, workloads: int) -> float:
    """A rough guess of a problem's analysis time, to start the slow ones first: references with
    Python loops, and those whose work depends on data, are captured per workload."""
    source = problem.definition.reference
    weight = 1.0
    if "for " in source or "while " in source:
        weight *= 8
    if any(word in source for word in (".tolist(", ".item(", "nonzero", "bincount", "unique", "int(")):
        weight *= 4
    return weight * max(1, workloads)


class _ReportingCaptures(Captures):
    """A problem's captures that say when a workload's capture is done and its pricing begins."""

    def __init__(self, base: Captures, report: Report):
        super().__init__(base.problem, base.decompose)
        self.report, self.label = report, ""

    def begin(self, number: int, total: int, workload: Workload) -> None:
        self.label = f"{number}/{total} ({workload.uuid[:8]})"
        self.report(f"capture of workload {self.label}")

    def graph(self, workload: Workload) -> Any:
        self.report(f"capture of workload {self.label}")
        graph = super().graph(workload)
        self.report(f"pricing workload {self.label}")
        return graph


def analyze_problem_workloads(task: tuple, report: Report | None = None) -> list[SolResult | Issue]:
    """One problem's workloads (small first, so that the first capture is the cheapest), in its own
    order; `report` is told the pass it is in (a problem stopped on its budget is said with it)."""
    problem, chosen, hardware, policy, keep_nodes, *rest = task  # and floor (default True)
    floor = rest[0] if rest else True
    captures = _ReportingCaptures(problem_captures(problem), report or (lambda _: None))
    done: dict[str, SolResult | Issue] = {}
    with fewer_collections():
        for number, workload in enumerate(sorted(chosen, key=lambda w: _input_bytes(problem, w)), 1):
            captures.begin(number, len(chosen), workload)
            try:
                result = analyze(problem, workload, hardware, policy_for(problem, policy), captures, floor)
                if not keep_nodes:
                    result.nodes = []
                done[workload.uuid] = result
            except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the others
                done[workload.uuid] = Issue(f"cannot analyse workload {workload.uuid[:8]}: {first_line(exc)}", problem.source)
    captures.report("clearing its caches")
    _forget_fake_dispatch_cache()
    return [done[workload.uuid] for workload in chosen]


GC_YOUNG_THRESHOLD = 10_000  # new container objects between two runs of the garbage collector during an analysis (Python: 700)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cyclic garbage collector runs after every 700 new container objects by default, and a
    capture makes millions (fake tensors, sympy expressions, graph nodes): its passes, the full ones over
    a heap that holds torch, took a tenth of the analysis. While a problem is analysed the threshold is
    raised (and put back after): cycles are still collected, less often. Nothing the analysis computes
    depends on when they are (what it keys by identity it keeps alive), and a capture's largest cycle,
    its recorder with the shadows, is let go of without the collector (Recorder.release)."""
    import gc

    saved = gc.get_threshold()
    gc.set_threshold(max(saved[0], GC_YOUNG_THRESHOLD), *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def _forget_fake_dispatch_cache() -> None:
    """FakeTensorMode's dispatch cache of concrete captures is class-wide and never shrinks: its
    entries serve the workloads of one problem, so it is emptied after each (a worker analyses
    dozens of problems)."""
    import sys

    fake_tensor = sys.modules.get("torch._subclasses.fake_tensor")
    if fake_tensor is not None:
        fake_tensor.FakeTensorMode.cache.clear()


def _input_bytes(problem: Problem, workload: Workload) -> int:
    try:
        axes = problem.axes(workload)
    except Exception:  # noqa: BLE001 - its analysis will say what is wrong
        return 0
    return input_bytes(problem, workload, axes)


def _chosen(problem: Problem, workloads: list[str] | None) -> list[Workload]:
    if not workloads:
        return list(problem.workloads)
    return [w for w in (_find(problem, u) for u in workloads) if w is not None]


def _find(problem: Problem, uuid: str) -> Workload | None:
    """The problem's workload with this uuid or unique prefix (Problem.workload's rules), if any."""
    try:
        return problem.workload(uuid)
    except KeyError:
        return None


class _progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda steps=1: None
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=Console(stderr=True))  # stdout is for results, streamed
        self._bar.start()
        task = self._bar.add_task("analysing", total=self.total)
        return lambda steps=1: self._bar.advance(task, steps)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._bar.stop()
