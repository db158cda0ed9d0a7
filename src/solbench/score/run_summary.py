"""The RunSummary of a run folder, from its traces, its baselines and the hardware spec."""

from __future__ import annotations

from typing import Callable, Iterable

from solbench.data.problem import Problem
from solbench.data.trace import Trace
from solbench.score.aggregate import score_run
from solbench.score.baselines import AUDIT, BaselineFile, SOLVED, versions
from solbench.score.categories import categories_of
from solbench.score.summary import CandidateFailure, RunSummary, WorkloadScore
from solbench.sol.hardware import HardwareSpec

VERDICT_ORDER = (AUDIT, SOLVED)  # a problem's verdict: the first of these any of its workloads has, else that of its first workload


def roofs(spec: HardwareSpec | None) -> dict[str, float]:
    """The spec's ceilings for roofline plots: dram_tbps and <unit>_tflops."""
    if spec is None:
        return {}
    found = {"dram_tbps": spec.dram.bandwidth_tbps}
    found.update({f"{unit}_tflops": value for unit, value in spec.peak_tflops.items()})
    return found


def add_work(rows: list[WorkloadScore], problems: dict[str, Problem], spec: HardwareSpec | None, policy: str, notes: list[str],
             done: dict[tuple[str, str], tuple[float, float] | None] | None = None) -> None:
    """flops and compulsory bytes of each row's workload, from the SOL analysis (once per workload;
    `done` keeps them from one call to the next, for a summary rewritten as a run goes)."""
    if spec is None:
        return
    from solbench.sol.analysis import analyze, shared_captures
    from solbench.sol.api import policy_for

    done = {} if done is None else done
    for row in rows:
        key = (row.problem, row.workload)
        problem = problems.get(row.problem)
        if problem is None:
            continue
        if key not in done:
            done[key] = None
            try:
                workload = problem.workload(row.workload)
                result = analyze(problem, workload, spec, policy_for(problem, policy), shared_captures(problem))
                done[key] = (result.flops, result.bytes_cache_aware)
            except KeyError:
                pass  # a hidden workload: drawn for its run, in no file
            except Exception as exc:  # noqa: BLE001 - a missing analysis loses a plot point, not the run
                notes.append(f"{row.problem} / {row.workload[:8]}: no flops/bytes: {type(exc).__name__}: {str(exc)[:160]}")
        if done[key] is not None:
            row.flops, row.bytes = done[key]


def floor_notes(traces: Iterable[Trace], sol_floor: bool | None) -> list[str]:
    """What a reader of the scores must know about T_SOL's latency floor: that it is off, or that the
    traces (a resumed run) were priced both ways."""
    notes = []
    if sol_floor is False:
        notes.append("T_SOL is the roofline alone (--no-sol-floor): scores compare with ones published without a latency floor")
    applied = {t.evaluation.performance.sol_floor_applied for t in traces
               if t.evaluation is not None and t.evaluation.performance is not None and t.evaluation.performance.sol_floor_applied is not None}
    if len(applied) > 1:
        notes.append("T_SOL mixed: some traces were priced with the latency floor and some without (a run resumed with the other "
                     "--sol-floor setting); their scores do not compare")
    return notes


def problem_verdicts(store: BaselineFile | None, problems: Iterable[str], workloads_of: Callable[[str], list[str]]) -> dict[str, str]:
    if store is None:
        return {}
    verdicts = {}
    for name in problems:
        found = [e.verdict for uuid in workloads_of(name) if (e := store.entry(name, uuid)) is not None]
        if found:
            verdicts[name] = next((v for v in VERDICT_ORDER if v in found), found[0])
    return verdicts


def build_summary(traces: list[Trace], problems: dict[str, Problem], store: BaselineFile | None, spec: HardwareSpec | None, device: str,
                  solution_set: Callable[[Trace], str], *, policy: str = "auto", created: str, wall_s: float | None = None,
                  notes: Iterable[str] = (), baselines: str | None = None,
                  work_cache: dict[tuple[str, str], tuple[float, float] | None] | None = None, sol_floor: bool | None = None) -> RunSummary:
    """`sol_floor`: how the run priced T_SOL (EvalOptions.sol_floor), recorded and noted where it is the roofline alone."""
    from solbench.energy.notes import summary_notes
    from solbench.profile.notes import memcheck_notes

    notes = list(notes) + floor_notes(traces, sol_floor) + summary_notes(traces, spec) + memcheck_notes(traces)
    entry_for = (lambda problem, workload: store.entry(problem, workload)) if store is not None else (lambda problem, workload: None)
    categories = {name: categories_of(problem) for name, problem in problems.items()}
    rows, problem_scores, suites = score_run(traces, entry_for, categories, solution_set)
    add_work(rows, problems, spec, policy, notes, work_cache)
    if spec is None:
        notes.append("T_SOL blank: no hardware spec for this device (pass --hardware NAME or set $SOLBENCH_HARDWARE)")
    elif any(r.sol_ms is None and r.status == "PASSED" and r.latency_ms is not None for r in rows):
        notes.append(f"T_SOL blank for some workloads: their SOL analysis failed on {spec.name} (see the traces' logs)")
    if store is None:
        notes.append("no baselines: scores blank (T_b unknown)")
    workloads_of = lambda name: list(dict.fromkeys(r.workload for r in rows if r.problem == name))  # noqa: E731
    verdicts = problem_verdicts(store, dict.fromkeys(r.problem for r in rows), workloads_of)
    for name, value in verdicts.items():
        if value == SOLVED:
            notes.append(f"{name}: solved: its baseline is within 5% of T_SOL (nothing left to score; the benchmark retires such problems)")
        elif value == AUDIT:
            notes.append(f"{name}: bound to audit: a baseline candidate runs faster than T_SOL on some workload")
    return RunSummary(created=created, hardware=spec.name if spec else None, sol_floor=sol_floor, device=device, versions=versions(), roofs=roofs(spec), wall_s=wall_s,
                      workloads=rows, problems=problem_scores, suites=suites, notes=notes, baselines=baselines, problem_verdicts=verdicts)


def candidate_failures(store: BaselineFile, workloads: dict[str, set[str]]) -> list[CandidateFailure]:
    """Per problem of the run and candidate, the run's workloads (problem -> uuids) on which that
    baseline candidate was not correct, with its first failure's status and first line."""
    found: dict[tuple[str, str], CandidateFailure] = {}
    for entry in store.entries:
        if entry.workload not in workloads.get(entry.problem, ()):
            continue
        for candidate in entry.candidates:
            if candidate.latency_ms is not None:
                continue
            failure = found.setdefault((entry.problem, candidate.name),
                                       CandidateFailure(problem=entry.problem, candidate=candidate.name, status=candidate.status, detail=candidate.detail))
            failure.workloads += 1
    return list(found.values())


def phase_of(candidate: str, phase: str) -> str:
    """Where an evaluation phase of a trace counts in a run's summary: sol, timing, energy, memcheck and device wait (a timed
    section waiting for other evaluations' correctness work, --concurrent) as themselves, the rest of a
    torch.compile candidate as compile (it compiles in its first calls), the rest as correctness."""
    if phase in ("sol", "timing", "energy", "device wait", "memcheck"):
        return phase
    return "compile" if candidate.startswith("compile-") else "correctness"
