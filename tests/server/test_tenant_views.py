"""A server keeps per-tenant views for a bounded number of tenants: an admin key may name any
tenant, and each named one must not stay in memory for the life of the process."""

from __future__ import annotations

import threading

from remem.embed import FakeEmbedder
from remem.server import ServerConfig
from remem.server.state import Principal, ServerState, TenantViews


def test_views_keep_the_most_recently_used_tenants() -> None:
    built: list[str] = []
    views: TenantViews[str] = TenantViews(threading.RLock(), limit=3)

    def view(tenant: str) -> str:
        return views.get(tenant, lambda: built.append(tenant) or f"view of {tenant}")

    for tenant in ("a", "b", "c", "a", "d"):  # "a" used again, so "b" is the oldest
        assert view(tenant) == f"view of {tenant}"
    assert len(views) == 3 and built == ["a", "b", "c", "d"]
    view("a"), view("c"), view("d")
    assert built == ["a", "b", "c", "d"]  # still kept: not built again
    view("b")
    assert built == ["a", "b", "c", "d", "b"] and len(views) == 3


def test_a_server_naming_many_tenants_keeps_a_bounded_number_of_views() -> None:
    state = ServerState.open(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                          quota_items=10))
    limit = 16  # the default (TENANT_VIEWS, 1024) works the same, only slower to fill
    for views in (state._scoped, state._memories, state._tenant_threads, state._llms):
        views.limit = limit
    try:
        first = Principal("t0")
        state.store_for(first).put(("notes",), "k", {"text": "kept in the database"})
        for n in range(1, limit + 5):
            state.memory_for(Principal(f"t{n}"))
        assert len(state._scoped) == len(state._memories) == limit
        # t0's view was dropped; a new one reads what its tenant holds, quota included
        again = state.store_for(first)
        assert again.get(("notes",), "k").value == {"text": "kept in the database"}
        assert again.usage().items == 1  # type: ignore[attr-defined]
        assert state.store_for(Principal(f"t{limit + 4}")).search(()) == []
    finally:
        state.close()
