"""The jobs table of each dialect and the statements over it (no I/O).

The queue keeps its table beside the store's, in the same SQLite file or PostgreSQL schema,
with its own named migrations (family ``j``, recorded in ``remem_migrations`` like the
store's ``m...`` and the threads' ``t...``). Statements use ``?`` placeholders; the
PostgreSQL backend turns them into ``%s``. The two dialects differ only in column types and
in how a claim locks the rows it takes (:func:`due_sql`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from remem.background.jobs import Job
from remem.store.migrations import Migration

__all__ = ["ADD_ACTIVITY", "ADD_USAGE", "COLUMNS", "JOB_MIGRATIONS", "JOB_MIGRATIONS_POSTGRES",
           "due_sql", "job_of_row", "row_of_job"]

COLUMNS = ("id", "kind", "payload", "status", "run_after", "created_at", "updated_at",
           "attempts", "max_attempts", "idempotency_key", "debounce_key", "thread_id",
           "tenant", "claimed_by", "lease_until", "heartbeat_at", "result", "error",
           "finished_at")
SELECT = f"SELECT {', '.join(COLUMNS)} FROM remem_jobs"
INSERT = (f"INSERT INTO remem_jobs ({', '.join(COLUMNS)}) "
          f"VALUES ({', '.join('?' for _ in COLUMNS)})")
UPDATE = ("UPDATE remem_jobs SET " + ", ".join(f"{c} = ?" for c in COLUMNS[1:])
          + " WHERE id = ?")


def _table(text: str, real: str, integer: str, prefix: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE {prefix}remem_jobs (
            id {text} PRIMARY KEY,
            kind {text} NOT NULL,
            payload {text} NOT NULL,
            status {text} NOT NULL,
            run_after {real} NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            attempts {integer} NOT NULL,
            max_attempts {integer} NOT NULL,
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
        f"CREATE INDEX remem_jobs_due ON {prefix}remem_jobs (status, run_after)",
        f"CREATE INDEX remem_jobs_lease ON {prefix}remem_jobs (status, lease_until)",
        # an enqueue with a key already used returns that job (one job per key and tenant)
        f"CREATE UNIQUE INDEX remem_jobs_key ON {prefix}remem_jobs (tenant, idempotency_key) "
        "WHERE idempotency_key IS NOT NULL",
        # at most one pending (queued) job per debounce key: a submission replaces it
        f"CREATE UNIQUE INDEX remem_jobs_pending ON {prefix}remem_jobs (tenant, debounce_key) "
        "WHERE debounce_key IS NOT NULL AND status = 'queued'",
        f"CREATE INDEX remem_jobs_thread ON {prefix}remem_jobs (tenant, thread_id, status)",
    )


def _access_and_budgets(text: str, real: str, integer: str, prefix: str) -> tuple[str, ...]:
    return (
        # reads of each memory (search hits, gets): the "use" of its retention score; keyed
        # by the memory id alone (ids are unique across namespaces and tenants)
        f"""CREATE TABLE {prefix}remem_access (
            memory_id {text} PRIMARY KEY,
            uses {integer} NOT NULL,
            last_accessed {real} NOT NULL
        )""",
        # a stored budget per namespace (JSON of remem.background.forgetting.Budget), which
        # every write to the namespace checks
        f"""CREATE TABLE {prefix}remem_budgets (
            tenant {text} NOT NULL,
            namespace {text} NOT NULL,
            budget {text} NOT NULL,
            updated_at {real} NOT NULL,
            PRIMARY KEY (tenant, namespace)
        )""",
    )


def _usage(text: str, integer: str, prefix: str) -> tuple[str, ...]:
    return (
        # chat model calls and tokens per UTC day (ISO date text, so it sorts), tenant,
        # operation label and model (remem.usage); rows only grow, by upserts that add
        f"""CREATE TABLE {prefix}remem_usage (
            tenant {text} NOT NULL,
            day {text} NOT NULL,
            operation {text} NOT NULL,
            model {text} NOT NULL,
            calls {integer} NOT NULL,
            input_tokens {integer} NOT NULL,
            output_tokens {integer} NOT NULL,
            PRIMARY KEY (tenant, day, operation, model)
        )""",
    )


def _activity(text: str, integer: str, prefix: str) -> tuple[str, ...]:
    return (
        # memory changes per UTC day, tenant and history op (add, update, invalidate,
        # delete, restore), added as writes happen (remem.background.access)
        f"""CREATE TABLE {prefix}remem_activity (
            tenant {text} NOT NULL,
            day {text} NOT NULL,
            op {text} NOT NULL,
            changes {integer} NOT NULL,
            PRIMARY KEY (tenant, day, op)
        )""",
    )


JOB_MIGRATIONS: tuple[Migration, ...] = (
    Migration("j001_jobs", _table("TEXT", "REAL", "INTEGER", "")),
    Migration("j002_access_budgets", _access_and_budgets("TEXT", "REAL", "INTEGER", "")),
    Migration("j003_usage", _usage("TEXT", "INTEGER", "")),
    Migration("j004_activity", _activity("TEXT", "INTEGER", "")),
)
#: ``{s}``: the quoted schema (the store's)
JOB_MIGRATIONS_POSTGRES: tuple[Migration, ...] = (
    Migration("j001_jobs", _table("text", "double precision", "integer", "{s}.")),
    Migration("j002_access_budgets",
              _access_and_budgets("text", "double precision", "bigint", "{s}.")),
    Migration("j003_usage", _usage("text", "bigint", "{s}.")),
    Migration("j004_activity", _activity("text", "bigint", "{s}.")),
)

#: add reads to a memory's count; the latest read wins. ``{greatest}``: MAX on SQLite,
#: GREATEST on PostgreSQL (the two-argument form)
TOUCH = ("INSERT INTO remem_access (memory_id, uses, last_accessed) VALUES (?, ?, ?) "
         "ON CONFLICT (memory_id) DO UPDATE SET uses = remem_access.uses + excluded.uses, "
         "last_accessed = {greatest}(remem_access.last_accessed, excluded.last_accessed)")
#: add calls and tokens to a (tenant, day, operation, model) row: concurrent writers (threads,
#: processes) each add their own, none overwrites another's
ADD_USAGE = ("INSERT INTO remem_usage (tenant, day, operation, model, calls, input_tokens, "
             "output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, day, operation, "
             "model) DO UPDATE SET calls = remem_usage.calls + excluded.calls, "
             "input_tokens = remem_usage.input_tokens + excluded.input_tokens, "
             "output_tokens = remem_usage.output_tokens + excluded.output_tokens")
#: add memory changes to a (tenant, day, op) row
ADD_ACTIVITY = ("INSERT INTO remem_activity (tenant, day, op, changes) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, day, op) DO UPDATE SET "
                "changes = remem_activity.changes + excluded.changes")
PUT_BUDGET = ("INSERT INTO remem_budgets (tenant, namespace, budget, updated_at) "
              "VALUES (?, ?, ?, ?) ON CONFLICT (tenant, namespace) DO UPDATE SET "
              "budget = excluded.budget, updated_at = excluded.updated_at")

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
