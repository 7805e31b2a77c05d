"""Where jobs live: SQLite (a file), PostgreSQL (a schema), or a process's memory.

:class:`~remem.background.queue.JobQueue` holds every rule (:mod:`remem.background.rules`)
and speaks to storage only through :meth:`JobStorage.transaction`, which yields a
:class:`JobTx`: load jobs (locked for the transaction), insert and update them. So the queue
is written once and the three backends store the same thing.

* SQLite: a write transaction is ``BEGIN IMMEDIATE`` (the database's write lock, taken up
  front, so a claim is exclusive across processes); WAL; one connection per OS thread.
* PostgreSQL: a psycopg pool whose ``search_path`` is the store's schema; a claim selects
  due rows ``FOR UPDATE SKIP LOCKED``, so workers take different jobs without waiting on
  each other; other writes lock the one row they change (``FOR UPDATE``).
* memory: dicts behind a lock (one process; tests and ``:memory:`` stores).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from remem._sqlite import SQLiteConnections
from remem.background import sql
from remem.background.jobs import Job, JobStatus
from remem.background.rules import claimable
from remem.errors import ConfigError, ConflictError, StoreError
from remem.store.migrations import apply_sqlite

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["JobStorage", "JobTx", "MemoryJobStorage", "PostgresJobStorage",
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

    # -- beside the jobs: reads of memories, and stored budgets ---------------------------------

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        """Add ``(memory_id, uses, at)`` to the memories' read counts (latest ``at`` kept)."""
        ...

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """``memory_id -> (uses, last_accessed)`` for the ids ever read."""
        ...

    def put_budget(self, tenant: str, namespace: str, budget: str, now: float) -> None:
        """Store (or replace) the budget (JSON) of a namespace (its JSON list)."""
        ...

    def budgets(self, tenant: str | None,
                namespaces: Sequence[str] | None) -> list[tuple[str, str, str, float]]:
        """Stored budgets ``(tenant, namespace, budget, updated_at)``, of these namespaces
        only when given, ordered by tenant and namespace."""
        ...

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        """Drop a namespace's budget; whether there was one."""
        ...

    def add_usage(self, rows: Sequence[tuple[str, str, str, str, int, int, int]]) -> None:
        """Add ``(tenant, day, operation, model, calls, input_tokens, output_tokens)`` to
        the chat model usage rows (:mod:`remem.usage`)."""
        ...

    def usage(self, tenant: str | None, since: str,
              until: str) -> list[tuple[str, str, str, str, int, int, int]]:
        """Usage rows of days ``since``..``until`` (ISO dates, both included), of one tenant
        or (``None``) every tenant's, ordered by day, tenant, operation and model."""
        ...

    def add_activity(self, rows: Sequence[tuple[str, str, str, int]]) -> None:
        """Add ``(tenant, day, op, changes)`` to the memory changes per day."""
        ...

    def activity(self, tenant: str | None, since: str,
                 until: str) -> list[tuple[str, str, str, int]]:
        """``(tenant, day, op, changes)`` of days ``since``..``until``, of one tenant or
        every tenant's, ordered by day, tenant and op."""
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


