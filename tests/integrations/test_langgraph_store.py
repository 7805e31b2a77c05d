"""RememStore (LangGraph's BaseStore over remem): conformance with LangGraph's InMemoryStore
on random call sequences, on every remem backend, plus the options one at a time."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.memory")

from langgraph.store.base import GetOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from remem import FakeEmbedder
from remem.errors import FilterError, InvalidInputError, UnsupportedError
from remem.integrations.langgraph import RememStore, translate_filter
from remem.store import open_store
from tests.integrations.langgraph_conformance import random_batches, run_sequences

_FAKE = FakeEmbedder(dims=64)


def embed(texts: list[str]) -> list[list[float]]:
    """LangGraph's embed function: remem's deterministic fake, so both stores get the same
    vectors."""
    return [[float(x) for x in row] for row in _FAKE.embed_documents(texts)]


INDEX: Any = {"dims": 64, "embed": embed, "fields": ["text"]}
_schemas = itertools.count()
BACKENDS = ("memory", "sqlite-memory", "sqlite-file", "postgres")


@pytest.fixture(params=BACKENDS)
def open_remem(request: pytest.FixtureRequest, tmp_path: Path
               ) -> Iterator[Callable[..., RememStore]]:
    opened: list[RememStore] = []

    def factory(**options: Any) -> RememStore:
        backend = request.param
        if backend == "memory":
            location = "memory://"
        elif backend == "sqlite-memory":
            location = ":memory:"
        elif backend == "sqlite-file":
            location = str(tmp_path / f"lg{next(_schemas)}.db")
        else:
            location = request.getfixturevalue("pg_database")
            options.setdefault("schema", f"lg{next(_schemas)}")
        store = RememStore.open(location, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


#: every kind of difference the docs list; anything else is a bug
DOCUMENTED = {"order_without_query", "unscored_fill", "tie_order", "empty_namespace",
              "stale_vector", "reference_error"}


@pytest.mark.parametrize("indexed", [True, False], ids=["index", "no-index"])
def test_random_sequences_match_langgraph(open_remem: Callable[..., RememStore],
                                          indexed: bool) -> None:
    totals: Counter[str] = Counter()
    examples: list[str] = []
    for seed in range(6):
        reference = InMemoryStore(index=INDEX) if indexed else InMemoryStore()
        candidate = open_remem(index=INDEX) if indexed else open_remem()
        totals += run_sequences(reference, candidate, random_batches(seed, indexed=indexed),
                                 examples)
    print(f"\nconformance ({'index' if indexed else 'no index'}): {dict(totals)}")
    assert totals["ops"] >= 400
    undocumented = {kind: n for kind, n in totals.items()
                    if kind != "ops" and kind not in DOCUMENTED}
    assert undocumented == {}, "\n".join(examples[:5])


def test_reads_in_a_batch_see_the_store_before_it(open_remem: Callable[..., RememStore]
                                                  ) -> None:
    for store in (InMemoryStore(), open_remem()):
        store.put(("a",), "k", {"v": 1})
        results = store.batch([PutOp(("a",), "k", {"v": 2}), GetOp(("a",), "k"),
                               PutOp(("a",), "k", {"v": 3}), PutOp(("a",), "gone", None),
                               SearchOp(("a",), None, 10, 0, None)])
        assert results[1] is not None and results[1].value == {"v": 1}
        assert [item.value for item in results[4]] == [{"v": 1}]
        assert store.get(("a",), "k").value == {"v": 3}  # type: ignore[union-attr]


def test_async_twin(open_remem: Callable[..., RememStore]) -> None:
    store = open_remem(index=INDEX)

    async def scenario() -> list[Any]:
        await store.aput(("u",), "1", {"text": "green tea"})
        await store.aput(("u",), "2", {"text": "night train"})
        hits = await store.asearch(("u",), query="tea")
        return [(hit.key, round(hit.score or 0, 4)) for hit in hits]

    reference = InMemoryStore(index=INDEX)
    reference.put(("u",), "1", {"text": "green tea"})
    reference.put(("u",), "2", {"text": "night train"})
    want = [(hit.key, round(hit.score or 0, 4)) for hit in reference.search(("u",), query="tea")]
    assert asyncio.run(scenario()) == want
    assert asyncio.run(store.alist_namespaces()) == [("u",)]


def test_ttl_in_minutes_and_refresh(tmp_path: Path) -> None:
    now = [1_000_000.0]
    inner = open_store(str(tmp_path / "ttl.db"), clock=lambda: now[0])
    store = RememStore(inner, ttl={"default_ttl": 2, "refresh_on_read": True})
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "short", {"v": 2}, ttl=1)
    store.put(("t",), "never", {"v": 3}, ttl=None)
    assert inner.get(("t",), "default").expires_at.timestamp() == pytest.approx(  # type: ignore[union-attr]
        now[0] + 120)
    now[0] += 90  # 1.5 minutes: "short" expired, "default" read (and refreshed)
    assert store.get(("t",), "short") is None
    assert store.get(("t",), "default") is not None
    now[0] += 90  # 3 minutes after the put, 1.5 after the refresh
    assert store.get(("t",), "default", refresh_ttl=False) is not None
    now[0] += 60
    assert store.get(("t",), "default") is None
    assert store.get(("t",), "never") is not None
    assert [i.key for i in store.search(("t",))] == ["never"]
    inner.close()


def test_index_fields_and_per_put_index(open_remem: Callable[..., RememStore]) -> None:
    index = {"dims": 64, "embed": embed, "fields": ["title", "body.text"]}
    reference = InMemoryStore(index=index)
    store = open_remem(index=index)
    for target in (reference, store):
        target.put(("d",), "1", {"title": "tea", "body": {"text": "rain in Berlin"}})
        target.put(("d",), "2", {"title": "chess", "body": {"text": "tea garden"}})
        target.put(("d",), "3", {"title": "tea tea"}, index=False)
        target.put(("d",), "4", {"title": "bread", "other": "tea"}, index=["other"])
    want = [(h.key, round(h.score or 0, 4)) for h in reference.search(("d",), query="tea",
                                                                         limit=3)]
    have = [(h.key, round(h.score or 0, 4)) for h in store.search(("d",), query="tea",
                                                                     limit=3)]
    assert have == want


def test_search_modes_beyond_langgraph() -> None:
    store = RememStore.open(":memory:")  # no index: LangGraph ignores the query
    store.put(("d",), "1", {"text": "green tea"})
    store.put(("d",), "2", {"text": "night train"})
    assert [h.score for h in store.search(("d",), query="tea")] == [None, None]
    keyword = RememStore(store.store, mode="keyword")
    hits = keyword.search(("d",), query="tea")
    assert [h.key for h in hits] == ["1"] and hits[0].score is not None
    store.close()


def test_filter_translation_and_refusals() -> None:
    assert translate_filter({"a": 1, "b": {"$gt": 2}, "c": {"d": {"e": "x"}}}) == {
        "a": {"$eq": 1}, "b": {"$gt": 2}, "c.d.e": {"$eq": "x"}}
    assert translate_filter({"tags": {"$contains": "x"}}) == {"tags": {"$contains": "x"}}
    with pytest.raises(UnsupportedError, match=r"\$contains"):
        translate_filter({"tags": ["x", "y"]})
    assert translate_filter(None) is None
    with pytest.raises(FilterError, match=r"\$regex"):
        translate_filter({"a": {"$regex": "x"}})
    with pytest.raises(FilterError, match="not mixed"):
        translate_filter({"a": {"$eq": 1, "b": 2}})
    # a dotted key is a path, as LangGraph's SqliteStore reads it; inside an object, refused
    assert translate_filter({"a.b": 1, "c": {"$gt": float("inf")}}) == {
        "a.b": {"$eq": 1}, "c": {"$in": []}}
    with pytest.raises(FilterError, match="nested"):
        translate_filter({"a": {"b.c": 1}})
    with pytest.raises(UnsupportedError, match=r"\[\*\]"):
        RememStore.open(":memory:", index={"dims": 64, "embed": embed,
                                           "fields": ["sections[*].text"]})
    with pytest.raises(UnsupportedError, match="network"):
        RememStore.open(":memory:", index={"dims": 64, "embed": "openai:text-embedding-3"})
    with pytest.raises(InvalidInputError, match="dims"):
        RememStore.open(":memory:", index={"dims": 0, "embed": embed})
    with pytest.raises(InvalidInputError, match="remem store"):
        RememStore(InMemoryStore())  # type: ignore[arg-type]
    store = RememStore.open(":memory:")
    with pytest.raises(InvalidInputError, match="minutes"):
        store.put(("a",), "k", {"v": 1}, ttl=-1)
    store.close()
