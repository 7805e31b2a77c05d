"""The database handle every family opens its tables on: one seam, the same answers on
SQLite (``:memory:`` and a file) and PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.db import POSTGRES, SQLITE, Database, Schema, database_of
from remem.errors import MigrationError
from remem.store import open_store
from remem.store.migrations import Migration

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


def test_database_of_a_store_names_its_database(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = open_store(str(path))
    found = database_of(store)
    assert found is not None and found.target == str(path.resolve())
    assert found.dialect is SQLITE
    store.close()
    assert database_of(open_store(":memory:")) is None
