"""Where jobs live: SQLite (a file), PostgreSQL (a schema), or a process's memory.

:class:`~remem.background.queue.JobQueue` holds every rule (:mod:`remem.background.rules`)
and speaks to storage only through :meth:`JobStorage.transaction`, which yields a
:class:`JobTx`: load jobs (locked for the transaction), insert and update them. So the queue
is written once and the three backends store the same thing.

* SQL (:class:`SQLJobStorage`, on the store's :class:`~remem.db.Database`): on SQLite a
  write transaction holds the database's write lock from its start, so a claim is
  exclusive across processes; on PostgreSQL a claim selects due rows ``FOR UPDATE SKIP
  LOCKED``, so workers take different jobs without waiting on each other, and other writes
  lock the one row they change (``FOR UPDATE``).
* memory: dicts behind a lock (one process; tests and ``:memory:`` stores).

Read counts, budgets and usage live beside the jobs in their own storage
(:mod:`remem.usage.storage`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from remem.background import sql
from remem.background.jobs import Job, JobStatus
from remem.background.rules import claimable
from remem.db import Database, Tx
from remem.errors import ConfigError, ConflictError

__all__ = ["JobStorage", "JobTx", "MemoryJobStorage", "PostgresJobStorage", "SQLJobStorage",
           "SQLiteJobStorage"]


class JobTx(Protocol):
    """One open transaction over the jobs. Reads in a write transaction lock what they read
    until it ends."""

    def get(self, job_id: str) -> Job | None:
        """The job with this id."""
        ...

    def by_key(self, tenant: str, idempotency_key: str) -> Job | None:
        """The job enqueued under this idempotency key."""
        ...

    def pending(self, tenant: str, debounce_key: str) -> Job | None:
        """The queued job of this debounce key (at most one)."""
        ...

    def due(self, now: float, limit: int, kinds: Sequence[str] | None,
            tenant: str | None = None) -> list[Job]:
        """Up to ``limit`` claimable jobs (:func:`~remem.background.rules.claimable`), oldest
        due first; none queued behind a running job of its debounce key; ``tenant``: only
        that tenant's."""
        ...

    def find(self, *, tenant: str | None, status: JobStatus | None, kind: str | None,
             thread_id: str | None, limit: int) -> list[Job]:
        """Jobs matching every filter given, newest first."""
        ...

    def counts(self, tenant: str | None) -> dict[str, int]:
        """How many jobs have each status."""
        ...

    def oldest_due(self, tenant: str | None, now: float) -> float | None:
        """The earliest ``run_after`` of a queued job due by ``now``."""
        ...

    def insert(self, job: Job) -> None:
        """Store a new job."""
        ...

    def update(self, job: Job) -> None:
        """Store a job's new state."""
        ...

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        """The jobs with these ids that exist (one round trip)."""
        ...

    def update_many(self, jobs: Sequence[Job]) -> None:
        """Store several jobs' new states (one round trip where the driver can)."""
        ...

    def counts_by_kind(self, tenant: str | None) -> dict[tuple[str, str], int]:
        """How many jobs of each (kind, status)."""
        ...


