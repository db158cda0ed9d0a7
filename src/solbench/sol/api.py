"""The Python API of the speed-of-light analysis, as the evaluator, the scorer and the CLI use it."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterable, Iterator

from solbench.sol.analysis import SolResult, analyze, problem_captures
from solbench.sol.capture import Captures
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


def sol_time_ms(problem: Problem, workload: Workload, hardware: str | HardwareSpec, policy: str = "auto", captures: Captures | None = None) -> float:
    """T_SOL in milliseconds: what the scorer needs (`captures` of the problem let workloads share them)."""
    spec = get_hardware(hardware) if isinstance(hardware, str) else hardware
    return analyze(problem, workload, spec, policy_for(problem, policy), captures).t_sol_s * 1e3


def analyze_paths(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False) -> tuple[list[SolResult], list[Issue]]:
    """Analyse everything the paths hold; a problem that fails gets one issue, the others still run."""
    results: list[SolResult] = []
    failures: list[Issue] = []
    for item in iter_analyses(paths, hardware, policy, workloads, progress, synthesize_missing_blobs):
        (failures if isinstance(item, Issue) else results).append(item)
    return results, failures


def iter_analyses(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False, jobs: int = 1, keep_nodes: bool = True) -> Iterator[SolResult | Issue]:
    """Each workload's result (or the issue that stopped a problem or workload) as soon as it is known,
    problem by problem: a dataset streams, and one bad problem never stops the others. With jobs > 1
    problems are analysed in that many processes (results still come in order); their results carry
    no per-op breakdown unless keep_nodes."""
    loaded_problems: list[Problem] = []
    for path in paths:
        for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs):
            yield from loaded.errors
            if loaded.problem is not None:
                loaded_problems.append(loaded.problem)
    tasks = [(problem, _chosen(problem, workloads), hardware, policy, keep_nodes) for problem in loaded_problems]
    total = sum(len(chosen) for _, chosen, *_ in tasks)
    matched = any(chosen for _, chosen, *_ in tasks)
    with _progress(total, enabled=progress and total > 8) as advance:
        for results in _run_tasks(tasks, jobs):
            for result in results:
                advance()
                yield result
    if workloads and not matched:
        yield Issue(f"no workload matches {', '.join(workloads)}", field="workload")


def default_jobs(problems: int) -> int:
    """Processes for a dataset: one per core, up to 4, when there are enough problems to share."""
    return max(1, min(os.cpu_count() or 1, 4, problems // 4 or 1))


def _run_tasks(tasks: list[tuple], jobs: int) -> Iterator[list[SolResult | Issue]]:
    """Each task's results, in the tasks' order; with several processes the costliest-looking
    problems start first (so that no process is left with a long one at the end)."""
    if jobs <= 1 or len(tasks) < 2:
        yield from map(analyze_problem_workloads, tasks)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        order = sorted(range(len(tasks)), key=lambda i: -_expected_cost(tasks[i][0], len(tasks[i][1])))
        futures = {i: pool.submit(analyze_problem_workloads, tasks[i]) for i in order}
        for index in range(len(tasks)):
            yield futures[index].result()


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


def analyze_problem_workloads(task: tuple) -> list[SolResult | Issue]:
    """One problem's workloads (small first, so that the first capture is the cheapest), in its own order."""
    problem, chosen, hardware, policy, keep_nodes = task
    captures = problem_captures(problem)
    done: dict[str, SolResult | Issue] = {}
    for workload in sorted(chosen, key=lambda w: _input_bytes(problem, w)):
        try:
            result = analyze(problem, workload, hardware, policy_for(problem, policy), captures)
            if not keep_nodes:
                result.nodes = []
            done[workload.uuid] = result
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the others
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            done[workload.uuid] = Issue(f"cannot analyse workload {workload.uuid[:8]}: {type(exc).__name__}: {message}", problem.source)
    _forget_fake_dispatch_cache()
    return [done[workload.uuid] for workload in chosen]


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
    return sum(spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes))) for spec in problem.definition.inputs.values() if spec.shape is not None)


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

    def __enter__(self):
        if not self.enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=Console(stderr=True))  # stdout is for results, streamed
        self._bar.start()
        task = self._bar.add_task("analysing", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._bar.stop()
