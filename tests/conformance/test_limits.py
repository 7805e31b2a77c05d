"""Input limits every backend enforces the same way, before anything is written: values nest
at most 64 levels, filters hold at most 200 conditions and 20,000 operands, TTLs and
timestamps stay within year 9999, and an embedder's failure, non-finite vectors and all-zero
vectors for text with a word are an EmbeddingError. What the limits allow is stored and read
back by every read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed import FakeEmbedder
from remem.errors import EmbeddingError, FilterError, InvalidInputError, InvalidValueError
from remem.store import BaseStore, IndexConfig, PutOp
from remem.store.filters import MAX_CONDITIONS, MAX_OPERANDS
from remem.store.types import MAX_TTL, MAX_VALUE_DEPTH
from tests.conformance.conftest import Factory


def nested(levels: int, leaf: Any = 1) -> dict[str, Any]:
    """``{"a": {"a": ... leaf}}``: ``levels`` objects deep (the outer one is level 1)."""
    value: dict[str, Any] = {"a": leaf}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_values_nested_past_the_limit_are_refused(store: BaseStore) -> None:
    for levels in (MAX_VALUE_DEPTH + 1, 1_500):
        with pytest.raises(InvalidValueError, match=f"nested deeper than {MAX_VALUE_DEPTH}"):
            store.batch([PutOp(("a",), "ok", {"x": 1}), PutOp(("a",), "deep", nested(levels))])
    assert store.search(("a",)) == []


def test_values_at_the_limit_are_read_back_by_every_read(store: BaseStore) -> None:
    value = {"list": [nested(MAX_VALUE_DEPTH - 2, "tea")]}
    store.put(("a",), "k", value)
    item = store.get(("a",), "k")
    assert item is not None and item.value == value
    assert [i.value for i in store.search(("a",))] == [value]
    assert [i.value for i in store.search(("a",), filter={"list": {"$exists": True}})] == [value]
    assert [i.value for i in store.iter_items(("a",))] == [value]


def test_the_largest_filters_run_and_one_more_condition_is_refused(store: BaseStore) -> None:
    store.put(("a",), "tea", {"drink": "green tea", "n": 3})
    store.put(("a",), "coffee", {"drink": "coffee", "n": 4})
    chain = {"$or": [{"drink": {"$contains": f"tea{i}"}} for i in range(MAX_CONDITIONS - 2)]
             + [{"drink": {"$contains": "tea"}}]}
    assert [i.key for i in store.search(("a",), filter=chain)] == ["tea"]
    wide = {f"k{i}": {"$ne": i} for i in range(MAX_CONDITIONS - 2)} | {"n": 4}
    assert [i.key for i in store.search(("a",), filter=wide)] == ["coffee"]
    listed = {"n": {"$in": list(range(4, MAX_OPERANDS + 5))}}
    with pytest.raises(FilterError, match=f"the limit is {MAX_OPERANDS}"):
        store.search(("a",), filter=listed)
    listed = {"n": {"$in": list(range(4, MAX_OPERANDS + 4))}}
    assert [i.key for i in store.search(("a",), filter=listed)] == ["coffee"]
    for too_big in ({"$or": [{"drink": "tea"} for _ in range(500)]},
                    {f"k{i}": i for i in range(500)}):
        with pytest.raises(FilterError, match=f"the limit is {MAX_CONDITIONS}"):
            store.search(("a",), filter=too_big)


def test_ttls_and_timestamps_stay_within_year_9999(store: BaseStore) -> None:
    for ttl in (MAX_TTL + 1, 3e11, 1e300, float("inf")):
        with pytest.raises(InvalidInputError, match="ttl must be at most"):
            store.put(("a",), "far", {"x": 1}, ttl=ttl)
    with pytest.raises(InvalidInputError, match="event_at must be epoch seconds within"):
        store.put(("a",), "far", {"x": 1}, event_at=1e12)
    store.put(("a",), "longest", {"x": 1}, ttl=MAX_TTL)
    store.batch([PutOp(("a",), "imported", {"x": 2}, ttl=MAX_TTL, created_at=253_402_000_000.0,
                       updated_at=253_402_000_000.0)])
    items = {i.key: i for i in store.search(("a",), refresh_ttl=False)}
    assert sorted(items) == ["imported", "longest"]
    assert all(i.expires_at is not None for i in items.values())
    assert items["imported"].expires_at is not None
    assert items["imported"].expires_at.year == 9999
    assert sorted(i.key for i in store.iter_items(("a",))) == ["imported", "longest"]
    assert store.get(("a",), "longest") is not None  # refreshed on read: still in range


class _Faulty(FakeEmbedder):
    def __init__(self, fault: str) -> None:
        super().__init__(8)
        self.fault = fault

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fault == "raise":
            raise OSError("the model file is gone")
        vectors = super().embed_documents(texts).copy()
        if self.fault == "zero":
            vectors[0] = 0
        else:
            vectors[0, 3] = np.nan if self.fault == "nan" else -np.inf
        return vectors


@pytest.mark.parametrize("fault", ["raise", "nan", "inf", "zero"])
def test_embedder_faults_are_embedding_errors_and_write_nothing(make_store: Factory,
                                                                fault: str) -> None:
    store = make_store(index=IndexConfig(_Faulty(fault), fields=("text",)))
    with pytest.raises(EmbeddingError, match="fake-8") as info:
        store.batch([PutOp(("a",), "plain", {"x": 1}), PutOp(("a",), "k", {"text": "tea"})])
    if fault == "raise":
        assert isinstance(info.value.__cause__, OSError)
    elif fault == "zero":
        assert "an all-zero vector for text 0 of 1 ('tea')" in str(info.value)
    else:
        assert "NaN or infinite values for text 0 of 1 ('tea')" in str(info.value)
    assert store.search(("a",)) == []


def test_text_without_a_word_may_embed_to_zeros(make_store: Factory) -> None:
    # the FakeEmbedder's answer for punctuation or an emoji: stored, scoring 0, never NaN
    store = make_store(index=IndexConfig(FakeEmbedder(8), fields=("text",)))
    store.put(("a",), "symbols", {"text": "?! 🙂"})
    store.put(("a",), "tea", {"text": "tea"})
    hits = store.search(("a",), query="tea", mode="vector")
    assert [(h.key, h.score) for h in hits] == [("tea", pytest.approx(1.0)),
                                                ("symbols", 0.0)]
    assert [h.score for h in store.search(("a",), query="???", mode="vector")] == [0.0, 0.0]


def test_an_address_past_the_byte_limit_is_refused_the_same_everywhere(
        store: BaseStore) -> None:
    """A 1,024-character Chinese key (3,072 bytes) fits SQLite but no PostgreSQL btree row:
    every backend refuses it alike, and takes the largest address that fits."""
    from remem.errors import NamespaceError
    from remem.store.scoped import ScopedStore
    from remem.store.types import MAX_ADDRESS_BYTES

    with pytest.raises(NamespaceError, match=r"take 3\d{3} bytes in UTF-8"):
        store.put(("notes",), "键" * 1024, {"text": "x"})
    with pytest.raises(NamespaceError, match=r"the limit is 2048"):
        store.put(tuple("标" * 200 for _ in range(6)), "k", {"text": "x"})
    # the check runs after a scoped view adds its prefix, where the backend stores it
    scoped = ScopedStore(store, ("tenants", "acme"))
    key = "é" * 512  # 1,024 bytes
    labels = ("n" * 255, "o" * 255, "p" * 255, "q" * 255)  # 4 x (255 + 1) bytes
    used = sum(len(label) + 1 for label in labels) + 2 * len(key)
    assert used == MAX_ADDRESS_BYTES  # exactly at the limit
    store.put(labels, key, {"text": "at the limit"})
    assert store.get(labels, key) is not None
    with pytest.raises(NamespaceError):
        scoped.put(labels, key, {"text": "past it once the prefix is added"})
    assert store.count() == 1
