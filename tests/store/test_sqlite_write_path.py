"""SQLite's batched write path and what it keeps beside the items: the per-namespace keyword
statistics (kept by triggers), upgrades of files written before them, and that every sequence
of writes gives the same BM25 hits and scores as the in-memory reference."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.db.migrations import applied_sqlite
from remem.embed import FakeEmbedder
from remem.retrieval import DefaultTokenizer
from remem.retrieval.tokenize import CHINESE_STOPWORDS, ENGLISH_STOPWORDS
from remem.store import (
    BaseStore,
    IndexConfig,
    InMemoryStore,
    KeywordConfig,
    PutOp,
    SQLiteStore,
    sqlite_postings,
)
from remem.store.migrations.sqlite import SQLITE_MIGRATIONS
from remem.store.types import SearchMode
from tests.conftest import FakeClock
from tests.store.test_sqlite_keyword_terms import undo_m010

WORDS = ["tea", "green", "coffee", "paris", "rain", "北京", "烤鸭", "garden"]
QUERIES = ["tea", "green tea", "coffee rain", "北京 烤鸭", "garden paris tea", "nothing"]
PREFIXES: list[tuple[str, ...]] = [(), ("u",), ("u", "a"), ("u", "b"), ("v",)]
NAMESPACES = [("u", "a"), ("u", "b"), ("v",), ("u", "a", "deep")]

_counter = iter(range(10**9))
M003 = [m.name for m in SQLITE_MIGRATIONS].index("m003_keyword_event_time") + 1


def _downgrade_to_m003(path: Path) -> None:
    """Turn a current file back into the m003 schema (the same items, vectors and terms; the
    statistics, their triggers and the recent postings gone, the per-item keyword index and
    the text hash index back), as remem before m004 left it."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        later = [m.name for m in SQLITE_MIGRATIONS[M003:]]
        conn.execute("BEGIN")
        for trigger in ("items_stats_insert", "items_stats_delete", "items_stats_update"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE keyword_stats")
        conn.execute("DROP INDEX items_keyword_ttl")
        conn.execute("DROP INDEX items_postings_cover")  # m007
        conn.execute("CREATE INDEX items_keyword ON items (ns, expires_at, doc_len) "
                     "WHERE doc_len > 0")
        undo_m010(conn)
        conn.execute("INSERT INTO postings SELECT term, item_id, tf FROM recent_postings")
        conn.execute("DROP TABLE recent_postings")
        conn.execute("DELETE FROM remem_meta WHERE key = 'recent_postings'")
        conn.execute("DROP INDEX vectors_seq")
        conn.execute("CREATE INDEX vectors_seq ON vectors (seq)")
        conn.execute("CREATE INDEX vectors_text_hash ON vectors (text_hash) "
                     "WHERE text_hash IS NOT NULL")
        conn.executemany("DELETE FROM remem_migrations WHERE name = ?", [(n,) for n in later])
        conn.execute("COMMIT")


def _stats(path: Path) -> dict[str, tuple[int, int]]:
    with closing(sqlite3.connect(path)) as conn:
        kept = {ns: (docs, total) for ns, docs, total in conn.execute(
            "SELECT ns, docs, total_len FROM keyword_stats WHERE docs != 0 OR total_len != 0")}
        counted = {ns: (docs, total) for ns, docs, total in conn.execute(
            "SELECT ns, count(*), sum(doc_len) FROM items WHERE doc_len > 0 "
            "AND expires_at IS NULL GROUP BY ns")}
    assert kept == counted
    return kept


def _results(store: BaseStore, modes: tuple[SearchMode, ...] = ("keyword",)
             ) -> list[list[tuple[tuple[str, ...], str, float | None]]]:
    return [[(h.namespace, h.key, h.score)
             for h in store.search(prefix, query=query, mode=mode, limit=50,
                                   refresh_ttl=False)]
            for prefix in PREFIXES for query in QUERIES for mode in modes]


def _fill(store: BaseStore, clock: FakeClock) -> None:
    store.batch([PutOp(ns, f"k{i}", {"text": " ".join(WORDS[(i * j) % len(WORDS)]
                                                      for j in range(1, 2 + i % 4))})
                 for i, ns in enumerate(NAMESPACES * 6)])
    store.put(("u", "a"), "ttl", {"text": "tea tea garden"}, ttl=100)
    store.put(("u", "a"), "gone", {"text": "tea coffee"}, ttl=10)
    store.put(("u", "b"), "quiet", {"text": "tea"}, index=False)
    clock.advance(50)  # "gone" has expired, unswept; "ttl" lives


def test_upgrade_keeps_every_result_and_score(tmp_path: Path) -> None:
    """A file of the m003 schema (as remem wrote it before m004) upgrades in place: keyword,
    vector and hybrid searches give what they gave, and what the in-memory store gives."""
    clock = FakeClock()
    path = tmp_path / "old.db"
    config: dict[str, Any] = {"keyword": KeywordConfig(fields=("text",)),
                              "index": IndexConfig(FakeEmbedder(16), fields=("text",))}
    modes: tuple[SearchMode, ...] = ("keyword", "vector", "hybrid")
    with SQLiteStore(path, clock=clock, **config) as store:
        _fill(store, clock)
        before = _results(store, modes)
    _downgrade_to_m003(path)
    with closing(sqlite3.connect(path)) as conn:
        assert "m004_keyword_stats" not in applied_sqlite(conn)
    reference = InMemoryStore(clock=FakeClock(), **config)
    _fill(reference, reference.clock)  # type: ignore[arg-type]
    with SQLiteStore(path, clock=clock, **config) as store:
        assert _results(store, modes) == before == _results(reference, modes)
        assert _stats(path)  # filled by the migration, equal to a recount
        store.put(("u", "b"), "after", {"text": "green tea"})  # and kept from then on
        assert _stats(path)[encode(("u", "b"))][0] == 7
    with closing(sqlite3.connect(path)) as conn:
        assert applied_sqlite(conn) == [m.name for m in SQLITE_MIGRATIONS]


def encode(namespace: tuple[str, ...]) -> str:
    return "".join(label + "\x1f" for label in namespace)


def test_backfilled_items_enter_the_statistics(tmp_path: Path) -> None:
    """Items from before keyword search get their terms on open (an UPDATE of doc_len): the
    update trigger counts them."""
    path = tmp_path / "v1.db"
    with SQLiteStore(path, keyword=False) as store:
        store.batch([PutOp(("u",), f"k{i}", {"text": f"tea number {i}"}) for i in range(30)])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("INSERT INTO remem_meta (key, value) VALUES ('keyword_backfill', '0')")
    with SQLiteStore(path) as store:
        assert _stats(path) == {"u\x1f": (30, 90)}
        hits = store.search(("u",), query="number 7", mode="keyword")
        assert hits[0].key == "k7"


_ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMESPACES), st.integers(0, 3),
              st.lists(st.sampled_from(WORDS), max_size=5),
              st.sampled_from([None, None, 5.0, 30.0]), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(NAMESPACES), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.sampled_from([1.0, 10.0, 40.0])),
    st.tuples(st.just("sweep"),),
    st.tuples(st.just("search"), st.sampled_from(QUERIES)),
), max_size=30)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(ops=_ops, batched=st.booleans(), merge_at=st.sampled_from([1, 7, 20_000]))
def test_any_writes_give_reference_scores(tmp_path: Path, ops: list[Any], batched: bool,
                                          merge_at: int) -> None:
    """Puts (new, replacing, with and without expiry, keyword-indexed or not), deletes, expiry,
    sweeps and searches between them, one op per batch or all puts of a stretch in one batch,
    with recent postings moved into the main table after every write, now and then, or never:
    the statistics equal a recount, and keyword hits and scores equal the in-memory store's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_postings, "RECENT_POSTINGS", merge_at)
        patch.setattr(sqlite_postings, "RECENT_PER_ITEM", 0 if merge_at < 20_000 else 1)
        _check_writes(tmp_path, ops, batched)


def _check_writes(tmp_path: Path, ops: list[Any], batched: bool) -> None:
    clocks = [FakeClock(), FakeClock()]
    path = tmp_path / f"p{next(_counter)}.db"
    stores: list[BaseStore] = [
        SQLiteStore(path, keyword=KeywordConfig(fields=("text",)), clock=clocks[0]),
        InMemoryStore(keyword=KeywordConfig(fields=("text",)), clock=clocks[1]),
    ]
    for store in stores:
        store.setup()
    pending: list[PutOp] = []

    def flush() -> None:
        for store in stores:
            if pending:
                store.batch(pending)
        pending.clear()

    for op in ops:
        if op[0] == "put":
            _, ns, key, words, ttl, indexed = op
            pending.append(PutOp(ns, f"k{key}", {"text": " ".join(words)}, ttl=ttl,
                                 index=None if indexed else False))
            if not batched:
                flush()
            continue
        flush()
        if op[0] == "search":
            assert _hits(stores[0], op[1]) == _hits(stores[1], op[1])
            continue
        for store, clock in zip(stores, clocks, strict=True):
            if op[0] == "delete":
                store.delete(op[1], f"k{op[2]}")
            elif op[0] == "advance":
                clock.advance(op[1])
            else:
                store.sweep()
    flush()
    try:
        _stats(path)
        assert _results(stores[0]) == _results(stores[1])  # bit-identical scores
    finally:
        for store in stores:
            store.close()


def _hits(store: BaseStore, query: str) -> list[tuple[tuple[str, ...], str, float | None]]:
    return [(h.namespace, h.key, h.score) for h in store.search(
        (), query=query, mode="keyword", limit=50, refresh_ttl=False)]


def test_a_batch_putting_one_key_twice_keeps_the_last(tmp_path: Path) -> None:
    embedder = FakeEmbedder(16)
    with SQLiteStore(tmp_path / "twice.db", index=IndexConfig(embedder, fields=("text",))
                     ) as store:
        store.batch([PutOp(("u",), "k", {"text": "green tea"}),
                     PutOp(("u",), "j", {"text": "coffee"}),
                     PutOp(("u",), "k", {"text": "black coffee"})])
        assert store.get(("u",), "k").value == {"text": "black coffee"}  # type: ignore[union-attr]
        # the shorter item ranks first
        assert [h.key for h in store.search(("u",), query="coffee", mode="keyword")] == ["j", "k"]
        assert store.search(("u",), query="green", mode="keyword") == []
        hits = store.search(("u",), query="black coffee", mode="vector", limit=1)
        assert hits[0].key == "k" and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert _stats(tmp_path / "twice.db") == {"u\x1f": (2, 3)}


def _prune_tombstones(path: Path) -> None:
    """What a sweep does once 10,000 newer vector writes exist, all at once."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("DELETE FROM vector_tombstones")
        conn.execute("UPDATE remem_meta SET value = (SELECT value FROM remem_meta WHERE "
                     "key = 'vector_seq') WHERE key = 'tombstones_pruned_through'")


