"""Tenants spread over several PostgreSQL databases (shards); see docs/shards.md.

* :mod:`remem.shards.routes`: the routing table (tenant -> shard name) in the control
  database, placement of new tenants, the per-tenant write fence.
* :mod:`remem.shards.router`: a tenant's store on its shard, resolved per request.
* :mod:`remem.shards.move`: moving a tenant to another shard while it is written to.
"""

from __future__ import annotations

from remem.shards.router import ShardRouter, TenantStore
from remem.shards.routes import FEWEST, Placement, RouteTable, Shard, TenantRoute, parse_shards

__all__ = [
           "FEWEST",
           "Placement",
           "RouteTable",
           "Shard",
           "ShardRouter",
           "TenantRoute",
           "TenantStore",
           "parse_shards",
]
