"""Property tests: every backend returns exactly what the Python reference predicts, for random
documents, random filters, random namespace prefixes and random vector queries."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.retrieval import DefaultTokenizer, Ranking
from remem.store import (
    BaseStore,
    IndexConfig,
    InMemoryStore,
    KeywordConfig,
    PutOp,
    SQLiteStore,
)
from remem.store.filters import parse_filter, to_predicate
from tests.conformance.conftest import property_stores
from tests.conftest import FakeClock

KEYS = ["a", "b", "c"]
WORDS = ["tea", "cat", "北京", "rain", "code", "Tea", "天气很好", "the"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0.0, 1.0, -2.5, 1e300]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "1", "tea", "Tea", "北京", "é", "😀"]),
    # valid Unicode without NUL, which no backend stores (refused on every put)
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=3),
    ),
    max_leaves=8,
)
documents = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3)
paths = st.lists(st.sampled_from(KEYS), min_size=1, max_size=2).map(".".join)
filter_scalars = scalars.filter(lambda s: not (isinstance(s, str) and "\x00" in s))


def _field_filters() -> st.SearchStrategy[dict[str, Any]]:
    comparisons = st.one_of(
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne"]), filter_scalars),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]),
                  st.one_of(st.integers(-3, 3), st.floats(-5, 5), st.sampled_from(
                      ["", "a", "tea", "北"]))),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$in", "$nin"]),
                  st.lists(filter_scalars, max_size=3)),
        st.builds(lambda v: {"$exists": v}, st.booleans()),
        st.builds(lambda v: {"$contains": v}, filter_scalars),
    )
    return st.one_of(
        st.builds(lambda p, v: {p: v}, paths, filter_scalars),
        st.builds(lambda p, c: {p: c}, paths, comparisons),
    )


filters = st.recursive(
    _field_filters(),
    lambda children: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(children, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(children, max_size=3)),
        st.builds(lambda x: {"$not": x}, children),
    ),
    max_leaves=6,
)
namespaces = st.sampled_from([("u", "1"), ("u", "2"), ("u", "1", "x"), ("v",)])
prefixes = st.sampled_from([(), ("u",), ("u", "1"), ("v",), ("w",)])
corpus = st.lists(
    st.tuples(namespaces, st.sampled_from([f"k{i}" for i in range(8)]), documents,
              st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
              st.booleans()),
    max_size=14,
)


@contextmanager
def all_backends(**kwargs: Any) -> Iterator[list[BaseStore]]:
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[BaseStore] = [
            InMemoryStore(**kwargs),
            SQLiteStore(":memory:", **kwargs),
            SQLiteStore(Path(tmp) / "p.db", **kwargs),
            *property_stores(**kwargs),
        ]
        try:
            yield stores
        finally:
            for store in stores:
                store.close()


def _load(stores: list[BaseStore], clock: FakeClock,
          rows: list[tuple[Any, str, dict[str, Any], str, bool]]) -> dict[Any, Any]:
    """Put rows in small batches with the clock moving; return the reference state."""
    state: dict[Any, Any] = {}
    for start in range(0, len(rows), 3):
        chunk = rows[start : start + 3]
        ops = [PutOp(ns, key, {**doc, "text": text}, index=None if indexed else False)
               for ns, key, doc, text, indexed in chunk]
        for store in stores:
            store.batch(ops)
        for op in ops:
            state[(op.namespace, op.key)] = (op.value, clock.now, ops.index(op))
        clock.advance(1)
    return state


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, flt=filters, prefix=prefixes, limit=st.integers(1, 20),
       offset=st.integers(0, 5))
def test_filtered_search_matches_reference(rows: list[Any], flt: dict[str, Any],
                                           prefix: tuple[str, ...], limit: int,
                                           offset: int) -> None:
    clock = FakeClock()
    with all_backends(clock=clock) as stores:
        state = _load(stores, clock, rows)
        predicate = to_predicate(parse_filter(flt))
        matching = sorted(
            ((ns, key) for (ns, key), (value, _, _) in state.items()
             if ns[: len(prefix)] == prefix and predicate(value)),
            key=lambda a: (-state[a][1], a[0], a[1]),
        )
        expected = matching[offset : offset + limit]
        for store in stores:
            got = [(i.namespace, i.key) for i in
                   store.search(prefix, filter=flt, limit=limit, offset=offset)]
            assert got == expected, type(store).__name__
            # a count is what the listing holds over all its pages
            assert store.count(prefix, filter=flt) == len(matching), type(store).__name__


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, flt=st.one_of(st.none(), filters), prefix=prefixes,
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
       limit=st.integers(1, 6))
def test_vector_search_identical_across_backends(rows: list[Any], flt: dict[str, Any] | None,
                                                 prefix: tuple[str, ...], query: str,
                                                 limit: int) -> None:
    clock = FakeClock()
    embedder = FakeEmbedder(16)
    with all_backends(clock=clock, index=IndexConfig(embedder, fields=("text",))) as stores:
        state = _load(stores, clock, rows)
        predicate = to_predicate(parse_filter(flt))
        indexed = {(ns, key) for ns, key, _, _, flag in rows if flag}
        # the last put of each address decides whether it is indexed
        last_flag = {(ns, key): flag for ns, key, _, _, flag in rows}
        candidates = [a for a in state if last_flag[a] and a in indexed
                      and a[0][: len(prefix)] == prefix and predicate(state[a][0])]
        results = [store.search(prefix, query=query, filter=flt, limit=limit, mode="vector")
                   for store in stores]
        reference = results[0]
        assert len(reference) == min(limit, len(candidates))
        assert {(h.namespace, h.key) for h in reference} <= set(candidates)
        for other in results[1:]:
            assert [(h.namespace, h.key) for h in other] == \
                [(h.namespace, h.key) for h in reference]
            for a, b in zip(other, reference, strict=True):
                assert abs((a.score or 0) - (b.score or 0)) < 1e-5


def _reference_bm25(state: dict[Any, Any], live: set[Any], prefix: tuple[str, ...],
                    predicate: Any, query: str) -> list[tuple[Any, float]]:
    """BM25 written out independently: k1 = 1.2, b = 0.75, statistics over the prefix."""
    tokenizer = DefaultTokenizer()
    docs = {a: tokenizer.tokenize(state[a][0]["text"]) for a in live
            if a[0][: len(prefix)] == prefix}
    docs = {a: terms for a, terms in docs.items() if terms}
    if not docs:
        return []
    avg = sum(len(t) for t in docs.values()) / len(docs)
    terms = list(dict.fromkeys(tokenizer.tokenize(query)))
    df = {t: sum(1 for d in docs.values() if t in d) for t in terms}
    scored = []
    for address, doc in docs.items():
        if not predicate(state[address][0]) or not set(terms) & set(doc):
            continue
        score = 0.0
        for t in terms:
            tf = doc.count(t)
            if tf:
                idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avg))
        scored.append((address, score))
    return sorted(scored, key=lambda p: (-p[1], p[0][0], p[0][1]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, flt=st.one_of(st.none(), filters), prefix=prefixes,
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
       limit=st.integers(1, 8))
def test_keyword_search_matches_reference_bm25(rows: list[Any], flt: dict[str, Any] | None,
                                               prefix: tuple[str, ...], query: str,
                                               limit: int) -> None:
    clock = FakeClock()
    with all_backends(clock=clock, keyword=KeywordConfig(fields=("text",))) as stores:
        state = _load(stores, clock, rows)
        last_flag = {(ns, key): flag for ns, key, _, _, flag in rows}
        live = {a for a in state if last_flag[a]}
        expected = _reference_bm25(state, live, prefix, to_predicate(parse_filter(flt)), query)
        for store in stores:
            got = store.search(prefix, query=query, filter=flt, limit=limit)
            assert len(got) == min(limit, len(expected)), type(store).__name__
            want = dict(expected)
            for hit in got:
                assert hit.score == pytest.approx(want[(hit.namespace, hit.key)], rel=1e-9)
            # the page holds the best scores (ties may pick either of equal items)
            cut = expected[len(got) - 1][1] if got else 0.0
            assert all(s >= cut - 1e-9 for _, s in expected[: len(got)])
            assert all(hit.score >= cut - 1e-9 for hit in got)  # type: ignore[operator]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=corpus, flt=st.one_of(st.none(), filters), prefix=prefixes,
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
       limit=st.integers(1, 8), fusion=st.sampled_from(["rrf", "weighted"]))
def test_hybrid_search_identical_across_backends(rows: list[Any], flt: dict[str, Any] | None,
                                                 prefix: tuple[str, ...], query: str,
                                                 limit: int, fusion: str) -> None:
    clock = FakeClock()
    with all_backends(clock=clock, index=IndexConfig(FakeEmbedder(16), fields=("text",))
                      ) as stores:
        _load(stores, clock, rows)
        ranking = Ranking(fusion=fusion)  # type: ignore[arg-type]
        results = [store.search(prefix, query=query, filter=flt, limit=limit, ranking=ranking)
                   for store in stores]
        reference = [(h.namespace, h.key, h.score, dict(h.details)) for h in results[0]]
        for other in results[1:]:
            got = [(h.namespace, h.key, h.score, dict(h.details)) for h in other]
            assert [g[:2] for g in got] == [r[:2] for r in reference]
            for g, r in zip(got, reference, strict=True):
                assert g[2] == pytest.approx(r[2], abs=1e-6)
                assert {k: v.rank for k, v in g[3].items()} == {k: v.rank for k, v in r[3].items()}
