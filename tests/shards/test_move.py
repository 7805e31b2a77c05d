"""Moving a tenant between two shards (two PostgreSQL servers) while it is written to: every
acknowledged write is on the new shard afterwards, nothing of the tenant stays on the old one,
and a tenant with threads is refused (their tables are not moved yet)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.errors import UnsupportedError
from remem.server import ServerConfig, create_app
from remem.server.keys import tenant_prefix
from remem.server.state import Principal, ServerState
from remem.shards import parse_shards
from remem.shards.move import abandon_move, move_tenant, tenant_items
from remem.store import DeleteOp, PutOp, open_store
from tests.shards.conftest import TwoServers


def _config(servers: TwoServers, **kwargs: object) -> ServerConfig:
    settings: dict[str, object] = {"embedder": FakeEmbedder(), **kwargs}
    return ServerConfig(db=servers.control, mcp=False, key_cache_seconds=0,
                        shards=parse_shards(servers.shards()),
                        **settings)  # type: ignore[arg-type]


@pytest.fixture
def state(two_servers: TwoServers) -> Iterator[ServerState]:
    found = ServerState.open(_config(two_servers))
    yield found
    found.close()


def _text(seed: str, words: int = 30) -> str:
    """Varied words (HNSW inserts slow down on many near-identical vectors)."""
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(words))


def _items_on(dsn: str, tenant: str) -> dict[tuple[tuple[str, ...], str], dict[str, object]]:
    store = open_store(dsn)
    try:
        return {(item.namespace, item.key): item.value
                for item in store.iter_items(tenant_prefix(tenant))}
    finally:
        store.close()


def test_the_prefix_the_mover_uses_is_the_servers() -> None:
    assert tenant_items("acme") == tenant_prefix("acme")


def test_a_tenant_moves_with_every_family_in_the_store(two_servers: TwoServers) -> None:
    app = create_app(_config(two_servers))
    state: ServerState = app.state.remem
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {state.keys.create('acme')[0]}"}
        assert client.post("/v1/memories", headers=headers, json={
            "messages": "acme prefers green tea", "user_id": "u1", "infer": False}
        ).status_code == 200
        assert client.post("/v1/files/write", headers=headers, json={
            "path": "/notes.md", "content": "acme notes"}).status_code == 200
        assert client.post("/v1/blocks", headers=headers, json={
            "id": "acme-block", "label": "human", "value": "acme block"}).status_code == 201
        assert client.post("/v1/prompts", headers=headers, json={
            "name": "acme_prompt", "text": "hello {x}"}).status_code == 200
        assert state.router is not None and state.router.shard_of("acme") == "a"
        before = _items_on(two_servers.a, "acme")
        assert len(before) >= 4
        search = client.post("/v1/memories/search", headers=headers,
                             json={"query": "green tea", "user_id": "u1"}).json()

        report = move_tenant(state.router, "acme", "b", settle=0.1)

        assert (report.source, report.target, report.copied) == ("a", "b", len(before))
        assert report.deleted == len(before)
        assert _items_on(two_servers.b, "acme") == before
        assert _items_on(two_servers.a, "acme") == {}
        route = state.router.routes.lookup("acme")
        assert route is not None and (route.shard, route.moving_to, route.moved_from) == (
            "b", None, None)
        assert route.version == 2
        # the running server follows the route once its cache expires (0 s here: at once)
        state.router.cache_seconds = 0
        assert client.post("/v1/memories/search", headers=headers,
                           json={"query": "green tea", "user_id": "u1"}).json() == search
        assert client.post("/v1/files/read", headers=headers, json={"path": "/notes.md"}
                           ).json()["content"] == "acme notes"
        # and writes land on the new shard only
        assert client.post("/v1/memories", headers=headers, json={
            "messages": "acme also likes oolong", "user_id": "u1", "infer": False}
        ).status_code == 200
        assert len(_items_on(two_servers.b, "acme")) > len(before)
        assert _items_on(two_servers.a, "acme") == {}
        # moving again to where it is does nothing
        again = move_tenant(state.router, "acme", "b", settle=0)
        assert again.note == "already on the target" and again.copied == 0
    state.close()


def test_a_tenant_with_threads_is_refused_and_left_where_it_is(state: ServerState) -> None:
    assert state.router is not None
    state.store_for(Principal("talker")).put(("notes",), "k", {"text": "hello"})
    state.threads_for(Principal("talker")).create("t1", messages="hi")
    with pytest.raises(UnsupportedError, match="has threads on shard 'a'"):
        move_tenant(state.router, "talker", "b", settle=0)
    route = state.router.routes.lookup("talker")
    assert route is not None and (route.shard, route.moving_to) == ("a", None)
    assert state.store_for(Principal("talker")).get(("notes",), "k") is not None


def test_no_acknowledged_write_is_lost_across_a_move(two_servers: TwoServers) -> None:
    """Writers in two server states (two processes' worth of route caches) put, overwrite and
    delete the tenant's items while it moves; afterwards the new shard holds exactly what
    the acknowledged writes left, the old shard nothing."""
    # keyword index only: the writes stay quick on a loaded machine (HNSW inserts are not
    # what this test is about; the move of vectors is checked above)
    first = ServerState.open(_config(two_servers, route_cache_seconds=0.5, embedder=None))
    second = ServerState.open(_config(two_servers, route_cache_seconds=0.5, embedder=None))
    try:
        assert first.router is not None
        seeded = first.store_for(Principal("busy"))
        seeded.batch([PutOp(("bulk",), f"k{n}", {"text": _text(f"seed {n}")})
                      for n in range(600)])
        expected: dict[tuple[str, str], dict[str, object] | None] = {}
        lock = threading.Lock()
        stop = threading.Event()
        errors: list[BaseException] = []

        def write(state: ServerState, name: str) -> None:
            store = state.store_for(Principal("busy"))
            n = 0
            try:
                while not stop.is_set():
                    # batches of 20 (a write takes a while, as a real one with a model
                    # does), every 7th one deleting the batch before it
                    # new keys each time, so a lost write is never healed by a later one;
                    # a delete removes the previous batch's keys
                    keys = [f"{name}-{n - (n % 7 == 6)}-{i}" for i in range(20)]
                    if n % 7 == 6:
                        store.batch([DeleteOp(("live",), key) for key in keys])
                        values: list[dict[str, object] | None] = [None] * len(keys)
                    else:
                        values = [{"text": _text(f"{name}-{n}-{i}")} for i in range(len(keys))]
                        store.batch([PutOp(("live",), key, value)
                                     for key, value in zip(keys, values, strict=True)])
                    with lock:  # acknowledged: the call returned
                        expected.update({("live", key): value
                                         for key, value in zip(keys, values, strict=True)})
                    n += 1
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        writers = [threading.Thread(target=write, args=(state, f"w{i}"))
                   for i, state in enumerate((first, second, first, second))]
        for thread in writers:
            thread.start()
        report = move_tenant(first.router, "busy", "b", settle=1.0)
        stop.set()
        for thread in writers:
            thread.join()
        assert not errors, errors
        assert report.caught_up > 0  # writes landed during the bulk copy and were caught up
        on_b = _items_on(two_servers.b, "busy")
        assert _items_on(two_servers.a, "busy") == {}
        for (namespace, key), value in expected.items():
            assert on_b.get((("tenants", "busy", namespace), key)) == value, (namespace, key)
        assert sum(1 for (ns, _k) in on_b if ns[2] == "bulk") == 600
        assert len([1 for v in expected.values() if v is not None]) == sum(
            1 for (ns, _k) in on_b if ns[2] == "live")
    finally:
        first.close()
        second.close()


def test_an_unflipped_move_can_be_abandoned(state: ServerState) -> None:
    assert state.router is not None
    store = state.store_for(Principal("halfway"))
    store.put(("notes",), "k", {"text": "stays"})
    router = state.router
    router.routes.set_moving("halfway", "b")  # as a mover killed during its bulk copy leaves
    router.store("b").put(("tenants", "halfway", "notes"), "k", {"text": "partial"})
    assert abandon_move(router, "halfway") == 1
    route = router.routes.lookup("halfway")
    assert route is not None and (route.shard, route.moving_to) == ("a", None)
    assert router.store("b").count(("tenants", "halfway")) == 0
    assert store.get(("notes",), "k").value == {"text": "stays"}  # type: ignore[union-attr]
