"""SQLite's approximate index (remem.store.ann) for scopes past its threshold: recall against
exact search, filters and prefixes that keep recall, consistency with writes from another
store on the same file, a build cut short, and the fallback when usearch is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import remem.store.sqlite as sqlite_module
from remem.embed.fake import FakeEmbedder
from remem.errors import ConfigError
from remem.store import IndexConfig, PutOp, SQLiteStore
from remem.store.ann import AnnConfig, ann_available

pytestmark = pytest.mark.skipif(not ann_available(), reason="usearch (remem[ann]) missing")

DIMS = 32
N = 3000
# a small threshold so the approximate path runs on a few thousand vectors; small shards and
# delta so several shards and the delta's sealing are exercised
CONFIG = AnnConfig(above=500, shard_rows=1200, delta_rows=300, ef_search=64, rescore=50)
_WORDS = [f"w{i}" for i in range(400)]


def _text(i: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(_WORDS[w] for w in rng.choice(len(_WORDS), size=12))


def _open(path: Path | str, ann: AnnConfig | bool = CONFIG) -> SQLiteStore:
    return SQLiteStore.open(path, index=IndexConfig(embedder=FakeEmbedder(DIMS),
                                                    fields=("text",)),
                            keyword=False, ann=CONFIG if ann is True else ann)


def _fill(store: SQLiteStore, start: int = 0, stop: int = N) -> None:
    store.batch([PutOp((f"t{i % 50}", "m"), f"k{i}", {"text": _text(i), "kind": i % 100})
                 for i in range(start, stop)])


def _hits(store: SQLiteStore, prefix: tuple[str, ...], query: str,
          flt: dict[str, object] | None = None) -> list[tuple[tuple[str, ...], str]]:
    return [(r.namespace, r.key)
            for r in store.search(prefix, query=query, filter=flt, limit=10, mode="vector")]


def _queries(n: int = 30) -> list[str]:
    return [" ".join(_text(10_000 + j).split()[:5]) for j in range(n)]


def _recall(approx: SQLiteStore, exact: SQLiteStore, prefix: tuple[str, ...],
            flt: dict[str, object] | None = None) -> float:
    found = total = 0
    for query in _queries():
        truth = _hits(exact, prefix, query, flt)
        found += len(set(_hits(approx, prefix, query, flt)) & set(truth))
        total += len(truth)
    return found / total


def test_recall_against_exact_and_the_index_is_used(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    exact = _open(path, ann=False)
    assert _recall(approx, exact, ()) >= 0.95
    ann = approx._ann
    assert ann is not None and len(ann.shards) == 3  # 3000 rows in shards of 1200
    assert (tmp_path / "a.db.ann" / "manifest.json").exists()
    assert len(approx._parts) == 0  # the scope was not loaded as a partition
    # a small scope stays exact: its partition, recall 1.0
    assert _hits(approx, ("t7",), "w3 w5") == _hits(exact, ("t7",), "w3 w5")
    assert ("t7",) in approx._parts._parts
    approx.close()
    exact.close()


def test_scores_are_exact(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    exact = _open(path, ann=False)
    query = _queries(1)[0]
    a = {(r.namespace, r.key): r.score for r in approx.search((), query=query, mode="vector")}
    e = {(r.namespace, r.key): r.score for r in exact.search((), query=query, mode="vector")}
    assert a and all(a[k] == e[k] for k in a.keys() & e.keys())
    approx.close()
    exact.close()


def test_selective_filter_and_prefix_keep_recall(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    exact = _open(path, ann=False)
    # 1% of the items match the filter (kind == 7: 30 of 3000): searched exactly among them
    assert _recall(approx, exact, (), {"kind": 7}) == 1.0
    # half of them: the index is asked for more candidates instead
    assert _recall(approx, exact, (), {"kind": {"$lt": 50}}) >= 0.95
    # the same, with widening forced all the way (no exact fallback on the match rate)
    widening = _open(path, ann=AnnConfig(above=500, shard_rows=1200, delta_rows=300,
                                         ef_search=64, rescore=50, widen_above=0.0))
    assert _recall(widening, exact, (), {"kind": 7}) >= 0.95
    widening.close()
    assert _recall(approx, exact, ("t3",)) == 1.0  # 60 items: below the threshold, exact
    # with a threshold below it, the 2% prefix is searched through the whole file's index
    scoped = _open(path, ann=AnnConfig(above=20, shard_rows=1200, delta_rows=300,
                                       ef_search=64, rescore=50))
    assert _recall(scoped, exact, ("t3",)) >= 0.95
    assert _recall(scoped, exact, ("t3", "m"), {"kind": 3}) >= 0.95  # and a filter in it
    assert not scoped._parts._parts and scoped._ann is not None
    scoped.close()
    approx.close()
    exact.close()


def test_follows_puts_and_deletes_of_another_store(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    other = _open(path, ann=False)  # another writer on the same file
    query = "zebra quokka"
    approx.search((), query="w1", mode="vector")  # built
    other.put(("t1", "m"), "new", {"text": "zebra quokka", "kind": 1})
    assert _hits(approx, (), query)[0] == (("t1", "m"), "new")
    other.delete(("t1", "m"), "new")
    assert (("t1", "m"), "new") not in _hits(approx, (), query)
    # items indexed in a shard, then deleted elsewhere, are never returned
    victims = _hits(approx, (), "w5 w6 w7")
    for ns, key in victims[:5]:
        other.delete(ns, key)
    assert not set(victims[:5]) & set(_hits(approx, (), "w5 w6 w7"))
    # enough new rows to seal the delta into a shard, written by the other store
    _fill(other, N, N + 400)
    exact = _open(path, ann=False)
    assert _recall(approx, exact, ()) >= 0.95
    ann = approx._ann
    assert ann is not None and len(ann.shards) == 4 and ann.delta is not None
    assert len(ann.delta) == 0
    # a third store opens the shards written by the first, with the same answers
    third = _open(path)
    assert _hits(third, (), "w5 w6 w7") == _hits(approx, (), "w5 w6 w7")
    assert third._ann is not None and [s.name for s in third._ann.shards] == [
        s.name for s in ann.shards]
    for store in (approx, other, exact, third):
        store.close()


_BUILD_AND_DIE = """
import os, sys
sys.path[:0] = {paths!r}
import remem.store.ann as ann
from tests.store.test_ann import _open
def die(self, index, rows):
    os._exit(9)  # killed while writing its first shard, before any manifest
