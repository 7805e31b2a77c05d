"""The routing table: which shard (a named PostgreSQL database) holds each tenant's data.

The table lives in the *control* database, the one a server is started with (its keys, job
queue and usage rows live there too)::

    remem_shard_routes(tenant PRIMARY KEY, shard, moving_to, moved_from, version, placed_at)

It names shards, never DSNs: a DSN carries a password, so every process is given the
``NAME=DSN`` pairs in its own configuration (``remem serve --shard``, ``REMEM_SHARDS``) and the
table only says which name a tenant lives on. ``moving_to`` is set while a move copies the
tenant (:mod:`remem.shards.move`), ``moved_from`` from the flip until the old copy is deleted:
both let an interrupted move be run again.

A new tenant is placed on first use by a :class:`Placement` policy; two processes placing the
same tenant at once agree (``INSERT ... ON CONFLICT DO NOTHING``, then read the row back).

Writers hold the tenant's row ``FOR KEY SHARE`` for the length of their write
(:meth:`RouteTable.fence`); a move takes it ``FOR UPDATE`` to copy the last writes and flip
the route, so a write either lands before the flip (and is copied) or waits and then reads
the new shard. ``KEY SHARE`` (the weakest row lock) conflicts with ``FOR UPDATE`` only:
marking a move (``moving_to``) or forgetting an old copy updates other columns without
waiting for the writes in flight, nor making new ones queue behind it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.errors import ConfigError, InvalidInputError, StoreError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["FEWEST", "Placement", "RouteTable", "Shard", "TenantRoute", "parse_shard",
           "parse_shards"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
#: the default placement: the configured shard holding the fewest tenants
FEWEST = "fewest"


@dataclass(frozen=True, slots=True)
class Shard:
    """One PostgreSQL database tenants may live on: ``name`` (what the routing table records)
    and ``dsn`` (a ``postgresql://`` URI; given to each process, never stored)."""

    name: str
    dsn: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise InvalidInputError(
                f"shard name must be 1-64 letters, digits, '_', '.' or '-', got {self.name!r}")
        if not self.dsn.startswith(("postgresql://", "postgres://")):
            raise InvalidInputError(
                f"shard {self.name!r}: the DSN must be a postgresql:// URI (shards are "
                "PostgreSQL databases), got one starting "
                f"{self.dsn.split(':', 1)[0]!r}")

    def __repr__(self) -> str:  # the DSN may hold a password: never print it
        return f"Shard({self.name!r})"


def parse_shard(text: str) -> Shard:
    """``NAME=DSN`` (what ``--shard`` takes) as a :class:`Shard`."""
    name, sep, dsn = text.partition("=")
    if not sep or not name or not dsn:
        raise InvalidInputError(
            f"a shard is given as NAME=DSN (e.g. a=postgresql://host/db), got "
            f"{text.split('=', 1)[0]!r}...")
    return Shard(name.strip(), dsn.strip())


def parse_shards(texts: Sequence[str]) -> tuple[Shard, ...]:
    """Every ``NAME=DSN`` of ``texts``, names unique."""
    shards = tuple(parse_shard(text) for text in texts)
    names = [shard.name for shard in shards]
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise InvalidInputError(f"shard names must be unique; given twice: {doubled}")
    return shards


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a new tenant goes: ``policy`` :data:`FEWEST` (the shard with the fewest tenants,
    ties to the first configured) or the name of one shard (every new tenant there: the
    shards before it are full)."""

    policy: str = FEWEST

    def choose(self, shards: Sequence[Shard], counts: dict[str, int]) -> str:
        """The shard a new tenant goes to, given the tenants each shard holds now."""
        names = [shard.name for shard in shards]
        if self.policy == FEWEST:
            return min(names, key=lambda name: (counts.get(name, 0), names.index(name)))
        if self.policy not in names:
            raise ConfigError(f"placement {self.policy!r} names no configured shard "
                              f"(configured: {names}); pass --placement fewest or a shard name")
        return self.policy


@dataclass(frozen=True, slots=True)
class TenantRoute:
    """One row of the routing table."""

    tenant: str
    shard: str
    moving_to: str | None
    moved_from: str | None
    version: int


_CREATE = (
    "CREATE TABLE IF NOT EXISTS {s}.remem_shard_routes ("
    " tenant text COLLATE \"C\" PRIMARY KEY,"
    " shard text NOT NULL,"
    " moving_to text,"
    " moved_from text,"
    " version bigint NOT NULL DEFAULT 1,"
    " placed_at double precision NOT NULL)"
)
_COLUMNS = "tenant, shard, moving_to, moved_from, version"


def _route(row: Sequence[Any]) -> TenantRoute:
    return TenantRoute(str(row[0]), str(row[1]), row[2], row[3], int(row[4]))


class RouteTable:
    """The routing table in the control database ``dsn`` (schema ``schema``), for the
    configured ``shards``. Opens a small connection pool on first use; :meth:`close` it."""

    def __init__(self, dsn: str, shards: Sequence[Shard], *, schema: str = "remem",
                 placement: Placement | None = None, pool_size: int = 16) -> None:
        if not shards:
            raise ConfigError("a routing table needs at least one shard (--shard NAME=DSN)")
        self.dsn = dsn
        self.shards = tuple(shards)
        self.schema = schema
        self.placement = placement if placement is not None else Placement()
        self.placement.choose(self.shards, {})  # a fixed placement must name a shard
        self._pool_size = pool_size
        self._pool: ConnectionPool[Any] | None = None
        self._opening = threading.Lock()
        self._q = '"' + schema.replace('"', '""') + '"'

    def shard(self, name: str) -> Shard:
        """The configured shard ``name``; a route naming another is a configuration error."""
        for shard in self.shards:
            if shard.name == name:
                return shard
        raise ConfigError(
            f"the routing table names shard {name!r}, which this process was not given "
            f"(configured: {[s.name for s in self.shards]}); pass --shard {name}=DSN "
            "(or add it to REMEM_SHARDS) on every server and worker")

    def _connections(self) -> ConnectionPool[Any]:
        if self._pool is not None:
            return self._pool
        with self._opening:  # one pool, however many threads ask first
            return self._open()

    def _open(self) -> ConnectionPool[Any]:
        if self._pool is None:
            from psycopg_pool import ConnectionPool

            pool: ConnectionPool[Any] = ConnectionPool(
                self.dsn, min_size=1, max_size=self._pool_size, open=True,
                kwargs={"autocommit": True}, name="remem-shard-routes")
            with pool.connection() as conn, conn.transaction():
                # one creator at a time: concurrent CREATE TABLE IF NOT EXISTS can collide
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                             ("remem.shard_routes:" + self.schema,))
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._q}")
                conn.execute(_CREATE.format(s=self._q))
            self._pool = pool
        return self._pool

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._connections().connection() as conn:
                yield conn
        except StoreError:
            raise
        except Exception as exc:
            from psycopg import Error

            if isinstance(exc, Error):
                raise StoreError(f"the routing table in the control database failed: "
                                 f"{exc}") from exc
            raise

    def setup(self) -> None:
        """Create the table (idempotent; done on first use anyway)."""
        self._connections()

    def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    # -- reading ------------------------------------------------------------------------------

    def lookup(self, tenant: str) -> TenantRoute | None:
        """``tenant``'s route, or ``None`` if it was never placed."""
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._q}.remem_shard_routes "
                "WHERE tenant = %s", (tenant,)).fetchone()
        return None if row is None else _route(row)

    def routes(self) -> list[TenantRoute]:
        """Every route, by tenant."""
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._q}.remem_shard_routes "
                "ORDER BY tenant").fetchall()
        return [_route(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """Tenants per shard (configured shards with none count 0)."""
        found = {shard.name: 0 for shard in self.shards}
        with self._conn() as conn:
            for name, count in conn.execute(
                    f"SELECT shard, count(*) FROM {self._q}.remem_shard_routes "
                    "GROUP BY shard"):
                found[str(name)] = int(count)
        return found

    # -- writing ------------------------------------------------------------------------------

    def place(self, tenant: str, shard: str | None = None) -> TenantRoute:
        """``tenant``'s route, placing it first (on ``shard``, else by the placement policy)
        if it has none. A tenant already placed keeps its shard: moving it is
        :func:`remem.shards.move.move_tenant`'s job."""
        found = self.lookup(tenant)
        if found is not None:
            return found
        name = self.shard(shard).name if shard is not None else self.placement.choose(
            self.shards, self.counts())
        with self._conn() as conn:
            conn.execute(
                f"INSERT INTO {self._q}.remem_shard_routes "
                "(tenant, shard, placed_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (tenant, name, time.time()))
        placed = self.lookup(tenant)  # another process may have placed it first
        assert placed is not None
        return placed

    @contextlib.contextmanager
    def fence(self, tenant: str) -> Iterator[TenantRoute]:
        """Hold ``tenant``'s route row ``FOR KEY SHARE`` while the caller writes the tenant's
        data on the shard it names (placing the tenant first if needed). A move's flip
        waits for every fence held, and fences taken meanwhile wait for the flip and then
        see the new shard."""
        with self._conn() as conn, conn.transaction():
            sql = (f"SELECT {_COLUMNS} FROM {self._q}.remem_shard_routes "
                   "WHERE tenant = %s FOR KEY SHARE")
            row = conn.execute(sql, (tenant,)).fetchone()
            if row is None:  # its first write: place it (another connection), lock again
                self.place(tenant)
                row = conn.execute(sql, (tenant,)).fetchone()
            assert row is not None  # routes are never deleted
            yield _route(row)

    @contextlib.contextmanager
    def exclusive(self, tenant: str) -> Iterator[tuple[psycopg.Connection[Any], TenantRoute]]:
        """Hold ``tenant``'s row ``FOR UPDATE`` (no write of the tenant runs meanwhile) in a
        transaction the caller may update the row in; it commits when the block ends."""
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._q}.remem_shard_routes "
                "WHERE tenant = %s FOR UPDATE", (tenant,)).fetchone()
            if row is None:
                raise InvalidInputError(f"tenant {tenant!r} has no route: it was never placed")
            yield conn, _route(row)

    def set_moving(self, tenant: str, to: str | None) -> None:
        """Record (or clear) that a move of ``tenant`` to ``to`` is under way."""
        with self._conn() as conn:
            conn.execute(
                f"UPDATE {self._q}.remem_shard_routes SET moving_to = %s "
                "WHERE tenant = %s", (to, tenant))

    def flip(self, conn: psycopg.Connection[Any], tenant: str, to: str, came_from: str) -> None:
        """Point ``tenant`` at ``to`` (in the transaction of :meth:`exclusive`), remembering
        ``came_from`` until its old copy is deleted."""
        conn.execute(
            f"UPDATE {self._q}.remem_shard_routes SET shard = %s, moving_to = NULL, "
            "moved_from = %s, version = version + 1 WHERE tenant = %s", (to, came_from, tenant))

    def cleared(self, tenant: str) -> None:
        """The old copy of ``tenant`` is gone: forget where it was."""
        with self._conn() as conn:
            conn.execute(
                f"UPDATE {self._q}.remem_shard_routes SET moved_from = NULL "
                "WHERE tenant = %s", (tenant,))
