"""JobQueue: a durable job queue in the store's own database.

>>> from remem.background import JobQueue, NewJob
>>> queue = JobQueue.in_memory(clock=lambda: 100.0)
>>> job = queue.enqueue(NewJob("noop", {"n": 1}))
>>> [claimed] = queue.claim("worker-1")
>>> claimed.id == job.id, claimed.attempts
(True, 1)
>>> queue.complete(job.id, "worker-1", {"ok": True})
True
>>> queue.get(job.id).status
'done'

Guarantees (on every backend, :mod:`remem.background.storage`):

* **Claims are exclusive.** A job is running for one worker at a time: the claim is one
  transaction (``BEGIN IMMEDIATE`` on SQLite, ``FOR UPDATE SKIP LOCKED`` on PostgreSQL).
* **Nothing acknowledged is lost.** An enqueue or a submission returns after its commit. A
  worker that dies leaves its job ``running`` with a lease; when the lease expires, another
  worker claims it again (a new attempt). A worker that stops cleanly releases its jobs.
* **Retries back off; the last error is kept.** A failed attempt queues the job again after
  :func:`~remem.background.jobs.backoff`; after ``max_attempts`` it is ``dead``.
* **A worker that lost its lease cannot finish the job**: ``complete``, ``fail`` and
  ``heartbeat`` from a worker that no longer holds it return ``False`` / ``None``. Its
  effects may already be written: handlers make them idempotent (the job id is their key,
  see :mod:`remem.background.kinds`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from remem.background import rules
from remem.background.jobs import STATUSES, Job, JobStatus, NewJob, QueueStats, Submission
from remem.background.storage import JobStorage, MemoryJobStorage, SQLJobStorage
from remem.db import Database, database_of
from remem.errors import ConflictError, InvalidInputError, NotFoundError
from remem.usage.storage import (
    MemoryUsageStorage,
    SQLUsageStorage,
    UsageStorage,
    usage_storage_of,
)

__all__ = ["JobQueue"]

_CONFLICT_RETRIES = 5
_BESIDE_MEMORY: weakref.WeakKeyDictionary[Any, MemoryJobStorage] = weakref.WeakKeyDictionary()
_BESIDE_LOCK = threading.Lock()


def _check_limit(limit: int, name: str = "limit", upper: int = 1000) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= upper:
        raise InvalidInputError(f"{name} must be an integer from 1 to {upper}, got {limit!r}")


def _check_lease(lease: float) -> None:
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not 0 < lease <= 86400:
        raise InvalidInputError(f"lease must be a number of seconds in (0, 86400], got "
                                f"{lease!r}")


class JobQueue:
    """A job queue over a :class:`~remem.background.storage.JobStorage`.

    Open one with :meth:`open` (a SQLite file or a ``postgresql://`` DSN), :meth:`beside`
    (the database of an open store) or :meth:`in_memory`. ``clock``: epoch seconds (tests
    pass a fake one). Construction does no I/O; the first call (or :meth:`setup`) creates
    or migrates the jobs table.
    """

    def __init__(self, storage: JobStorage, *, clock: Callable[[], float] = time.time,
                 counters: UsageStorage | None = None) -> None:
        self.storage = storage
        self.clock = clock
        #: read counts, budgets and usage, in the jobs' database (:mod:`remem.usage.storage`)
        self.counters: UsageStorage = counters if counters is not None else (
            SQLUsageStorage(storage.db, owns=False) if isinstance(storage, SQLJobStorage)
            else MemoryUsageStorage())

    @classmethod
    def open(cls, location: str | os.PathLike[str], *, schema: str = "remem",
             clock: Callable[[], float] = time.time) -> JobQueue:
        """The queue in a SQLite file or a PostgreSQL database (``schema``: the store's)."""
        if os.fspath(location) == ":memory:":
            return cls.in_memory(clock=clock)
        return cls(SQLJobStorage(Database(location, schema=schema, owner="JobQueue")),
                   clock=clock)

    @classmethod
    def in_memory(cls, *, clock: Callable[[], float] = time.time) -> JobQueue:
        """A queue in this process's memory (gone when it exits)."""
        return cls(MemoryJobStorage(), clock=clock)

    @classmethod
    def beside(cls, store: Any, *, clock: Callable[[], float] = time.time) -> JobQueue:
        """The queue in the same database as ``store`` (:func:`remem.db.database_of`), or
        (an in-memory store) this process's memory."""
        db = database_of(store, "JobQueue")
        if db is not None and not db.in_memory:
            return cls(SQLJobStorage(db), clock=clock)
        # one in-memory "database" per store (a ":memory:" one too: workers of other
        # processes cannot open it): every queue beside it sees the same jobs, read counts
        # and budgets, as queues beside one file do
        with _BESIDE_LOCK:
            storage = _BESIDE_MEMORY.get(store)
            if storage is None:
                storage = _BESIDE_MEMORY[store] = MemoryJobStorage()
        return cls(storage, clock=clock, counters=usage_storage_of(store))

    def setup(self) -> None:
        """Create or migrate the jobs table (idempotent)."""
        self.storage.setup()

    def close(self) -> None:
        """Close the connections."""
        self.storage.close()

    def __enter__(self) -> Self:
        self.setup()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _write(self, change: Callable[[Any, float], Any]) -> Any:
        """Run ``change(tx, now)`` in a write transaction, again if a concurrent writer
        created the same row first (only PostgreSQL can: SQLite's writers take turns)."""
        for attempt in range(_CONFLICT_RETRIES):
            try:
                with self.storage.transaction(True) as tx:
                    return change(tx, self.clock())
            except ConflictError:
                if attempt == _CONFLICT_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    # -- producers ------------------------------------------------------------------------------

    def enqueue(self, new: NewJob) -> Job:
        """Queue a job; with an ``idempotency_key`` already used, return that job instead."""
        def change(tx: Any, now: float) -> Job:
            if new.idempotency_key is not None:
                existing: Job | None = tx.by_key(new.tenant, new.idempotency_key)
                if existing is not None:
                    return existing
            job = rules.created(new, now)
            tx.insert(job)
            return job

        result: Job = self._write(change)
        return result

    def submit(self, submission: Submission) -> Job:
        """Queue a debounced job, or replace the pending one of its debounce key (see
        :class:`~remem.background.jobs.Submission`). Returns the job that will run it."""
        def change(tx: Any, now: float) -> Job:
            pending: Job | None = tx.pending(submission.tenant, submission.debounce_key)
            if pending is not None:
                job = rules.replaced(pending, submission, now)
                tx.update(job)
                return job
            job = rules.created(submission, now)
            tx.insert(job)
            return job

        result: Job = self._write(change)
        return result

    # -- workers --------------------------------------------------------------------------------

    def claim(self, worker: str, *, limit: int = 1, lease: float = 30.0,
              kinds: Sequence[str] | None = None, tenant: str | None = None) -> list[Job]:
        """Take up to ``limit`` due jobs for ``worker`` for ``lease`` seconds (renew with
        :meth:`heartbeat`); ``kinds`` / ``tenant``: only those. A job whose lease expired
        after its last attempt is made ``dead`` instead of being handed out again."""
        _check_limit(limit)
        _check_lease(lease)

        def change(tx: Any, now: float) -> list[Job]:
            taken: list[Job] = []
            written: list[Job] = []
            for job in tx.due(now, limit, list(kinds) if kinds else None, tenant):
                if job.status == "running" and job.attempts >= job.max_attempts:
                    written.append(rules.expired(job, now))
                    continue
                job = rules.claimed(job, worker, now, lease)
                written.append(job)
                taken.append(job)
            tx.update_many(written)
            return taken

        result: list[Job] = self._write(change)
        return result

    def claim_one(self, job_id: str, worker: str, *, lease: float = 30.0) -> Job | None:
        """Take this job now if it is queued (due or not) and nothing of its debounce key
        is running; ``None`` otherwise (a worker has it, or it finished)."""
        _check_lease(lease)

        def change(tx: Any, now: float) -> Job | None:
            job: Job | None = tx.get(job_id)
            if job is None or job.status != "queued":
                return None
            if job.debounce_key is not None:
                running = tx.find(tenant=job.tenant, status="running", kind=None,
                                  thread_id=job.thread_id, limit=1000)
                if any(r.debounce_key == job.debounce_key and r.lease_until is not None
                       and r.lease_until >= now for r in running):
                    return None
            claimed = rules.claimed(job, worker, now, lease)
            tx.update(claimed)
            return claimed

        result: Job | None = self._write(change)
        return result

    def _owned(self, job_id: str, worker: str,
               change: Callable[[Job, float], Job]) -> Job | None:
        def run(tx: Any, now: float) -> Job | None:
            job: Job | None = tx.get(job_id)
            if job is None or not rules.owned(job, worker):
                return None
            updated = change(job, now)
            tx.update(updated)
            return updated

        result: Job | None = self._write(run)
        return result

    def heartbeat(self, job_id: str, worker: str, *, lease: float = 30.0) -> bool:
        """Extend ``worker``'s lease on a job; ``False`` if it no longer holds it."""
        _check_lease(lease)
        return self._owned(job_id, worker,
                           lambda job, now: rules.heartbeat(job, now, lease)) is not None

    def complete(self, job_id: str, worker: str,
                 result: Mapping[str, Any] | None = None) -> bool:
        """Mark a job done with its result; ``False`` if ``worker`` no longer holds it."""
        return self.finish(job_id, worker, result) is not None

    def finish(self, job_id: str, worker: str,
               result: Mapping[str, Any] | None = None) -> Job | None:
        """:meth:`complete`, returning the job as stored (``None``: not ``worker``'s)."""
        return self._owned(job_id, worker, lambda job, now: rules.completed(job, result, now))

    def finish_many(self, worker: str,
                    results: Sequence[tuple[str, Mapping[str, Any] | None]]) -> list[Job]:
        """:meth:`finish` several jobs in one transaction (a worker that ran a batch of
        short jobs); returns those still ``worker``'s, now done."""
        outcome = dict(results)

        def run(tx: Any, now: float) -> list[Job]:
            finished = [rules.completed(job, outcome[job.id], now)
                        for job in tx.get_many(list(outcome)) if rules.owned(job, worker)]
            tx.update_many(finished)
            return finished

        found: list[Job] = self._write(run)
        return found

    def fail(self, job_id: str, worker: str, error: str, *,
             permanent: bool = False) -> Job | None:
        """Record a failed attempt (queued again after a backoff, or dead, or ``failed``
        when ``permanent``); ``None`` if ``worker`` no longer holds the job."""
        return self._owned(job_id, worker,
                           lambda job, now: rules.failed(job, error, now, permanent=permanent))

    def release(self, job_id: str, worker: str) -> bool:
        """Hand a job back without counting the attempt (a worker stopping)."""
        return self._owned(job_id, worker, rules.released) is not None

    # -- people ---------------------------------------------------------------------------------

    def get(self, job_id: str, *, tenant: str | None = None) -> Job:
        """The job with this id (:class:`~remem.errors.NotFoundError` if none, or if it is
        another tenant's)."""
        with self.storage.transaction(False) as tx:
            job: Job | None = tx.get(job_id)
        if job is None or (tenant is not None and job.tenant != tenant):
            raise NotFoundError(f"no job {job_id!r}; list jobs with `remem jobs ls` or "
                                "GET /v1/jobs")
        return job

    def list_jobs(self, *, status: JobStatus | None = None, kind: str | None = None,
             thread_id: str | None = None, tenant: str | None = None,
             limit: int = 100) -> list[Job]:
        """Jobs, newest first, filtered by each argument given."""
        if status is not None and status not in STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(STATUSES)}; got "
                                    f"{status!r}")
        _check_limit(limit)
        with self.storage.transaction(False) as tx:
            found: list[Job] = tx.find(tenant=tenant, status=status, kind=kind,
                                       thread_id=thread_id, limit=limit)
        return found

    def _by_user(self, job_id: str, tenant: str | None,
                 change: Callable[[Job, float], Job]) -> Job:
        def run(tx: Any, now: float) -> Job:
            job: Job | None = tx.get(job_id)
            if job is None or (tenant is not None and job.tenant != tenant):
                raise NotFoundError(f"no job {job_id!r}; list jobs with `remem jobs ls` or "
                                    "GET /v1/jobs")
            updated = change(job, now)
            if updated is not job:
                tx.update(updated)
            return updated

        result: Job = self._write(run)
        return result

    def cancel(self, job_id: str, *, tenant: str | None = None) -> Job:
        """Drop a queued (or failed, dead) job; a running or done one is a
        :class:`~remem.errors.ConflictError`."""
        return self._by_user(job_id, tenant, rules.cancelled)

    def retry(self, job_id: str, *, tenant: str | None = None) -> Job:
        """Queue a failed, dead or cancelled job again, due now, attempts reset.

        A debounced job whose thread already has a newer pending submission is a
        :class:`~remem.errors.ConflictError`: at most one job per debounce key may wait.
        """
        def run(tx: Any, now: float) -> Job:
            job: Job | None = tx.get(job_id)
            if job is None or (tenant is not None and job.tenant != tenant):
                raise NotFoundError(f"no job {job_id!r}; list jobs with `remem jobs ls` or "
                                    "GET /v1/jobs")
            updated = rules.retried(job, now)
            if job.debounce_key is not None:
                pending: Job | None = tx.pending(job.tenant, job.debounce_key)
                if pending is not None and pending.id != job.id:
                    raise ConflictError(
                        f"job {job.id} cannot be queued again: job {pending.id} is already "
                        "pending for the same thread and scope; let it run (or flush it), "
                        "or cancel it first")
            tx.update(updated)
            return updated

        result: Job = self._write(run)
        return result

    def _pending_of(self, tx: Any, thread_id: str, tenant: str,
                    debounce_key: str | None) -> list[Job]:
        if debounce_key is not None:
            job = tx.pending(tenant, debounce_key)
            return [job] if job is not None else []
        found: list[Job] = tx.find(tenant=tenant, status="queued", kind=None,
                                   thread_id=thread_id, limit=1000)
        return [job for job in found if job.debounce_key is not None]

    def flush(self, thread_id: str, *, debounce_key: str | None = None,
              tenant: str = "") -> list[Job]:
        """Make the pending debounced jobs of a thread due now; return them."""
        def run(tx: Any, now: float) -> list[Job]:
            jobs = [rules.flushed(job, now)
                    for job in self._pending_of(tx, thread_id, tenant, debounce_key)]
            for job in jobs:
                tx.update(job)
            return jobs

        result: list[Job] = self._write(run)
        return result

    def cancel_pending(self, thread_id: str, *, debounce_key: str | None = None,
                       tenant: str = "") -> list[Job]:
        """Cancel the pending debounced jobs of a thread; return them."""
        def run(tx: Any, now: float) -> list[Job]:
            jobs = [rules.cancelled(job, now)
                    for job in self._pending_of(tx, thread_id, tenant, debounce_key)]
            for job in jobs:
                tx.update(job)
            return jobs

        result: list[Job] = self._write(run)
        return result

    def stats(self, *, tenant: str | None = None) -> QueueStats:
        """Depth (by status), lag of the oldest due job, failures."""
        with self.storage.transaction(False) as tx:
            now = self.clock()
            counts: dict[str, int] = tx.counts(tenant)
            oldest: float | None = tx.oldest_due(tenant, now)
        return QueueStats(counts=counts, lag=max(0.0, now - oldest) if oldest else 0.0)

    def breakdown(self, *, tenant: str | None = None) -> dict[tuple[str, str], int]:
        """How many jobs of each ``(kind, status)`` (metrics)."""
        with self.storage.transaction(False) as tx:
            found: dict[tuple[str, str], int] = tx.counts_by_kind(tenant)
        return found

    # -- beside the jobs: read counts and budgets (remem.background.access, .budgets) ---------

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        """Add ``(memory_id, uses, at)`` to the read counts, in one transaction."""
        self.counters.touch(reads)

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """``memory_id -> (uses, last_accessed)`` of the memories ever read."""
        return self.counters.access(list(memory_ids)) if memory_ids else {}

    def put_budget(self, tenant: str, namespace: str, budget: str) -> None:
        """Store a namespace's budget (JSON), replacing the one it had."""
        self.counters.put_budget(tenant, namespace, budget, self.clock())

    def budgets(self, *, tenant: str | None = None, namespaces: Sequence[str] | None = None
                ) -> list[tuple[str, str, str, float]]:
        """Stored budgets ``(tenant, namespace, budget, updated_at)``."""
        return self.counters.budgets(tenant, list(namespaces) if namespaces is not None
                                     else None)

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        """Drop a namespace's budget; whether it had one."""
        return self.counters.delete_budget(tenant, namespace)