ann.AnnIndex._seal = die
store = _open({path!r})
store.search((), query="w1", mode="vector")
"""


def test_a_build_killed_midway_leaves_no_wrong_answers(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _open(path, ann=False)
    _fill(store)
    store.close()
    root = str(Path(__file__).resolve().parents[2])
    code = _BUILD_AND_DIE.format(paths=[str(Path(root) / "src"), root], path=str(path))
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    assert not (tmp_path / "a.db.ann" / "manifest.json").exists()
    approx = _open(path)
    exact = _open(path, ann=False)
    assert _recall(approx, exact, ()) >= 0.95
    # a manifest naming a torn shard: rebuilt, not trusted
    manifest = tmp_path / "a.db.ann" / "manifest.json"
    shard = tmp_path / "a.db.ann" / json.loads(manifest.read_text())["shards"][0]["file"]
    shard.write_bytes(shard.read_bytes()[:1000])
    fresh = _open(path)
    assert _recall(fresh, exact, ()) >= 0.95
    for s in (approx, exact, fresh):
        s.close()


def test_without_usearch_large_scopes_stream_as_before(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "ann_available", lambda: False)
    path = tmp_path / "a.db"
    store = _open(path)  # asks for the index, but the library is "missing"
    _fill(store, 0, 600)
    small = SQLiteStore.open(path, index=IndexConfig(embedder=FakeEmbedder(DIMS),
                                                     fields=("text",)),
                             keyword=False, vector_cache_bytes=1024)
    assert store._ann_config is None
    query = _queries(1)[0]
    assert _hits(small, (), query) == _hits(store, (), query)
    assert store._ann is None and small._ann is None
    assert not (tmp_path / "a.db.ann").exists()
    store.close()
    small.close()


def test_the_index_is_opt_in(tmp_path: Path) -> None:
    """With usearch installed, a store opened without ``ann`` streams a scope past its budget
    exactly and builds no index: approximate answers are never the default."""
    path = tmp_path / "a.db"
    store = SQLiteStore.open(path, index=IndexConfig(embedder=FakeEmbedder(DIMS),
                                                     fields=("text",)),
                             keyword=False, vector_cache_bytes=1024)
    _fill(store, 0, 600)
    exact = _open(path, ann=False)
    query = _queries(1)[0]
    assert store._ann_config is None
    assert _hits(store, (), query) == _hits(exact, (), query)
    assert store._ann is None and not (tmp_path / "a.db.ann").exists()
    store.close()
    exact.close()


def test_in_memory_store_keeps_its_shards_in_memory() -> None:
    approx = _open(":memory:")
    _fill(approx, 0, 1000)
    assert len(_hits(approx, (), _queries(1)[0])) == 10
    assert approx._ann is not None and approx._ann.directory is None
    approx.close()


@pytest.mark.parametrize("field, value", [("ef_search", 0), ("above", -1), ("shard_rows", True),
                                          ("connectivity", 1.5), ("widen_above", 2)])
def test_bad_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"AnnConfig.{field}"):
        AnnConfig(**{field: value})  # type: ignore[arg-type]


def test_two_stores_building_at_once_take_turns(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    writer = _open(path, ann=False)
    _fill(writer)
    stores = [_open(path), _open(path)]
    answers: list[list[tuple[tuple[str, ...], str]]] = []
    threads = [threading.Thread(target=lambda s=s: answers.append(_hits(s, (), "w1 w2")))
               for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 2 and answers[0] == answers[1] == _hits(writer, (), "w1 w2")
    names = [[shard.name for shard in s._ann.shards] for s in stores if s._ann is not None]
    assert len(names) == 2 and names[0] == names[1]  # the second opened the first's shards
    on_disk = sorted(p.name for p in (tmp_path / "a.db.ann").glob("*.usearch"))
    assert on_disk == sorted(names[0])
    for store in (writer, *stores):
        store.close()