class JobStorage(Protocol):
    """A database holding jobs."""

    def setup(self) -> None:
        """Connect and create or migrate the jobs table (idempotent)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...

    def transaction(self, write: bool) -> Any:
        """A context manager yielding a :class:`JobTx`; commits on success."""
        ...


def _where(tenant: str | None, status: JobStatus | None, kind: str | None,
           thread_id: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for column, value in (("tenant", tenant), ("status", status), ("kind", kind),
                          ("thread_id", thread_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class _SQLJobTx:
    """:class:`JobTx` over a :class:`~remem.db.Tx`; a write locks the rows it reads."""

    def __init__(self, tx: Tx, write: bool) -> None:
        self.tx = tx
        self.lock = tx.dialect.lock if write else ""
        self.skip_locked = tx.dialect.skip_locked if write else ""

    def _one(self, query: str, params: Sequence[Any]) -> Job | None:
        row = self.tx.execute(query + self.lock, params).fetchone()
        return sql.job_of_row(row) if row is not None else None

    def _jobs(self, query: str, params: Sequence[Any]) -> list[Job]:
        return [sql.job_of_row(row) for row in self.tx.execute(query, params).fetchall()]

    def get(self, job_id: str) -> Job | None:
        return self._one(f"{sql.SELECT} WHERE id = ?", (job_id,))

    def by_key(self, tenant: str, idempotency_key: str) -> Job | None:
        return self._one(f"{sql.SELECT} WHERE tenant = ? AND idempotency_key = ?",
                         (tenant, idempotency_key))

    def pending(self, tenant: str, debounce_key: str) -> Job | None:
        return self._one(f"{sql.SELECT} WHERE tenant = ? AND debounce_key = ? AND "
                         "status = 'queued'", (tenant, debounce_key))

    def due(self, now: float, limit: int, kinds: Sequence[str] | None,
            tenant: str | None = None) -> list[Job]:
        only = () if tenant is None else (tenant,)
        return self._jobs(sql.due_sql(kinds, self.skip_locked, tenant=tenant is not None),
                          (now, now, now, *(kinds or ()), *only, limit))

    def find(self, *, tenant: str | None, status: JobStatus | None, kind: str | None,
             thread_id: str | None, limit: int) -> list[Job]:
        where, params = _where(tenant, status, kind, thread_id)
        return self._jobs(f"{sql.SELECT}{where} ORDER BY created_at DESC, id DESC LIMIT ?",
                          (*params, limit))

    def counts(self, tenant: str | None) -> dict[str, int]:
        where, params = _where(tenant, None, None, None)
        rows = self.tx.execute(f"SELECT status, COUNT(*) FROM remem_jobs{where} "
                               "GROUP BY status", params).fetchall()
        return {status: int(count) for status, count in rows}

    def oldest_due(self, tenant: str | None, now: float) -> float | None:
        where, params = _where(tenant, "queued", None, None)
        row = self.tx.execute(f"SELECT MIN(run_after) FROM remem_jobs{where} AND "
                              "run_after <= ?", (*params, now)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def insert(self, job: Job) -> None:
        self.tx.execute(sql.INSERT, sql.row_of_job(job))

    def update(self, job: Job) -> None:
        self.update_many([job])

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        if not job_ids:
            return []
        marks = ", ".join("?" for _ in job_ids)
        return self._jobs(f"{sql.SELECT} WHERE id IN ({marks}) ORDER BY id{self.lock}",
                          list(job_ids))

    def update_many(self, jobs: Sequence[Job]) -> None:
        self.tx.executemany(sql.UPDATE, [(*row[1:], row[0])
                                         for row in map(sql.row_of_job, jobs)])

    def counts_by_kind(self, tenant: str | None) -> dict[tuple[str, str], int]:
        where, params = _where(tenant, None, None, None)
        rows = self.tx.execute(f"SELECT kind, status, COUNT(*) FROM remem_jobs{where} "
                               "GROUP BY kind, status", params).fetchall()
        return {(kind, status): int(count) for kind, status, count in rows}


class SQLJobStorage:
    """Jobs in a :class:`~remem.db.Database` (the store's SQLite file or PostgreSQL schema),
    beside its tables; :meth:`close` closes ``db``."""

    def __init__(self, db: Database) -> None:
        if db.in_memory:
            raise ConfigError("a job queue in SQLite needs a file that every worker can open; "
                              "for one process use JobQueue.in_memory() (':memory:')")
        self.db = db

    def setup(self) -> None:
        self.db.migrate(sql.JOB_SCHEMA)

    @contextmanager
    def transaction(self, write: bool) -> Iterator[JobTx]:
        self.setup()
        with self.db.transaction(write) as tx:
            yield _SQLJobTx(tx, write)

    def close(self) -> None:
        self.db.close()


class SQLiteJobStorage(SQLJobStorage):
    """Jobs in a SQLite file (the store's), beside its tables."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        super().__init__(Database(path, owner="JobQueue", busy_timeout=busy_timeout))


class PostgresJobStorage(SQLJobStorage):
    """Jobs in a PostgreSQL schema (the ``postgres`` extra), by default the store's."""

    def __init__(self, dsn: str, *, schema: str = "remem", pool_max_size: int = 4,
                 connect_timeout: float = 10.0) -> None:
        super().__init__(Database(dsn, schema=schema, owner="JobQueue", pool_max_size=pool_max_size,
                                  connect_timeout=connect_timeout))


class _MemoryTx:
    def __init__(self, jobs: dict[str, Job]) -> None:
        self.jobs = jobs

    def counts_by_kind(self, tenant: str | None) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for job in self.jobs.values():
            if tenant is None or job.tenant == tenant:
                counts[(job.kind, job.status)] = counts.get((job.kind, job.status), 0) + 1
        return counts

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def by_key(self, tenant: str, idempotency_key: str) -> Job | None:
        return next((j for j in self.jobs.values() if j.tenant == tenant
                     and j.idempotency_key == idempotency_key), None)

    def pending(self, tenant: str, debounce_key: str) -> Job | None:
        return next((j for j in self.jobs.values() if j.tenant == tenant
                     and j.debounce_key == debounce_key and j.status == "queued"), None)

    def due(self, now: float, limit: int, kinds: Sequence[str] | None,
            tenant: str | None = None) -> list[Job]:
        running = {(j.tenant, j.debounce_key) for j in self.jobs.values()
                   if j.status == "running" and j.debounce_key is not None
                   and j.lease_until is not None and j.lease_until >= now}
        found = [j for j in self.jobs.values() if claimable(j, now)
                 and (kinds is None or j.kind in kinds)
                 and (tenant is None or j.tenant == tenant)
                 and (j.debounce_key is None or j.status == "running"
                      or (j.tenant, j.debounce_key) not in running)]
        found.sort(key=lambda j: (j.run_after, j.id))
        return found[:limit]

    def find(self, *, tenant: str | None, status: JobStatus | None, kind: str | None,
             thread_id: str | None, limit: int) -> list[Job]:
        found = [j for j in self.jobs.values()
                 if (tenant is None or j.tenant == tenant)
                 and (status is None or j.status == status)
                 and (kind is None or j.kind == kind)
                 and (thread_id is None or j.thread_id == thread_id)]
        found.sort(key=lambda j: (j.created_at, j.id), reverse=True)
        return found[:limit]

    def counts(self, tenant: str | None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in self.jobs.values():
            if tenant is None or job.tenant == tenant:
                counts[job.status] = counts.get(job.status, 0) + 1
        return counts

    def oldest_due(self, tenant: str | None, now: float) -> float | None:
        due = [j.run_after for j in self.jobs.values() if j.status == "queued"
               and j.run_after <= now and (tenant is None or j.tenant == tenant)]
        return min(due, default=None)

    def insert(self, job: Job) -> None:
        if job.id in self.jobs:
            raise ConflictError(f"job {job.id} already exists")
        self.jobs[job.id] = job

    def update(self, job: Job) -> None:
        self.jobs[job.id] = job

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        return [self.jobs[i] for i in sorted(set(job_ids)) if i in self.jobs]

    def update_many(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            self.jobs[job.id] = job


class MemoryJobStorage:
    """Jobs in this process's memory: gone when it exits (tests, ``:memory:`` stores)."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.RLock()

    def setup(self) -> None:
        return None

    def close(self) -> None:
        return None

    @contextmanager
    def transaction(self, write: bool) -> Iterator[JobTx]:
        with self._lock:
            # a copy per transaction: an error part-way leaves the jobs as they were
            working = dict(self._jobs)
            yield _MemoryTx(working)
            if write:
                self._jobs = working
