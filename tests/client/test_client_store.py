"""``client.store`` against a real server on loopback: what the Client puts comes back
through the Client and through ``open_store`` on the same file (and the other way round), the
answers are the store's own types, sync and async, and the server's errors are remem's
(every row's parameters and wire are checked in tests/surfaces/test_parity_store.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI

from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import (
    InvalidInputError,
    NotFoundError,
    ReservedNamespaceError,
    UsageError,
)
from remem.server import ServerConfig, create_app
from remem.server.keys import tenant_prefix
from remem.store import open_store
from remem.store.types import Item, SearchItem
from remem.testing.server import ThreadedServer

NOTES = ("notes", "alice")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, FastAPI]]:
    """A server on a SQLite file: its url, the file, the app (for keys)."""
    db = tmp_path_factory.mktemp("store") / "served.db"
    app = create_app(ServerConfig(db=str(db), embedder=FakeEmbedder(), mcp=False))
    with ThreadedServer(app) as server:
        yield server.url, db, app
    app.state.remem.close()


@pytest.fixture(scope="module")
def key(served: tuple[str, Path, FastAPI]) -> str:
    return served[2].state.remem.keys.create("acme")[0]


def test_a_put_comes_back_through_the_client_and_the_file(
        served: tuple[str, Path, FastAPI], key: str) -> None:
    url, db, _ = served
    value = {"text": "green tea, no sugar", "tags": ["drinks", "thé"], "n": {"cups": 2}}
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    with Client(url, key) as client:
        assert client.store.put(NOTES, "tea", value, event_at=when) is None
        item = client.store.get(NOTES, "tea")
    assert type(item) is Item
    assert (item.namespace, item.key, item.value, item.event_at) == (NOTES, "tea", value, when)
    assert item.created_at.tzinfo is UTC and item.expires_at is None
    # the tenant's namespace is under its prefix in the file, the same item
    store = open_store(db)
    try:
        stored = store.get((*tenant_prefix("acme"), *NOTES), "tea")
        assert stored is not None
        assert (stored.value, stored.created_at, stored.updated_at, stored.event_at) == (
            item.value, item.created_at, item.updated_at, item.event_at)
        # and the other way round: written to the file, read through the Client
        store.put((*tenant_prefix("acme"), *NOTES), "coffee", {"text": "black coffee"},
                  ttl=3600)
    finally:
        store.close()
    with Client(url, key) as client:
        coffee = client.store.get(NOTES, "coffee")
        assert coffee.value == {"text": "black coffee"} and coffee.expires_at is not None


def test_search_count_list_and_delete(served: tuple[str, Path, FastAPI], key: str) -> None:
    url, _, _ = served
    with Client(url, key) as client:
        store = client.store
        store.put(("music", "bob"), "jazz", {"text": "Bob likes jazz"}, index=["text"])
        store.put(("music", "bob"), "hidden", {"text": "jazz again"}, index=False)
        store.put(("music", "eve"), "folk", {"text": "Eve likes folk"})
        hits = store.search(("music",), query="jazz", mode="keyword")
        assert [hit.key for hit in hits] == ["jazz"]  # index=False: not found by query
        assert type(hits[0]) is SearchItem and hits[0].score is not None
        assert 0 < (hits[0].relevance or 0) <= 1 and "keyword" in hits[0].details
        listed = store.search(("music", "bob"), filter={"text": {"$eq": "jazz again"}})
        assert [(hit.key, hit.score) for hit in listed] == [("hidden", None)]
        assert store.count(("music", "bob")) == 2 == len(store.search(("music", "bob")))
        assert store.count(("music",), filter={"text": "Bob likes jazz"}) == 1
        assert store.list_namespaces(prefix=("music",)) == [("music", "bob"), ("music", "eve")]
        assert store.list_namespaces(prefix=("music",), max_depth=1) == [("music",)]
        assert store.list_namespaces(prefix=("music",), suffix=("eve",)) == [("music", "eve")]
        assert store.list_namespaces(prefix=("music", "*"), limit=1, offset=1) == [
            ("music", "eve")]
        store.delete(("music", "bob"), "hidden")
        store.delete(("music", "bob"), "hidden")  # a missing item: not an error
        assert store.count(("music", "bob")) == 1
        with pytest.raises(NotFoundError, match="no item with key 'hidden'"):
            store.get(("music", "bob"), "hidden")


def test_async_twins(served: tuple[str, Path, FastAPI], key: str) -> None:
    url, _, _ = served

    async def run() -> list[object]:
        async with Client(url, key) as client:
            store = client.store
            await store.aput(("async",), "a", {"text": "async tea"})
            got = await store.aget(("async",), "a")
            found = await store.asearch(("async",), query="tea")
            counted = await store.acount(("async",))
            namespaces = await store.alist_namespaces(prefix=("async",))
            await store.adelete(("async",), "a")
            return [got.value, [hit.key for hit in found], counted, namespaces,
                    await store.acount(("async",))]

    assert asyncio.run(run()) == [{"text": "async tea"}, ["a"], 1, [("async",)], 0]


def test_server_errors_are_remem_errors(served: tuple[str, Path, FastAPI], key: str) -> None:
    url, _, app = served
    read_only = app.state.remem.keys.create("acme", read_only=True)[0]
    with Client(url, key) as client:
        store = client.store
        with pytest.raises(NotFoundError, match=r"no item with key 'nope'.*HTTP 404"):
            store.get(NOTES, "nope")
        # a family's root: the raw store never writes there, nor reads files
        with pytest.raises(ReservedNamespaceError, match=r"use /v1/memories.*HTTP 403"):
            store.put(("memories", "user", "alice"), "k", {"text": "x"})
        with pytest.raises(ReservedNamespaceError, match="HTTP 403"):
            store.get(("files", "default"), "k")
        # rules only the store knows are the server's 422
        with pytest.raises(InvalidInputError, match=r"'\*'.*HTTP 422"):
            store.put(("*",), "k", {"text": "x"})
        with pytest.raises(InvalidInputError, match=r"unknown filter operator.*HTTP 422"):
            store.search(filter={"text": {"$bogus": 1}})
        # the request's own rules are checked before anything is sent
        with pytest.raises(InvalidInputError, match=r"GetItemRequest: key"):
            store.get(NOTES, "")
        with pytest.raises(InvalidInputError, match=r"StoreSearchBody: limit"):
            store.search(limit=0)
        store.put(("kept",), "k", {"text": "kept"})
    with Client(url, read_only) as client:
        assert client.store.get(("kept",), "k").value == {"text": "kept"}
        with pytest.raises(UsageError, match="read-only"):
            client.store.delete(("kept",), "k")


def test_tenants_see_only_their_own_items(served: tuple[str, Path, FastAPI], key: str) -> None:
    url, _, app = served
    with Client(url, key) as client:
        client.store.put(NOTES, "secret", {"text": "acme's"})
    other = app.state.remem.keys.create("globex")[0]
    with Client(url, other) as client:
        assert client.store.list_namespaces() == []
        assert client.store.count() == 0
        with pytest.raises(NotFoundError):
            client.store.get(NOTES, "secret")
        # A's full namespace spelled out is B's own namespace of that name
        with pytest.raises(NotFoundError):
            client.store.get((*tenant_prefix("acme"), *NOTES), "secret")