def test_embedding_cache_after_upgrade_deletes_and_pruning(tmp_path: Path) -> None:
    """The text hash map finds texts written before the upgrade and by another store on the
    file, keeps a text stored twice when one copy is deleted, forgets deleted texts, and
    rebuilds itself when tombstones it has not read were pruned."""
    path = tmp_path / "cache.db"
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        store.batch([PutOp(("a",), f"k{i}", {"text": f"memory {i}"}) for i in range(20)])
    _downgrade_to_m003(path)
    embedder = FakeEmbedder(16)
    index = IndexConfig(embedder, fields=("text",))
    with SQLiteStore(path, index=index) as store, SQLiteStore(path, index=index) as other:
        store.batch([PutOp(("b",), f"k{i}", {"text": f"memory {i}"}) for i in range(20)])
        assert embedder.texts_embedded == 0  # all stored before the upgrade
        other.put(("c",), "new", {"text": "only in other"})  # embeds 1
        store.delete(("a",), "k3")  # "memory 3" is left in ("b",) "k3"
        store.delete(("c",), "new")
        store.batch([PutOp(("d",), "x", {"text": "memory 3"}),
                     PutOp(("d",), "y", {"text": "only in other"})])
        assert embedder.texts_embedded == 2  # "only in other" was stored nowhere any more
        store.put(("d",), "w", {"text": "memory 4"})  # "memory 4": a, b and d
        other.delete(("d",), "w")
        other.delete(("b",), "k4")
        _prune_tombstones(path)  # store never read these two tombstones
        store.put(("e",), "v", {"text": "memory 4"})
        assert embedder.texts_embedded == 2  # rebuilt: the copy in ("a",) found
        hits = store.search(("e",), query="memory 4", mode="vector", limit=1)
        assert hits[0].key == "v" and hits[0].score == pytest.approx(1.0, abs=1e-5)


