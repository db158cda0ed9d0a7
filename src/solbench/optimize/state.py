"""The run folder of `solbench optimize`, which is also what a resumed loop reads:

    optimize.json                 the problem (name, definition hash), the proposer, the hardware and device
    brief.json                    what the proposer was told about the problem
    baseline.json                 T_b per published workload (the reference, measured once)
    baseline.traces.jsonl         the reference's traces
    attempts/NNN/proposal.json    the proposal, saved before it is evaluated (a resumed loop evaluates it, not asking again)
    attempts/NNN/solution.json    its solution, where it had one
    attempts/NNN/traces.jsonl     every trace of its evaluation, the held-out workloads' included
    attempts.jsonl                one line per finished attempt (its feedback and verdict): the commit mark of an attempt
    best/solution.json            the best eligible solution so far
    score.png, report.md          the plot of score against attempt, and the report
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from solbench.data.errors import SpecError
from solbench.data.files import append_jsonl, dump_json, write_atomically
from solbench.data.loaders import load_traces
from solbench.data.solution import Solution
from solbench.data.trace import Trace
from solbench.optimize.messages import AttemptFeedback, Proposal, Turn
from solbench.score.baselines import BaselineEntry

CONFIG = "optimize.json"


class RunConfig(BaseModel):
    problem: str
    definition_hash: str
    proposer: str
    hardware: str | None
    device: str
    created: str = ""


class AttemptRecord(BaseModel):
    attempt: int
    proposal: Proposal
    feedback: AttemptFeedback
    eligible: bool
    why_not: str = ""
    held_out_statuses: dict[str, int] = Field(default_factory=dict)  # trusted side only: the proposer sees HeldOutResult
    elapsed_s: float = 0.0
    finished: str = ""

    @property
    def turn(self) -> Turn:
        return Turn(proposal=self.proposal, feedback=self.feedback)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class RunFolder:
    def __init__(self, root: Path):
        self.root = root

    @classmethod
    def open(cls, root: Path, config: RunConfig, resume: bool) -> RunFolder:
        """The folder for this run: new (refused where it holds files already, unless resuming) or, with
        `resume`, one of an earlier run of the same problem."""
        folder = cls(root)
        config_path = root / CONFIG
        if resume:
            if not config_path.is_file():
                raise SpecError(f"holds no {CONFIG}: not a run folder of solbench optimize, nothing to resume", path=root, field="--resume")
            try:
                earlier = RunConfig.model_validate_json(config_path.read_text(encoding="utf-8"))
            except ValidationError as exc:
                raise SpecError(f"{CONFIG} is unreadable: {exc.errors()[0]['msg']}", path=root, field="--resume") from None
            if (earlier.problem, earlier.definition_hash) != (config.problem, config.definition_hash):
                raise SpecError(f"was a run of problem {earlier.problem!r} (definition {earlier.definition_hash}); this is {config.problem!r} "
                                f"(definition {config.definition_hash}): resume it with the same problem", path=root, field="--resume")
            return folder
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise SpecError("exists already and is not empty; pass --resume to continue it, or choose another --run-dir", path=root)
        root.mkdir(parents=True, exist_ok=True)
        write_atomically(config_path, dump_json(config.model_copy(update={"created": now()}).model_dump(mode="json")))
        return folder

    # --- the problem's side ---------------------------------------------------------------------

    def write_json(self, name: str, data: object) -> None:
        write_atomically(self.root / name, dump_json(data))

    def baseline(self) -> dict[str, BaselineEntry] | None:
        path = self.root / "baseline.json"
        if not path.is_file():
            return None
        return {entry["workload"]: BaselineEntry.model_validate(entry) for entry in json.loads(path.read_text(encoding="utf-8"))}

    def save_baseline(self, entries: dict[str, BaselineEntry], traces: list[Trace]) -> None:
        write_atomically(self.root / "baseline.traces.jsonl", "".join(json.dumps(t.to_json_dict()) + "\n" for t in traces))
        self.write_json("baseline.json", [entry.to_json_dict() for entry in entries.values()])

    # --- attempts -------------------------------------------------------------------------------

    def attempt_dir(self, attempt: int) -> Path:
        return self.root / "attempts" / f"{attempt:03d}"

    def records(self) -> list[AttemptRecord]:
        """The finished attempts, in order (a line cut short by a crash is ignored: that attempt is redone)."""
        path = self.root / "attempts.jsonl"
        found: dict[int, AttemptRecord] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = AttemptRecord.model_validate_json(line)
                except ValidationError:
                    continue
                found[record.attempt] = record
        return [found[n] for n in sorted(found)]

    def finish(self, record: AttemptRecord) -> None:
        append_jsonl(self.root / "attempts.jsonl", json.loads(record.model_dump_json()))

    def saved_proposal(self, attempt: int) -> Proposal | None:
        path = self.attempt_dir(attempt) / "proposal.json"
        if not path.is_file():
            return None
        try:
            return Proposal.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, SpecError):
            return None

    def save_proposal(self, attempt: int, proposal: Proposal) -> None:
        folder = self.attempt_dir(attempt)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / "proposal.json", proposal.model_dump_json(indent=1) + "\n")
        if proposal.solution is not None:
            write_atomically(folder / "solution.json", dump_json(proposal.solution.to_json_dict()))

    def traces_path(self, attempt: int) -> Path:
        return self.attempt_dir(attempt) / "traces.jsonl"

    def fresh_traces(self, attempt: int) -> Path:
        """The attempt's trace file, emptied (an attempt cut short is evaluated again from the start)."""
        path = self.traces_path(attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        return path

    def traces(self, attempt: int) -> list[Trace]:
        path = self.traces_path(attempt)
        return load_traces(path) if path.is_file() else []

    def save_best(self, solution: Solution) -> Path:
        path = self.root / "best" / "solution.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, dump_json(solution.to_json_dict()))
        return path
