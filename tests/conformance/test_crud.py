"""Put, get, delete, batches and namespaces: identical on every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from remem.errors import InvalidInputError, InvalidValueError, NamespaceError
from remem.store import BaseStore, DeleteOp, GetOp, ListNamespacesOp, PutOp, SearchOp
from tests.conftest import FakeClock


def test_put_get_round_trip_with_timestamps(store: BaseStore, clock: FakeClock) -> None:
    value = {"text": "喜欢喝茶 🍵", "nested": {"n": 1, "xs": [1, 2.5, None, True]}}
    store.put(("users", "u1"), "k1", value)
    item = store.get(("users", "u1"), "k1")
    assert item is not None
    assert item.value == value
    assert item.namespace == ("users", "u1")
    assert item.key == "k1"
    assert item.created_at == item.updated_at == datetime.fromtimestamp(clock.now, UTC)
    assert item.expires_at is None


def test_overwrite_keeps_created_at_and_moves_updated_at(store: BaseStore,
                                                         clock: FakeClock) -> None:
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    clock.advance(10)
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert (second.updated_at - first.updated_at).total_seconds() == pytest.approx(10)


def test_value_is_copied(store: BaseStore) -> None:
    value = {"xs": [1]}
    store.put(("a",), "k", value)
    value["xs"].append(2)
    got = store.get(("a",), "k")
    assert got is not None and got.value == {"xs": [1]}
    got.value["xs"].append(3)
    again = store.get(("a",), "k")
    assert again is not None and again.value == {"xs": [1]}


def test_delete_and_missing(store: BaseStore) -> None:
    store.put(("a",), "k", {"v": 1})
    store.delete(("a",), "k")
    assert store.get(("a",), "k") is None
    store.delete(("a",), "never-existed")  # not an error
    assert store.get(("nobody",), "k") is None


def test_namespaces_are_isolated(store: BaseStore) -> None:
    store.put(("a", "b"), "k", {"v": "ab"})
    store.put(("a", "bc"), "k", {"v": "abc"})
    store.put(("a.b",), "k", {"v": "a.b"})
    assert store.get(("a", "b"), "k").value == {"v": "ab"}  # type: ignore[union-attr]
    assert store.get(("a.b",), "k").value == {"v": "a.b"}  # type: ignore[union-attr]
    assert [i.value["v"] for i in store.search(("a", "b"))] == ["ab"]


@pytest.mark.parametrize(
    ("namespace", "fragment"),
    [
        ((), "at least one label"),
        (("a", ""), "label 1 is empty"),
        (("a", 3), "label 1 must be a string"),
        ("users", "got the string"),
        (("a\nb",), "control characters"),
        (("*",), "wildcard"),
        (("x" * 300,), "the limit is 256"),
    ],
)
def test_bad_namespaces_name_the_label_and_rule(store: BaseStore, namespace: object,
                                                fragment: str) -> None:
    with pytest.raises(NamespaceError, match=fragment):
        store.put(namespace, "k", {"v": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["", 5, "a\x00b"])
def test_bad_keys(store: BaseStore, key: object) -> None:
    with pytest.raises(NamespaceError, match="key"):
        store.put(("a",), key, {"v": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [[1, 2], "text", {"x": float("nan")}, {"x": object()},
                                   {"x": 2**70}])
def test_bad_values(store: BaseStore, value: object) -> None:
    with pytest.raises(InvalidValueError):
        store.put(("a",), "k", value)  # type: ignore[arg-type]
    assert isinstance(InvalidValueError("x"), ValueError)


def test_batch_reads_see_earlier_writes_in_order(store: BaseStore) -> None:
    results = store.batch([
        GetOp(("a",), "k"),
        PutOp(("a",), "k", {"v": 1}),
        GetOp(("a",), "k"),
        SearchOp(("a",)),
        ListNamespacesOp(),
        DeleteOp(("a",), "k"),
        GetOp(("a",), "k"),
    ])
    assert results[0] is None
    assert results[1] is None
    assert results[2] is not None and results[2].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[3]] == ["k"]  # type: ignore[union-attr]
    assert results[4] == [("a",)]
    assert results[6] is None
    assert store.get(("a",), "k") is None


def test_batch_items_share_one_timestamp(store: BaseStore) -> None:
    store.batch([PutOp(("a",), f"k{i}", {"i": i}) for i in range(5)])
    stamps = {store.get(("a",), f"k{i}").updated_at for i in range(5)}  # type: ignore[union-attr]
    assert len(stamps) == 1


def test_batch_rejects_foreign_objects(store: BaseStore) -> None:
    with pytest.raises(InvalidInputError, match="batch operation 1"):
        store.batch([GetOp(("a",), "k"), {"op": "get"}])  # type: ignore[list-item]


def test_list_namespaces(store: BaseStore) -> None:
    for ns in [("users", "u1", "memories"), ("users", "u2", "memories"), ("users", "u2", "prefs"),
               ("agents", "a1"), ("users", "u1")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == sorted([
        ("agents", "a1"), ("users", "u1"), ("users", "u1", "memories"),
        ("users", "u2", "memories"), ("users", "u2", "prefs"),
    ])
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [("users", "u1"),
                                                                     ("users", "u2")]
    assert store.list_namespaces(suffix=("memories",)) == [("users", "u1", "memories"),
                                                           ("users", "u2", "memories")]
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [("users", "u2", "prefs")]
    assert store.list_namespaces(max_depth=1) == [("agents",), ("users",)]
    assert store.list_namespaces(limit=2, offset=1) == [("users", "u1"),
                                                        ("users", "u1", "memories")]


def test_search_without_query_is_newest_first_with_paging(store: BaseStore,
                                                          clock: FakeClock) -> None:
    for i in range(5):
        store.put(("a", f"n{i % 2}"), f"k{i}", {"i": i})
        clock.advance(1)
    keys = [item.key for item in store.search(("a",))]
    assert keys == ["k4", "k3", "k2", "k1", "k0"]
    assert [i.key for i in store.search(("a",), limit=2, offset=1)] == ["k3", "k2"]
    assert [i.key for i in store.search(("a", "n1"))] == ["k3", "k1"]
    assert all(i.score is None and not i.details for i in store.search(("a",)))


def test_search_ties_break_by_namespace_then_key(store: BaseStore) -> None:
    store.batch([PutOp(("b",), "k2", {}), PutOp(("a",), "k9", {}), PutOp(("b",), "k1", {})])
    assert [(i.namespace, i.key) for i in store.search()] == [
        (("a",), "k9"), (("b",), "k1"), (("b",), "k2")]


def test_search_filters(store: BaseStore) -> None:
    store.put(("a",), "1", {"age": 30, "city": "北京", "tags": ["x", "y"]})
    store.put(("a",), "2", {"age": "30", "city": "Paris"})
    store.put(("a",), "3", {"age": True, "profile": {"lang": "zh"}})
    def keys(f: dict[str, object]) -> set[str]:
        return {i.key for i in store.search(("a",), filter=f)}
    assert keys({"age": 30}) == {"1"}
    assert keys({"age": {"$gte": 18}}) == {"1"}
    assert keys({"age": {"$ne": 30}}) == {"2", "3"}
    assert keys({"tags": {"$contains": "y"}}) == {"1"}
    assert keys({"profile.lang": "zh"}) == {"3"}
    assert keys({"$or": [{"city": "北京"}, {"city": "Paris"}]}) == {"1", "2"}
    assert keys({"$not": {"age": {"$exists": True}}}) == set()
    assert keys({"age": {"$in": [True, "30"]}}) == {"2", "3"}


def test_search_rejects_bad_paging(store: BaseStore) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        store.search(("a",), limit=0)
    with pytest.raises(InvalidInputError, match="offset"):
        store.search(("a",), offset=-1)


def test_async_methods_match_sync(store: BaseStore) -> None:
    async def scenario() -> list[object]:
        await store.aput(("a",), "k", {"v": 1})
        got = await store.aget(("a",), "k")
        found = await store.asearch(("a",), filter={"v": 1})
        spaces = await store.alist_namespaces()
        batch = await store.abatch([GetOp(("a",), "k")])
        await store.adelete(("a",), "k")
        gone = await store.aget(("a",), "k")
        return [got, found, spaces, batch, gone]

    got, found, spaces, batch, gone = asyncio.run(scenario())
    assert got is not None and got.value == {"v": 1}  # type: ignore[attr-defined]
    assert [i.key for i in found] == ["k"]  # type: ignore[attr-defined]
    assert spaces == [("a",)]
    assert batch == [got]
    assert gone is None
