"""``remem worker --shard``: a tenant's job runs on the tenant's shard, and follows a move."""

from __future__ import annotations

from remem.api import Memory
from remem.cli.shards import open_router
from remem.cli.worker import MemoryHandlers
from remem.shards import parse_shards
from remem.shards.move import move_tenant
from remem.store import open_store
from tests.shards.conftest import TwoServers


def _count(dsn: str, tenant: str) -> int:
    store = open_store(dsn)
    try:
        return store.count(("tenants", tenant))
    finally:
        store.close()


def test_a_workers_tenant_memory_writes_on_the_tenants_shard(two_servers: TwoServers) -> None:
    router = open_router(two_servers.control, parse_shards(two_servers.shards()), "b", False)
    memory = Memory.open(two_servers.control, embedder=False)
    try:
        jobs = MemoryHandlers(memory, router)
        tenant_memory = jobs.memory_for("acme")  # placed by the policy: on b
        tenant_memory.store.put(("notes",), "k1", {"text": "written by a job"})
        assert router.routes.lookup("acme").shard == "b"  # type: ignore[union-attr]
        assert (_count(two_servers.b, "acme"), _count(two_servers.a, "acme")) == (1, 0)
        assert _count(two_servers.control, "acme") == 0
        router.cache_seconds = 0
        move_tenant(router, "acme", "a", settle=0)
        tenant_memory.store.put(("notes",), "k2", {"text": "after the move"})
        assert (_count(two_servers.a, "acme"), _count(two_servers.b, "acme")) == (2, 0)
    finally:
        memory.close()
        router.close()
