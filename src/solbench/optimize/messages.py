"""What a proposer is given and what it gives back, as pydantic models (JSON on the wire and in the
run folder). Nothing here may hold a held-out workload: the brief lists the published workloads only,
and an attempt's feedback says of the held-out ones no more than how many there were and whether the
solution passed them all."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from solbench.data.solution import Solution

NO_SOLUTION = "NO_SOLUTION"  # the status of an attempt whose proposal held no usable solution


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TensorBrief(Message):
    shape: list[int | str] | None  # axis names or integers; None: a Python scalar
    dtype: str


class WorkloadBrief(Message):
    """A published workload: its axes (every axis resolved), its scalar inputs and its tolerance."""

    uuid: str
    axes: dict[str, int]
    scalars: dict[str, Any] = Field(default_factory=dict)
    tolerance: dict[str, float | bool | None] = Field(default_factory=dict)


class SolBrief(Message):
    """The speed-of-light analysis of one published workload on the brief's hardware."""

    workload: str
    t_sol_ms: float
    t_roofline_ms: float
    t_floor_ms: float
    bottleneck: str  # compute unit, "memory" or the like, as solbench.sol.analysis names it
    flops_by_unit: dict[str, float]
    bytes_compulsory: float  # DRAM bytes of the cache-aware bound
    arithmetic_intensity: float | None


class HardwareBrief(Message):
    name: str  # the spec T_SOL is priced on
    device: str  # where attempts are timed (cpu, or the GPU's name)
    dram_bandwidth_tbps: float
    peak_tflops: dict[str, float]
    sm_count: int
    on_chip_bytes: int


class ProblemBrief(Message):
    """Everything a kernel author needs to write a first solution."""

    name: str
    description: str = ""
    reference: str  # the reference's Python source (a top-level run(...))
    inputs: dict[str, TensorBrief]
    outputs: dict[str, TensorBrief]
    axes: dict[str, str]  # name -> "const 4096", "var" or "expr N*2"
    constraints: list[str] = Field(default_factory=list)
    workloads: list[WorkloadBrief]
    sol: list[SolBrief]
    sol_issues: list[str] = Field(default_factory=list)  # workloads the analysis could not price, one line each
    hardware: HardwareBrief
    policy: str


class AuditFinding(Message):
    rule: str
    severity: str  # reject | warn
    path: str
    line: int
    message: str


class WorkloadResult(Message):
    uuid: str  # a published workload's uuid: held-out ones never appear here
    status: str
    latency_ms: float | None = None
    sol_ms: float | None = None
    ratio_to_sol: float | None = None  # T / T_SOL
    baseline_ms: float | None = None  # T_b: the reference measured at the start of the loop
    score: float | None = None
    message: str = ""  # the evaluator's message for this workload (first lines), where it did not pass


class HeldOutResult(Message):
    """What the proposer learns of the held-out workloads: how many, and whether all passed."""

    checked: int
    passed: bool
    note: str = ""


class ProfileFeedback(Message):
    """`solbench profile` of a correct attempt (`optimize --profile`): per kernel measurements joined with the SOL
    side, and T/T_SOL split into factors (gap); `note` instead where the profile could not be made."""

    model_config = ConfigDict(extra="allow")
    kernels: list[dict[str, Any]] = Field(default_factory=list)
    gap: dict[str, float] = Field(default_factory=dict)


class MemcheckFeedback(Message):
    """The compute-sanitizer verdict of the attempt (`optimize --memcheck`): clean, or the tool and its first report."""

    model_config = ConfigDict(extra="allow")
    tool: str = "memcheck"
    clean: bool = True
    first_report: str | None = None


class AttemptFeedback(Message):
    """What a kernel author needs after an attempt."""

    attempt: int
    solution: str | None = None
    status: str  # PASSED, a trace status, or NO_SOLUTION
    message: str = ""  # the evaluator's message (or why the reply held no solution)
    score: float | None = None  # the problem's score: the mean over the published workloads (0 where not correct)
    workloads: list[WorkloadResult] = Field(default_factory=list)
    held_out: HeldOutResult | None = None
    audit: list[AuditFinding] = Field(default_factory=list)
    profile: ProfileFeedback | None = None
    memcheck: MemcheckFeedback | None = None


class Proposal(Message):
    """A proposer's answer: a solution, or why there is none (fed back as a failed attempt)."""

    solution: Solution | None = None
    reply: str = ""  # the raw reply (a chat proposer's message), kept for the conversation and the record
    reason: str = ""  # why there is no solution
    candidate: str = ""  # what was proposed, in a word (the built-in proposer's candidate name)
    exhausted: bool = False  # the proposer has nothing more to try: the loop ends


class Turn(Message):
    """One finished attempt as a proposer sees it: its proposal and the feedback on it."""

    proposal: Proposal
    feedback: AttemptFeedback
