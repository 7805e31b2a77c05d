"""A tenant's threads on its shard, every writing request inside the route's fence.

Thread writes do not go through the store, so :class:`FencedThreads` holds the tenant's
route row ``FOR KEY SHARE`` around each request whose operation writes (the threads' operation
table says which), as :class:`~remem.shards.router.TenantStore` does for store batches. A
request fenced after its tenant moved runs on the new shard's threads instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from remem.shards.router import ShardRouter
from remem.threads.operation_table import THREAD_OPERATIONS
from remem.threads.scoped import ScopedThreads
from remem.threads.store import ThreadStore

__all__ = ["FencedThreads"]

R = TypeVar("R")

#: request type -> whether it writes; a request missing here is fenced (the safe side)
_WRITES: dict[type[Any], bool] = {row.request: row.writes for row in THREAD_OPERATIONS}


class FencedThreads(ScopedThreads):
    """``tenant``'s threads in ``inner`` (the thread store of shard ``shard``); writes run in
    the route's fence, on the threads ``on_shard`` gives for the shard the route names."""

    def __init__(self, inner: ThreadStore, tenant: str, *, shard: str, router: ShardRouter,
                 on_shard: Callable[[str], ScopedThreads], **kwargs: Any) -> None:
        super().__init__(inner, tenant, **kwargs)
        self.shard = shard
        self.router = router
        self.on_shard = on_shard

    def run(self, request: Any) -> Any:
        """Run ``request``; a writing one inside the tenant's fence, on its current shard."""
        if not _WRITES.get(type(request), True):
            return super().run(request)
        with self.router.routes.fence(self.tenant) as route:
            if route.shard == self.shard:
                return super().run(request)
            # moved since this view was built: the new shard's view, without a second fence
            # (a second FOR KEY SHARE could queue behind a waiting mover and never be granted)
            return ScopedThreads.run(self.on_shard(route.shard), request)

    async def arun(self, request: Any) -> Any:
        """Async :meth:`run` (in a worker thread)."""
        return await asyncio.to_thread(self.run, request)
