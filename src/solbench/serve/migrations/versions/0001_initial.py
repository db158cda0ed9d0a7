"""The first schema: users, tokens, datasets, problems, environments, submissions, jobs, results, baselines.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), primary_key=True)


def _text(name: str) -> sa.Column:
    return sa.Column(name, sa.Text(), nullable=False)


def upgrade() -> None:
    op.create_table("users", _id(), sa.Column("name", sa.String(64), nullable=False, unique=True),
                    sa.Column("is_admin", sa.Boolean(), nullable=False), sa.Column("created", sa.Float(), nullable=False))
    op.create_table("tokens", _id(), sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
                    sa.Column("digest", sa.String(64), nullable=False, unique=True), sa.Column("created", sa.Float(), nullable=False),
                    sa.Column("revoked", sa.Boolean(), nullable=False))
    op.create_table("datasets", _id(), sa.Column("name", sa.String(200), nullable=False), _text("path"),
                    sa.Column("content_hash", sa.String(64), nullable=False), sa.Column("created", sa.Float(), nullable=False),
                    sa.UniqueConstraint("name", "content_hash"))
    op.create_table("problems", _id(), sa.Column("dataset_id", sa.Integer(), sa.ForeignKey("datasets.id"), nullable=False),
                    sa.Column("name", sa.String(200), nullable=False), sa.Column("content_hash", sa.String(64), nullable=False),
                    _text("description"), _text("categories"), sa.Column("workloads", sa.Integer(), nullable=False),
                    sa.UniqueConstraint("dataset_id", "name"))
    op.create_index("ix_problems_content_hash", "problems", ["content_hash"])
    op.create_table("environments", _id(), sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
                    sa.Column("hardware", sa.String(200), nullable=False), sa.Column("device", sa.String(200), nullable=False),
                    *[sa.Column(name, sa.String(100), nullable=False) for name in ("driver", "cuda", "torch", "triton", "solbench", "clock_policy")],
                    _text("roofs"), sa.Column("created", sa.Float(), nullable=False))
    op.create_table("submissions", _id(), sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
                    sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id"), nullable=False),
                    sa.Column("name", sa.String(200), nullable=False), _text("body"),
                    sa.Column("code_hash", sa.String(64), nullable=False), _text("findings"),
                    sa.Column("state", sa.String(20), nullable=False), sa.Column("created", sa.Float(), nullable=False),
                    sa.Column("finished", sa.Float(), nullable=True))
    for column in ("user_id", "problem_id", "code_hash", "created"):
        op.create_index(f"ix_submissions_{column}", "submissions", [column])
    op.create_table("jobs", _id(), sa.Column("kind", sa.String(20), nullable=False),
                    sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id"), nullable=True, unique=True),
                    sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id"), nullable=False),
                    sa.Column("environment_id", sa.Integer(), sa.ForeignKey("environments.id"), nullable=True),
                    sa.Column("priority", sa.Integer(), nullable=False), sa.Column("state", sa.String(20), nullable=False),
                    sa.Column("lease_owner", sa.String(64), nullable=True), sa.Column("lease_expires", sa.Float(), nullable=True),
                    sa.Column("worker", sa.String(200), nullable=True), sa.Column("attempts", sa.Integer(), nullable=False),
                    _text("reason"), sa.Column("created", sa.Float(), nullable=False), sa.Column("finished", sa.Float(), nullable=True))
    op.create_index("ix_jobs_claim", "jobs", ["state", "priority", "id"])
    op.create_table("results", _id(), sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id"), nullable=False),
                    sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id"), nullable=False),
                    sa.Column("environment_id", sa.Integer(), sa.ForeignKey("environments.id"), nullable=False),
                    sa.Column("gpu_uuid", sa.String(100), nullable=False), sa.Column("reused_from", sa.Integer(), nullable=True),
                    sa.Column("workload", sa.String(200), nullable=False),
                    sa.Column("held_out", sa.Boolean(), nullable=False), sa.Column("status", sa.String(40), nullable=False),
                    *[sa.Column(name, sa.Float(), nullable=True) for name in ("latency_ms", "latency_iqr_ms", "sol_ms", "score")],
                    _text("flags"), _text("log"), _text("trace"), sa.Column("created", sa.Float(), nullable=False),
                    sa.UniqueConstraint("job_id", "workload"))
    op.create_index("ix_results_submission_id", "results", ["submission_id"])
    op.create_index("ix_results_environment_id", "results", ["environment_id"])
    op.create_table("baselines", _id(), sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id"), nullable=False),
                    sa.Column("environment_id", sa.Integer(), sa.ForeignKey("environments.id"), nullable=False),
                    sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id"), nullable=False),
                    sa.Column("workload", sa.String(200), nullable=False),
                    sa.Column("baseline_ms", sa.Float(), nullable=True), sa.Column("candidate", sa.String(200), nullable=True),
                    *[sa.Column(name, sa.Float(), nullable=True) for name in ("reference_ms", "sol_ms", "flops", "bytes")],
                    _text("sol"), _text("entry"), sa.Column("measured", sa.Float(), nullable=False),
                    sa.UniqueConstraint("job_id", "workload"))
    op.create_index("ix_baselines_key", "baselines", ["environment_id", "problem_id"])


def downgrade() -> None:
    for table in ("baselines", "results", "jobs", "submissions", "environments", "problems", "datasets", "tokens", "users"):
        op.drop_table(table)
