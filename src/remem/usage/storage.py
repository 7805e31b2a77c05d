"""Where the counters live: chat model usage, memory activity, memory reads and namespace
budgets, in the store's database (:class:`SQLUsageStorage`, on a
:class:`~remem.db.Database`) or in this process's memory (:class:`MemoryUsageStorage`).
Both implement :class:`UsageStorage`; every method is its own short transaction.

Rows only grow by upserts that add (``calls = calls + excluded.calls``...): concurrent
writers (threads, server and worker processes) each add their own, none overwrites
another's; a batch is written in sorted key order, so concurrent upserts on PostgreSQL lock
rows in one order (no deadlock).

The tables (``remem_usage``, ``remem_activity``, ``remem_access``, ``remem_budgets``) were
created by the job queue's migrations ``j002``-``j004`` before they had a storage of their
own; migration ``u001_counters`` creates them only where they are missing, so a database
written by an older remem opens and reads the same, with nothing moved.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

from remem.db import Database, Schema, database_of

__all__ = ["USAGE_SCHEMA", "MemoryUsageStorage", "SQLUsageStorage", "UsageStorage",
           "usage_storage_of"]

#: ``(tenant, day, operation, model, calls, input_tokens, output_tokens)``
UsageRecord = tuple[str, str, str, str, int, int, int]
#: ``(tenant, day, op, changes)``
ActivityRecord = tuple[str, str, str, int]
#: ``(tenant, namespace, budget, updated_at)``
BudgetRecord = tuple[str, str, str, float]

USAGE_SCHEMA = Schema.typed("usage", [("u001_counters", (
    # reads of each memory (search hits, gets): the "use" of its retention score; keyed by
    # the memory id alone (ids are unique across namespaces and tenants)
    """CREATE TABLE IF NOT EXISTS {t}remem_access (
        memory_id {text} PRIMARY KEY,
        uses {bigint} NOT NULL,
        last_accessed {real} NOT NULL
    )""",
    # a stored budget per namespace (JSON of remem.background.forgetting.Budget), which
    # every write to the namespace checks
    """CREATE TABLE IF NOT EXISTS {t}remem_budgets (
        tenant {text} NOT NULL,
        namespace {text} NOT NULL,
        budget {text} NOT NULL,
        updated_at {real} NOT NULL,
        PRIMARY KEY (tenant, namespace)
    )""",
    # chat model calls and tokens per UTC day (ISO date text, so it sorts), tenant,
    # operation label and model
    """CREATE TABLE IF NOT EXISTS {t}remem_usage (
        tenant {text} NOT NULL,
        day {text} NOT NULL,
        operation {text} NOT NULL,
        model {text} NOT NULL,
        calls {bigint} NOT NULL,
        input_tokens {bigint} NOT NULL,
        output_tokens {bigint} NOT NULL,
        PRIMARY KEY (tenant, day, operation, model)
    )""",
    # memory changes per UTC day, tenant and history op (add, update, invalidate, delete,
    # restore), added as writes happen (remem.background.access)
    """CREATE TABLE IF NOT EXISTS {t}remem_activity (
        tenant {text} NOT NULL,
        day {text} NOT NULL,
        op {text} NOT NULL,
        changes {bigint} NOT NULL,
        PRIMARY KEY (tenant, day, op)
    )""",
))])

#: add reads to a memory's count; the latest read wins
_TOUCH = ("INSERT INTO remem_access (memory_id, uses, last_accessed) VALUES (?, ?, ?) "
          "ON CONFLICT (memory_id) DO UPDATE SET uses = remem_access.uses + excluded.uses, "
          "last_accessed = {greatest}(remem_access.last_accessed, excluded.last_accessed)")
_ADD_USAGE = ("INSERT INTO remem_usage (tenant, day, operation, model, calls, input_tokens, "
              "output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, day, "
              "operation, model) DO UPDATE SET calls = remem_usage.calls + excluded.calls, "
              "input_tokens = remem_usage.input_tokens + excluded.input_tokens, "
              "output_tokens = remem_usage.output_tokens + excluded.output_tokens")
_ADD_ACTIVITY = ("INSERT INTO remem_activity (tenant, day, op, changes) VALUES (?, ?, ?, ?) "
                 "ON CONFLICT (tenant, day, op) DO UPDATE SET "
                 "changes = remem_activity.changes + excluded.changes")
_PUT_BUDGET = ("INSERT INTO remem_budgets (tenant, namespace, budget, updated_at) "
               "VALUES (?, ?, ?, ?) ON CONFLICT (tenant, namespace) DO UPDATE SET "
               "budget = excluded.budget, updated_at = excluded.updated_at")


class UsageStorage(Protocol):
    """The counters of one database (see the module docstring)."""

    def setup(self) -> None:
        """Create or migrate the tables (idempotent)."""
        ...

    def close(self) -> None:
        """Release what the storage opened."""
        ...

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
                namespaces: Sequence[str] | None) -> list[BudgetRecord]:
        """Stored budgets, of these namespaces only when given, ordered by tenant and
        namespace."""
        ...

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        """Drop a namespace's budget; whether there was one."""
        ...

    def add_usage(self, rows: Sequence[UsageRecord]) -> None:
        """Add calls and tokens to the chat model usage rows."""
        ...

    def usage(self, tenant: str | None, since: str, until: str) -> list[UsageRecord]:
        """Usage rows of days ``since``..``until`` (ISO dates, both included), of one tenant
        or (``None``) every tenant's, ordered by day, tenant, operation and model."""
        ...

    def add_activity(self, rows: Sequence[ActivityRecord]) -> None:
        """Add memory changes per day."""
        ...

    def activity(self, tenant: str | None, since: str, until: str) -> list[ActivityRecord]:
        """Memory changes of days ``since``..``until``, of one tenant or every tenant's,
        ordered by day, tenant and op."""
        ...


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' for _ in values)})"


