"""The jobs table of each dialect and the statements over it (no I/O).

The queue keeps its table beside the store's, in the same SQLite file or PostgreSQL schema,
with its own named migrations (family ``j``, recorded in ``remem_migrations`` like the
store's ``m...`` and the threads' ``t...``). Statements use ``?`` placeholders, which
:class:`remem.db.Tx` translates. The two dialects differ only in column types and in how a
claim locks the rows it takes (:func:`due_sql`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from remem.background.jobs import Job
from remem.db import Schema

__all__ = ["COLUMNS", "JOB_SCHEMA", "due_sql", "job_of_row", "row_of_job"]

COLUMNS = ("id", "kind", "payload", "status", "run_after", "created_at", "updated_at",
           "attempts", "max_attempts", "idempotency_key", "debounce_key", "thread_id",
           "tenant", "claimed_by", "lease_until", "heartbeat_at", "result", "error",
           "finished_at")
SELECT = f"SELECT {', '.join(COLUMNS)} FROM remem_jobs"
INSERT = (f"INSERT INTO remem_jobs ({', '.join(COLUMNS)}) "
          f"VALUES ({', '.join('?' for _ in COLUMNS)})")
UPDATE = ("UPDATE remem_jobs SET " + ", ".join(f"{c} = ?" for c in COLUMNS[1:])
          + " WHERE id = ?")


#: the jobs table; ``j002``-``j004`` created the counters' tables before they had a storage
#: of their own (:mod:`remem.usage.storage`, whose ``u001`` creates them where missing): the
#: names stay, so a database migrated by an older remem is known, and do nothing now
JOB_SCHEMA = Schema.typed("jobs", [
    ("j001_jobs", (
        """CREATE TABLE {t}remem_jobs (
            id {text} PRIMARY KEY,
            kind {text} NOT NULL,
            payload {text} NOT NULL,
            status {text} NOT NULL,
            run_after {real} NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            attempts {int} NOT NULL,
            max_attempts {int} NOT NULL,
            idempotency_key {text},
            debounce_key {text},
            thread_id {text},
            tenant {text} NOT NULL,
            claimed_by {text},
            lease_until {real},
            heartbeat_at {real},
            result {text},
            error {text},
            finished_at {real}
        )""",
        # what a claim scans: queued jobs by due time, running ones by lease end
        "CREATE INDEX remem_jobs_due ON {t}remem_jobs (status, run_after)",
        "CREATE INDEX remem_jobs_lease ON {t}remem_jobs (status, lease_until)",
        # an enqueue with a key already used returns that job (one job per key and tenant)
        "CREATE UNIQUE INDEX remem_jobs_key ON {t}remem_jobs (tenant, idempotency_key) "
        "WHERE idempotency_key IS NOT NULL",
        # at most one pending (queued) job per debounce key: a submission replaces it
        "CREATE UNIQUE INDEX remem_jobs_pending ON {t}remem_jobs (tenant, debounce_key) "
        "WHERE debounce_key IS NOT NULL AND status = 'queued'",
        "CREATE INDEX remem_jobs_thread ON {t}remem_jobs (tenant, thread_id, status)",
    )),
    ("j002_access_budgets", ()),
    ("j003_usage", ()),
    ("j004_activity", ()),
])

#: jobs of the same debounce key run one at a time, in order: a queued one waits while
#: another of its key is running with a live lease
_NOT_BEHIND_RUNNING = (
    "(j.debounce_key IS NULL OR NOT EXISTS (SELECT 1 FROM remem_jobs r WHERE "
    "r.tenant = j.tenant AND r.debounce_key = j.debounce_key AND r.status = 'running' "
    "AND r.lease_until >= ? AND r.id <> j.id))"
)


def due_sql(kinds: Sequence[str] | None, lock: str, *, tenant: bool = False) -> str:
    """Jobs a worker may claim now, oldest due first: queued and due, or running with an
    expired lease. ``lock``: ``" FOR UPDATE SKIP LOCKED"`` on PostgreSQL (workers skip each
    other's rows instead of queueing on them); ``""`` on SQLite, whose ``BEGIN IMMEDIATE``
    already makes the claim exclusive. ``tenant``: only one tenant's jobs. Parameters: now,
    now, now, [kinds...], [tenant], limit."""
    kind = f" AND j.kind IN ({', '.join('?' for _ in kinds)})" if kinds else ""
    kind += " AND j.tenant = ?" if tenant else ""
    columns = ", ".join(f"j.{c}" for c in COLUMNS)
    return (f"SELECT {columns} FROM remem_jobs j WHERE "
            "((j.status = 'queued' AND j.run_after <= ?) OR "
            "(j.status = 'running' AND j.lease_until < ?)) "
            f"AND {_NOT_BEHIND_RUNNING}{kind} ORDER BY j.run_after, j.id LIMIT ?{lock}")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False,
                                                 separators=(",", ":"))


def row_of_job(job: Job) -> tuple[Any, ...]:
    """The column values of ``job``, in :data:`COLUMNS` order."""
    return (job.id, job.kind, _json(job.payload), job.status, job.run_after, job.created_at,
            job.updated_at, job.attempts, job.max_attempts, job.idempotency_key,
            job.debounce_key, job.thread_id, job.tenant, job.claimed_by, job.lease_until,
            job.heartbeat_at, _json(job.result), job.error, job.finished_at)


def job_of_row(row: Sequence[Any]) -> Job:
    """The job a row read with :data:`COLUMNS` holds."""
    (id_, kind, payload, status, run_after, created_at, updated_at, attempts, max_attempts,
     idempotency_key, debounce_key, thread_id, tenant, claimed_by, lease_until, heartbeat_at,
     result, error, finished_at) = row
    return Job(id=id_, kind=kind, payload=json.loads(payload), status=status,
               run_after=run_after, created_at=created_at, updated_at=updated_at,
               attempts=attempts, max_attempts=max_attempts, idempotency_key=idempotency_key,
               debounce_key=debounce_key, thread_id=thread_id, tenant=tenant,
               claimed_by=claimed_by, lease_until=lease_until, heartbeat_at=heartbeat_at,
               result=json.loads(result) if result is not None else None, error=error,
               finished_at=finished_at)
