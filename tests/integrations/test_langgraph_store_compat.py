"""RememStore's LangGraph-compatible surface, as LangGraph's SqliteStore behaves (its test
suite is the referee, run locally; these pin the same behaviour with literal values on every
remem backend): InvalidNamespaceError, labels LangGraph allows and remem escapes,
index_config and embeddings, filters with dotted keys and operands remem's language refuses,
refresh_on_read, the TTL sweeper, and the order of equal scores."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.memory")

from langgraph.store.base import (
    Embeddings,
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError

from remem import FakeEmbedder
from remem.errors import FilterError, InvalidInputError, NamespaceError
from remem.integrations.langgraph import InvalidNamespaceError, RememStore
from remem.integrations.langgraph.translate import decode_label, encode_label
from remem.store import IndexConfig, TTLConfig, open_store
from tests.integrations.test_langgraph_store import BACKENDS, embed

Opener = Callable[..., RememStore]
_schemas = itertools.count()


@pytest.fixture(params=BACKENDS)
def open_remem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """RememStore.open on each backend (closed after the test)."""
    opened: list[RememStore] = []

    def factory(**options: Any) -> RememStore:
        location = {"memory": "memory://", "sqlite-memory": ":memory:",
                    "sqlite-file": str(tmp_path / f"c{next(_schemas)}.db")}.get(request.param)
        if location is None:
            location = request.getfixturevalue("pg_database")
            options.setdefault("schema", f"compat{next(_schemas)}")
        opened.append(RememStore.open(location, **options))
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


# -- InvalidNamespaceError ---------------------------------------------------------------------

@pytest.mark.parametrize("namespace", [("foo.bar",), ("foo", ""), ("foo", 1), ("a", "b\x00")])
@pytest.mark.parametrize("kind", ["get", "put", "delete", "search", "prefix", "suffix"])
def test_a_bad_label_fails_the_whole_batch(namespace: tuple[Any, ...], kind: str) -> None:
    store = RememStore.open(":memory:")
    store.put(("foo", "bar"), "key", {"original": True})
    op = {"get": GetOp(namespace, "key"), "put": PutOp(namespace, "key", {"changed": True}),
          "delete": PutOp(namespace, "key", None), "search": SearchOp(namespace),
          "prefix": ListNamespacesOp((MatchCondition("prefix", namespace),)),
          "suffix": ListNamespacesOp((MatchCondition("suffix", namespace),))}[kind]
    with pytest.raises(InvalidNamespaceError, match=r"label [01]") as caught:
        store.batch([PutOp(("valid",), "key", {}), op])
    # one error, three ways to catch it
    assert isinstance(caught.value, LangGraphNamespaceError)
    assert isinstance(caught.value, NamespaceError) and isinstance(caught.value, ValueError)
    assert store.get(("valid",), "key") is None  # nothing of the batch ran
    assert store.get(("foo", "bar"), "key").value == {"original": True}  # type: ignore[union-attr]
    store.close()


def test_friendly_methods_and_remem_rules_raise_it_too() -> None:
    store = RememStore.open(":memory:")
    calls: list[Callable[[], Any]] = [
        lambda: store.put(("a.b",), "k", {"v": 1}), lambda: store.get(("a.b",), "k"),
        lambda: store.search(("a", "")), lambda: store.delete(("a.b",), "k"),
        lambda: store.list_namespaces(prefix=("a.b",)),
        lambda: store.put(("langgraph", "x"), "k", {"v": 1}),  # LangGraph's reserved root
        lambda: store.put(("x" * 300,), "k", {"v": 1}),  # remem's 256-character limit
        lambda: store.put(tuple(f"l{i}" for i in range(65)), "k", {"v": 1}),  # 64 labels
        lambda: asyncio.run(store.aput(("a.b",), "k", {"v": 1})),
        lambda: asyncio.run(store.asearch(("a.b",))),
    ]
    messages = []
    for call in calls:
        with pytest.raises(InvalidNamespaceError) as caught:
            call()
        messages.append(str(caught.value))
    assert "periods" in messages[0] or "'.'" in messages[0]
    assert "langgraph" in messages[5]
    assert "256" in messages[6] and "64" in messages[7]
    assert store.list_namespaces() == []
    store.close()


# -- labels LangGraph allows and remem cannot store --------------------------------------------

def test_label_codec() -> None:
    for label in ("alice", "alice\n", "a\tb\x7f", "*", "x*", "\ud800", "user_1", "é"):
        assert decode_label(encode_label(label)) == label
    assert encode_label("alice\n") == "alice.u000a" and encode_label("*") == ".u002a"
    assert encode_label("x*") == "x*" and encode_label("plain") == "plain"
    # a remem label that merely looks like an escape of a printable character stays itself
    assert decode_label("v.u0041") == "v.u0041" and decode_label("v.1") == "v.1"


def test_labels_with_newlines_and_stars(open_remem: Opener) -> None:
    store = open_remem()
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    store.put(("users", "*"), "k", {"v": 3})
    store.put(("users", "tab\there", "deep"), "k", {"v": 4})
    assert store.get(("users", "alice\n"), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("users", "*"), "k").value == {"v": 3}  # type: ignore[union-attr]
    # as SqliteStore: "alice\n" is its own label, not "alice"
    assert store.list_namespaces(suffix=["alice"]) == [("users", "alice")]
    assert store.list_namespaces(prefix=["users", "alice"]) == [("users", "alice")]
    assert sorted(store.list_namespaces(prefix=["users", "*"])) == [
        ("users", "*"), ("users", "alice"), ("users", "alice\n"), ("users", "tab\there", "deep")]
    assert store.list_namespaces(prefix=["users"], max_depth=2) == [
        ("users", "*"), ("users", "alice"), ("users", "alice\n"), ("users", "tab\there")]
    # a "*" label is literal in a search prefix (a wildcard only in listing conditions)
    assert [(i.namespace, i.value) for i in store.search(("users", "*"))] == [
        (("users", "*"), {"v": 3})]
    assert sorted(i.value["v"] for i in store.search(("users",))) == [1, 2, 3, 4]
    # what remem holds: the escaped labels
    assert sorted(store.store.list_namespaces(prefix=("users",))) == [
        ("users", ".u002a"), ("users", "alice"), ("users", "alice.u000a"),
        ("users", "tab.u0009here", "deep")]


# -- index_config and embeddings ---------------------------------------------------------------

def test_index_config_is_langgraphs_dict() -> None:
    index = {"dims": 64, "embed": embed, "fields": ["text"], "distance_type": "cosine"}
    store = RememStore.open(":memory:", index=index)  # type: ignore[arg-type]
    assert store.index_config == index and store.index_config is not index
    assert isinstance(store.embeddings, Embeddings)
    vector = store.embeddings.embed_query("green tea")
    assert len(vector) == 64 and vector == pytest.approx(embed(["green tea"])[0])
    store.close()

    # SqliteStore's name for the fields, read as LangGraph's
    sqlite_style = RememStore.open(":memory:", index={"dims": 64, "embed": embed,
                                                      "text_fields": ["title"]})
    assert sqlite_style.index_config is not None
    assert sqlite_style.index_config.get("text_fields") == ["title"]  # type: ignore[typeddict-item]
    assert sqlite_style.store.index is not None and sqlite_style.store.index.fields == ("title",)
    sqlite_style.put(("d",), "1", {"title": "green tea", "body": "night train"})
    sqlite_style.put(("d",), "2", {"title": "night train", "body": "green tea"})
    assert [hit.key for hit in sqlite_style.search(("d",), query="green tea")] == ["1", "2"]
    sqlite_style.close()

    # a remem store's own index, shown in LangGraph's form
    fake = FakeEmbedder(dims=32)
    wrapped = RememStore(open_store(":memory:", index=IndexConfig(fake, fields=("text",))),
                         owns_store=True)
    assert wrapped.index_config == {"dims": 32, "embed": wrapped.embeddings,
                                    "fields": ["text"]}
    assert wrapped.embeddings is not None
    assert wrapped.embeddings.embed_query("tea") == pytest.approx(
        fake.embed_queries(["tea"])[0].tolist())
    documents = wrapped.embeddings.embed_documents(["a", "b"])
    assert [row == pytest.approx(want) for row, want in
            zip(documents, fake.embed_documents(["a", "b"]).tolist(), strict=True)] == [True] * 2
    wrapped.close()

    plain = RememStore.open(":memory:")
    assert plain.index_config is None and plain.embeddings is None
    plain.close()


# -- filters as SqliteStore reads them ---------------------------------------------------------

DOCS = {
    "cheap": {"price": 10, "name": "a"},
    "mid": {"price": 20, "name": "b"},
    "dear": {"price": 30, "name": "ba"},
    "debt": {"price": -10, "name": "c"},
    "hyphen": {"access-level": "public", "user": {"access-level": "nested"}},
    "digit": {"123abc": "ok", "user": {"123abc": "ok2"}},
}
PRICED = ["cheap", "dear", "debt", "mid"]
FILTERS: list[tuple[dict[str, Any], list[str]]] = [
    ({"user.access-level": "nested"}, ["hyphen"]),
    ({"user.123abc": "ok2"}, ["digit"]),
    ({"access-level": "public"}, ["hyphen"]),
    ({"price": {"$lt": math.inf}}, PRICED),
    ({"price": {"$lte": math.inf}}, PRICED),
    ({"price": {"$gt": -math.inf}}, PRICED),
    ({"price": {"$gt": math.inf}}, []),
    ({"price": {"$lt": -math.inf}}, []),
    ({"price": {"$eq": math.nan}}, []),
    ({"price": math.inf}, []),
    ({"price": {"$gt": math.nan}}, []),
    ({"price": {"$ne": math.nan}}, sorted(DOCS)),  # $ne matches a missing field (remem's)
    ({"price": {"$lt": 10**100}}, PRICED),
    ({"price": {"$gt": -(10**400)}}, PRICED),
    ({"price": 10**100}, []),
    ({"price": {"$in": [10, math.nan, 10**100]}}, ["cheap"]),
    ({"name": "public\x00' OR '1'='1"}, []),
    ({"name": {"$gt": "b\x00z"}}, ["dear", "debt"]),  # after "b", as a cut string orders
    ({"name": {"$lte": "b\x00z"}}, ["cheap", "mid"]),
    ({"price": {"$gt": 15, "$lt": math.inf}}, ["dear", "mid"]),
    ({"price": {"$lt": math.inf, "$lte": 20}}, ["cheap", "debt", "mid"]),  # two $lte
]


def test_filters_read_as_sqlite_store_reads_them(open_remem: Opener) -> None:
    store = open_remem()
    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    got = [(spec, sorted(item.key for item in store.search(("docs",), filter=spec)))
           for spec, _ in FILTERS]
    assert got == FILTERS


@pytest.mark.parametrize("key", ["access') = 'public' OR '1'='1' OR json_extract(value, '$.",
                                 "$or", "a..b", "", "tab\there"])
def test_filter_keys_remem_cannot_read_are_refused(key: str) -> None:
    store = RememStore.open(":memory:")
    with pytest.raises(FilterError, match="Invalid filter key") as caught:
        store.search(("docs",), filter={key: "x"})
    assert isinstance(caught.value, ValueError)
    store.close()


# -- TTL: refresh_on_read, defaults, the sweeper -----------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _expiry(store: RememStore, key: str) -> float:
    item = store.store.get(("t",), key, refresh_ttl=False)
    assert item is not None and item.expires_at is not None
    return item.expires_at.timestamp()


def test_reads_refresh_only_when_asked(tmp_path: Path) -> None:
    clock = Clock()
    inner = open_store(str(tmp_path / "ttl.db"), clock=clock)
    plain = RememStore(inner, ttl={"default_ttl": 2})
    assert plain.ttl_config == {"default_ttl": 2, "refresh_on_read": False}
    plain.put(("t",), "k", {"v": 1})
    clock.now += 60
    plain.get(("t",), "k")  # SqliteStore's default: no refresh
    plain.search(("t",))
    assert _expiry(plain, "k") == pytest.approx(1_000_000 + 120)
    plain.get(("t",), "k", refresh_ttl=True)  # asked for: refreshed
    assert _expiry(plain, "k") == pytest.approx(1_000_060 + 120)

    refreshing = RememStore(inner, ttl={"default_ttl": 2, "refresh_on_read": True})
    clock.now += 30
    refreshing.search(("t",))
    assert _expiry(refreshing, "k") == pytest.approx(1_000_090 + 120)
    clock.now += 30
    refreshing.get(("t",), "k", refresh_ttl=False)
    assert _expiry(refreshing, "k") == pytest.approx(1_000_090 + 120)
    inner.close()


def test_ttl_config_both_ways() -> None:
    opened = RememStore.open(":memory:", ttl={"default_ttl": 2, "refresh_on_read": True,
                                              "sweep_interval_minutes": 1})
    assert opened.store.ttl == TTLConfig(default_ttl=120, refresh_on_read=True)
    opened.close()
    bare = RememStore.open(":memory:")  # no TTL: no refresh, as SqliteStore
    assert bare.ttl_config == {"refresh_on_read": False}
    assert bare.store.ttl == TTLConfig(refresh_on_read=False)
    bare.close()
    # a wrapped store's TTL config, in LangGraph's units
    inner = open_store(":memory:", ttl=TTLConfig(default_ttl=600, sweep_interval=120))
    wrapped = RememStore(inner)
    assert wrapped.ttl_config == {"refresh_on_read": True, "default_ttl": 10.0,
                                  "sweep_interval_minutes": 2.0}
    wrapped.put(("t",), "k", {"v": 1})  # LangGraph's put takes default_ttl from ttl_config
    assert inner.ttl_of(("t",), "k") == pytest.approx(600)
    inner.close()
    for bad, field in (({"default_ttl": -1}, "default_ttl"), ({"refresh_on_read": "yes"},
                       "refresh_on_read"), ({"sweep_interval_minutes": 0},
                                            "sweep_interval_minutes"), ({"ttl": 1}, "unknown")):
        with pytest.raises(InvalidInputError, match=field):
            RememStore.open(":memory:", ttl=bad)  # type: ignore[arg-type]


def test_sweep_ttl_and_the_sweeper(tmp_path: Path) -> None:
    clock = Clock()
    store = RememStore(open_store(str(tmp_path / "sweep.db"), clock=clock),
                       ttl={"default_ttl": 1, "sweep_interval_minutes": 0.0005}, owns_store=True)
    store.put(("t",), "a", {"v": 1})
    store.put(("t",), "b", {"v": 2})
    store.put(("t",), "keep", {"v": 3}, ttl=None)
    clock.now += 61
    assert store.sweep_ttl() == 2 and store.sweep_ttl() == 0
    assert asyncio.run(store.asweep_ttl()) == 0

    store.put(("t",), "c", {"v": 4})
    clock.now += 61
    future = store.start_ttl_sweeper()  # every 0.0005 minutes, from the TTL config
    assert store.start_ttl_sweeper() is not future  # no second thread
    deadline = time.monotonic() + 10
    # ttl_of reads the raw row, expired or not: None once the sweeper deleted it
    while store.store.ttl_of(("t",), "c") is not None:
        assert time.monotonic() < deadline, "the sweeper never swept"
        time.sleep(0.02)
    assert store.stop_ttl_sweeper(timeout=5) is True and future.done()
    assert store.stop_ttl_sweeper() is True  # stopping a stopped sweeper is fine

    cancelled = store.start_ttl_sweeper(sweep_interval_minutes=60)
    assert cancelled.cancel()  # cancelling the future stops the thread
    assert asyncio.run(store.astop_ttl_sweeper(timeout=5)) is True
    asyncio.run(store.astart_ttl_sweeper(60))
    store.close()  # stops the sweeper too
    assert store.stop_ttl_sweeper(timeout=0) is True
    assert [item.key for item in RememStore(open_store(str(tmp_path / "sweep.db"))).search(
        ("t",))] == ["keep"]


# -- equal scores ------------------------------------------------------------------------------

def test_equal_scores_are_ordered_by_namespace_then_key(open_remem: Opener) -> None:
    def same(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    store = open_remem(index={"dims": 3, "embed": same, "fields": ["text"]})
    for namespace, key in ((("n",), "c"), (("n", "m"), "0"), (("n",), "a"), (("n",), "b")):
        store.put(namespace, key, {"text": "the same"})
    hits = store.search(("n",), query="anything")
    assert [(hit.namespace, hit.key) for hit in hits] == [
        (("n",), "a"), (("n",), "b"), (("n",), "c"), (("n", "m"), "0")]
    assert len({hit.score for hit in hits}) == 1

