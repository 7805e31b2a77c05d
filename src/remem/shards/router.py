"""Stateless routing: a tenant's store on its shard, resolved per request.

:class:`ShardRouter` reads a tenant's route from the :class:`~remem.shards.routes.RouteTable`
(cached for ``cache_seconds``, then read again: a moved tenant is followed within that time)
and opens one store per shard on first use. :class:`TenantStore` is the tenant's store: reads
go to the shard of the cached route; every batch that writes runs inside the route's fence
(the row held ``FOR KEY SHARE``) on the shard the locked row names, so a write is never made on a
shard the tenant has just left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from remem.db import Database
from remem.shards.routes import RouteTable, Shard, TenantRoute
from remem.store.base import BaseStore, ViewStore, check_ops
from remem.store.types import DeleteOp, Item, Namespace, Op, PutOp, Result

__all__ = ["ShardRouter", "TenantStore"]


class ShardRouter:
    """Tenants' shards and one store per shard, opened by ``open_shard`` on first use.

    Holds no state of its own that is not in the control database: any number of servers
    and workers may route the same tenants."""

    def __init__(self, routes: RouteTable, open_shard: Callable[[Shard], BaseStore], *,
                 cache_seconds: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 control: BaseStore | None = None) -> None:
        self.routes = routes
        #: the control database's handle (``control``'s: the server's own store), where the
        #: families beside a tenant's store keep their rows (jobs, budgets, usage, graph)
        self.control_database: Database | None = getattr(control, "database", None)
        self.cache_seconds = cache_seconds
        self._open_shard = open_shard
        self._clock = clock
        self._stores: dict[str, BaseStore] = {}
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def shard_of(self, tenant: str) -> str:
        """The name of ``tenant``'s shard (placed now if it has none), at most
        ``cache_seconds`` old."""
        now = self._clock()
        cached = self._cache.get(tenant)
        if cached is not None and now - cached[0] < self.cache_seconds:
            return cached[1]
        name = self.routes.place(tenant).shard
        self._remember(tenant, name)
        return name

    def _remember(self, tenant: str, shard: str) -> None:
        with self._lock:
            self._cache[tenant] = (self._clock(), shard)
            if len(self._cache) > 100_000:  # an admin may name any tenant: keep it bounded
                self._cache.clear()

    def store(self, shard: str) -> BaseStore:
        """The store on ``shard`` (opened once per process)."""
        found = self._stores.get(shard)
        if found is not None:
            return found
        spec = self.routes.shard(shard)
        with self._lock:
            found = self._stores.get(shard)
            if found is None:
                found = self._stores[shard] = self._open_shard(spec)
            return found

    def tenant_store(self, tenant: str) -> TenantStore:
        """``tenant``'s store (unscoped: the caller puts it under the tenant's prefix)."""
        return TenantStore(self, tenant, self.store(self.shard_of(tenant)))

    def write(self, tenant: str, ops: Sequence[Op]) -> list[Result]:
        """Run a writing batch on ``tenant``'s shard inside its route's fence."""
        with self.routes.fence(tenant) as route:
            self._remember(tenant, route.shard)
            return self.store(route.shard).batch(ops)

    def route(self, tenant: str) -> TenantRoute | None:
        """``tenant``'s route as it is now (uncached)."""
        return self.routes.lookup(tenant)

    def close(self) -> None:
        """Close every shard store this router opened, and the routing table's pool."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()
        self.routes.close()


def _writes(ops: Sequence[Op]) -> bool:
    return any(isinstance(op, PutOp | DeleteOp) for op in ops)


class TenantStore(ViewStore):
    """``tenant``'s data wherever its route points (see the module docstring). ``inner`` is
    the store of the shard the route named when the view was built (the server keys its
    views by shard, so a moved tenant gets new ones).

    ``dsn`` and ``schema`` are the *control* database's: the families that keep their own
    tables beside a store (:func:`remem.db.database_of`: the job queue, budgets, read and
    activity counters, the graph) find the control database through this view, where the
    server's own job, budget and usage routes read them. Those rows are not sharded yet
    (docs/shards.md)."""

    def __init__(self, router: ShardRouter, tenant: str, inner: BaseStore) -> None:
        super().__init__(inner)
        self.router = router
        self.tenant = tenant
        self.dsn = router.routes.dsn
        self.schema = router.routes.schema
        # what remem.db.database_of finds for this view: the control database, not the shard's
        self.database = router.control_database

    def _current(self) -> BaseStore:
        return self.router.store(self.router.shard_of(self.tenant))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads on the routed shard; a batch that writes, inside the route's fence."""
        op_list = check_ops(ops)
        if not op_list:
            return []
        if _writes(op_list):
            return self.router.write(self.tenant, op_list)
        return self._current().batch(op_list)

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Every live item under ``namespace_prefix`` on the routed shard."""
        return self._current().iter_items(namespace_prefix)

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        return self._current().ttl_of(namespace, key)

    def _holds_vectors(self) -> bool:
        return self._current()._holds_vectors()

    def _vector_models(self) -> list[str]:
        return self._current()._vector_models()
