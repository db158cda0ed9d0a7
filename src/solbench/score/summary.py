"""The run summary (`summary.json` of a run folder): every number of a run, per workload, per problem
and per suite, so that reports and scripts never recompute them.

A run folder, as `solbench run` writes it and `solbench report` reads it:

    RUN_DIR/traces.jsonl          one Trace per (solution, workload), as each is known
    RUN_DIR/baselines/<HW>.json   the baselines used (see solbench.score.baselines), copied for provenance
    RUN_DIR/summary.json          a RunSummary
    RUN_DIR/report.md, report.html
"""

from __future__ import annotations

from pydantic import Field

from solbench.data.base import SpecModel


class WorkloadScore(SpecModel):
    """One solution on one workload. Times in milliseconds; None where not known (e.g. no T_SOL on an
    uncalibrated CPU, no time for a failed workload)."""

    problem: str
    solution: str
    workload: str  # the workload's uuid
    status: str  # Status value of the trace
    latency_ms: float | None = None  # T_k
    sol_ms: float | None = None  # T_SOL, as the score and the faster-than-sol check use it
    sol_roofline_ms: float | None = None  # its roofline and the hardware's latency floor (from the trace; None in older ones)
    sol_floor_ms: float | None = None
    baseline_ms: float | None = None  # T_b
    baseline_candidate: str | None = None  # which candidate set T_b (eager, compile-default, ..., or a baseline solution's name)
    reference_ms: float | None = None  # the eager reference's time on this workload
    score: float | None = None  # S in [0, 1]; 0 for a workload that is not correct; None when T_SOL or T_b is unknown
    speedup_vs_reference: float | None = None  # T_ref / T_k
    speedup_vs_baseline: float | None = None  # T_b / T_k
    reclaimed: float | None = None  # (T_ref - T_k) / (T_ref - T_SOL)
    flops: float | None = None  # from the SOL analysis, for the roofline plot
    bytes: float | None = None  # compulsory DRAM bytes from the SOL analysis
    flags: list[str] = Field(default_factory=list)  # audit and harness findings, e.g. faster-than-sol, shape-generality
    solution_set: str | None = None  # the suite the solution belongs to ("reference", or the --solutions path it came from)
    # energy (--energy; solbench.energy), joules per call: measured E_k, the bound E_SOL, the baseline E_b, and S_E on the
    # time score's formula (0 for a workload that is not correct, where the problem's energy was measured)
    energy_j: float | None = None
    energy_sol_j: float | None = None
    energy_baseline_j: float | None = None
    energy_score: float | None = None


class ProblemScore(SpecModel):
    """One solution on one problem: the mean score over its workloads and what it is made of."""

    problem: str
    solution: str
    solution_set: str | None = None  # as in WorkloadScore
    categories: dict[str, str] = Field(default_factory=dict)  # subset, op_type, precision, direction -> value
    workloads: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)  # status value -> count
    score: float | None = None  # mean S over the workloads (0 for those not correct)
    median_ratio_to_sol: float | None = None  # median T_k / T_SOL over correct workloads
    geomean_speedup_vs_reference: float | None = None
    geomean_speedup_vs_baseline: float | None = None
    flags: list[str] = Field(default_factory=list)
    # statuses of its held-out workloads (hidden and unaligned: drawn for the run, correctness only, never
    # scored); a REWARD_HACK among them (a solution specialised to the published shapes) makes the score 0
    held_out: dict[str, int] = Field(default_factory=dict)
    energy_score: float | None = None  # mean S_E over its workloads (None where no workload's energy was measured)
    median_energy_ratio_to_sol: float | None = None  # median E_k / E_SOL over correct workloads


class SuiteScore(SpecModel):
    """One solution (or the best of k given solutions per problem) over the problems of the run."""

    solution: str  # a solution set's name; "best-of-k" for the best per problem; "baseline" for T_b itself
    problems: int = 0
    score_mean: float | None = None
    score_median: float | None = None
    by_category: dict[str, dict[str, float]] = Field(default_factory=dict)  # category -> value -> mean problem score
    fast_p: dict[str, float] = Field(default_factory=dict)  # "1.0", "1.5", "2.0" -> share of correct workloads faster than the reference by p
    geomean_speedup_vs_reference: float | None = None
    geomean_speedup_vs_baseline: float | None = None
    energy_score_mean: float | None = None  # mean and median problem energy score (--energy)
    energy_score_median: float | None = None


class AuditFinding(SpecModel):
    solution: str
    rule: str
    severity: str
    file: str | None = None
    line: int | None = None
    message: str = ""


class CandidateFailure(SpecModel):
    """A baseline candidate that was not correct on some workloads of a problem (never dropped silently:
    T_b of those workloads comes from the other candidates)."""

    problem: str
    candidate: str  # eager, compile-default, ..., or a registered baseline solution's name
    status: str  # the status of its first failed workload
    workloads: int = 0  # how many of the run's workloads it failed on
    detail: str = ""  # the first line of its error


class RunSummary(SpecModel):
    """summary.json of a run folder."""

    created: str  # ISO 8601 time
    hardware: str | None = None  # the spec T_SOL was priced on
    sol_floor: bool | None = None  # T_SOL = max(roofline, latency floor); False: the roofline alone (--no-sol-floor); None: not recorded
    device: str  # cpu, cuda:0, ...
    versions: dict[str, str] = Field(default_factory=dict)  # solbench, torch, triton, cuda, driver
    roofs: dict[str, float] = Field(default_factory=dict)  # for roofline plots: "dram_tbps" and "<unit>_tflops" of the spec used
    wall_s: float | None = None
    workloads: list[WorkloadScore] = Field(default_factory=list)
    problems: list[ProblemScore] = Field(default_factory=list)
    suites: list[SuiteScore] = Field(default_factory=list)
    audit: list[AuditFinding] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # e.g. why T_SOL is blank, which problems were refused
    baselines: str | None = None  # the baseline file used, relative to the run folder (baselines/<HW>.json)
    problem_verdicts: dict[str, str] = Field(default_factory=dict)  # problem -> open | solved | bound-to-audit | no-sol | no-baseline (solbench.score.baselines)
    baseline_failures: list[CandidateFailure] = Field(default_factory=list)
    # seconds spent per phase: load, sol, compile (torch.compile candidates, timing aside), correctness, timing
    # (evaluation phases summed over the traces of this run; with several lanes they add up beyond the wall time)
    phases_s: dict[str, float] = Field(default_factory=dict)
    progress: dict[str, int | bool] = Field(default_factory=dict)  # problems, finished, complete (False while the run goes on)
