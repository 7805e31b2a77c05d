"""TTL: an expired item is never returned by any read, swept or not."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from remem.errors import InvalidInputError
from remem.store import BaseStore, TTLConfig
from tests.conformance.conftest import Factory
from tests.conftest import FakeClock


def test_expired_items_are_invisible_to_every_read(store: BaseStore, clock: FakeClock) -> None:
    store.put(("a",), "short", {"v": 1}, ttl=10)
    store.put(("a",), "forever", {"v": 2})
    store.put(("b",), "short", {"v": 3}, ttl=timedelta(seconds=10))
    clock.advance(9.5)
    assert store.get(("a",), "short", refresh_ttl=False) is not None
    clock.advance(1)
    assert store.get(("a",), "short") is None
    assert [i.key for i in store.search(("a",))] == ["forever"]
    assert store.search(("a",), filter={"v": 1}) == []
    assert store.list_namespaces() == [("a",)]
    assert [i.key for i in store.iter_items()] == ["forever"]


def test_expires_at_is_reported(store: BaseStore, clock: FakeClock) -> None:
    store.put(("a",), "k", {"v": 1}, ttl=60)
    item = store.get(("a",), "k", refresh_ttl=False)
    assert item is not None and item.expires_at is not None
    assert (item.expires_at - item.updated_at).total_seconds() == pytest.approx(60)


def test_refresh_on_read_extends_life(make_store: Factory, clock: FakeClock) -> None:
    store = make_store(ttl=TTLConfig(refresh_on_read=True))
    store.put(("a",), "k", {"v": 1}, ttl=10)
    for _ in range(3):
        clock.advance(8)
        assert store.get(("a",), "k") is not None  # each read pushes expiry to now + 10
    clock.advance(8)
    assert [i.key for i in store.search(("a",))] == ["k"]  # search refreshes too
    clock.advance(8)
    assert store.get(("a",), "k", refresh_ttl=False) is not None
    clock.advance(3)
    assert store.get(("a",), "k") is None


def test_no_refresh_when_disabled(make_store: Factory, clock: FakeClock) -> None:
    store = make_store(ttl=TTLConfig(refresh_on_read=False))
    store.put(("a",), "k", {"v": 1}, ttl=10)
    clock.advance(8)
    assert store.get(("a",), "k") is not None
    clock.advance(3)
    assert store.get(("a",), "k") is None
    store.put(("a",), "k2", {"v": 1}, ttl=10)
    clock.advance(8)
    assert store.get(("a",), "k2", refresh_ttl=True) is not None
    clock.advance(8)
    assert store.get(("a",), "k2") is not None


def test_default_ttl_and_explicit_none(make_store: Factory, clock: FakeClock) -> None:
    store = make_store(ttl=TTLConfig(default_ttl=5, refresh_on_read=False))
    store.put(("a",), "default", {"v": 1})
    store.put(("a",), "never", {"v": 1}, ttl=None)
    clock.advance(6)
    assert store.get(("a",), "default") is None
    assert store.get(("a",), "never") is not None


def test_sweep_deletes_only_expired(store: BaseStore, clock: FakeClock) -> None:
    store.put(("a",), "k1", {"v": 1}, ttl=1)
    store.put(("a",), "k2", {"v": 1}, ttl=1)
    store.put(("a",), "k3", {"v": 1}, ttl=100)
    store.put(("a",), "k4", {"v": 1})
    assert store.sweep() == 0
    clock.advance(2)
    assert store.sweep() == 2
    assert store.sweep() == 0
    assert sorted(i.key for i in store.search(("a",))) == ["k3", "k4"]


def test_put_over_expired_item_is_a_new_item(store: BaseStore, clock: FakeClock) -> None:
    store.put(("a",), "k", {"v": 1}, ttl=1)
    clock.advance(5)
    store.put(("a",), "k", {"v": 2})
    item = store.get(("a",), "k")
    assert item is not None and item.created_at == item.updated_at


@pytest.mark.parametrize("ttl", [0, -1, float("inf"), "10"])
def test_bad_ttl(store: BaseStore, ttl: object) -> None:
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(("a",), "k", {"v": 1}, ttl=ttl)  # type: ignore[arg-type]


def test_background_sweeper_deletes_expired_items(make_store: Factory, clock: FakeClock) -> None:
    store = make_store(ttl=TTLConfig(sweep_interval=0.02))
    store.put(("a",), "k", {"v": 1}, ttl=1)
    store.put(("a",), "keep", {"v": 1})
    clock.advance(2)
    deadline = time.monotonic() + 10
    # ttl_of reads the raw record, expired or not: it turns None only once the row is deleted
    while store.ttl_of(("a",), "k") is not None:
        assert time.monotonic() < deadline, "the background sweeper never deleted the item"
        time.sleep(0.02)
    assert [i.key for i in store.search(("a",))] == ["keep"]


def test_bad_sweep_interval() -> None:
    with pytest.raises(InvalidInputError, match="sweep_interval"):
        TTLConfig(sweep_interval=0)
