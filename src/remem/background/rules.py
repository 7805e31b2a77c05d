"""Status changes of a job as pure functions: ``Job`` in, ``Job`` out (no I/O, no clock).

Every backend loads the job (locked), applies one of these, and writes the result back, so
the rules of the queue are written once and hold the same on SQLite, PostgreSQL and in
memory. A function that gets a job in the wrong state either returns ``None`` (a worker that
lost its lease: nothing to do) or raises :class:`~remem.errors.ConflictError` naming the
state and the fix (a user asking for an impossible change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from remem.background.jobs import Job, NewJob, Submission, backoff, merge_messages, new_job_id
from remem.errors import ConflictError

__all__ = ["cancelled", "claimable", "claimed", "completed", "created", "expired",
           "failed", "flushed", "heartbeat", "owned", "released", "replaced", "retried"]

_ERROR_CHARS = 4000


def created(new: NewJob | Submission, now: float) -> Job:
    """The stored form of a new job (queued, due after its delay)."""
    if isinstance(new, Submission):
        return Job(id=new_job_id(), kind=new.kind, payload=new.first_payload(),
                   status="queued", run_after=now + new.delay, created_at=now,
                   updated_at=now, max_attempts=new.max_attempts,
                   debounce_key=new.debounce_key, thread_id=new.thread_id, tenant=new.tenant)
    return Job(id=new_job_id(), kind=new.kind, payload=dict(new.payload), status="queued",
               run_after=now + new.delay, created_at=now, updated_at=now,
               max_attempts=new.max_attempts, idempotency_key=new.idempotency_key,
               thread_id=new.thread_id, tenant=new.tenant)


def replaced(pending: Job, submission: Submission, now: float) -> Job:
    """A queued job replaced by a newer submission under its debounce key: it keeps its id,
    gains the messages it does not hold yet, and waits ``delay`` seconds from now."""
    messages = merge_messages(pending.payload.get("messages", []), submission.messages)
    return replace(pending, payload={**pending.payload, **submission.payload,
                                     "messages": messages},
                   run_after=now + submission.delay, updated_at=now)


def claimable(job: Job, now: float) -> bool:
    """Whether a worker may take ``job`` now: queued and due, or running with its lease
    expired (its worker died)."""
    if job.status == "queued":
        return job.run_after <= now
    return job.status == "running" and job.lease_until is not None and job.lease_until < now


def expired(job: Job, now: float) -> Job:
    """A running job whose lease expired after its last allowed attempt: dead."""
    return replace(job, status="dead", claimed_by=None, lease_until=None, updated_at=now,
                   finished_at=now,
                   error=(job.error or "") + f"{'; ' if job.error else ''}the lease of attempt "
                   f"{job.attempts} expired (worker {job.claimed_by} stopped or hung)")


def claimed(job: Job, worker: str, now: float, lease: float) -> Job:
    """``job`` taken by ``worker`` for ``lease`` seconds (one more attempt)."""
    return replace(job, status="running", attempts=job.attempts + 1, claimed_by=worker,
                   lease_until=now + lease, heartbeat_at=now, updated_at=now)


def owned(job: Job | None, worker: str) -> bool:
    """Whether ``worker`` still holds ``job`` (running, claimed by it)."""
    return job is not None and job.status == "running" and job.claimed_by == worker


def heartbeat(job: Job, now: float, lease: float) -> Job:
    """The lease of a running job extended to ``now + lease``."""
    return replace(job, lease_until=now + lease, heartbeat_at=now, updated_at=now)


def completed(job: Job, result: Mapping[str, Any] | None, now: float) -> Job:
    """A job that ran to the end."""
    return replace(job, status="done", result=dict(result or {}), claimed_by=None,
                   lease_until=None, updated_at=now, finished_at=now)


def failed(job: Job, error: str, now: float, *, permanent: bool = False) -> Job:
    """A failed attempt: queued again after :func:`~remem.background.jobs.backoff`, dead when
    no attempt is left, ``failed`` at once when ``permanent`` (retrying cannot help)."""
    error = error[:_ERROR_CHARS]
    if permanent:
        return replace(job, status="failed", error=error, claimed_by=None, lease_until=None,
                       updated_at=now, finished_at=now)
    if job.attempts >= job.max_attempts:
        return replace(job, status="dead", error=error, claimed_by=None, lease_until=None,
                       updated_at=now, finished_at=now)
    return replace(job, status="queued", error=error, claimed_by=None, lease_until=None,
                   run_after=now + backoff(job.attempts), updated_at=now)


def released(job: Job, now: float) -> Job:
    """A running job handed back by a stopping worker: queued, due now, the attempt not
    counted (it did not fail)."""
    return replace(job, status="queued", attempts=max(0, job.attempts - 1), claimed_by=None,
                   lease_until=None, run_after=now, updated_at=now)


def cancelled(job: Job, now: float) -> Job:
    """A queued (or failed, dead) job that will not run."""
    if job.status == "cancelled":
        return job
    if job.status in ("running", "done"):
        raise ConflictError(
            f"job {job.id} is {job.status}: only a queued, failed or dead job can be "
            "cancelled" + ("; wait for it to finish" if job.status == "running" else ""))
    return replace(job, status="cancelled", claimed_by=None, lease_until=None,
                   updated_at=now, finished_at=now)


def retried(job: Job, now: float) -> Job:
    """A failed, dead or cancelled job queued again with its attempts reset."""
    if job.status not in ("failed", "dead", "cancelled"):
        raise ConflictError(f"job {job.id} is {job.status}: only a failed, dead or cancelled "
                            "job can be retried")
    return replace(job, status="queued", attempts=0, run_after=now, claimed_by=None,
                   lease_until=None, finished_at=None, updated_at=now)


def flushed(job: Job, now: float) -> Job:
    """A queued job made due now (its debounce delay cut short)."""
    return replace(job, run_after=min(job.run_after, now), updated_at=now)
