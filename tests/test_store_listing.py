"""Newest-first listings on SQLite: the store picks how to read (one namespace in index order,
a wide prefix by walking the updated_at index, a narrow one read whole and sorted), every way
gives the same pages, and an old file gets the index on upgrade."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from remem.store import PutOp, SearchOp, SQLiteStore
from remem.store.migrations import apply_sqlite
from remem.store.migrations.sqlite import SQLITE_MIGRATIONS
from remem.store.sql_dialect import ListingPath, wide_scope
from tests.conftest import FakeClock


def test_wide_scope_grows_with_the_table_and_the_page() -> None:
    assert wide_scope(0, 10) == wide_scope(1_000, 10) == 200  # small scopes are read whole
    assert wide_scope(400_000, 21) == 490
    assert wide_scope(10_000_000, 21) > wide_scope(400_000, 21)
    assert wide_scope(400_000, 2_021) > wide_scope(400_000, 21)  # deep pages walk further


@pytest.fixture
def store(clock: FakeClock) -> SQLiteStore:
    """600 items in 'wide' (30 namespaces, many sharing an updated_at), 40 in 'narrow', one
    leaf namespace 'leaf'; a fifth of them of kind "x"."""
    rng = random.Random(5)
    s = SQLiteStore(":memory:", keyword=False, clock=clock)
    ops = []
    for i in range(640):
        ns = ("wide", f"n{rng.randrange(30)}") if i < 600 else ("narrow", f"n{i % 4}")
        ops.append(PutOp(ns, f"k{rng.randrange(10_000):05d}", {"kind": "x" if i % 5 else "y"},
                         created_at=1_000.0, updated_at=1_000.0 + rng.randrange(50)))
    ops += [PutOp(("leaf",), f"k{i}", {"kind": "x"}, updated_at=2_000.0 + i) for i in range(5)]
    s.batch(ops)
    return s


def _path(store: SQLiteStore, op: SearchOp) -> ListingPath:
    return store._read(lambda tx: store._listing_path(tx, op))


def test_the_store_picks_the_reading_by_the_scope(store: SQLiteStore) -> None:
    assert _path(store, SearchOp(("wide",), limit=20)) == "newest"
    assert _path(store, SearchOp((), limit=20)) == "newest"
    assert _path(store, SearchOp(("narrow",), limit=20)) == "scope"
    assert _path(store, SearchOp(("leaf",), limit=20)) == "leaf"
    # the plans say so: the walk sorts only the page (the outer query), the scope its items
    op = SearchOp(("wide",), filter={"kind": "x"}, limit=20)
    plans = {path: _plan(store, op, path) for path in ("newest", "scope")}
    assert "SCAN i USING INDEX items_updated" in plans["newest"]
    assert plans["newest"].count("USE TEMP B-TREE FOR ORDER BY") == 1
    assert "SEARCH i USING INDEX items_ns_updated (ns>? AND ns<?)" in plans["scope"]
    assert plans["scope"].count("USE TEMP B-TREE FOR ORDER BY") == 2


def _plan(store: SQLiteStore, op: SearchOp, path: ListingPath) -> str:
    text, params = store.dialect.listing(op, 0.0, path=path)
    rows = store._read(lambda tx: tx.conn.execute("EXPLAIN QUERY PLAN " + text,
                                                  params).fetchall())
    return "\n".join(str(row[3]) for row in rows)


@pytest.mark.parametrize("prefix", [(), ("wide",), ("wide", "n3"), ("narrow",)])
def test_every_reading_gives_the_same_pages(store: SQLiteStore,
                                            prefix: tuple[str, ...]) -> None:
    items = list(store.iter_items(prefix))
    for flt in (None, {"kind": "y"}):
        wanted = sorted((i for i in items if flt is None or i.value["kind"] == "y"),
                        key=lambda i: (-i.updated_at.timestamp(), i.namespace, i.key))
        for offset, limit in ((0, 7), (5, 20), (len(wanted) - 3, 10)):
            op = SearchOp(prefix, filter=flt, limit=limit, offset=max(offset, 0))
            expected = [(i.namespace, i.key) for i in wanted[op.offset:op.offset + limit]]
            for path in ("newest", "scope"):
                rows = store._read(lambda tx, o=op, p=path: store._query(
                    tx, *store.dialect.listing(o, 0.0, path=p)))
                assert [(tuple(r[1].split("\x1f")[:-1]), r[2]) for r in rows] == expected
            assert [(i.namespace, i.key) for i in store.search(
                prefix, filter=flt, limit=limit, offset=op.offset)] == expected


def test_an_old_file_gets_the_index_on_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        apply_sqlite(conn, SQLITE_MIGRATIONS[:7])  # up to m007, before the index
        conn.execute("BEGIN")  # one commit, not one fsync per row
        conn.executemany(
            "INSERT INTO items (ns, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            [(f"t\x1fu{i % 3}\x1f", f"k{i}", f'{{"i": {i}}}', 1.0, float(i)) for i in range(300)])
        conn.execute("COMMIT")
    with SQLiteStore(path, keyword=False) as store:
        assert [i.key for i in store.search(("t",), limit=3)] == ["k299", "k298", "k297"]
        assert store.count(("t",)) == 300
    with closing(sqlite3.connect(path)) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE "
                                                "type = 'index'")}
        assert "items_updated" in names
