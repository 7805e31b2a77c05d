"""Relevance (``SearchItem.relevance``, :mod:`remem.retrieval.relevance`): on every backend,
for random corpora and queries, it is the documented value, in [0, 1], the same whatever the
page, the candidates or the backend; ``min_score`` keeps exactly the hits at or above it."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.embed.base import normalize_rows
from remem.errors import InvalidInputError
from remem.retrieval import DefaultTokenizer, Ranking
from remem.store import (
    BaseStore,
    IndexConfig,
    InMemoryStore,
    KeywordConfig,
    PutOp,
    SearchItem,
    SQLiteStore,
)
from tests.conformance.conftest import Factory, property_stores
from tests.conftest import FakeClock

WORDS = ["tea", "green", "cat", "北京", "rain", "code", "the", "天气很好"]
namespaces = st.sampled_from([("u", "1"), ("u", "2"), ("u", "1", "x"), ("v",)])
prefixes = st.sampled_from([(), ("u",), ("u", "1"), ("v",)])
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
corpus = st.lists(st.tuples(namespaces, st.sampled_from([f"k{i}" for i in range(8)]), texts,
                            st.booleans()), max_size=14)
queries = st.lists(st.sampled_from([*WORDS, "zebra"]), min_size=1, max_size=3).map(" ".join)
modes = st.sampled_from(["hybrid", "keyword", "vector"])
EMBEDDER = FakeEmbedder(16)
SIGNALS = {"hybrid": ("keyword", "vector"), "keyword": ("keyword",), "vector": ("vector",)}


@contextmanager
def all_backends(clock: FakeClock) -> Iterator[list[BaseStore]]:
    """Every backend, hybrid-indexed on ``text`` (PostgreSQL, exact and HNSW, when the
    suite has a database)."""
    kwargs: dict[str, Any] = {"clock": clock, "index": IndexConfig(EMBEDDER, fields=("text",)),
                              "keyword": KeywordConfig(fields=("text",))}
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[BaseStore] = [InMemoryStore(**kwargs), SQLiteStore(":memory:", **kwargs),
                                   SQLiteStore(Path(tmp) / "r.db", **kwargs),
                                   *property_stores(**kwargs)]
        try:
            yield stores
        finally:
            for store in stores:
                store.close()


Address = tuple[tuple[str, ...], str]


def _load(stores: list[BaseStore], clock: FakeClock,
          rows: list[tuple[tuple[str, ...], str, str, bool]]) -> dict[Address, tuple[str, int]]:
    """Put the rows (value ``{"text", "n"}``, ``n`` the row's number) in batches of three,
    the clock moving; the live, indexed items: address -> (text, n)."""
    live: dict[Address, tuple[str, int]] = {}
    for start in range(0, len(rows), 3):
        ops = [PutOp(ns, key, {"text": text, "n": start + i}, index=None if indexed else False)
               for i, (ns, key, text, indexed) in enumerate(rows[start:start + 3])]
        for store in stores:
            store.batch(ops)
        for op, (_, _, text, indexed) in zip(ops, rows[start:start + 3], strict=True):
            if indexed:
                live[(op.namespace, op.key)] = (text, op.value["n"])
            else:
                live.pop((op.namespace, op.key), None)
        clock.advance(1)
    return live


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return normalize_rows(vectors)[0]


def expected_relevance(live: dict[Address, tuple[str, int]], prefix: tuple[str, ...],
                       query: str, mode: str, address: Address) -> dict[str, float]:
    """The documented parts, written out independently: keyword = the IDF of the query
    terms the item holds over the IDF of those found under the prefix (left out when none
    is found); vector = the cosine clamped to [0, 1]."""
    tokenizer = DefaultTokenizer()
    docs = {a: set(tokenizer.tokenize(text)) for a, (text, _) in live.items()
            if a[0][:len(prefix)] == prefix}
    docs = {a: terms for a, terms in docs.items() if terms}
    parts: dict[str, float] = {}
    if "keyword" in SIGNALS[mode]:
        terms = set(tokenizer.tokenize(query))
        df = {t: sum(1 for d in docs.values() if t in d) for t in terms}
        idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in df.items() if n}
        if idf:
            held = docs.get(address, set())
            parts["keyword"] = sum(w for t, w in idf.items() if t in held) / sum(idf.values())
    if "vector" in SIGNALS[mode]:
        q = _unit(EMBEDDER.embed_queries([query]))
        d = _unit(EMBEDDER.embed_documents([live[address][0]]))
        parts["vector"] = min(1.0, max(0.0, float(np.dot(q, d))))
    return parts


def _mean(parts: dict[str, float], query: str) -> float:
    weights = Ranking().for_query(query).weights
    total = sum(weights[name] for name in parts)
    return sum(weights[name] * value for name, value in parts.items()) / total if parts else 0.0


def _relevance(hits: Sequence[SearchItem]) -> dict[Address, float | None]:
    return {(h.namespace, h.key): h.relevance for h in hits}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, prefix=prefixes, query=queries, mode=modes, limit=st.integers(1, 5),
       offset=st.integers(0, 4))
def test_relevance_is_the_documented_value_whatever_the_page_candidates_or_backend(
        rows: list[Any], prefix: tuple[str, ...], query: str, mode: str, limit: int,
        offset: int) -> None:
    clock = FakeClock()
    with all_backends(clock) as stores:
        live = _load(stores, clock, rows)
        pages = []
        for store in stores:
            page = store.search(prefix, query=query, mode=mode, limit=limit,  # type: ignore[arg-type]
                                offset=offset)
            everything = store.search(prefix, query=query, mode=mode, limit=50)  # type: ignore[arg-type]
            whole = _relevance(everything)
            # as few candidates per signal as the page needs, and a filter keeping everything
            # (which SQL checks on the best keyword candidates only): hits one signal did not
            # reach are measured all the same
            narrow = store.search(prefix, query=query, mode=mode,  # type: ignore[arg-type]
                                  filter={"n": {"$gte": 0}}, limit=limit, offset=offset,
                                  ranking=Ranking(candidates=max(1, offset + limit)))
            assert all(whole[address] == value
                       for address, value in _relevance(narrow).items())
            for hit in page:
                address = (hit.namespace, hit.key)
                assert hit.relevance is not None and 0.0 <= hit.relevance <= 1.0
                assert all(0.0 <= v <= 1.0 for v in hit.relevance_by_signal.values())
                want = expected_relevance(live, prefix, query, mode, address)
                assert set(hit.relevance_by_signal) == set(want)
                for name, value in want.items():
                    assert hit.relevance_by_signal[name] == pytest.approx(value, abs=1e-6)
                assert hit.relevance == pytest.approx(_mean(want, query), abs=1e-6)
                # the page, and every other candidate, leave it as it is: the same deeper in
                # the list, and alone (a filter that keeps only this item)
                assert whole[address] == hit.relevance
                alone = store.search(prefix, query=query, mode=mode,  # type: ignore[arg-type]
                                     filter={"n": live[address][1]})
                assert _relevance(alone) == {address: hit.relevance}
            pages.append(page)
        # the same hits with the same relevance, to the bit, on every backend
        for other in pages[1:]:
            assert [(h.namespace, h.key, h.relevance, dict(h.relevance_by_signal))
                    for h in other] == \
                [(h.namespace, h.key, h.relevance, dict(h.relevance_by_signal))
                 for h in pages[0]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, prefix=prefixes, query=queries)
def test_vector_relevance_is_the_clamped_cosine_so_it_falls_with_the_ranking(
        rows: list[Any], prefix: tuple[str, ...], query: str) -> None:
    clock = FakeClock()
    with all_backends(clock) as stores:
        _load(stores, clock, rows)
        for store in stores:
            hits = store.search(prefix, query=query, mode="vector", limit=50)
            cosines = [h.details["vector"].score for h in hits]
            assert [h.relevance for h in hits] == [min(1.0, max(0.0, c)) for c in cosines]
            # monotone in the cosine: a better vector match never reads as less relevant
            relevance = [h.relevance or 0.0 for h in hits]
            assert relevance == sorted(relevance, reverse=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, prefix=prefixes, query=queries, mode=modes,
       min_score=st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 1.0])))
def test_min_score_keeps_exactly_the_hits_at_or_above_it(rows: list[Any],
                                                         prefix: tuple[str, ...], query: str,
                                                         mode: str, min_score: float) -> None:
    clock = FakeClock()
    with all_backends(clock) as stores:
        _load(stores, clock, rows)
        for store in stores:
            every = store.search(prefix, query=query, mode=mode, limit=50)  # type: ignore[arg-type]
            kept = store.search(prefix, query=query, mode=mode, limit=50,  # type: ignore[arg-type]
                                ranking=Ranking(min_score=min_score))
            assert [(h.namespace, h.key) for h in kept] == \
                [(h.namespace, h.key) for h in every if (h.relevance or 0.0) >= min_score]


# -- examples on every backend (the conformance fixtures) --------------------------------------


#: the vectors of the examples' texts (4 dimensions)
DIRECTIONS: dict[str, list[float]] = {
    "where does Ann live?": [1.0, 0.0, 0.0, 0.0],
    "She relocated to Lisbon": [0.752, math.sqrt(1 - 0.752 ** 2), 0.0, 0.0],
    "Moved to Porto last spring": [0.9, 0.0, math.sqrt(1 - 0.81), 0.0],
    "Ann has a cat": [0.0, 0.0, 0.0, 1.0],
    "Ann Ann Ann": [0.3, 0.0, 0.0, math.sqrt(1 - 0.09)],
    "Ann said hello to everyone in the wide world today": [0.752, 0.0, 0.0,
                                                             math.sqrt(1 - 0.752 ** 2)],
}


class Directions:
    """An embedder whose vectors are written down: :data:`DIRECTIONS`."""

    model, dims = "directions-4", 4

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.array([DIRECTIONS[t] for t in texts], dtype=np.float32)

    embed_documents = embed_queries = _embed


def test_a_hit_found_by_meaning_alone_reads_as_its_cosine(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(Directions(), fields=("text",)))
    store.put(("u",), "lisbon", {"text": "She relocated to Lisbon"})
    store.put(("u",), "cat", {"text": "Ann has a cat"})
    query = "where does Ann live?"
    hybrid = {h.key: h for h in store.search(("u",), query=query)}
    lisbon = hybrid["lisbon"]
    # found by meaning only (no query word), the weakest vector candidate but one: before,
    # min-max fusion gave it 0.5 here and 0.0 as the last vector candidate
    assert lisbon.details.keys() == {"vector"}
    assert lisbon.relevance_by_signal["vector"] == pytest.approx(0.752, abs=1e-6)
    assert lisbon.relevance_by_signal["keyword"] == 0.0  # holds no query word
    assert lisbon.relevance == pytest.approx(0.752 / 2, abs=1e-6)
    # "ann" is the only query word found: the cat item holds all the query weight there is
    assert hybrid["cat"].relevance_by_signal == {"keyword": 1.0, "vector": 0.0}
    vector = {h.key: h for h in store.search(("u",), query=query, mode="vector")}
    assert vector["lisbon"].relevance == pytest.approx(0.752, abs=1e-6)
    assert vector["cat"].relevance == 0.0 and vector["cat"].score == 0.0
    # a better match arriving changes the fused score, never the relevance
    store.put(("u",), "porto", {"text": "Moved to Porto last spring"})
    again = {h.key: h for h in store.search(("u",), query=query)}
    assert again["lisbon"].relevance == lisbon.relevance
    assert again["lisbon"].score != lisbon.score
    assert again["porto"].relevance == pytest.approx(0.9 / 2, abs=1e-6)


@pytest.mark.parametrize("flt", [None, {"kind": "note"}])
def test_a_hit_one_signal_did_not_reach_is_measured_all_the_same(
        make_store: Factory, flt: dict[str, str] | None) -> None:
    store = make_store(index=IndexConfig(Directions(), fields=("text",)))
    store.put(("u",), "repeats", {"text": "Ann Ann Ann", "kind": "note"})
    store.put(("u",), "long", {"text": "Ann said hello to everyone in the wide world today",
                               "kind": "note"})
    query = "where does Ann live?"
    for weights, winner in (({"keyword": 1.0, "vector": 0.9}, "repeats"),
                            ({"keyword": 0.9, "vector": 1.0}, "long")):
        # one candidate per signal: keywords find "repeats" (BM25 favours it), vectors
        # "long"; the weights pick which one fills the page
        (hit,) = store.search(("u",), query=query, filter=flt, limit=1,
                              ranking=Ranking(candidates=1, weights=weights))
        assert hit.key == winner
        assert set(hit.details) == {"keyword" if winner == "repeats" else "vector"}
        # "long" holds the one query word found though BM25 left it out; "repeats" has its
        # cosine though the vector signal left it out
        parts = {"keyword": 1.0, "vector": 0.3 if winner == "repeats" else 0.752}
        assert hit.relevance_by_signal == pytest.approx(parts, abs=1e-6)
        deep = {h.key: h for h in store.search(("u",), query=query, filter=flt, limit=2,
                                                ranking=Ranking(weights=weights))}
        assert set(deep[winner].details) == {"keyword", "vector"}
        assert hit.relevance == deep[winner].relevance
        assert hit.relevance == pytest.approx(
            (weights["keyword"] * parts["keyword"] + weights["vector"] * parts["vector"])
            / (weights["keyword"] + weights["vector"]), abs=1e-6)


def test_min_score_filters_on_relevance_before_the_page(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(Directions(), fields=("text",)))
    for key, text in (("lisbon", "She relocated to Lisbon"), ("cat", "Ann has a cat"),
                      ("porto", "Moved to Porto last spring")):
        store.put(("u",), key, {"text": text})
    query = "where does Ann live?"
    ranking = Ranking(min_score=0.4)
    kept = store.search(("u",), query=query, ranking=ranking)
    assert [h.key for h in kept] == ["cat", "porto"]  # 0.5 and 0.45; lisbon's 0.376 is out
    assert [h.key for h in store.search(("u",), query=query, ranking=ranking, limit=1,
                                        offset=1)] == ["porto"]
    assert store.search(("u",), query=query, ranking=Ranking(min_score=1.0)) == []
    assert len(store.search(("u",), query=query, ranking=Ranking(min_score=0.0))) == 3


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "0.5", True])
def test_min_score_is_a_relevance_within_0_and_1(bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"Ranking\.min_score .*\[0, 1\]"):
        Ranking(min_score=bad)  # type: ignore[arg-type]
