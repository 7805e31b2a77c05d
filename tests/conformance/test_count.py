"""Counting: ``CountOp`` / ``count`` agree with what a query-less search lists, on every
backend and through the scoped (tenant) store."""

from __future__ import annotations

import asyncio

import pytest

from remem.errors import FilterError, InvalidInputError, NamespaceError
from remem.store import BaseStore, CountOp, DeleteOp, PutOp, SearchOp
from remem.store.scoped import ScopedStore
from tests.conftest import FakeClock


def _fill(store: BaseStore, clock: FakeClock) -> None:
    """Eleven items in four namespaces, a third of them of kind "b", one expiring."""
    ops = [PutOp(("u", str(i % 3)), f"k{i}", {"kind": "a" if i % 3 else "b", "n": i},
                 event_at=1_000.0 + i)
           for i in range(9)]
    ops += [PutOp(("u", "0", "deep"), "d", {"kind": "b", "n": 9}, event_at=5_000.0),
            PutOp(("v",), "v", {"kind": "a", "n": 10}),
            PutOp(("u", "1"), "ttl", {"kind": "a", "n": 11}, ttl=60)]
    store.batch(ops)
    clock.advance(61)  # the item with a TTL has expired: never counted


def test_count_matches_the_listing(store: BaseStore, clock: FakeClock) -> None:
    _fill(store, clock)
    cases: list[tuple[tuple[str, ...], dict[str, object] | None]] = [
        ((), None), (("u",), None), (("u", "0"), None), (("u", "0", "deep"), None),
        (("w",), None), (("u",), {"kind": "b"}), ((), {"n": {"$gte": 5}}),
        (("u",), {"$not": {"kind": "a"}}),
    ]
    for prefix, flt in cases:
        listed = store.search(prefix, filter=flt, limit=100)
        assert store.count(prefix, filter=flt) == len(listed), (prefix, flt)
    assert store.count() == 11
    assert store.count(("u",), filter={"kind": "b"}) == 4
    assert store.count(("u", "0")) == 4  # the namespace and the one below it


def test_count_event_range(store: BaseStore, clock: FakeClock) -> None:
    _fill(store, clock)
    assert store.count(("u",), event_after=1_003.0, event_before=1_006.0) == 3
    assert store.count(("u",), event_after=4_000.0) == 1


def test_count_in_a_batch_sees_earlier_writes(store: BaseStore) -> None:
    results = store.batch([
        PutOp(("a",), "1", {"x": 1}), PutOp(("a",), "2", {"x": 2}),
        CountOp(("a",)), DeleteOp(("a",), "1"), CountOp(("a",)),
        CountOp(("a",), filter={"x": 1}), SearchOp(("a",)),
    ])
    assert results[2:6] == [2, None, 1, 0]


def test_count_refuses_bad_input_naming_it(store: BaseStore) -> None:
    with pytest.raises(NamespaceError, match="namespace_prefix must be a tuple"):
        store.count("users")  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        store.count(filter={"n": {"$between": [1, 2]}})
    with pytest.raises(InvalidInputError, match="event_after"):
        store.count(event_after="yesterday")  # type: ignore[arg-type]


def test_acount_matches_count(store: BaseStore) -> None:
    store.batch([PutOp(("a", str(i)), "k", {"i": i}) for i in range(4)])
    assert asyncio.run(store.acount(("a",), filter={"i": {"$lt": 3}})) == 3 == store.count(
        ("a",), filter={"i": {"$lt": 3}})


def test_scoped_count_sees_only_its_scope(store: BaseStore) -> None:
    acme, other = ScopedStore(store, ("t", "acme")), ScopedStore(store, ("t", "other"))
    acme.batch([PutOp(("m", str(i % 2)), f"k{i}", {"i": i}) for i in range(5)])
    other.put(("m", "0"), "k", {"i": 0})
    assert acme.count() == 5
    assert acme.count(("m", "1")) == 2
    assert acme.count(filter={"i": 0}) == 1
    assert other.count() == 1
    assert acme.batch([CountOp(("m",)), CountOp(("x",))]) == [5, 0]
    assert store.count(("t",)) == 6
