"""The worker protocol's messages: one typed request and one typed answer per command.

Both sides validate on receipt, here and only here: the worker parses each request before its
handler runs (`parse_request`), the orchestrator parses each answer before anything reads it
(`parse_answer`). Tensors cross as descriptions (`Described`: a blob file, a CUDA IPC handle, a
scalar or the name of an unsupported type) that are checked again where they are mapped
(solbench.bench.shm, solbench.bench.ipc).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solbench.data.workload import Workload

Described = dict[str, Any]  # a blob, CUDA IPC, scalar or unsupported-type description (checked where it is mapped)
Seconds = dict[str, float]
ALIAS_MARK = "<-"  # aliased_outputs entries are "OUTPUT<-INPUT": that output shares memory with that input
MAX_ENERGY_BATCH = 1024  # calls per step of an energy window, at most


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- requests --------------------------------------------------------------------------------------


class Request(Message):
    """What every request may carry: shared tensors the worker may now free, and how tensors cross."""

    release: list[str] = Field(default_factory=list)
    ipc: bool = False
    group: str | None = None
    digest: bool = False  # blobs the reference worker writes carry their sha256 (a submitted solution's worker can write their folder)


class HelloRequest(Request):
    ipc_probe: bool = False


class LoadProblemRequest(Request):
    definition: dict[str, Any]
    root: str | None = None
    kind: str = "problem"
    policy: str = "auto"
    input_profile: str | None = None
    synthesize_missing_blobs: bool = False


class BuildRequest(Request):
    solution: dict[str, Any]
    cache_root: str


class PrepareRequest(Request):
    workload: Workload
    seed: int
    trial: int
    reference: bool = False  # compute the reference's outputs now (timed calls' checks)
    keep: bool = False  # keep the inputs for a later `expect` of the same group
    oracle: bool = False
    paths: dict[str, str] = Field(default_factory=dict)
    share: dict[str, str] = Field(default_factory=dict)  # input name -> blob path: the inputs written there too (ExpectAnswer.inputs)


class ExpectRequest(Request):
    oracle: bool = False
    paths: dict[str, str]


class OutputSpec(Message):
    shape: list[int]
    dtype: str


class RunRequest(Request):
    workload: Workload
    seed: int
    trial: int
    outputs: dict[str, OutputSpec]
    dps: bool
    paths: dict[str, str]
    repeat: bool = False
    timer: str = "auto"
    launch_gate: bool = False
    inputs: dict[str, Described] | None = None  # the trial's inputs as the reference worker drew them (PrepareRequest.share), else drawn here
    nvtx: str | None = Field(default=None, max_length=64)  # the call runs inside an NVTX range of this name (ncu profiles that range)
    timeline: bool = False  # answer the call's device activity spans (CUPTI), for solbench profile's gap decomposition


class CallsRequest(Request):
    """Calls of the solution on fresh inputs drawn from `seed` (`check`: calls whose outputs come back)."""

    workload: Workload
    seed: int
    dps: bool
    check: list[int] = Field(default_factory=list)
    outputs: dict[str, OutputSpec]
    blob_dir: str


class TimeRequest(CallsRequest):
    warmup: int = 3
    min_iterations: int = 20
    max_iterations: int = 1000
    budget_s: float = 10.0
    target_rse: float = 0.01
    timer: str = "auto"
    launch_gate: bool = False
    launch_series: int = Field(default=0, ge=0, le=100)  # behind the gate: this many more calls without it (launch_overhead_ms)


class EnergyRequest(CallsRequest):
    """Energy per call (solbench.energy): idle power, then a window of the timed calls' setup alone (fresh
    inputs, outputs, L2 flush), then a window of the same calls (`check`: calls whose outputs come back),
    then the setup alone again."""

    window_s: float = Field(default=1.0, gt=0, le=60)
    idle_s: float = Field(default=0.3, gt=0, le=60)
    min_calls: int = Field(default=1, ge=1, le=1000)
    batch: int = Field(default=1, ge=1, le=MAX_ENERGY_BATCH)  # calls per step (solbench.energy.evaluate.batch_size)
    pool_bytes: int = Field(default=0, ge=0)  # the most the inputs and outputs made ahead of the window of calls may take (0: per step)
    timer: str = "auto"


# --- answers ---------------------------------------------------------------------------------------


class Answer(Message):
    precision_changes: dict[str, Any] = Field(default_factory=dict)  # added by a solution worker after steps that ran solution code


class HelloAnswer(Answer):
    pid: int
    device: str
    device_name: str
    torch: str
    ipc_probe: Described | None = None
    memory: tuple[int, int] | None = None  # the device's free and total bytes at start (CUDA)


class LoadProblemAnswer(Answer):
    precision: dict[str, Any] = Field(default_factory=dict)


class BuildAnswer(Answer):
    cached: bool
    log: str = ""
    build_dir: str


class ExpectAnswer(Answer):
    """The reference's outputs for one trial (and the fp64 oracle's when asked), with what the
    reference itself does to memory (aliasing outputs, inputs changed in place: allowed to a solution too)."""

    outputs: dict[str, Described] = Field(default_factory=dict)
    aliased_outputs: list[str] = Field(default_factory=list)
    modified_inputs: list[str] = Field(default_factory=list)
    oracle: dict[str, Described] | None = None
    oracle_error: str | None = None
    seconds: Seconds = Field(default_factory=dict)  # the reference's own phases: inputs, reference, oracle
    inputs: dict[str, Described] | None = None  # the inputs as written for PrepareRequest.share (None: not shareable, see worker.shareable)


class RunAnswer(Answer):
    outputs: dict[str, Described]
    devices: dict[str, str | None]
    returned: list[str]
    aliased_outputs: list[str] = Field(default_factory=list)
    modified_inputs: list[str] = Field(default_factory=list)
    spans_ms: list[tuple[float, float]] = Field(default_factory=list)  # with timeline: (start, end) of each activity, from the call's first start


class TimeAnswer(Answer):
    times_ms: list[float] = Field(min_length=1)
    method: str
    notes: list[str] = Field(default_factory=list)
    checked: dict[str, dict[str, Described]]
    calls: int = Field(ge=1)
    aliased_outputs: list[str] = Field(default_factory=list)
    ungated_times_ms: list[float] = Field(default_factory=list)  # the launch series: spans of calls timed without the gate


class EnergyWindow(Message):
    start_mj: int
    end_mj: int
    seconds: float
    steps: int = Field(ge=0)
    updates: list[tuple[int, int]] = Field(default_factory=list, max_length=100_000)  # (counter mJ, steps done) at each update seen
    covered_steps: float | None = None  # the steps' time inside the window, in steps (solbench.energy.window)


class EnergyAnswer(Answer):
    """The counter's readings of each window (none, with the note, where it cannot be read in the worker),
    and the outputs of the checked calls and of the last one, as a TimeAnswer hands them back."""

    note: str | None = None
    idle: EnergyWindow | None = None
    blank: EnergyWindow | None = None
    loop: EnergyWindow | None = None
    blank_after: EnergyWindow | None = None  # the blank steps again after the calls (the power's drift)
    calls: int = Field(default=0, ge=0)
    batch: int = Field(default=1, ge=1, le=MAX_ENERGY_BATCH)  # calls per step of the window of calls
    inputs_ahead: int = Field(default=0, ge=0)  # calls whose inputs were made before the window of calls (0: per step)
    checked: dict[str, dict[str, Described]] = Field(default_factory=dict)
    aliased_outputs: list[str] = Field(default_factory=list)


REQUESTS: dict[str, type[Request]] = {
    "hello": HelloRequest, "load_problem": LoadProblemRequest, "build": BuildRequest, "prepare": PrepareRequest,
    "expect": ExpectRequest, "run": RunRequest, "time": TimeRequest, "energy": EnergyRequest,
}
ANSWERS: dict[str, type[Answer]] = {
    "hello": HelloAnswer, "load_problem": LoadProblemAnswer, "build": BuildAnswer, "prepare": ExpectAnswer,
    "expect": ExpectAnswer, "run": RunAnswer, "time": TimeAnswer, "energy": EnergyAnswer,
}
ENVELOPE = ("cmd", "nonce", "ok")


class MalformedMessage(ValueError):
    """A message that is not what its command's model says (one line: the command and the first bad field)."""


def parse_request(command: str, message: dict[str, Any]) -> Request:
    return _parse(REQUESTS, command, message, "request")


def parse_answer(command: str, message: dict[str, Any]) -> Answer:
    return _parse(ANSWERS, command, message, "answer")


def _parse(models: dict[str, type[Message]], command: str, message: dict[str, Any], what: str) -> Any:
    model = models.get(command)
    if model is None:
        raise MalformedMessage(f"unknown command {command!r}")
    try:
        return model.model_validate({key: value for key, value in message.items() if key not in ENVELOPE})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(message)"
        raise MalformedMessage(f"{command} {what}: {where}: {error['msg']}") from None


def to_wire(message: Message) -> dict[str, Any]:
    """A message as the JSON object that goes on the channel."""
    return message.model_dump(mode="json", by_alias=True, exclude_unset=True)
