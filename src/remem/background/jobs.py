"""Jobs as values, and the pure rules of the queue (no I/O).

A :class:`Job` is one unit of background work: a ``kind`` naming its handler, a JSON
``payload``, and the bookkeeping that makes it durable (attempts, a lease, a status, its
result or last error). Every queue backend stores the same fields and applies the same rules,
which live here so they are written once:

* :func:`backoff`: how long a failed attempt waits before the next one;
* :func:`merge_messages`: what a debounced submission carries when it replaces a pending one
  (every message not yet processed, in order, each once).

Status changes::

    queued --claim--> running --complete--> done
       ^                 |  \\--fail (attempts left)--> queued (run_after = now + backoff)
       |                 |   \\-fail (no attempts left, or permanent)--> dead / failed
       |                 \\--release (worker stopping) / lease expired--> queued / claimable
    cancelled <--cancel-- queued          dead / failed / cancelled --retry--> queued
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from remem.errors import InvalidInputError
from remem.messages.types import new_id
from remem.store.types import from_timestamp

__all__ = [
    "STATUSES",
    "Job",
    "JobStatus",
    "NewJob",
    "QueueStats",
    "Submission",
    "backoff",
    "merge_messages",
    "new_job_id",
]

#: ``failed``: a permanent error (retrying cannot help); ``dead``: every attempt failed
JobStatus = Literal["queued", "running", "done", "failed", "dead", "cancelled"]
STATUSES: tuple[JobStatus, ...] = ("queued", "running", "done", "failed", "dead", "cancelled")
MAX_KIND = 64
MAX_KEY = 512


def new_job_id() -> str:
    """A new time-ordered job id (``job_...``)."""
    return new_id("job")


def backoff(attempts: int, *, base: float = 2.0, cap: float = 300.0) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt: 2, 4, 8... capped at 5 min.

    Deterministic (no jitter): the attempts of one job are already spread by when it failed,
    and a test can state exactly when a retry becomes due.
    """
    return float(min(cap, base * 2 ** max(0, attempts - 1)))


def _check_text(name: str, value: str | None, limit: int, *, required: bool) -> None:
    if value is None:
        if required:
            raise InvalidInputError(f"{name} is required")
        return
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidInputError(f"{name} must be a non-empty string of at most {limit} "
                                f"characters, got {value!r:.80}")


def _check_seconds(name: str, value: float, *, upper: float = 366 * 86400.0) -> None:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 <= value <= upper):
        raise InvalidInputError(f"{name} must be a number of seconds from 0 to {upper:g}, "
                                f"got {value!r}")


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to enqueue. ``idempotency_key``: enqueueing the same key again returns the job
    already queued under it (whatever its status) instead of a second one. ``delay``: seconds
    before it may run. ``tenant``: whose job (a server's API key tenant; ``""`` otherwise)."""

    kind: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    delay: float = 0.0
    max_attempts: int = 5
    tenant: str = ""
    thread_id: str | None = None

    def __post_init__(self) -> None:
        _check_text("kind", self.kind, MAX_KIND, required=True)
        _check_text("idempotency_key", self.idempotency_key, MAX_KEY, required=False)
        _check_text("thread_id", self.thread_id, MAX_KEY, required=False)
        _check_seconds("delay", self.delay)
        if (isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int)
                or not 1 <= self.max_attempts <= 100):
            raise InvalidInputError(f"max_attempts must be an integer from 1 to 100, got "
                                    f"{self.max_attempts!r}")
        if not isinstance(self.payload, Mapping):
            raise InvalidInputError(f"payload must be a JSON object, got "
                                    f"{type(self.payload).__name__}")


@dataclass(frozen=True, slots=True)
class Submission:
    """A debounced submission: ``messages`` (JSON dicts, each with an ``id``) to process
    after ``delay`` seconds of quiet under ``debounce_key``.

    While a job with the same key is still queued, the submission replaces it: the pending
    job keeps its id, its messages gain the new ones (those whose id it does not hold yet)
    and ``run_after`` moves to ``now + delay``. Otherwise (none pending, or the pending one
    already running) a new job is queued. ``payload`` holds the rest of the job (its scope).
    """

    kind: str
    debounce_key: str
    thread_id: str
    messages: Sequence[Mapping[str, Any]]
    payload: Mapping[str, Any] = field(default_factory=dict)
    delay: float = 30.0
    max_attempts: int = 5
    tenant: str = ""

    def __post_init__(self) -> None:
        _check_text("kind", self.kind, MAX_KIND, required=True)
        _check_text("debounce_key", self.debounce_key, MAX_KEY * 4, required=True)
        _check_text("thread_id", self.thread_id, MAX_KEY, required=True)
        _check_seconds("delay", self.delay)
        for position, message in enumerate(self.messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
                raise InvalidInputError(f"messages[{position}] must be a message dict with a "
                                        "string 'id' (remem.Message.model_dump())")

    def first_payload(self) -> dict[str, Any]:
        """The payload of a new job for this submission."""
        return {**self.payload, "messages": merge_messages([], self.messages)}


def merge_messages(pending: Sequence[Mapping[str, Any]],
                   new: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``pending`` followed by the messages of ``new`` whose id is not already there, in
    order: a replaced submission loses nothing and holds no message twice."""
    merged = [dict(m) for m in pending]
    seen = {m.get("id") for m in merged}
    for message in new:
        if message.get("id") not in seen:
            seen.add(message.get("id"))
            merged.append(dict(message))
    return merged


@dataclass(frozen=True, slots=True)
class Job:
    """One job as stored. Times are epoch seconds."""

    id: str
    kind: str
    payload: dict[str, Any]
    status: JobStatus
    run_after: float
    created_at: float
    updated_at: float
    attempts: int = 0
    max_attempts: int = 5
    idempotency_key: str | None = None
    debounce_key: str | None = None
    thread_id: str | None = None
    tenant: str = ""
    claimed_by: str | None = None
    lease_until: float | None = None
    heartbeat_at: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    finished_at: float | None = None

    @property
    def finished(self) -> bool:
        """Whether the job will not run again (unless retried)."""
        return self.status in ("done", "failed", "dead", "cancelled")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (ISO 8601 times)."""

        def when(value: float | None) -> str | None:
            return from_timestamp(value).isoformat() if value is not None else None

        return {
            "id": self.id, "kind": self.kind, "status": self.status,
            "payload": self.payload, "attempts": self.attempts,
            "max_attempts": self.max_attempts, "idempotency_key": self.idempotency_key,
            "debounce_key": self.debounce_key, "thread_id": self.thread_id,
            "claimed_by": self.claimed_by, "lease_until": when(self.lease_until),
            "heartbeat_at": when(self.heartbeat_at), "run_after": when(self.run_after),
            "result": self.result, "error": self.error,
            "created_at": when(self.created_at), "updated_at": when(self.updated_at),
            "finished_at": when(self.finished_at),
        }


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Queue depth, lag and failures. ``lag``: seconds the oldest due queued job has been
    waiting past its ``run_after`` (0 when none is due)."""

    counts: dict[str, int]
    lag: float

    @property
    def depth(self) -> int:
        """Jobs waiting or running."""
        return self.counts.get("queued", 0) + self.counts.get("running", 0)

    @property
    def failures(self) -> int:
        """Jobs that will not run again without a retry (failed or dead)."""
        return self.counts.get("failed", 0) + self.counts.get("dead", 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"counts": {s: self.counts.get(s, 0) for s in STATUSES}, "depth": self.depth,
                "lag": self.lag, "failures": self.failures}
