"""The Python API of the speed-of-light analysis, as the evaluator, the scorer and the CLI use it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from solbench.sol.analysis import SolResult, analyze
from solbench.sol.hardware import HardwareSpec, Policy, get_hardware
from solbench.spec.errors import Issue
from solbench.spec.loaders import scan
from solbench.spec.problem import Problem
from solbench.spec.workload import Workload


def policy_for(problem: Problem, requested: str = "auto") -> Policy:
    """The precision policy in force: the caller's, else the problem's own, else by origin."""
    if requested in ("strict", "relaxed"):
        return requested  # type: ignore[return-value]
    declared = getattr(problem.definition, "precision_policy", None) or (problem.definition.model_extra or {}).get("precision_policy")
    if declared in ("strict", "relaxed"):
        return declared
    return "relaxed" if problem.kind == "flashinfer" else "strict"


def sol_time_ms(problem: Problem, workload: Workload, hardware: str | HardwareSpec, policy: str = "auto") -> float:
    """T_SOL in milliseconds: what the scorer needs."""
    spec = get_hardware(hardware) if isinstance(hardware, str) else hardware
    return analyze(problem, workload, spec, policy_for(problem, policy)).t_sol_s * 1e3


def analyze_problem(problem: Problem, hardware: HardwareSpec, policy: str = "auto", workloads: Iterable[str] | None = None) -> list[SolResult]:
    chosen = [problem.workload(w) for w in workloads] if workloads else problem.workloads
    return [analyze(problem, w, hardware, policy_for(problem, policy)) for w in chosen]


def analyze_paths(paths: Iterable[Path], hardware: HardwareSpec, policy: str = "auto", workloads: list[str] | None = None, progress: bool = False) -> tuple[list[SolResult], list[Issue]]:
    """Analyse everything the paths hold; a problem that fails gets one issue, the others still run."""
    results: list[SolResult] = []
    failures: list[Issue] = []
    jobs: list[tuple[Problem, Workload]] = []
    for path in paths:
        for loaded in scan(path):
            failures += loaded.errors
            if loaded.problem is None:
                continue
            problem = loaded.problem
            if workloads:
                chosen = [w for w in (_find(problem, u) for u in workloads) if w is not None]
            else:
                chosen = problem.workloads
            jobs += [(problem, w) for w in chosen]
    if workloads and not jobs:
        failures.append(Issue(f"no workload matches {', '.join(workloads)}", field="workload"))
    with _progress(len(jobs), enabled=progress and len(jobs) > 8) as advance:
        for problem, workload in jobs:
            try:
                results.append(analyze(problem, workload, hardware, policy_for(problem, policy)))
            except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the others
                message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                failures.append(Issue(f"cannot analyse workload {workload.uuid[:8]}: {type(exc).__name__}: {message}", problem.source))
            advance()
    return results, failures


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
        from rich.progress import Progress

        self._bar = Progress(transient=True)
        self._bar.start()
        task = self._bar.add_task("analysing", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._bar.stop()
