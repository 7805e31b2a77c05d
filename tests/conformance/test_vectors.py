"""Vector index plumbing: which fields are embedded, opt-outs, ranking and score details."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed import FakeEmbedder
from remem.errors import EmbeddingError, IndexConfigError, UnsupportedError
from remem.store import BaseStore, IndexConfig, PutOp, SearchOp
from tests.conformance.conftest import Factory


class RecordingEmbedder(FakeEmbedder):
    """The fake embedder, remembering every document text it was asked to embed."""

    def __init__(self, dims: int = 32, **kwargs: str) -> None:
        super().__init__(dims, **kwargs)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


def test_only_configured_fields_are_embedded(make_store: Factory) -> None:
    embedder = RecordingEmbedder()
    store = make_store(index=IndexConfig(embedder, fields=("text", "meta.title")))
    store.put(("a",), "k", {"text": "tea in the morning", "meta": {"title": "habits"},
                            "secret": "do not embed"})
    store.put(("a",), "k2", {"other": "no indexed field here"})
    assert sorted(embedder.documents) == ["habits", "tea in the morning"]


def test_whole_value_is_the_default_field(make_store: Factory) -> None:
    embedder = RecordingEmbedder()
    store = make_store(index=IndexConfig(embedder))
    store.put(("a",), "k", {"b": 1, "a": "x"})
    assert embedder.documents == ['{"a": "x", "b": 1}']


def test_per_put_opt_out_and_override(make_store: Factory) -> None:
    embedder = RecordingEmbedder()
    store = make_store(index=IndexConfig(embedder, fields=("text",)))
    store.put(("a",), "skip", {"text": "green tea"}, index=False)
    store.put(("a",), "other", {"text": "ignored", "title": "green tea title"}, index=["title"])
    assert embedder.documents == ["green tea title"]
    hits = store.search(("a",), query="green tea", mode="vector")
    assert [h.key for h in hits] == ["other"]  # the opted-out item has no vector
    assert {i.key for i in store.search(("a",), filter={"text": "green tea"})} == {"skip"}


def test_query_ranks_by_similarity_with_details(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    texts = {"tea": "I drink green tea every morning", "code": "python code review today",
             "cat": "my cat sleeps all day", "tea2": "tea tea green"}
    store.batch([PutOp(("u", "1"), k, {"text": t}) for k, t in texts.items()])
    hits = store.search(("u",), query="green tea morning", mode="vector", limit=3)
    assert [h.key for h in hits][:2] == ["tea", "tea2"]
    assert [h.details["vector"].rank for h in hits] == [1, 2, 3]
    scores = [h.score for h in hits]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert hits[0].score == pytest.approx(hits[0].details["vector"].score)
    page = store.search(("u",), query="green tea morning", mode="vector", limit=2, offset=1)
    assert [h.key for h in page] == [h.key for h in hits[1:3]]
    assert [h.details["vector"].rank for h in page] == [2, 3]


def test_query_search_respects_filter_prefix_and_ttl(make_store: Factory, clock: object) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    store.put(("u", "1"), "a", {"text": "green tea", "kind": "drink"})
    store.put(("u", "2"), "b", {"text": "green tea", "kind": "drink"})
    store.put(("u", "1"), "c", {"text": "green tea leaves", "kind": "plant"})
    store.put(("u", "1"), "d", {"text": "green tea", "kind": "drink"}, ttl=5)
    assert [h.key for h in store.search(("u", "1"), query="green tea", mode="vector",
                                        filter={"kind": "drink"})] == ["a", "d"]
    clock.advance(6)  # type: ignore[attr-defined]
    assert [h.key for h in store.search(("u", "1"), query="green tea", mode="vector",
                                        filter={"kind": "drink"})] == ["a"]
    every = store.search(("u",), query="green tea", mode="vector")
    assert {h.key for h in every} == {"a", "b", "c"}


def test_replaced_and_deleted_items_leave_the_index(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    store.put(("a",), "k", {"text": "apples and pears"})
    store.put(("a",), "j", {"text": "pears"})
    store.put(("a",), "k", {"text": "submarines"})
    top = store.search(("a",), query="submarines", mode="vector")[0]
    assert top.key == "k" and top.score == pytest.approx(1.0, abs=1e-5)
    old = [h for h in store.search(("a",), query="apples and pears", mode="vector") if h.key == "k"]
    assert old and old[0].score is not None and old[0].score < 0.9  # the old vector is gone
    store.delete(("a",), "k")
    assert [h.key for h in store.search(("a",), query="submarines", mode="vector")] == ["j"]


def test_multi_field_items_appear_once_with_best_score(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("title", "body")))
    store.put(("a",), "k", {"title": "green tea", "body": "green tea"})
    store.put(("a",), "j", {"title": "coffee", "body": "green tea notes"})
    hits = store.search(("a",), query="green tea", mode="vector", limit=10)
    assert [h.key for h in hits] == ["k", "j"]


def test_read_your_writes_for_vector_search_in_a_batch(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    results = store.batch([
        PutOp(("a",), "k", {"text": "kiwi fruit"}),
        SearchOp(("a",), query="kiwi fruit", mode="vector"),
    ])
    assert [h.key for h in results[1]] == ["k"]  # type: ignore[union-attr]


def test_query_without_index_is_unsupported(store: BaseStore) -> None:
    with pytest.raises(UnsupportedError, match="IndexConfig"):
        store.search(("a",), query="anything", mode="vector")


def test_embedder_failure_writes_nothing(make_store: Factory) -> None:
    class Broken(FakeEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            raise RuntimeError("model crashed")

    store = make_store(index=IndexConfig(Broken(8), fields=("text",)))
    with pytest.raises(EmbeddingError) as info:
        store.batch([PutOp(("a",), "plain", {"x": 1}), PutOp(("a",), "k", {"text": "t"})])
    assert isinstance(info.value.__cause__, RuntimeError)  # the embedder's own error, chained
    assert store.search(("a",)) == []


def test_embedder_returning_wrong_shape_is_rejected(make_store: Factory) -> None:
    class Wrong(FakeEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            return np.zeros((len(texts), 3), dtype=np.float32)

    store = make_store(index=IndexConfig(Wrong(8), fields=("text",)))
    with pytest.raises(IndexConfigError, match="expected"):
        store.put(("a",), "k", {"text": "t"})


def test_the_models_of_stored_vectors_are_named(make_store: Factory) -> None:
    """Every backend names the embedding model its vectors were made with (what the refusal
    to open a store with vectors but without an embedder tells the user)."""
    from remem.store import stored_vector_models

    embedder = FakeEmbedder(32)
    store = make_store(index=IndexConfig(embedder=embedder, fields=("text",)))
    assert stored_vector_models(store) == []
    store.batch([PutOp(("ns",), "plain", {"n": 1}, index=False)])
    assert stored_vector_models(store) == []
    store.batch([PutOp(("ns",), "k", {"text": "green tea"})])
    assert stored_vector_models(store) == [embedder.model]
    store.delete(("ns",), "k")
    assert stored_vector_models(store) == []
