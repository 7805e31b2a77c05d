"""The isolation matrix of tests/server/test_isolation.py with tenant ``alpha`` on shard ``a``
and ``beta`` on shard ``b`` (two PostgreSQL servers): ``beta``'s key reaches none of
``alpha``'s data through any route, and each tenant's rows are on its own shard only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remem.embed import FakeEmbedder
from remem.server import ServerConfig
from remem.server.state import Principal
from remem.shards import parse_shards
from remem.store import open_store
from tests.server.test_isolation import MATRIX, World, open_world
from tests.shards.conftest import TwoServers


@pytest.fixture(scope="module")
def world(module_servers: TwoServers) -> Iterator[World]:
    config = ServerConfig(db=module_servers.control, embedder=FakeEmbedder(), mcp=False,
                          key_cache_seconds=0, shards=parse_shards(module_servers.shards()))
    with open_world(config) as found:
        yield found


@pytest.mark.parametrize("case", list(MATRIX))
def test_tenant_b_on_another_shard_cannot_reach_tenant_a(world: World, case: str) -> None:
    before = world.a_state()
    MATRIX[case](world)
    assert world.a_state() == before  # nothing of A's changed
    assert before[0]["value"] == {"text": "alpha secret tea"}


def test_each_tenant_is_on_its_own_shard(world: World, module_servers: TwoServers) -> None:
    state = world.client.app.state.remem  # type: ignore[attr-defined]
    router = state.router
    assert router.shard_of("alpha") == "a" and router.shard_of("beta") == "b"
    # beta writes something of its own, which lands on b only
    r = world.client.put("/v1/store/items", headers=world.b, json={
        "namespace": ["mine"], "key": "k", "value": {"text": "beta own"}})
    assert r.status_code == 200
    control, a, b = (open_store(dsn) for dsn in (module_servers.control, module_servers.a,
                                                 module_servers.b))
    try:
        assert a.count(("tenants", "alpha")) > 5  # memories, files, blocks, prompts...
        assert b.count(("tenants", "alpha")) == 0
        assert control.count(("tenants", "alpha")) == 0
        assert b.get(("tenants", "beta", "mine"), "k") is not None
        assert a.count(("tenants", "beta")) == 0 and control.count(("tenants", "beta")) == 0
    finally:
        for store in (control, a, b):
            store.close()
    # alpha's thread is in shard a's thread tables, seen through alpha's view only
    threads = state.threads_for(Principal("alpha"))
    assert threads.db.target == module_servers.a  # type: ignore[union-attr]
    assert [t.thread_id for t in threads.list_threads()] == ["t1"]
    assert state.threads_for(Principal("beta")).list_threads() == []
