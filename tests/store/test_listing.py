"""Newest-first listings on SQLite: the store picks how to read (one namespace in index order,
a wide prefix by walking the updated_at index, a narrow one read whole and sorted), and every
way gives the same pages. The updated_at index is built on demand: the first wide listing
reads the prefix and sorts, then builds it; a locked or read-only file keeps answering."""

from __future__ import annotations

import logging
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.db.migrations import applied_sqlite, apply_sqlite
from remem.store import DeleteOp, Item, PutOp, SearchOp, SQLiteStore
from remem.store.migrations.sqlite import SQLITE_MIGRATIONS
from remem.store.sql_dialect import ListingPath, wide_scope
from tests.conftest import FakeClock


def test_wide_scope_grows_with_the_table_and_the_page() -> None:
    assert wide_scope(0, 10) == wide_scope(1_000, 10) == 200  # small scopes are read whole
    assert wide_scope(400_000, 21) == 490
    assert wide_scope(10_000_000, 21) > wide_scope(400_000, 21)
    assert wide_scope(400_000, 2_021) > wide_scope(400_000, 21)  # deep pages walk further


def _ops(seed: int) -> list[PutOp]:
    """600 items in 'wide' (30 namespaces, many sharing an updated_at), 40 in 'narrow', one
    leaf namespace 'leaf'; a fifth of them of kind "y"."""
    rng = random.Random(seed)
    ops = []
    for i in range(640):
        ns = ("wide", f"n{rng.randrange(30)}") if i < 600 else ("narrow", f"n{i % 4}")
        ops.append(PutOp(ns, f"k{rng.randrange(10_000):05d}", {"kind": "x" if i % 5 else "y"},
                         created_at=1_000.0, updated_at=1_000.0 + rng.randrange(50)))
    return ops + [PutOp(("leaf",), f"k{i}", {"kind": "x"}, updated_at=2_000.0 + i)
                  for i in range(5)]


@pytest.fixture
def store(clock: FakeClock) -> Iterator[SQLiteStore]:
    with SQLiteStore(":memory:", keyword=False, clock=clock) as s:
        s.batch(_ops(5))
        yield s


def _filled(path: Path) -> SQLiteStore:
    s = SQLiteStore(path, keyword=False)
    s.batch(_ops(5))
    return s


def _path(store: SQLiteStore, op: SearchOp) -> ListingPath:
    return store._read(lambda tx: store._listing_path(tx, op))


