"""The Python API of the speed-of-light analysis, as the evaluator, the scorer and the CLI use it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from solbench.sol.analysis import SolResult, analyze
from solbench.sol.hardware import HardwareSpec, Policy, get_hardware
from solbench.spec.errors import Issue
from solbench.spec.loaders import scan
from solbench.spec.problem import Problem
from solbench.spec.workload import Workload


def policy_for(problem: Problem, requested: str = "auto") -> Policy:
    """The precision policy in force: the caller's, else the problem's own `precision_policy`, else
    relaxed (the benchmark's convention: lower precision is allowed where the tolerance is met)."""
    if requested in ("strict", "relaxed"):
        return requested  # type: ignore[return-value]
    declared = getattr(problem.definition, "precision_policy", None) or (problem.definition.model_extra or {}).get("precision_policy")
    if declared in ("strict", "relaxed"):
        return declared
    return "relaxed"


def sol_time_ms(problem: Problem, workload: Workload, hardware: str | HardwareSpec, policy: str = "auto") -> float:
    """T_SOL in milliseconds: what the scorer needs."""
    spec = get_hardware(hardware) if isinstance(hardware, str) else hardware
    return analyze(problem, workload, spec, policy_for(problem, policy)).t_sol_s * 1e3


def analyze_problem(problem: Problem, hardware: HardwareSpec, policy: str = "auto", workloads: Iterable[str] | None = None) -> list[SolResult]:
    chosen = [problem.workload(w) for w in workloads] if workloads else problem.workloads
    return [analyze(problem, w, hardware, policy_for(problem, policy)) for w in chosen]


def analyze_paths(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False) -> tuple[list[SolResult], list[Issue]]:
    """Analyse everything the paths hold; a problem that fails gets one issue, the others still run."""
    results: list[SolResult] = []
    failures: list[Issue] = []
    for item in iter_analyses(paths, hardware, policy, workloads, progress, synthesize_missing_blobs):
        (failures if isinstance(item, Issue) else results).append(item)
    return results, failures


def iter_analyses(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False,
                  synthesize_missing_blobs: bool = False) -> Iterator[SolResult | Issue]:
    """Each workload's result (or the issue that stopped a problem or workload) as soon as it is known,
    problem by problem: a dataset streams, and one bad problem never stops the others."""
    loaded_problems: list[Problem] = []
    matched = False
    for path in paths:
        for loaded in scan(path, synthesize_missing_blobs=synthesize_missing_blobs):
            yield from loaded.errors
            if loaded.problem is not None:
                loaded_problems.append(loaded.problem)
    jobs = [(problem, _chosen(problem, workloads)) for problem in loaded_problems]
    total = sum(len(chosen) for _, chosen in jobs)
    with _progress(total, enabled=progress and total > 8) as advance:
        for problem, chosen in jobs:
            matched = matched or bool(chosen)
            for workload in chosen:
                try:
                    yield analyze(problem, workload, hardware, policy_for(problem, policy))
                except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the others
                    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    yield Issue(f"cannot analyse workload {workload.uuid[:8]}: {type(exc).__name__}: {message}", problem.source)
                advance()
    if workloads and not matched:
        yield Issue(f"no workload matches {', '.join(workloads)}", field="workload")


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
