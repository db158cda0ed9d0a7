"""`solbench run --profile`: once the run's evaluations are done, each solution of the run (the
references where the run has no --solutions) is profiled on the smallest workload of its problem's
selection, in one worker pair (its reference worker kept from problem to problem), and the profile is
stored in the run folder (solbench.profile.store). One that cannot be made is one line, and the others
go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.workload import Workload
from solbench.profile.memcheck import smallest_workload
from solbench.profile.runner import ProfileError, profile_solution
from solbench.profile.store import write_profile


def profile_run(plan: Iterable[tuple[Problem, list[Workload], list[Solution]]], options: Any, spec: Any, run_dir: Path, ncu: Path,
                say: Callable[[str], None]) -> list[Path]:
    """Profile every (problem, its chosen workloads, its solutions) of `plan`; the stored files."""
    from solbench.bench.orchestrator import resolve_device
    from solbench.bench.workers import WorkerPair

    written = []
    with WorkerPair.for_options(resolve_device(options.device), options) as pair:
        for problem, workloads, solutions in plan:
            if not workloads:
                continue
            workload = smallest_workload(problem, workloads)
            for solution in solutions:
                try:
                    report = profile_solution(problem, solution, workload, options, spec=spec, ncu=ncu, workers=pair)
                except ProfileError as exc:
                    say(f"{problem.name} / {solution.name}: no profile: {exc}")
                    continue
                except Exception as exc:  # noqa: BLE001 - one solution's profile never stops the others
                    say(f"{problem.name} / {solution.name}: no profile: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
                    continue
                path = write_profile(run_dir, report)
                ratio = report.gap.get("t_over_t_sol")
                say(f"{problem.name} / {solution.name}: profiled on {workload.uuid[:8]} ({report.totals.kernels} kernel(s)"
                    + (f", T/T_SOL {ratio:.3g}" if ratio else "") + f", {sum(report.seconds.values()):.1f} s): {path}")
                written.append(path)
    return written