def _has_index(store: SQLiteStore) -> bool:
    return store._read(lambda tx: tx.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'items_updated'").fetchone()) is not None


def _plan(store: SQLiteStore, op: SearchOp, path: ListingPath) -> str:
    text, params = store.dialect.listing(op, 0.0, path=path)
    rows = store._read(lambda tx: tx.conn.execute("EXPLAIN QUERY PLAN " + text,
                                                  params).fetchall())
    return "\n".join(str(row[3]) for row in rows)


def _page(items: list[Item], prefix: tuple[str, ...], flt: dict[str, str] | None,
          offset: int, limit: int) -> list[tuple[tuple[str, ...], str]]:
    """What a listing must return, computed in Python."""
    wanted = sorted((i for i in items if i.namespace[:len(prefix)] == prefix
                     and (flt is None or all(i.value[k] == v for k, v in flt.items()))),
                    key=lambda i: (-i.updated_at.timestamp(), i.namespace, i.key))
    return [(i.namespace, i.key) for i in wanted[offset:offset + limit]]


def test_the_store_picks_the_reading_by_the_scope(store: SQLiteStore) -> None:
    wide = SearchOp(("wide",), limit=20)
    # no index yet: a wide listing reads the prefix (and asks for the index)
    assert not _has_index(store)
    assert _path(store, wide) == _path(store, SearchOp((), limit=20)) == "scope"
    assert _path(store, SearchOp(("narrow",), limit=20)) == "scope"
    assert _path(store, SearchOp(("leaf",), limit=20)) == "leaf"
    store.search(("wide",), limit=20)  # the first wide listing builds it
    assert _has_index(store)
    assert _path(store, wide) == _path(store, SearchOp((), limit=20)) == "newest"
    assert _path(store, SearchOp(("narrow",), limit=20)) == "scope"
    assert _path(store, SearchOp(("leaf",), limit=20)) == "leaf"
    # the plans say so: the walk sorts only the page (the outer query), the scope its items
    op = SearchOp(("wide",), filter={"kind": "x"}, limit=20)
    plans = {path: _plan(store, op, path) for path in ("newest", "scope")}
    assert "SCAN i USING INDEX items_updated" in plans["newest"]
    assert plans["newest"].count("USE TEMP B-TREE FOR ORDER BY") == 1
    assert "SEARCH i USING INDEX items_ns_updated (ns>? AND ns<?)" in plans["scope"]
    assert plans["scope"].count("USE TEMP B-TREE FOR ORDER BY") == 2


@pytest.mark.parametrize("prefix", [(), ("wide",), ("wide", "n3"), ("narrow",)])
def test_every_reading_gives_the_same_pages(store: SQLiteStore,
                                            prefix: tuple[str, ...]) -> None:
    store.search((), limit=1)  # builds the index, so both readings can run
    items = list(store.iter_items(()))
    for flt in (None, {"kind": "y"}):
        size = len(_page(items, prefix, flt, 0, 10**6))
        for offset, limit in ((0, 7), (5, 20), (size - 3, 10)):
            op = SearchOp(prefix, filter=flt, limit=limit, offset=max(offset, 0))
            expected = _page(items, prefix, flt, op.offset, limit)
            for path in ("newest", "scope"):
                rows = store._read(lambda tx, o=op, p=path: store._query(
                    tx, *store.dialect.listing(o, 0.0, path=p)))
                assert [(tuple(r[1].split("\x1f")[:-1]), r[2]) for r in rows] == expected
            assert [(i.namespace, i.key) for i in store.search(
                prefix, filter=flt, limit=limit, offset=op.offset)] == expected


_LISTINGS = st.lists(st.tuples(
    st.sampled_from([(), ("a",), ("a", "n1"), ("b",)]),
    st.sampled_from([None, {"kind": "y"}]),
    st.integers(0, 260), st.integers(1, 30)), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), listings=_LISTINGS)
def test_pages_are_the_same_before_and_after_the_index_exists(
        seed: int, listings: list[tuple[tuple[str, ...], dict[str, str] | None, int, int]]
) -> None:
    rng = random.Random(seed)
    with SQLiteStore(":memory:", keyword=False) as store:
        store.batch([PutOp(("a", f"n{rng.randrange(6)}") if i < 260 else ("b", "n0"),
                           f"k{rng.randrange(400)}", {"kind": rng.choice("xy")},
                           updated_at=1_000.0 + rng.randrange(20)) for i in range(300)])
        items = list(store.iter_items(()))
        ops = [SearchOp(p, filter=f, offset=o, limit=n) for p, f, o, n in [*listings,
                                                                           ((), None, 0, 5)]]
        expected = [_page(items, op.namespace_prefix, op.filter, op.offset, op.limit)
                    for op in ops]
        # a writing batch: every listing reads without the index, which is built after it
        before = store.batch([*ops, DeleteOp(("z",), "none")])[:-1]
        assert _has_index(store)
        after = store.batch(ops)
        assert _path(store, SearchOp((), limit=5)) == "newest"
        for result in (before, after):
            assert [[(i.namespace, i.key) for i in page] for page in result] == expected