class SQLUsageStorage:
    """The counters in a SQLite file or PostgreSQL schema. ``owns``: :meth:`close` closes
    ``db`` (else its opener does)."""

    def __init__(self, db: Database, *, owns: bool = True) -> None:
        self.db = db
        self.owns = owns

    def setup(self) -> None:
        """Create the tables where they are missing (idempotent)."""
        self.db.migrate(USAGE_SCHEMA)

    def close(self) -> None:
        """Release the connections if this storage opened them."""
        if self.owns:
            self.db.close()

    def _write(self, query: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            self.setup()
            with self.db.transaction(True) as tx:
                tx.executemany(query, sorted(rows))

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        self._write(_TOUCH.format(greatest=self.db.dialect.greatest), reads)

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        self.setup()
        found: dict[str, tuple[int, float]] = {}
        ids = sorted(set(memory_ids))
        with self.db.transaction(False) as tx:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = tx.execute("SELECT memory_id, uses, last_accessed FROM remem_access "
                                  f"WHERE {_in('memory_id', chunk)}", chunk).fetchall()
                found.update({key: (int(uses), float(at)) for key, uses, at in rows})
        return found

    def put_budget(self, tenant: str, namespace: str, budget: str, now: float) -> None:
        self._write(_PUT_BUDGET, [(tenant, namespace, budget, now)])

    def budgets(self, tenant: str | None,
                namespaces: Sequence[str] | None) -> list[BudgetRecord]:
        clauses, params = [], []
        if tenant is not None:
            clauses.append("tenant = ?")
            params.append(tenant)
        if namespaces is not None:
            if not namespaces:
                return []
            clauses.append(_in("namespace", namespaces))
            params += list(namespaces)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self._read("SELECT tenant, namespace, budget, updated_at FROM remem_budgets"
                          f"{where} ORDER BY tenant, namespace", params)
        return [(t, n, b, float(u)) for t, n, b, u in rows]

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        self.setup()
        with self.db.transaction(True) as tx:
            return bool(tx.execute("DELETE FROM remem_budgets WHERE tenant = ? AND "
                                   "namespace = ?", (tenant, namespace)).rowcount)

    def add_usage(self, rows: Sequence[UsageRecord]) -> None:
        self._write(_ADD_USAGE, rows)

    def usage(self, tenant: str | None, since: str, until: str) -> list[UsageRecord]:
        rows = self._days("SELECT tenant, day, operation, model, calls, input_tokens, "
                          "output_tokens FROM remem_usage", "operation, model", tenant,
                          since, until)
        return [(t, d, o, m, int(c), int(i), int(x)) for t, d, o, m, c, i, x in rows]

    def add_activity(self, rows: Sequence[ActivityRecord]) -> None:
        self._write(_ADD_ACTIVITY, rows)

    def activity(self, tenant: str | None, since: str, until: str) -> list[ActivityRecord]:
        rows = self._days("SELECT tenant, day, op, changes FROM remem_activity", "op",
                          tenant, since, until)
        return [(t, d, o, int(n)) for t, d, o, n in rows]

    def _days(self, select: str, order: str, tenant: str | None, since: str,
              until: str) -> list[Any]:
        only, params = ("", [since, until]) if tenant is None else (
            " AND tenant = ?", [since, until, tenant])
        return self._read(f"{select} WHERE day >= ? AND day <= ?{only} "
                          f"ORDER BY day, tenant, {order}", params)

    def _read(self, query: str, params: Sequence[object]) -> list[Any]:
        self.setup()
        with self.db.transaction(False) as tx:
            return list(tx.execute(query, params).fetchall())


class MemoryUsageStorage:
    """The counters in this process's memory (gone when it exits): tests and the stores
    that keep no database."""

    def __init__(self) -> None:
        self._reads: dict[str, tuple[int, float]] = {}
        self._budgets: dict[tuple[str, str], tuple[str, float]] = {}
        self._usage: dict[tuple[str, str, str, str], tuple[int, int, int]] = {}
        self._activity: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def setup(self) -> None:
        """Nothing to create."""

    def close(self) -> None:
        """Nothing to release."""

    def touch(self, reads: Sequence[tuple[str, int, float]]) -> None:
        with self._lock:
            for memory_id, uses, at in reads:
                before_uses, before_at = self._reads.get(memory_id, (0, at))
                self._reads[memory_id] = (before_uses + uses, max(before_at, at))

    def access(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        with self._lock:
            return {i: self._reads[i] for i in set(memory_ids) if i in self._reads}

    def put_budget(self, tenant: str, namespace: str, budget: str, now: float) -> None:
        with self._lock:
            self._budgets[(tenant, namespace)] = (budget, now)

    def budgets(self, tenant: str | None,
                namespaces: Sequence[str] | None) -> list[BudgetRecord]:
        with self._lock:
            return [(t, n, b, at) for (t, n), (b, at) in sorted(self._budgets.items())
                    if (tenant is None or t == tenant)
                    and (namespaces is None or n in namespaces)]

    def delete_budget(self, tenant: str, namespace: str) -> bool:
        with self._lock:
            return self._budgets.pop((tenant, namespace), None) is not None

    def add_usage(self, rows: Sequence[UsageRecord]) -> None:
        with self._lock:
            for tenant, day, operation, model, calls, inputs, outputs in rows:
                key = (tenant, day, operation, model)
                c, i, o = self._usage.get(key, (0, 0, 0))
                self._usage[key] = (c + calls, i + inputs, o + outputs)

    def usage(self, tenant: str | None, since: str, until: str) -> list[UsageRecord]:
        with self._lock:
            found = [(t, d, o, m, *counts) for (t, d, o, m), counts in self._usage.items()
                     if since <= d <= until and (tenant is None or t == tenant)]
        return sorted(found, key=lambda row: (row[1], row[0], row[2], row[3]))

    def add_activity(self, rows: Sequence[ActivityRecord]) -> None:
        with self._lock:
            for tenant, day, op, changes in rows:
                self._activity[(tenant, day, op)] = self._activity.get(
                    (tenant, day, op), 0) + changes

    def activity(self, tenant: str | None, since: str, until: str) -> list[ActivityRecord]:
        with self._lock:
            found = [(t, d, o, n) for (t, d, o), n in self._activity.items()
                     if since <= d <= until and (tenant is None or t == tenant)]
        return sorted(found, key=lambda row: (row[1], row[0], row[2]))


_OF_MEMORY: weakref.WeakKeyDictionary[Any, MemoryUsageStorage] = weakref.WeakKeyDictionary()
_OF_MEMORY_LOCK = threading.Lock()


def usage_storage_of(store: Any) -> SQLUsageStorage | MemoryUsageStorage:
    """The counters in ``store``'s database (:func:`remem.db.database_of`; closing the
    storage closes its connections), or, for a store that keeps none, the one in-memory
    storage every caller beside that store shares (as callers beside one file do)."""
    db = database_of(store, "UsageStorage")
    if db is not None:
        return SQLUsageStorage(db)
    with _OF_MEMORY_LOCK:
        found = _OF_MEMORY.get(store)
        if found is None:
            found = _OF_MEMORY[store] = MemoryUsageStorage()
    return found