class _SQLTx:
    """:class:`JobTx` over a DB-API connection; ``lock``: what locks a read row."""

    def __init__(self, conn: Any, *, placeholder: str, lock: str, skip_locked: str) -> None:
        self.conn = conn
        self.placeholder = placeholder
        self.lock = lock
        self.skip_locked = skip_locked

    def _run(self, query: str, params: Sequence[Any] = ()) -> Any:
        if self.placeholder != "?":
            query = query.replace("?", self.placeholder)
        return self.conn.execute(query, params)

    def _one(self, query: str, params: Sequence[Any]) -> Job | None:
        row = self._run(query + self.lock, params).fetchone()
        return sql.job_of_row(row) if row is not None else None

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
        rows = self._run(sql.due_sql(kinds, self.skip_locked, tenant=tenant is not None),
                         (now, now, now, *(kinds or ()), *only, limit)).fetchall()
        return [sql.job_of_row(row) for row in rows]

    def find(self, *, tenant: str | None, status: JobStatus | None, kind: str | None,
             thread_id: str | None, limit: int) -> list[Job]:
        where, params = _where(tenant, status, kind, thread_id)
        rows = self._run(f"{sql.SELECT}{where} ORDER BY created_at DESC, id DESC LIMIT ?",
                         (*params, limit)).fetchall()
        return [sql.job_of_row(row) for row in rows]

    def counts(self, tenant: str | None) -> dict[str, int]:
        where, params = _where(tenant, None, None, None)
        rows = self._run(f"SELECT status, COUNT(*) FROM remem_jobs{where} GROUP BY status",
                         params).fetchall()
        return {status: int(count) for status, count in rows}

    def oldest_due(self, tenant: str | None, now: float) -> float | None:
        where, params = _where(tenant, "queued", None, None)
        row = self._run(f"SELECT MIN(run_after) FROM remem_jobs{where} AND run_after <= ?",
                        (*params, now)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def insert(self, job: Job) -> None:
        self._run(sql.INSERT, sql.row_of_job(job))

    def update(self, job: Job) -> None:
        row = sql.row_of_job(job)
        self._run(sql.UPDATE, (*row[1:], row[0]))

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        if not job_ids:
            return []
        marks = ", ".join("?" for _ in job_ids)
        rows = self._run(f"{sql.SELECT} WHERE id IN ({marks}) ORDER BY id{self.lock}",
                         list(job_ids)).fetchall()
        return [sql.job_of_row(row) for row in rows]

    def update_many(self, jobs: Sequence[Job]) -> None:
        if not jobs:
            return
        rows = [(*row[1:], row[0]) for row in map(sql.row_of_job, jobs)]
        query = sql.UPDATE if self.placeholder == "?" else sql.UPDATE.replace("?", "%s")
        self._many(query, rows)

    def _many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        # psycopg sends the rows in one pipeline; sqlite3 runs them without Python between
        if hasattr(self.conn, "executemany"):
            self.conn.executemany(query, rows)
        else:
            with self.conn.cursor() as cursor:
                cursor.executemany(query, rows)

    def counts_by_kind(self, tenant: str | None) -> dict[tuple[str, str], int]:
        where, params = _where(tenant, None, None, None)
        rows = self._run(f"SELECT kind, status, COUNT(*) FROM remem_jobs{where} "
                         "GROUP BY kind, status", params).fetchall()
        return {(kind, status): int(count) for kind, status, count in rows}

    @property
    def _postgres(self) -> bool:
        return self.placeholder != "?"

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        if not reads:
            return
        query = sql.TOUCH.format(greatest="GREATEST" if self._postgres else "MAX")
        # sorted ids: concurrent upserts on PostgreSQL lock rows in one order (no deadlock)
        self._many(query.replace("?", self.placeholder), sorted(reads))

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        found: dict[str, tuple[int, float]] = {}
        ids = sorted(set(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self._run("SELECT memory_id, uses, last_accessed FROM remem_access "
                             f"WHERE memory_id IN ({marks})", chunk).fetchall()
            found.update({key: (int(uses), float(at)) for key, uses, at in rows})
        return found

    def put_budget(self, tenant: str, namespace: str, budget: str, now: float) -> None:
        self._run(sql.PUT_BUDGET, (tenant, namespace, budget, now))

    def budgets(self, tenant: str | None,
                namespaces: Sequence[str] | None) -> list[tuple[str, str, str, float]]:
        clauses, params = [], []
        if tenant is not None:
            clauses.append("tenant = ?")
            params.append(tenant)
        if namespaces is not None:
            if not namespaces:
                return []
            clauses.append(f"namespace IN ({', '.join('?' for _ in namespaces)})")
            params += list(namespaces)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self._run("SELECT tenant, namespace, budget, updated_at FROM remem_budgets"
                         f"{where} ORDER BY tenant, namespace", params).fetchall()
        return [(t, n, b, float(u)) for t, n, b, u in rows]

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        cursor = self._run("DELETE FROM remem_budgets WHERE tenant = ? AND namespace = ?",
                           (tenant, namespace))
        return bool(cursor.rowcount)

    def add_usage(self, rows: Sequence[tuple[str, str, str, str, int, int, int]]) -> None:
        if rows:
            # sorted keys: concurrent upserts on PostgreSQL lock rows in one order
            self._many(sql.ADD_USAGE.replace("?", self.placeholder), sorted(rows))

    def usage(self, tenant: str | None, since: str,
              until: str) -> list[tuple[str, str, str, str, int, int, int]]:
        only, params = ("", [since, until]) if tenant is None else (
            " AND tenant = ?", [since, until, tenant])
        rows = self._run("SELECT tenant, day, operation, model, calls, input_tokens, "
                         f"output_tokens FROM remem_usage WHERE day >= ? AND day <= ?{only} "
                         "ORDER BY day, tenant, operation, model", params).fetchall()
        return [(t, d, o, m, int(c), int(i), int(x)) for t, d, o, m, c, i, x in rows]

    def add_activity(self, rows: Sequence[tuple[str, str, str, int]]) -> None:
        if rows:
            self._many(sql.ADD_ACTIVITY.replace("?", self.placeholder), sorted(rows))

    def activity(self, tenant: str | None, since: str,
                 until: str) -> list[tuple[str, str, str, int]]:
        only, params = ("", [since, until]) if tenant is None else (
            " AND tenant = ?", [since, until, tenant])
        rows = self._run("SELECT tenant, day, op, changes FROM remem_activity WHERE day >= ? "
                         f"AND day <= ?{only} ORDER BY day, tenant, op", params).fetchall()
        return [(t, d, o, int(n)) for t, d, o, n in rows]


class SQLiteJobStorage:
    """Jobs in a SQLite file (the store's), beside its tables."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        if self.path == ":memory:":
            raise ConfigError("a job queue in SQLite needs a file that every worker can open; "
                              "for one process use JobQueue.in_memory() (':memory:')")
        self._conns = SQLiteConnections(self.path, owner="JobQueue", busy_timeout=busy_timeout)
        self._setup_lock = threading.Lock()
        self._ready = False

    def setup(self) -> None:
        if self._ready:
            return
        with self._setup_lock:
            if not self._ready:
                with self._conns.connection() as conn:
                    apply_sqlite(conn, sql.JOB_MIGRATIONS)
                self._ready = True

    @contextmanager
    def transaction(self, write: bool) -> Iterator[JobTx]:
        self.setup()
        with self._conns.writing() if write else nullcontext(), \
                self._conns.connection() as conn:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SQLTx(conn, placeholder="?", lock="", skip_locked="")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        self._conns.close()


class PostgresJobStorage:
    """Jobs in a PostgreSQL schema (the ``postgres`` extra), by default the store's."""

    def __init__(self, dsn: str, *, schema: str = "remem", pool_max_size: int = 4,
                 connect_timeout: float = 10.0) -> None:
        from remem.store.postgres.sql import quote_ident

        self.dsn = dsn
        self.schema = schema
        self._q = quote_ident(schema)
        self.pool_max_size = pool_max_size
        self.connect_timeout = connect_timeout
        self._pool: ConnectionPool[Any] | None = None
        self._setup_lock = threading.Lock()
        self._closed = False

    def _kwargs(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": max(1, int(self.connect_timeout)),
                "keepalives": 1, "keepalives_idle": 30, "application_name": "remem-jobs"}

    def setup(self) -> None:
        if self._pool is not None:
            return
        with self._setup_lock:
            if self._pool is not None:
                return
            if self._closed:
                raise StoreError("this JobQueue is closed; open a new one")
            from remem.store.migrations.postgres import open_migrated_pool

            self._pool = open_migrated_pool(
                self.dsn, self.schema, self._q, sql.JOB_MIGRATIONS_POSTGRES,
                kwargs=self._kwargs(), name=f"remem-jobs:{self.schema}",
                max_size=self.pool_max_size, timeout=self.connect_timeout)

    @contextmanager
    def transaction(self, write: bool) -> Iterator[JobTx]:
        import psycopg

        self.setup()
        assert self._pool is not None
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield _SQLTx(conn, placeholder="%s", lock=" FOR UPDATE" if write else "",
                             skip_locked=" FOR UPDATE SKIP LOCKED" if write else "")
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(f"a concurrent write created the same job first: "
                                f"{exc.diag.message_detail or exc}; retry") from exc
        except psycopg.Error as exc:  # refused data is the caller's (422), else a 503
            from remem._postgres import database_error

            raise database_error(exc, f"schema {self.schema}") from exc

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.close()
            self._pool = None


_UsageKey = tuple[str, str, str, str]


class _MemoryTx:
    def __init__(self, jobs: dict[str, Job], reads: dict[str, tuple[int, float]],
                 budget_rows: dict[tuple[str, str], tuple[str, float]],
                 usage_rows: dict[_UsageKey, tuple[int, int, int]] | None = None,
                 activity_rows: dict[tuple[str, str, str], int] | None = None) -> None:
        self.jobs = jobs
        self.reads = reads
        self.budget_rows = budget_rows
        self.usage_rows: dict[_UsageKey, tuple[int, int, int]] = (
            {} if usage_rows is None else usage_rows)
        self.activity_rows: dict[tuple[str, str, str], int] = (
            {} if activity_rows is None else activity_rows)

    def add_activity(self, rows: Sequence[tuple[str, str, str, int]]) -> None:
        for tenant, day, op, changes in rows:
            key = (tenant, day, op)
            self.activity_rows[key] = self.activity_rows.get(key, 0) + changes

    def activity(self, tenant: str | None, since: str,
                 until: str) -> list[tuple[str, str, str, int]]:
        found = [(t, d, o, n) for (t, d, o), n in self.activity_rows.items()
                 if since <= d <= until and (tenant is None or t == tenant)]
        return sorted(found, key=lambda row: (row[1], row[0], row[2]))

    def add_usage(self, rows: Sequence[tuple[str, str, str, str, int, int, int]]) -> None:
        for tenant, day, operation, model, calls, inputs, outputs in rows:
            key = (tenant, day, operation, model)
            c, i, o = self.usage_rows.get(key, (0, 0, 0))
            self.usage_rows[key] = (c + calls, i + inputs, o + outputs)

    def usage(self, tenant: str | None, since: str,
              until: str) -> list[tuple[str, str, str, str, int, int, int]]:
        found = [(t, d, o, m, *counts) for (t, d, o, m), counts in self.usage_rows.items()
                 if since <= d <= until and (tenant is None or t == tenant)]
        return sorted(found, key=lambda row: (row[1], row[0], row[2], row[3]))

    def counts_by_kind(self, tenant: str | None) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for job in self.jobs.values():
            if tenant is None or job.tenant == tenant:
                counts[(job.kind, job.status)] = counts.get((job.kind, job.status), 0) + 1
        return counts

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        for memory_id, uses, at in reads:
            before_uses, before_at = self.reads.get(memory_id, (0, at))
            self.reads[memory_id] = (before_uses + uses, max(before_at, at))

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        return {i: self.reads[i] for i in set(memory_ids) if i in self.reads}

    def put_budget(self, tenant: str, namespace: str, budget: str, now: float) -> None:
        self.budget_rows[(tenant, namespace)] = (budget, now)

    def budgets(self, tenant: str | None,
                namespaces: Sequence[str] | None) -> list[tuple[str, str, str, float]]:
        return [(t, n, b, at) for (t, n), (b, at) in sorted(self.budget_rows.items())
                if (tenant is None or t == tenant) and (namespaces is None or n in namespaces)]

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        return self.budget_rows.pop((tenant, namespace), None) is not None

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
        self._reads: dict[str, tuple[int, float]] = {}
        self._budgets: dict[tuple[str, str], tuple[str, float]] = {}
        self._usage: dict[_UsageKey, tuple[int, int, int]] = {}
        self._activity: dict[tuple[str, str, str], int] = {}
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
            budgets = dict(self._budgets)
            # read counts are added in place: a touch cannot fail part-way, and copying one
            # entry per memory on every transaction would cost more than the jobs do
            # usage is added in place too: an upsert of whole rows cannot fail part-way
            yield _MemoryTx(working, self._reads, budgets, self._usage, self._activity)
            if write:
                self._jobs = working
                self._budgets = budgets
