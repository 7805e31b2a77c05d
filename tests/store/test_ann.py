"""SQLite's approximate index (remem.store.ann) for scopes past its threshold: recall against
exact search, filters and prefixes that keep recall, exact scores, writes and deletes of
another store on the same file, the background build (exact answers until it is ready), and
the codes themselves against a NumPy reference."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from remem.embed.fake import FakeEmbedder
from remem.errors import ConfigError
from remem.store import IndexConfig, PutOp, SQLiteStore
from remem.store.ann import AnnConfig, Codes, _nearest, build_codes

DIMS = 32
N = 3000
# a small threshold so the approximate path runs on a few thousand vectors; a shortlist far
# below the scope's size, so the sign bits really narrow it
CONFIG = AnnConfig(above=500, shortlist=1000, rescore=40)
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


def _ready(store: SQLiteStore) -> SQLiteStore:
    """Search once (which starts the background build) and wait for the build."""
    store.search((), query="w1", mode="vector")
    ann = store._ann
    assert ann is not None
    builder = ann.builder
    if builder is not None:
        builder.join(60)
    assert ann.ready, ann.error
    return store


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
    _ready(approx)
    exact = _open(path, ann=False)
    assert _recall(approx, exact, ()) >= 0.95
    ann = approx._ann
    assert ann is not None and ann.codes is not None and len(ann.codes) == N
    assert len(approx._parts) == 0  # the scope was not loaded as a partition
    assert not list(tmp_path.glob("*.ann"))  # nothing is written beside the file
    # a small scope stays exact: its partition, recall 1.0
    assert _hits(approx, ("t7",), "w3 w5") == _hits(exact, ("t7",), "w3 w5")
    assert ("t7",) in approx._parts._parts
    approx.close()
    exact.close()


def test_scores_are_exact(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    _ready(approx)
    exact = _open(path, ann=False)
    for query in _queries(5):
        a = {(r.namespace, r.key): r.score for r in approx.search((), query=query,
                                                                   mode="vector")}
        e = {(r.namespace, r.key): r.score for r in exact.search((), query=query,
                                                                  mode="vector")}
        assert a and all(a[k] == e[k] for k in a.keys() & e.keys())
    approx.close()
    exact.close()


def test_the_first_search_does_not_wait_for_the_build(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _open(path)
    _fill(store)
    exact = _open(path, ann=False)
    query = _queries(1)[0]
    # holding the store's cache lock keeps the build from handing its codes over (the lock
    # is reentrant, so this thread's search still runs): the search cannot have waited
    with store._cache_lock:
        first = _hits(store, (), query)
        ann = store._ann
        assert ann is not None and not ann.ready and ann.builder is not None
        assert first == _hits(exact, (), query)  # answered exactly meanwhile
    builder = ann.builder
    if builder is not None:
        builder.join(60)
    assert ann.ready and ann.builder is None
    assert _recall(store, exact, ()) >= 0.95
    store.close()
    exact.close()


def test_close_stops_a_build(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _open(path)
    _fill(store)
    with store._cache_lock:
        store.search((), query="w1", mode="vector")
        ann = store._ann
        assert ann is not None and ann.builder is not None
        builder = ann.builder
    store.close()  # joins the builder, which does not install its codes
    assert not builder.is_alive() and not ann.ready


def test_selective_filter_and_prefix_keep_recall(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    approx = _open(path)
    _fill(approx)
    _ready(approx)
    exact = _open(path, ann=False)
    # 1% of the items match the filter (kind == 7: 30 of 3000): searched exactly among them
    assert _recall(approx, exact, (), {"kind": 7}) == 1.0
    # half of them: the shortlist is widened instead
    assert _recall(approx, exact, (), {"kind": {"$lt": 50}}) >= 0.95
    # the same, with widening forced all the way (no exact fallback on the match rate)
    widening = _ready(_open(path, ann=AnnConfig(above=500, shortlist=1000, rescore=40,
                                                widen_above=0.0)))
    assert _recall(widening, exact, (), {"kind": 7}) >= 0.95
    widening.close()
    assert _recall(approx, exact, ("t3",)) == 1.0  # 60 items: below the threshold, exact
    # with a threshold below it, the 2% prefix is searched through the whole file's codes
    scoped = _ready(_open(path, ann=AnnConfig(above=20, shortlist=1000, rescore=40)))
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
    _ready(approx)
    other = _open(path, ann=False)  # another writer on the same file
    query = "zebra quokka"
    other.put(("t1", "m"), "new", {"text": "zebra quokka", "kind": 1})
    assert _hits(approx, (), query)[0] == (("t1", "m"), "new")
    other.delete(("t1", "m"), "new")
    assert (("t1", "m"), "new") not in _hits(approx, (), query)
    ann = approx._ann
    assert ann is not None and ann.codes is not None
    assert len(ann.codes) == N  # the deleted vector left the codes (marked dead)
    # items coded at the build, then deleted elsewhere, are never returned
    victims = _hits(approx, (), "w5 w6 w7")
    for ns, key in victims[:5]:
        other.delete(ns, key)
    assert not set(victims[:5]) & set(_hits(approx, (), "w5 w6 w7"))
    assert len(ann.codes) == N - 5
    # new rows written by the other store are appended
    _fill(other, N, N + 400)
    exact = _open(path, ann=False)
    assert _recall(approx, exact, ()) >= 0.95
    assert len(ann.codes) == N + 395
    # replacing a third of the items leaves that many dead rows: compacted away
    _fill(other, 0, N // 3)
    assert _recall(approx, exact, ()) >= 0.95
    with sqlite3.connect(path) as conn:
        (rows,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    assert ann.codes.dead_share() == 0.0 and ann.codes.size == len(ann.codes) == rows
    for store in (approx, other, exact):
        store.close()


def test_the_index_is_on_by_default_past_the_budget_and_off_with_false(tmp_path: Path) -> None:
    """A store opened without ``ann`` searches a scope past its budget through the index (the
    alternative is a linear stream of the file); ``ann=False`` streams it exactly and keeps no
    codes; a scope within the budget is exact either way."""
    path = tmp_path / "a.db"
    embedding = IndexConfig(embedder=FakeEmbedder(DIMS), fields=("text",))
    default = SQLiteStore.open(path, index=embedding, keyword=False, vector_cache_bytes=1024)
    _fill(default, 0, 600)
    exact = SQLiteStore.open(path, index=embedding, keyword=False, vector_cache_bytes=1024,
                             ann=False)
    query = _queries(1)[0]
    assert default._ann_config == AnnConfig() and exact._ann_config is None
    default._ann_config = replace(AnnConfig(), background=False)  # built in this search
    _hits(default, (), query)
    assert default._ann is not None and default._ann.ready
    within = SQLiteStore.open(path, index=embedding, keyword=False, ann=False)  # 1 GiB budget
    assert _hits(exact, (), query) == _hits(within, (), query)
    assert exact._ann is None
    for store in (default, exact, within):
        store.close()


def test_in_memory_store_builds_in_its_search() -> None:
    approx = _open(":memory:")
    _fill(approx, 0, 1000)
    assert len(_hits(approx, (), _queries(1)[0])) == 10
    assert approx._ann is not None and approx._ann.ready and approx._ann.builder is None
    approx.close()


def test_a_foreground_build_on_request(tmp_path: Path) -> None:
    store = _open(tmp_path / "a.db", ann=AnnConfig(above=500, background=False))
    _fill(store, 0, 1000)
    store.search((), query="w1", mode="vector")
    assert store._ann is not None and store._ann.ready and store._ann.builder is None
    store.close()


@pytest.mark.parametrize("field, value", [("shortlist", 0), ("above", -1), ("rescore", True),
                                          ("max_candidates", 1.5), ("widen_above", 2),
                                          ("compact_above", -0.1), ("background", 1),
                                          ("scan_threads", 0)])
def test_bad_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"AnnConfig.{field}"):
        AnnConfig(**{field: value})  # type: ignore[arg-type]


# -- the codes --------------------------------------------------------------------------------


def _unit(rows: int, dims: int, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize("dims", [32, 100, 384])
def test_hamming_matches_a_reference(dims: int) -> None:
    matrix = _unit(70_000, dims)  # more than one scan block
    codes = build_codes([(list(range(len(matrix))), matrix)])
    assert codes is not None
    query = _unit(1, dims, seed=1)[0]
    reference = ((matrix > 0) != (query > 0)).sum(axis=1)
    assert np.array_equal(codes.hamming(query), reference)


def test_nibble_scores_rank_like_exact_scores() -> None:
    matrix = _unit(5000, 64)
    codes = build_codes([(list(range(1000, 6000)), matrix)])
    assert codes is not None
    query = _unit(1, 64, seed=2)[0]
    exact = set((np.argsort(-(matrix @ query))[:10] + 1000).tolist())
    # every row on the shortlist: the four-bit stage alone must hold the true top 10 in 40
    assert exact <= set(codes.candidates(query, 5000, 40))


def test_removed_ids_are_never_candidates_and_compaction_keeps_the_rest() -> None:
    matrix = _unit(2000, 32)
    codes = build_codes([(list(range(2000)), matrix)])
    assert codes is not None
    query = matrix[7]
    assert codes.candidates(query, 100, 10)[0] == 7
    codes.remove([7, 8, 9])
    codes.remove([7])  # twice: counted once
    assert len(codes) == 1997 and 7 not in codes.candidates(query, 2000, 2000)
    codes.compact()
    assert codes.size == 1997 and codes.dead_share() == 0.0
    assert not {7, 8, 9} & set(codes.candidates(query, 2000, 2000))
    assert codes.candidates(matrix[10], 100, 10)[0] == 10
    # an id written again (a reused rowid) is replaced, not doubled
    codes.append([10], matrix[11:12])
    codes.remove([10])
    codes.append([10], matrix[11:12])
    assert codes.candidates(matrix[11], 2000, 2000).count(10) == 1


def test_codes_grow_past_their_capacity() -> None:
    codes = Codes.fitted(_unit(100, 32))
    rows = 0
    for start in range(0, 80_000, 7000):  # across blocks of 32,768 rows
        codes.append(list(range(start, start + 7000)), _unit(7000, 32, seed=start))
        rows += 7000
    assert len(codes) == rows and codes.nbytes() >= rows * (8 + 16 + 8)
    query = _unit(7000, 32, seed=start)[5]
    assert codes.candidates(query, 500, 5)[0] == start + 5
    codes.remove(range(0, rows, 2))
    codes.compact()
    assert len(codes) == codes.size == rows // 2
    assert codes.candidates(query, 500, 5)[0] == start + 5


def test_two_threads_search_while_a_third_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _open(path)
    _fill(store)
    _ready(store)
    errors: list[BaseException] = []

    def search() -> None:
        try:
            for query in _queries(10):
                assert len(_hits(store, (), query)) == 10
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(2)]
    for thread in threads:
        thread.start()
    _fill(store, N, N + 200)
    for thread in threads:
        thread.join()
    assert not errors
    store.close()


def test_a_scan_split_over_threads_matches_a_reference_while_threads_race() -> None:
    """Large codes may be scanned in parts on pool threads shared by every store; several
    threads scanning different codes at once each get their own right answer."""
    codes_list, references, queries = [], [], []
    for seed in range(3):
        matrix = _unit(400_000, 64, seed=seed)  # thirteen blocks: three parts
        codes = build_codes([(list(range(len(matrix))), matrix)])
        assert codes is not None
        query = _unit(1, 64, seed=100 + seed)[0]
        codes_list.append(codes)
        queries.append(query)
        references.append(((matrix > 0) != (query > 0)).sum(axis=1))
    wrong: list[int] = []

    def scan(i: int) -> None:
        for _ in range(5):
            if not np.array_equal(codes_list[i].hamming(queries[i], threads=3),
                                  references[i]):
                wrong.append(i)

    threads = [threading.Thread(target=scan, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


@pytest.mark.parametrize("count", [1, 100, 5000, 29_999])
def test_the_shortlist_is_the_nearest_rows_ties_in_position_order(count: int) -> None:
    distances = np.random.default_rng(count).integers(0, 65, 30_000).astype(np.uint16)
    distances[::7] = 65535  # dead rows
    order = np.argsort(distances, kind="stable")[:count]
    assert np.array_equal(_nearest(distances, count, 64), np.sort(order))


def test_open_store_takes_the_config(tmp_path: Path) -> None:
    from remem.store import open_store

    store = open_store(tmp_path / "a.db", index=IndexConfig(embedder=FakeEmbedder(DIMS),
                                                            fields=("text",)),
                       keyword=False, ann=AnnConfig(above=500, background=False))
    assert isinstance(store, SQLiteStore)
    _fill(store, 0, 1000)
    assert len(_hits(store, (), _queries(1)[0])) == 10
    assert store._ann is not None and store._ann.ready
    store.close()


def test_a_failed_build_leaves_searches_exact_and_is_not_retried_at_once(
        tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = _open(path)
    _fill(store, 0, 1000)
    exact = _open(path, ann=False)
    query = _queries(1)[0]
    truth = _hits(exact, (), query)
    exact.close()
    assert store.get(("t1", "m"), "k1") is not None  # this thread's connection is open on
    # the file; the file then moves, so the build's new connection opens an empty database
    # at the old path and fails
    path.rename(tmp_path / "moved.db")
    assert _hits(store, (), query) == truth  # exact, while the build fails
    ann = store._ann
    assert ann is not None
    builder = ann.builder
    if builder is not None:
        builder.join(60)
    assert ann.error is not None and not ann.ready and ann.failed_at > 0
    assert _hits(store, (), query) == truth  # still exact, and no new build started
    assert ann.builder is None
    store.close()
