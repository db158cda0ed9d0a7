"""The service's settings: where its database is, what it evaluates and how, and the limits on what a
user may send. One frozen dataclass, read by the server and handed to its worker as JSON."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field


def default_db_url() -> str:
    return "sqlite:///solbench-serve.db"


@dataclass(frozen=True)
class Limits:
    """What one request or user may do; every refusal names the limit."""

    max_body_bytes: int = 2 << 20  # a submission's JSON as sent
    max_sources: int = 32  # source files per solution
    submissions_per_hour: int = 60  # per user; beyond it 429 with Retry-After


@dataclass(frozen=True)
class EvalSettings:
    """How the worker evaluates (the options of `solbench run` that matter to a service)."""

    executor: str = "serial"  # serial | pool | ray (solbench.exec)
    lanes: str | None = None  # pool lanes: all, N or GPU indices
    address: str | None = None  # ray: auto or HOST:PORT
    device: str = "auto"
    hardware: str | None = None  # spec pricing T_SOL (default: the GPU's datasheet entry, a calibrated CPU spec on a CPU)
    workloads: str = "auto"  # all | smallest:N | spread:N; auto: all on a GPU, smallest:2 on a CPU
    trials: int = 3
    hidden: int = 2
    timeout_s: float = 300.0
    timing_budget_s: float | None = None  # seconds of timing per workload (default: the evaluator's, 2 s on a CPU)
    batch: int = 4  # jobs claimed at once (the next ones' workers start while one is evaluated)


@dataclass(frozen=True)
class ServeConfig:
    db_url: str = field(default_factory=default_db_url)
    datasets: tuple[str, ...] = ()  # problem or dataset paths; () = the bundled problems
    host: str = "127.0.0.1"
    port: int = 8000
    limits: Limits = field(default_factory=Limits)
    evaluation: EvalSettings = field(default_factory=EvalSettings)
    lease_s: float = 60.0  # a claimed job left without a heartbeat this long is claimed again
    max_attempts: int = 3  # claims of one job before it is recorded as failed
    public: bool = False  # every user may read every submission's source
    workers: int = 1  # worker processes the server starts (0: none, run `python -m solbench.serve.worker` yourself)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        raw = json.loads(text)
        raw["datasets"] = tuple(raw.get("datasets", ()))
        raw["limits"] = Limits(**raw.get("limits", {}))
        raw["evaluation"] = EvalSettings(**raw.get("evaluation", {}))
        return cls(**raw)
