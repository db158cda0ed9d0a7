"""The job queue, in the database. A worker claims jobs with a conditional update (the row is taken
only if it is still queued, or running under a lease that has expired), so two claimers never hold
one job, on SQLite and PostgreSQL alike; it renews its lease while it works, and stores a job's
results in the same transaction that marks the job done under its own lease, so a job's results are
stored exactly once: a worker killed mid-job leaves the lease to expire and the job is claimed again."""

from __future__ import annotations

import time
import uuid
from typing import Iterable

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from solbench.serve.models import Job, Submission

SUBMISSION, BASELINE = "submission", "baseline"
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
BASELINE_PRIORITY, SUBMISSION_PRIORITY = 0, 1


def enqueue_submission(session: Session, submission: Submission) -> Job:
    job = Job(kind=SUBMISSION, submission_id=submission.id, problem_id=submission.problem_id, priority=SUBMISSION_PRIORITY,
              state=QUEUED, attempts=0, reason="", created=time.time())
    session.add(job)
    return job


def enqueue_baselines(session: Session, problem_ids: Iterable[int], environment_id: int | None) -> int:
    """A baseline job per problem that has none queued or running for this key; the count made.
    environment_id None: measured for whichever key its claimer has (the admin's re-run)."""
    made = 0
    for problem_id in problem_ids:
        pending = session.scalar(select(Job.id).where(Job.kind == BASELINE, Job.problem_id == problem_id, Job.state.in_((QUEUED, RUNNING)),
                                                      Job.environment_id.is_(None) if environment_id is None else Job.environment_id == environment_id))
        if pending is None:
            session.add(Job(kind=BASELINE, problem_id=problem_id, environment_id=environment_id, priority=BASELINE_PRIORITY, state=QUEUED,
                            attempts=0, reason="", created=time.time()))
            made += 1
    return made


def _claimable(now: float):
    return or_(Job.state == QUEUED, and_(Job.state == RUNNING, Job.lease_expires < now))


def claim(session: Session, problem_ids: Iterable[int], environment_id: int, worker: str, count: int, lease_s: float,
          max_attempts: int) -> tuple[str, list[Job]]:
    """Up to `count` jobs of the given problems (baselines first), leased to a fresh owner id for
    lease_s seconds. A job claimed max_attempts times already is recorded as failed instead."""
    owner = uuid.uuid4().hex
    now = time.time()
    problem_ids = list(problem_ids)
    if not problem_ids:
        return owner, []
    for_me = or_(Job.kind == SUBMISSION, Job.environment_id.is_(None), Job.environment_id == environment_id)
    candidates = session.scalars(select(Job).where(Job.problem_id.in_(problem_ids), for_me, _claimable(now))
                                 .order_by(Job.priority, Job.id).limit(count * 2)).all()
    taken: list[Job] = []
    for job in candidates:
        if len(taken) >= count:
            break
        if job.attempts >= max_attempts:
            _give_up(session, job, now, f"the evaluation was lost {job.attempts} times (its worker died or was killed)")
            continue
        claimed = session.execute(update(Job).where(Job.id == job.id, _claimable(now))
                                  .values(state=RUNNING, lease_owner=owner, lease_expires=now + lease_s, worker=worker,
                                          attempts=Job.attempts + 1)
                                  .execution_options(synchronize_session=False)).rowcount
        if claimed == 1:
            session.refresh(job)
            if job.submission_id is not None:
                session.execute(update(Submission).where(Submission.id == job.submission_id, Submission.state == QUEUED).values(state=RUNNING))
            taken.append(job)
    return owner, taken


def _give_up(session: Session, job: Job, now: float, reason: str) -> None:
    done = session.execute(update(Job).where(Job.id == job.id, _claimable(now))
                           .values(state=FAILED, reason=reason, finished=now, lease_owner=None, lease_expires=None)).rowcount
    if done and job.submission_id is not None:
        session.execute(update(Submission).where(Submission.id == job.submission_id).values(state=FAILED, finished=now))


def renew(session: Session, owner: str, lease_s: float) -> int:
    """Extend every lease this owner holds; the number of jobs it still holds."""
    return session.execute(update(Job).where(Job.lease_owner == owner, Job.state == RUNNING)
                           .values(lease_expires=time.time() + lease_s)).rowcount


def complete(session: Session, job_id: int, owner: str, state: str = DONE, reason: str = "") -> bool:
    """Mark the job finished if this owner still holds it; False when its lease was lost (another
    claimer has it, or it was cancelled): the caller then stores nothing."""
    now = time.time()
    held = session.execute(update(Job).where(Job.id == job_id, Job.lease_owner == owner, Job.state == RUNNING)
                           .values(state=state, reason=reason, finished=now, lease_expires=None)).rowcount == 1
    if held:
        job = session.get(Job, job_id)
        if job is not None and job.submission_id is not None:
            session.execute(update(Submission).where(Submission.id == job.submission_id).values(state=state, finished=now))
    return held


def cancel(session: Session, submission: Submission) -> bool:
    """Cancel a submission not yet finished; False when it is finished already."""
    if submission.state not in (QUEUED, RUNNING):
        return False
    now = time.time()
    session.execute(update(Job).where(Job.submission_id == submission.id, Job.state.in_((QUEUED, RUNNING)))
                    .values(state=CANCELLED, finished=now, lease_owner=None, lease_expires=None))
    submission.state, submission.finished = CANCELLED, now
    return True
