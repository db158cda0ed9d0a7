"""Scoring baselines (T_b) per hardware: for each problem and workload, the fastest correct of the
eager reference, torch.compile of it (default, and max-autotune-no-cudagraphs on a GPU) and any
registered baseline solutions, each timed through the hardened evaluator.

Stored as plain files in a baseline folder (default ./baselines, or $SOLBENCH_BASELINES):

    <DIR>/<HW>.json           a BaselineFile: one entry per (problem, workload) with every candidate's
                              status and time, and the provenance (versions, device, clock, date)
    <DIR>/<HW>.traces.jsonl   the candidates' traces; entries name them by trace id (see trace_id)

An entry is reused while its problem's definition is unchanged (definition_hash).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

from pydantic import Field

from solbench.data.base import SpecModel
from solbench.data.files import append_jsonl, dump_json, write_text_safely
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Status, Trace

DEFAULT_DIR = Path(os.environ.get("SOLBENCH_BASELINES", "baselines"))
EAGER = "eager"
GPU_COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
# On a CPU, torch.compile builds C++ per graph: 20 s to minutes per problem, which alone would take a
# first `solbench run` past its few minutes; ask for it with --compile-modes default.
CPU_COMPILE_MODES: tuple[str, ...] = ()
SOLVED_MARGIN = 1.05  # T_b within 5% above T_SOL: nothing left to reclaim, the problem is solved (retired)

# Verdicts of an entry
OPEN = "open"  # T_b above T_SOL: there is room to score in
SOLVED = "solved"  # T_SOL <= T_b <= SOLVED_MARGIN x T_SOL
AUDIT = "bound-to-audit"  # T_b below T_SOL: the bound is wrong (or a candidate cheats)
NO_BOUND = "no-sol"  # no T_SOL known
NO_BASELINE = "no-baseline"  # no candidate was correct


class CandidateResult(SpecModel):
    name: str  # eager, compile-default, compile-max-autotune-no-cudagraphs, or a baseline solution's name
    solution: str  # the solution's name in its trace
    status: str
    latency_ms: float | None = None  # counted only when correct (or faster than T_SOL, for the audit)
    trace_id: str | None = None
    detail: str = ""  # the first log line when not correct
    energy_j: float | None = None  # joules per call (--energy), counted only when correct
    energy_asked: bool = False  # evaluated with --energy (whether or not the counter could be read)
    energy_unresolved: float | None = None  # a correct reading not above its resolution (kept here, never E_b)


class BaselineEntry(SpecModel):
    problem: str
    workload: str
    definition_hash: str
    baseline_ms: float | None = None  # T_b
    candidate: str | None = None  # which candidate set T_b
    reference_ms: float | None = None  # the eager reference's time
    sol_ms: float | None = None  # T_SOL as its candidates' traces priced it
    sol_roofline_ms: float | None = None  # what T_SOL is made of (absent in entries from before the latency floor)
    sol_floor_ms: float | None = None
    verdict: str = NO_BASELINE
    created: str = ""
    candidates: list[CandidateResult] = Field(default_factory=list)
    baseline_energy_j: float | None = None  # E_b: the least joules per call of the correct candidates (--energy), readings above their resolution
    energy_candidate: str | None = None  # which candidate set E_b
    energy_asked: bool = False  # the candidates were evaluated with --energy


class BaselineFile(SpecModel):
    hardware: str  # the key of the file: the spec T_SOL is priced on, else the device
    device: str
    created: str = ""
    updated: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    clock_mhz: float | None = None
    candidates: list[str] = Field(default_factory=list)  # the candidate kinds asked for
    notes: list[str] = Field(default_factory=list)
    entries: list[BaselineEntry] = Field(default_factory=list)

    def entry(self, problem: str, workload: str) -> BaselineEntry | None:
        return next((e for e in self.entries if e.problem == problem and e.workload == workload), None)

    def put(self, entry: BaselineEntry) -> None:
        self.entries = [e for e in self.entries if (e.problem, e.workload) != (entry.problem, entry.workload)] + [entry]


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    """solbench, python, torch, triton, cuda and the GPU driver where known."""
    import platform
    from importlib import metadata

    import torch

    from solbench import __version__

    found = {"solbench": __version__, "python": platform.python_version(), "torch": torch.__version__}
    try:
        found["triton"] = metadata.version("triton")
    except metadata.PackageNotFoundError:
        pass
    if torch.version.cuda:
        found["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        try:
            import subprocess

            found["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                             text=True, timeout=10).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    return found


def definition_hash(problem: Problem) -> str:
    """What a baseline depends on in a problem: its definition (reference included)."""
    text = json.dumps(problem.definition.to_json_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trace_id(trace: Trace) -> str:
    """A trace's id: the first 16 hex digits of the SHA-256 of its JSON (keys sorted)."""
    return hashlib.sha256(json.dumps(trace.to_json_dict(), sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def hardware_key(spec_name: str | None, device: str) -> str:
    """The file name stem of a hardware's baselines: the spec's name, else the device."""
    key = spec_name or device
    return "".join(c if c.isalnum() or c in "-_.@" else "-" for c in key)


def baseline_path(folder: Path, key: str) -> Path:
    return folder / f"{key}.json"


def load_baselines(path: Path) -> BaselineFile | None:
    """The baseline file at path, or None if there is none; a malformed one is a SpecError naming it."""
    from solbench.data.files import parse_model, read_json
    from solbench.data.errors import SpecError

    if not path.is_file():
        return None
    model, issues = parse_model(BaselineFile, read_json(path), path=path)
    if model is None:
        raise SpecError(issues)
    return model


def save_baselines(path: Path, baselines: BaselineFile) -> None:
    baselines.updated = now()
    write_text_safely(path, dump_json(baselines.to_json_dict()), overwrite=True)


def compile_modes_for(device: str) -> tuple[str, ...]:
    return GPU_COMPILE_MODES if device.startswith("cuda") else CPU_COMPILE_MODES


def candidate_solutions(problem: Problem, device: str, registered: Iterable[Solution] = (), compile_modes: Iterable[str] | None = None
                        ) -> list[tuple[str, Solution, bool]]:
    """(candidate name, solution, trusted) of a problem's baseline: eager, torch.compile modes, registered ones."""
    from solbench.bench.orchestrator import reference_solution
    from solbench.bench.verify import compiled_reference

    modes = compile_modes_for(device) if compile_modes is None else tuple(compile_modes)
    found = [(EAGER, reference_solution(problem), True)]
    found += [(f"compile-{mode}", compiled_reference(problem, mode), True) for mode in modes]
    found += [(solution.name, solution, False) for solution in registered if solution.definition == problem.name]
    return found


def candidate_result(name: str, trace: Trace) -> CandidateResult:
    """A candidate's outcome on one workload; a time counts when correct, or when faster than T_SOL
    (REWARD_HACK for a solution, but for trusted code the bound's fault: kept, for the audit)."""
    from solbench.energy.score import resolved
    from solbench.score.formula import FASTER_THAN_SOL

    evaluation = trace.evaluation
    performance = evaluation.performance
    latency = performance.latency_ms if performance is not None else None
    faster = evaluation.status == Status.REWARD_HACK and FASTER_THAN_SOL in (evaluation.log or "")
    counted = latency if evaluation.status == Status.PASSED or faster else None
    detail = "" if counted is not None and not faster else next((line for line in (evaluation.log or "").splitlines() if line.strip()), "")[:200]
    energy = performance.energy if performance is not None else None
    joules = energy.joules if energy is not None and evaluation.status == Status.PASSED else None
    known = resolved(joules, energy.resolution_j if energy is not None else None)
    return CandidateResult(name=name, solution=trace.solution or "", status=evaluation.status.value, latency_ms=counted,
                           trace_id=trace_id(trace), detail=detail, energy_asked=energy is not None,
                           energy_j=joules if known else None, energy_unresolved=joules if joules is not None and not known else None)


def make_entry(problem: Problem, workload: str, results: list[CandidateResult], sol_ms: float | None, *, roofline_ms: float | None = None,
               floor_ms: float | None = None) -> BaselineEntry:
    """T_b of one workload from its candidates' outcomes, with its verdict (T_SOL's roofline and floor recorded beside it)."""
    timed = [r for r in results if r.latency_ms is not None]
    best = min(timed, key=lambda r: r.latency_ms) if timed else None
    eager = next((r for r in results if r.name == EAGER), None)
    entry = BaselineEntry(problem=problem.name, workload=workload, definition_hash=definition_hash(problem), created=now(), candidates=results,
                          sol_ms=sol_ms, sol_roofline_ms=roofline_ms, sol_floor_ms=floor_ms, reference_ms=eager.latency_ms if eager else None)
    if best is not None:
        entry.baseline_ms, entry.candidate = best.latency_ms, best.name
    entry.verdict = verdict(entry.baseline_ms, sol_ms)
    measured = [r for r in results if r.energy_j is not None]
    least = min(measured, key=lambda r: r.energy_j) if measured else None
    if least is not None:
        entry.baseline_energy_j, entry.energy_candidate = least.energy_j, least.name
    entry.energy_asked = any(r.energy_asked for r in results)
    return entry


def verdict(baseline_ms: float | None, sol_ms: float | None) -> str:
    if baseline_ms is None:
        return NO_BASELINE
    if sol_ms is None:
        return NO_BOUND
    if baseline_ms < sol_ms:
        return AUDIT
    if baseline_ms <= SOLVED_MARGIN * sol_ms:
        return SOLVED
    return OPEN


def record_traces(path: Path, traces: Iterable[Trace]) -> None:
    """Append candidates' traces to the baseline folder's trace file (their ids are in the entries)."""
    for trace in traces:
        append_jsonl(path.with_suffix(".traces.jsonl"), trace.to_json_dict())


def solution_folder_solutions(folder: Path) -> list[Solution]:
    """Registered baseline solutions: every solution JSON under a folder (e.g. <problem>/<name>.json)."""
    from solbench.data.loaders import load_solution

    return [load_solution(path) for path in sorted(folder.rglob("*.json"))]


def stored_baselines(spec_name_or_spec: object, device: str, folder: Path | None = None) -> BaselineFile | None:
    """The baselines kept for this hardware in the baseline folder, if any (for scoring a single `eval`)."""
    name = getattr(spec_name_or_spec, "name", spec_name_or_spec)
    try:
        return load_baselines(baseline_path(folder or DEFAULT_DIR, hardware_key(name if isinstance(name, str) else None, device)))
    except Exception:  # noqa: BLE001 - an unreadable file only loses the score of a single evaluation
        return None
