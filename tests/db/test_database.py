"""The database handle every family opens its tables on: one seam, the same answers on
SQLite (``:memory:`` and a file) and PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.db import POSTGRES, SQLITE, Database, Schema, database_of
from remem.db.migrations import Migration
from remem.errors import MigrationError, StoreError
from remem.store import open_store

PROBE = Schema.typed("probe", [("x001_probe", (
    "CREATE TABLE {t}probe (id {int} PRIMARY KEY, name {text} NOT NULL, weight {real}, "
    "total {bigint} NOT NULL DEFAULT 0)",
))])


_SCHEMAS = itertools.count()


@pytest.fixture(params=["memory", "file", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "postgres":
        dsn = request.getfixturevalue("pg_database")
        handle = Database(dsn, schema=f"probe_{next(_SCHEMAS)}")
    else:
        handle = Database(":memory:" if request.param == "memory" else tmp_path / "p.db")
    yield handle
    handle.close()


def test_column_types_are_declared_once_per_dialect() -> None:
    [sqlite] = PROBE.sqlite[0].statements
    [postgres] = PROBE.postgres[0].statements
    assert sqlite == ("CREATE TABLE probe (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                      "weight REAL, total INTEGER NOT NULL DEFAULT 0)")
    assert postgres == ("CREATE TABLE {s}.probe (id integer PRIMARY KEY, name text NOT NULL, "
                        "weight double precision, total bigint NOT NULL DEFAULT 0)")
    assert SQLITE.sql("a = ? AND b = ?") == "a = ? AND b = ?"
    assert POSTGRES.sql("a = ? AND b = ?") == "a = %s AND b = %s"


def test_statements_with_question_marks_run_on_every_engine(db: Database) -> None:
    db.migrate(PROBE)
    db.migrate(PROBE)  # once per handle: the second call does nothing
    with db.transaction(True) as tx:
        tx.executemany("INSERT INTO probe (id, name, weight) VALUES (?, ?, ?)",
                       [(1, "a", 0.5), (2, "b", None)])
        tx.execute("UPDATE probe SET total = total + ? WHERE id = ?", (7, 2))
    with db.transaction(False) as tx:
        rows = tx.execute("SELECT id, name, weight, total FROM probe ORDER BY id").fetchall()
        one = tx.execute("SELECT name FROM probe WHERE id = ?", (2,)).fetchone()
    assert [tuple(row) for row in rows] == [(1, "a", 0.5, 0), (2, "b", None, 7)]
    assert tuple(one) == ("b",)


def test_a_failed_transaction_writes_nothing(db: Database) -> None:
    db.migrate(PROBE)
    with pytest.raises(RuntimeError), db.transaction(True) as tx:
        tx.execute("INSERT INTO probe (id, name) VALUES (?, ?)", (1, "gone"))
        raise RuntimeError("the caller's failure")
    with db.transaction(False, snapshot=False) as tx:
        assert tx.execute("SELECT COUNT(*) FROM probe").fetchone()[0] == 0


def test_insert_returns_the_new_id(db: Database) -> None:
    serial = Schema("serial", (Migration("y001", (
        "CREATE TABLE serial (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)",)),), (
        Migration("y001", ("CREATE TABLE {s}.serial (id bigint GENERATED ALWAYS AS IDENTITY "
                           "PRIMARY KEY, v text)",)),))
    db.migrate(serial)
    with db.transaction(True) as tx:
        first = tx.insert("INSERT INTO serial (v) VALUES (?)", ("a",))
        second = tx.insert("INSERT INTO serial (v) VALUES (?)", ("b",))
    assert second == first + 1


def test_a_database_migrated_by_a_newer_remem_is_refused(tmp_path: Path) -> None:
    newer = Schema.typed("probe", [("x001_probe", ()), ("x002_future", ())])
    path = tmp_path / "n.db"
    with_future = Database(path)
    with_future.migrate(newer)
    with_future.close()
    older = Database(path)
    with pytest.raises(MigrationError, match="x002_future"):
        older.migrate(Schema.typed("probe", [("x001_probe", ())]))
    older.close()


@pytest.mark.parametrize("location", ["file", ":memory:"])
def test_the_families_share_the_stores_connections(tmp_path: Path, location: str) -> None:
    """database_of hands a family the store's own handle: the same connection on this thread
    (a ``:memory:`` store's families see its database), left open when the family closes;
    a family that outlives its store goes on with connections of its own."""
    store = open_store(str(tmp_path / "m.db") if location == "file" else ":memory:")
    store.put(("a",), "k", {"n": 1})
    found = database_of(store, "JobQueue")
    assert found is not None and found.dialect is SQLITE
    assert found.handle_key == store.database.handle_key  # type: ignore[attr-defined]
    with found.transaction(False) as tx, store.database.connection() as conn:  # type: ignore[attr-defined]
        assert tx.conn is conn
        assert tx.execute("SELECT key FROM items").fetchall() == [("k",)]
    found.close()
    with pytest.raises(StoreError, match="this JobQueue is closed"):
        found.transaction(False)
    assert store.get(("a",), "k") is not None  # the store's connections stay open
    again = database_of(store)
    assert again is not None
    store.close()
    if location == "file":  # a family outliving its store opens connections of its own
        with again.transaction(False) as tx:
            assert tx.execute("SELECT key FROM items").fetchall() == [("k",)]
        assert again.handle_key != found.handle_key
        again.close()
    else:  # a closed :memory: database is gone
        with pytest.raises(StoreError, match="closed"), again.transaction(False) as tx:
            tx.execute("SELECT 1")
    assert database_of(open_store("memory://")) is None  # the in-memory store keeps none
