"""The service's tables (SQLAlchemy ORM). The migration in migrations/versions creates exactly these;
tests/serve checks that the two agree. Times are UNIX seconds (floats), the same on every database."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[float] = mapped_column(Float)


class Token(Base):
    """An API token: only its SHA-256 is kept; the token itself is shown once, when made."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created: Mapped[float] = mapped_column(Float)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Dataset(Base):
    """A set of problems by content: the same name with other content is another row (another board)."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("name", "content_hash"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    path: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    created: Mapped[float] = mapped_column(Float)


class Problem(Base):
    __tablename__ = "problems"
    __table_args__ = (UniqueConstraint("dataset_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"))
    name: Mapped[str] = mapped_column(String(200))
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    categories: Mapped[str] = mapped_column(Text, default="{}")  # JSON: category -> value
    workloads: Mapped[int] = mapped_column(Integer, default=0)


class Environment(Base):
    """A version key: hardware and software that results are comparable within (the GPU's UUID is
    kept per result, beside it). Boards are per (dataset, environment)."""

    __tablename__ = "environments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hardware: Mapped[str] = mapped_column(String(200))
    device: Mapped[str] = mapped_column(String(200))
    driver: Mapped[str] = mapped_column(String(100), default="")
    cuda: Mapped[str] = mapped_column(String(100), default="")
    torch: Mapped[str] = mapped_column(String(100), default="")
    triton: Mapped[str] = mapped_column(String(100), default="")
    solbench: Mapped[str] = mapped_column(String(100), default="")
    clock_policy: Mapped[str] = mapped_column(String(100), default="")
    roofs: Mapped[str] = mapped_column(Text, default="{}")  # JSON: the spec's ceilings for roofline plots
    created: Mapped[float] = mapped_column(Float)


class Submission(Base):
    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)  # the solution JSON as sent
    code_hash: Mapped[str] = mapped_column(String(64), index=True)  # of its spec and sources: the same code is evaluated once per key
    findings: Mapped[str] = mapped_column(Text, default="[]")  # JSON: the static analysis's findings (warnings; rejects never get here)
    state: Mapped[str] = mapped_column(String(20), default="queued")  # queued | running | done | failed | cancelled
    created: Mapped[float] = mapped_column(Float, index=True)
    finished: Mapped[float | None] = mapped_column(Float, nullable=True)


class Job(Base):
    """One unit of the queue: a submission to evaluate, or a problem's baselines to measure."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_claim", "state", "priority", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # submission | baseline
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id"), nullable=True, unique=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"))
    environment_id: Mapped[int | None] = mapped_column(ForeignKey("environments.id"), nullable=True)  # baseline: for this key (None: the claimer's)
    priority: Mapped[int] = mapped_column(Integer, default=1)  # lower first: baselines before submissions
    state: Mapped[str] = mapped_column(String(20), default="queued")  # queued | running | done | failed | cancelled
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)  # a fresh id per claim
    lease_expires: Mapped[float | None] = mapped_column(Float, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)  # host:pid of the claimer
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    reason: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[float] = mapped_column(Float)
    finished: Mapped[float | None] = mapped_column(Float, nullable=True)


class Result(Base):
    """One trace of a submission's job: a workload's status, time, score and the whole trace."""

    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("job_id", "workload"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"), index=True)
    gpu_uuid: Mapped[str] = mapped_column(String(100), default="")
    reused_from: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the submission whose evaluation of the same code this copies
    workload: Mapped[str] = mapped_column(String(200))
    held_out: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(40))
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_iqr_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    sol_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    flags: Mapped[str] = mapped_column(Text, default="[]")
    log: Mapped[str] = mapped_column(Text, default="")
    trace: Mapped[str] = mapped_column(Text)  # the Trace as JSON, environment included
    created: Mapped[float] = mapped_column(Float)


class Baseline(Base):
    """T_b, the reference's time and the SOL analysis of one workload, for one version key."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("job_id", "workload"), Index("ix_baselines_key", "environment_id", "problem_id"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"))
    workload: Mapped[str] = mapped_column(String(200))
    baseline_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    candidate: Mapped[str | None] = mapped_column(String(200), nullable=True)
    reference_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    sol_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    flops: Mapped[float | None] = mapped_column(Float, nullable=True)
    bytes: Mapped[float | None] = mapped_column(Float, nullable=True)
    sol: Mapped[str] = mapped_column(Text, default="{}")  # JSON: the SOL breakdown (bounds, units, bottleneck)
    entry: Mapped[str] = mapped_column(Text, default="{}")  # JSON: the BaselineEntry (every candidate, provenance)
    measured: Mapped[float] = mapped_column(Float)
