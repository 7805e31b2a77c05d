"""SQLite's vector partitions: a scoped search reads its prefix only, partitions stay within
their byte budget (least recently used out), a scope too large to hold is streamed exactly, and
partitions follow writes from this store and from another one on the same file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import remem.store.sqlite as sqlite_module
from remem.embed.fake import FakeEmbedder
from remem.store import IndexConfig, PutOp, SQLiteStore
from remem.store.vector_partitions import VectorPartitions, partition_for, stream_ranked

DIMS = 16


def _open(path: Path, budget: int) -> SQLiteStore:
    return SQLiteStore.open(path, index=IndexConfig(embedder=FakeEmbedder(DIMS),
                                                    fields=("text",)),
                            keyword=False, vector_cache_bytes=budget,
                            ann=False)  # streaming past the budget (remem.store.ann: test_ann)


def _fill(store: SQLiteStore, tenants: int, per: int) -> None:
    store.batch([PutOp((f"t{t}", "m"), f"k{i}", {"text": f"note {t} {i} word{(t * i) % 17}"})
                 for t in range(tenants) for i in range(per)])


def _keys(store: SQLiteStore, prefix: tuple[str, ...], query: str) -> list[tuple[object, ...]]:
    return [(r.namespace, r.key, round(r.score or 0.0, 5))
            for r in store.search(prefix, query=query, limit=10, mode="vector")]


def test_small_budget_streams_and_agrees_with_a_resident_one(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    big = _open(path, 64 * 2**20)
    _fill(big, 20, 30)
    small = _open(path, 1024)  # holds no partition: every search streams
    for prefix in ((), ("t3",), ("t3", "m")):
        for query in ("note 3 word5", "word11", "note 19 7"):
            assert _keys(small, prefix, query) == _keys(big, prefix, query)
    assert len(small._parts) == 0
    # a scoped search holds its prefix only
    assert set(big._parts._parts) == {(), ("t3",), ("t3", "m")}
    assert len(big._parts.get(("t3",)) or ()) == 30
    big.close()
    small.close()


def test_partitions_follow_writes_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = _open(path, 64 * 2**20)
    other = _open(path, 64 * 2**20)  # another process on the same file
    _fill(store, 5, 10)
    assert _keys(store, ("t1",), "fresh words")[0][1] != "new"
    other.put(("t1", "m"), "new", {"text": "fresh words"})
    assert _keys(store, ("t1",), "fresh words")[0][1] == "new"
    other.put(("t1", "m"), "new", {"text": "something else entirely"})
    store.delete(("t1", "m"), "k0")
    got = _keys(store, ("t1",), "note 1 0 word0")
    assert all(key != "k0" for _, key, _ in got)
    assert len(store._parts.get(("t1",)) or ()) == 10
    assert _keys(store, ("t1",), "fresh words") == _keys(other, ("t1",), "fresh words")
    store.close()
    other.close()


def test_lru_stays_within_its_budget() -> None:
    one = partition_for(8, 100)
    one.upsert_many(list(range(100)), list(range(100)), [("a",)] * 100,
                    np.ones((100, 8), dtype=np.float32))
    parts = VectorPartitions(budget=int(one.nbytes() * 2.5))
    for name in ("a", "b", "c"):
        parts.add((name,), one)
    assert len(parts) == 2 and parts.get(("a",)) is None and parts.nbytes() <= parts.budget
    parts.get(("b",))  # now most recently used: "c" goes first
    parts.add(("d",), one)
    assert parts.get(("c",)) is None and parts.get(("b",)) is not None
    assert not parts.fits(10_000, 8)


def test_stream_ranked_keeps_each_item_once_at_its_best() -> None:
    matrix = np.eye(4, dtype=np.float32)
    chunks = [(np.array([1, 2]), matrix[:2]), (np.array([1, 3]), matrix[2:])]
    query = np.array([0.1, 0.2, 0.9, 0.3], dtype=np.float32)
    got = list(stream_ranked(chunks, query))
    assert [i for i, _ in got] == [1, 3, 2]
    assert np.isclose(got[0][1], 0.9)


def test_many_new_rows_drop_the_partitions_and_results_stay_right(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "_RESYNC_ROWS", 5)
    path = tmp_path / "s.db"
    store = _open(path, 64 * 2**20)
    other = _open(path, 64 * 2**20)
    _fill(store, 3, 5)
    before = _keys(store, ("t2",), "brand new text")
    assert ("t2",) in store._parts._parts
    _fill(other, 3, 8)  # 9 new rows, more than _RESYNC_ROWS: every partition is dropped
    other.put(("t2", "m"), "fresh", {"text": "brand new text"})
    after = _keys(store, ("t2",), "brand new text")
    assert after[0][1] == "fresh" and after != before
    assert after == _keys(other, ("t2",), "brand new text")
    assert len(store._parts.get(("t2",)) or ()) == 9
    store.close()
    other.close()