def test_the_index_is_built_by_the_first_wide_listing_only(tmp_path: Path) -> None:
    with _filled(tmp_path / "s.db") as store:
        store.search(("narrow",), limit=5)
        store.search(("leaf",), limit=5)
        assert store.count(("wide",)) == 599  # two puts drew the same address
        assert not _has_index(store)  # no wide newest-first listing ran yet
        first = store.search(("wide",), limit=10)  # read-only: builds, then walks it
        assert _has_index(store)
        assert [(i.namespace, i.key) for i in first] == _page(
            list(store.iter_items(())), ("wide",), None, 0, 10)
        assert store.search(("wide",), limit=10) == first
        with closing(sqlite3.connect(store.path, isolation_level=None)) as other:
            other.execute("DROP INDEX items_updated")  # by hand, while the store is open
        assert store.search(("wide",), limit=10) == first  # not remembered: no stale walk
        assert _has_index(store)


def test_a_second_process_finds_the_index_another_built(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with _filled(path) as store:
        assert not _has_index(store)
        code = ("import sys; from remem.store import SQLiteStore\n"
                "with SQLiteStore(sys.argv[1], keyword=False) as s:\n"
                "    print([i.key for i in s.search(('wide',), limit=5)])\n")
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, check=True).stdout
        assert _has_index(store)  # the other process built it
        assert _path(store, SearchOp(("wide",), limit=5)) == "newest"  # and this one walks it
        assert out.strip() == repr([i.key for i in store.search(("wide",), limit=5)])


def test_a_locked_or_read_only_file_still_answers_the_listing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.db"
    with _filled(path) as store:
        items = list(store.iter_items(()))
        expected = _page(items, ("wide",), None, 3, 10)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
            with caplog.at_level(logging.INFO, logger="remem.store"):
                page = store.search(("wide",), limit=10, offset=3)
            assert [(i.namespace, i.key) for i in page] == expected
            assert not _has_index(store)
            # tried once (before reading), not again after the slower read
            assert caplog.text.count("not built (database is locked)") == 1
            other.execute("ROLLBACK")
        with store._connection() as conn:  # this thread's connection refuses every write
            conn.execute("PRAGMA query_only = ON")
            page = store.search(("wide",), limit=10, offset=3)
            assert [(i.namespace, i.key) for i in page] == expected
            assert not _has_index(store)
            conn.execute("PRAGMA query_only = OFF")
        page = store.search(("wide",), limit=10, offset=3)  # the next listing builds it
        assert [(i.namespace, i.key) for i in page] == expected
        assert _has_index(store)


def test_threads_listing_at_once_build_one_index(tmp_path: Path) -> None:
    with _filled(tmp_path / "s.db") as store:
        expected = _page(list(store.iter_items(())), (), None, 0, 15)
        barrier = threading.Barrier(4)
        pages: list[list[tuple[tuple[str, ...], str]]] = []

        def list_all() -> None:
            barrier.wait()
            pages.append([(i.namespace, i.key) for i in store.search((), limit=15)])

        threads = [threading.Thread(target=list_all) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert pages == [expected] * 4
        assert _has_index(store)


def test_an_old_file_loses_the_index_on_upgrade_and_lists_alike(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        apply_sqlite(conn, SQLITE_MIGRATIONS[:8])  # up to m008, which built the index
        conn.execute("BEGIN")  # one commit, not one fsync per row
        conn.executemany(
            "INSERT INTO items (ns, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            [(f"t\x1fu{i % 3}\x1f", f"k{i}", f'{{"i": {i}}}', 1.0, float(i)) for i in range(300)])
        conn.execute("COMMIT")
    with SQLiteStore(path, keyword=False) as store:
        store.setup()
        assert not _has_index(store)  # m009: writers no longer pay for it
        assert [i.key for i in store.search(("t",), limit=3)] == ["k299", "k298", "k297"]
        assert store.count(("t",)) == 300
        assert _has_index(store)
    with closing(sqlite3.connect(path)) as conn:
        applied = applied_sqlite(conn)
        assert applied[applied.index("m008_items_newest_first") + 1] == \
            "m009_newest_first_on_demand"
