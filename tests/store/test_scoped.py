"""ScopedStore: every operation confined to a namespace prefix, results stripped of it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.errors import NamespaceError
from remem.store import InMemoryStore, open_store
from remem.store.base import BaseStore
from remem.store.scoped import ScopedStore
from remem.store.types import (
    DeleteOp,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
)

A = ("tenants", "a")
B = ("tenants", "b")


@pytest.fixture(params=["memory", "sqlite"])
def base(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    store = InMemoryStore() if request.param == "memory" else open_store(tmp_path / "s.db")
    store.setup()
    yield store
    store.close()


def test_writes_land_under_the_prefix_and_read_back_without_it(base: BaseStore) -> None:
    a = ScopedStore(base, A)
    a.put(("notes",), "n1", {"text": "green tea"})
    assert base.get((*A, "notes"), "n1") is not None
    assert base.get(("notes",), "n1") is None
    item = a.get(("notes",), "n1")
    assert item is not None and item.namespace == ("notes",)
    hits = a.search((), query="tea")
    assert [(h.namespace, h.key) for h in hits] == [(("notes",), "n1")]
    assert [(i.namespace, i.key) for i in a.iter_items()] == [(("notes",), "n1")]
    assert a.ttl_of(("notes",), "n1") is None


def test_other_scopes_and_unscoped_items_are_invisible(base: BaseStore) -> None:
    base.put(("notes",), "raw", {"text": "tea outside every tenant"})
    ScopedStore(base, B).put(("notes",), "b1", {"text": "tea of b"})
    a = ScopedStore(base, A)
    assert a.get(("notes",), "raw") is None
    assert a.get(("notes",), "b1") is None
    assert a.search((), query="tea") == []
    assert a.search(()) == []
    assert a.list_namespaces() == []
    assert list(a.iter_items()) == []
    a.delete(("notes",), "b1")  # deleting "the same" key in A leaves B's item alone
    assert ScopedStore(base, B).get(("notes",), "b1") is not None


def test_list_namespaces_prefix_suffix_depth_and_wildcards(base: BaseStore) -> None:
    a = ScopedStore(base, A)
    for ns in [("x", "y", "z"), ("x", "w"), ("q",)]:
        a.put(ns, "k", {"v": 1})
    ScopedStore(base, B).put(("x", "b-only"), "k", {"v": 1})
    assert a.list_namespaces() == [("q",), ("x", "w"), ("x", "y", "z")]
    assert a.list_namespaces(prefix=("x",)) == [("x", "w"), ("x", "y", "z")]
    assert a.list_namespaces(prefix=("*", "y")) == [("x", "y", "z")]
    assert a.list_namespaces(max_depth=1) == [("q",), ("x",)]
    assert a.list_namespaces(suffix=("z",)) == [("x", "y", "z")]
    # the suffix must not match labels of the scope prefix ("a" is the tenant label)
    assert a.list_namespaces(suffix=("a", "q")) == []
    assert a.list_namespaces(suffix=("*", "*", "*", "*")) == []
    assert a.list_namespaces(limit=1, offset=1) == [("x", "w")]


def test_batch_reads_see_earlier_writes_and_stay_in_scope(base: BaseStore) -> None:
    a = ScopedStore(base, A)
    results = a.batch([PutOp(("n",), "k", {"v": 1}), GetOp(("n",), "k"),
                       SearchOp(("n",)), ListNamespacesOp(), DeleteOp(("n",), "k"),
                       GetOp(("n",), "k")])
    assert results[0] is None
    assert isinstance(results[1], Item) and results[1].namespace == ("n",)
    assert [i.key for i in results[2]] == ["k"]  # type: ignore[union-attr]
    assert results[3] == [("n",)]
    assert results[5] is None
    with pytest.raises(NamespaceError):  # the prefix counts against the depth limit
        a.put(tuple(f"l{i}" for i in range(63)), "k", {})


def test_close_leaves_the_shared_store_open(base: BaseStore) -> None:
    ScopedStore(base, A).close()
    base.put(("n",), "k", {"v": 1})
    assert base.get(("n",), "k") is not None


# -- property: a scoped store behaves like a private store, and never shows anything else ----

labels = st.sampled_from(["a", "b", "x", "tenants", "*"])
namespaces = st.lists(labels.filter(lambda s: s != "*"), min_size=1, max_size=3).map(tuple)
keys = st.sampled_from(["k1", "k2", "k3"])
values = st.fixed_dictionaries({"text": st.sampled_from(["tea", "coffee", "tea and cake"]),
                                "n": st.integers(0, 3)})


@st.composite
def ops(draw: st.DrawFn) -> Op:
    kind = draw(st.sampled_from(["put", "get", "delete", "search", "list"]))
    if kind == "put":
        return PutOp(draw(namespaces), draw(keys), draw(values))
    if kind == "get":
        return GetOp(draw(namespaces), draw(keys))
    if kind == "delete":
        return DeleteOp(draw(namespaces), draw(keys))
    if kind == "search":
        prefix = draw(st.lists(labels.filter(lambda s: s != "*"), max_size=2).map(tuple))
        return SearchOp(prefix, filter=draw(st.sampled_from([None, {"n": {"$gte": 2}}])),
                        query=draw(st.sampled_from([None, "tea"])), limit=20)
    return ListNamespacesOp(
        prefix=draw(st.one_of(st.none(), st.lists(labels, min_size=1, max_size=2).map(tuple))),
        suffix=draw(st.one_of(st.none(), st.lists(labels, min_size=1, max_size=3).map(tuple))),
        max_depth=draw(st.one_of(st.none(), st.integers(1, 3))))


def _shape(result: Any) -> Any:
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_shape(r) if isinstance(r, Item) else r for r in result]
    return result


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "raw"]), ops()), max_size=25))
def test_scoped_store_equals_a_private_store(script: list[tuple[str, Op]]) -> None:
    shared = InMemoryStore()
    private = {"a": InMemoryStore(), "b": InMemoryStore()}
    scoped = {"a": ScopedStore(shared, A), "b": ScopedStore(shared, B)}
    for who, op in script:
        if who == "raw":  # writes outside every scope, including look-alike namespaces
            # (a raw write at or under a scope's prefix is that scope's data, or at the bare
            # prefix, hidden: see test_items_at_the_bare_prefix_stay_hidden)
            if isinstance(op, PutOp) and op.namespace[:2] not in (A, B):
                shared.batch([op])
            continue
        got = scoped[who].batch([op])[0]
        want = private[who].batch([op])[0]
        if isinstance(op, SearchOp) and op.query is not None:
            # scores depend on timestamps only through ties: compare the sets of hits
            assert sorted(map(str, _shape(got))) == sorted(map(str, _shape(want)))
        else:
            assert _shape(got) == _shape(want), (who, op)
        for item in got if isinstance(got, list) else [got]:
            if isinstance(item, Item):
                assert shared.get(A + item.namespace if who == "a" else B + item.namespace,
                                  item.key) is not None


def test_items_at_the_bare_prefix_stay_hidden() -> None:
    shared = InMemoryStore()
    shared.put(A, "k", {"text": "tea"})  # around the scope, at its bare prefix
    scoped = ScopedStore(shared, A)
    scoped.put(("notes",), "n", {"text": "tea"})
    assert [(i.namespace, i.key) for i in scoped.search()] == [(("notes",), "n")]
    assert [(i.namespace, i.key) for i in scoped.search(query="tea")] == [(("notes",), "n")]
    assert scoped.list_namespaces() == [("notes",)]
    assert [(i.namespace, i.key) for i in scoped.iter_items()] == [(("notes",), "n")]
