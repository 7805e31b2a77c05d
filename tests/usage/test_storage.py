"""The counters' storage (usage, activity, read counts, budgets): the same answers in memory,
in a SQLite file and in PostgreSQL, and a database written before the counters had a
storage of their own reads the same."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.background.queue import JobQueue
from remem.db import Database
from remem.usage import UsageRecorder, day_window
from remem.usage.storage import MemoryUsageStorage, SQLUsageStorage, UsageStorage

_SCHEMAS = itertools.count()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def counters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UsageStorage]:
    if request.param == "memory":
        storage: UsageStorage = MemoryUsageStorage()
    elif request.param == "sqlite":
        storage = SQLUsageStorage(Database(tmp_path / "c.db"))
    else:
        dsn = request.getfixturevalue("pg_database")
        storage = SQLUsageStorage(Database(dsn, schema=f"counters_{next(_SCHEMAS)}"))
    yield storage
    storage.close()


def test_usage_rows_add_up_and_read_by_day_and_tenant(counters: UsageStorage) -> None:
    counters.add_usage([("acme", "2026-01-02", "extract", "m", 1, 10, 2),
                        ("beta", "2026-01-01", "extract", "m", 1, 5, 1)])
    counters.add_usage([("acme", "2026-01-02", "extract", "m", 2, 20, 4),
                        ("acme", "2026-01-03", "summarize", "m", 1, 1, 1)])
    assert counters.usage(None, "2026-01-01", "2026-01-02") == [
        ("beta", "2026-01-01", "extract", "m", 1, 5, 1),
        ("acme", "2026-01-02", "extract", "m", 3, 30, 6)]
    assert counters.usage("acme", "2026-01-03", "2026-01-09") == [
        ("acme", "2026-01-03", "summarize", "m", 1, 1, 1)]


def test_activity_adds_up(counters: UsageStorage) -> None:
    counters.add_activity([("acme", "2026-01-02", "add", 2), ("acme", "2026-01-02", "add", 3)])
    counters.add_activity([("acme", "2026-01-01", "delete", 1)])
    assert counters.activity("acme", "2026-01-01", "2026-01-02") == [
        ("acme", "2026-01-01", "delete", 1), ("acme", "2026-01-02", "add", 5)]
    assert counters.activity("beta", "2026-01-01", "2026-01-02") == []


def test_reads_keep_the_latest_time(counters: UsageStorage) -> None:
    counters.touch([("m1", 2, 5.0), ("m2", 1, 1.0)])
    counters.touch([("m1", 1, 3.0)])
    assert counters.access(["m1", "m2", "m3"]) == {"m1": (3, 5.0), "m2": (1, 1.0)}
    assert counters.access([]) == {}


def test_budgets_replace_list_and_drop(counters: UsageStorage) -> None:
    counters.put_budget("acme", '["a"]', '{"max_items": 1}', 1.0)
    counters.put_budget("acme", '["a"]', '{"max_items": 2}', 2.0)
    counters.put_budget("acme", '["b"]', '{"max_items": 3}', 3.0)
    counters.put_budget("beta", '["a"]', '{"max_items": 4}', 4.0)
    assert counters.budgets("acme", ['["a"]']) == [("acme", '["a"]', '{"max_items": 2}', 2.0)]
    assert [row[:2] for row in counters.budgets(None, None)] == [
        ("acme", '["a"]'), ("acme", '["b"]'), ("beta", '["a"]')]
    assert counters.budgets("acme", []) == []
    assert counters.delete_budget("acme", '["a"]') is True
    assert counters.delete_budget("acme", '["a"]') is False
    assert [row[1] for row in counters.budgets("acme", None)] == ['["b"]']


#: the job queue's migrations j001-j004 as remem wrote them before the counters had their
#: own storage (their tables, columns and recorded names are what a user's file holds)
_OLD_SCHEMA = (
    "CREATE TABLE remem_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)",
    "CREATE TABLE remem_jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, payload TEXT NOT NULL, "
    "status TEXT NOT NULL, run_after REAL NOT NULL, created_at REAL NOT NULL, "
    "updated_at REAL NOT NULL, attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, "
    "idempotency_key TEXT, debounce_key TEXT, thread_id TEXT, tenant TEXT NOT NULL, "
    "claimed_by TEXT, lease_until REAL, heartbeat_at REAL, result TEXT, error TEXT, "
    "finished_at REAL)",
    "CREATE TABLE remem_access (memory_id TEXT PRIMARY KEY, uses INTEGER NOT NULL, "
    "last_accessed REAL NOT NULL)",
    "CREATE TABLE remem_budgets (tenant TEXT NOT NULL, namespace TEXT NOT NULL, "
    "budget TEXT NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (tenant, namespace))",
    "CREATE TABLE remem_usage (tenant TEXT NOT NULL, day TEXT NOT NULL, operation TEXT NOT "
    "NULL, model TEXT NOT NULL, calls INTEGER NOT NULL, input_tokens INTEGER NOT NULL, "
    "output_tokens INTEGER NOT NULL, PRIMARY KEY (tenant, day, operation, model))",
    "CREATE TABLE remem_activity (tenant TEXT NOT NULL, day TEXT NOT NULL, op TEXT NOT NULL, "
    "changes INTEGER NOT NULL, PRIMARY KEY (tenant, day, op))",
)


def test_a_database_written_before_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in _OLD_SCHEMA:
        conn.execute(statement)
    for name in ("j001_jobs", "j002_access_budgets", "j003_usage", "j004_activity"):
        conn.execute("INSERT INTO remem_migrations VALUES (?, ?)", (name, 0.0))
    today = day_window().until.isoformat()
    conn.execute("INSERT INTO remem_usage VALUES ('acme', ?, 'extract', 'm', 2, 30, 4)",
                 (today,))
    conn.execute("INSERT INTO remem_activity VALUES ('acme', ?, 'add', 3)", (today,))
    conn.execute("INSERT INTO remem_access VALUES ('mem_a', 4, 9.0)")
    conn.execute("INSERT INTO remem_budgets VALUES ('', '[\"a\"]', '{}', 1.0)")
    conn.close()
    with JobQueue.open(path) as queue:
        recorder = UsageRecorder(queue)
        assert recorder.report(day_window(), tenant="acme").total().input_tokens == 30
        assert recorder.activity(day_window(), tenant="acme").events == 3
        assert queue.access(["mem_a"]) == {"mem_a": (4, 9.0)}
        assert queue.budgets() == [("", '["a"]', "{}", 1.0)]
        queue.touch([("mem_a", 1, time.time())])
        assert queue.access(["mem_a"])["mem_a"][0] == 5
    conn = sqlite3.connect(path)
    names = [row[0] for row in conn.execute("SELECT name FROM remem_migrations ORDER BY name")]
    conn.close()
    assert names == ["j001_jobs", "j002_access_budgets", "j003_usage", "j004_activity",
                     "u001_counters"]