# -- keyword terms: the tokenizer's fast paths give the terms of its rules written plainly ----

_RUNS = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)|"
                          r"((?:(?![\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])[^\W_])+"
                          r"(?:['\u2019](?:(?![\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])"
                          r"[^\W_])+)*)")


def _plain_terms(text: str, *, stem: bool, stopwords: bool) -> list[str]:
    """The default tokenizer's rules (module docstring of remem.retrieval.tokenize), one step
    after another, with no memo and no ASCII shortcut."""
    import rjieba
    import snowballstemmer  # type: ignore[import-untyped]

    stemmer = snowballstemmer.stemmer("english")
    out: list[str] = []
    for han, word in _RUNS.findall(unicodedata.normalize("NFKC", text).casefold()):
        if han:
            out += [w for w in rjieba.cut_for_search(han)
                    if not (stopwords and w in CHINESE_STOPWORDS)]
            continue
        word = re.sub(r"['\u2019]", "", re.sub(r"['\u2019]s$", "", word))
        if not word or (stopwords and word in ENGLISH_STOPWORDS):
            continue
        out.append(stemmer.stemWord(word) if stem and word.isalpha() else word)
    return out


_WORDY = st.text(st.sampled_from(list("abcXYZ019 '’_-.\u00e9\uff21\u00bd北京烤鸭的了"))
                 | st.characters(), max_size=40)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_WORDY | st.sampled_from(["Don't", "John's", "HIKING hikes", "it’s"]),
                      min_size=1, max_size=6),
       stem=st.booleans(), stopwords=st.booleans())
def test_tokenizer_terms_follow_its_rules(texts: list[str], stem: bool, stopwords: bool) -> None:
    tokenizer = DefaultTokenizer(stem=stem, stopwords=stopwords)
    for _ in range(2):  # the second pass reads the word memo the first one filled
        for text in texts:
            assert tokenizer.tokenize(text) == _plain_terms(text, stem=stem,
                                                            stopwords=stopwords)
