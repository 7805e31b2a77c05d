"""Moving a tenant to another shard while it is written to, with no acknowledged write lost.

:func:`move_tenant` runs these steps, each safe to interrupt (``kill -9`` included) and the
whole safe to run again with the same arguments:

1. **mark**: the route records ``moving_to`` (the tenant is still served from its shard);
2. **bulk copy**: every item under the tenant's prefix is copied to the target, timestamps
   and TTLs kept, while the tenant keeps reading and writing the source;
3. **catch up and flip**, holding the route row ``FOR UPDATE``: every write in flight holds
   the row ``FOR KEY SHARE`` (:meth:`~remem.shards.routes.RouteTable.fence`), so once the lock is
   granted no write is running and none can start. The items changed since the bulk copy
   (a different ``updated_at``) are copied again, those deleted meanwhile are deleted from
   the target, and the route is pointed at the target in the same transaction. Writers that
   queued behind the lock then read the new route and write to the target;
4. **settle**: wait until every process's cached route has expired (reads in that window may
   still go to the source, which still holds the same data);
5. **delete the old copy** from the source, then forget ``moved_from``.

Interrupted before step 3 commits, the route still names the source (nothing was lost; the
target holds a partial copy that a new run overwrites and step 3 trims). Interrupted after
it, the route names the target and ``moved_from`` the source: a new run (or ``remem shards
move`` to the same target) finishes step 5. :func:`abandon_move` deletes a partial copy
instead.

What is moved: the tenant's store items (memories, raw items, files, approvals, blocks,
prompts, episodes, thread search entries: every family kept in the store). What is refused:
a tenant with threads on the source shard (their tables are not copied yet). What stays:
keys, jobs, budgets, usage, counters and the graph live in the control database and need
no move (docs/shards.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from remem.errors import InvalidInputError, UnsupportedError
from remem.shards.router import ShardRouter
from remem.store.base import BaseStore
from remem.store.types import DeleteOp, Item, PutOp

__all__ = ["MoveReport", "abandon_move", "move_tenant", "tenant_has_threads", "tenant_items"]

#: items per copy or delete batch (each one transaction on its shard)
BATCH = 500


@dataclass(frozen=True, slots=True)
class MoveReport:
    """What a move did: items copied in bulk, items copied and deleted while the route was
    locked (the writes made during the bulk copy), items deleted from the source, and the
    seconds each step took (``locked_seconds``: how long writers of the tenant waited)."""

    tenant: str
    source: str
    target: str
    copied: int = 0
    caught_up: int = 0
    trimmed: int = 0
    deleted: int = 0
    bulk_seconds: float = 0.0
    locked_seconds: float = 0.0
    settle_seconds: float = 0.0
    delete_seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return asdict(self)


def _stamp(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _copy_op(store: BaseStore, item: Item) -> PutOp:
    ttl = store.ttl_of(item.namespace, item.key) if item.expires_at is not None else None
    return PutOp(item.namespace, item.key, item.value, ttl=ttl,
                 created_at=_stamp(item.created_at), updated_at=_stamp(item.updated_at),
                 expires_at=_stamp(item.expires_at), event_at=_stamp(item.event_at))


def _chunks(ops: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for op in ops:
        chunk.append(op)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _copy_all(source: BaseStore, target: BaseStore, prefix: Sequence[str]) -> int:
    count = 0
    for chunk in _chunks(_copy_op(source, item) for item in source.iter_items(prefix)):
        target.batch(chunk)
        count += len(chunk)
    return count


def _catch_up(source: BaseStore, target: BaseStore, prefix: Sequence[str]) -> tuple[int, int]:
    """Make the target's items under ``prefix`` the source's: copy those whose
    ``updated_at`` differs or that it lacks, delete those the source no longer has."""
    stamps = {(item.namespace, item.key): item.updated_at
              for item in target.iter_items(prefix)}
    changed = 0

    def differing() -> Iterator[PutOp]:
        nonlocal changed
        for item in source.iter_items(prefix):
            if stamps.pop((item.namespace, item.key), None) != item.updated_at:
                changed += 1
                yield _copy_op(source, item)

    for chunk in _chunks(differing()):
        target.batch(chunk)
    gone = [DeleteOp(namespace, key) for namespace, key in stamps]
    for chunk in _chunks(gone):
        target.batch(chunk)
    return changed, len(gone)


def _delete_all(store: BaseStore, prefix: Sequence[str]) -> int:
    # listed first, deleted after: deleting while iterating would move the listing's pages
    ops = [DeleteOp(item.namespace, item.key) for item in store.iter_items(prefix)]
    for chunk in _chunks(ops):
        store.batch(chunk)
    return len(ops)


def tenant_has_threads(dsn: str, tenant: str, *, schema: str = "remem") -> bool:
    """Whether the database ``dsn`` holds threads of ``tenant`` (stored as ``<tenant>/<id>``
    by :class:`~remem.threads.scoped.ScopedThreads`)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".threads',)).fetchone()
        if found is None or found[0] is None:
            return False
        table = '"' + schema.replace('"', '""') + '".threads'
        prefix = f"{tenant}/"
        row = conn.execute(f"SELECT 1 FROM {table} WHERE left(id, %s) = %s "
                           "LIMIT 1", (len(prefix), prefix)).fetchone()
    return row is not None


def _refuse_threads(router: ShardRouter, shard: str, tenant: str) -> None:
    if tenant_has_threads(router.routes.shard(shard).dsn, tenant, schema=router.routes.schema):
        raise UnsupportedError(
            f"tenant {tenant!r} has threads on shard {shard!r}, and moving threads is not "
            "supported yet (only the families kept in the store move); delete or export the "
            "tenant's threads first, or leave the tenant where it is (docs/shards.md)")


def move_tenant(router: ShardRouter, tenant: str, to: str, *, settle: float | None = None,
                progress: Callable[[str], None] | None = None) -> MoveReport:
    """Move ``tenant`` (its items under :func:`tenant_items`) to shard ``to`` online; see the module
    docstring for the steps. ``settle``: seconds to wait between the flip and deleting the
    old copy (default: twice the router's route cache, the longest a process may still read
    the old route; give every server's ``route_cache_seconds``, if longer)."""
    say = progress or (lambda text: None)
    target = router.routes.shard(to).name
    route = router.routes.lookup(tenant)
    if route is None:
        raise InvalidInputError(f"tenant {tenant!r} has no route: it was never placed "
                                "(remem shards place)")
    wait = 2 * router.cache_seconds if settle is None else settle
    if route.shard == target:
        report = MoveReport(tenant, route.moved_from or target, target,
                            note="already on the target")
        if route.moved_from is not None and route.moved_from != target:
            return _finish(router, tenant, route.moved_from, report, wait, say)
        return report
    if route.moved_from is not None:  # an earlier move's old copy is still there: drop it
        say(f"finishing the earlier move from {route.moved_from}")
        _finish(router, tenant, route.moved_from,
                MoveReport(tenant, route.moved_from, route.shard), wait, say)
    source = route.shard
    prefix = tenant_items(tenant)
    _refuse_threads(router, source, tenant)
    router.routes.set_moving(tenant, target)
    src, dst = router.store(source), router.store(target)
    started = time.monotonic()
    say(f"copying {tenant} from {source} to {target}")
    copied = _copy_all(src, dst, prefix)
    bulk = time.monotonic() - started
    say(f"copied {copied} items in {bulk:.2f} s; catching up under the route lock")
    locked_at = time.monotonic()
    with router.routes.exclusive(tenant) as (conn, now):
        if now.shard != source:
            raise InvalidInputError(
                f"tenant {tenant!r} moved to {now.shard!r} while this move ran (another "
                "mover?); run the move again")
        _refuse_threads(router, source, tenant)  # none can be written while the lock is held
        caught_up, trimmed = _catch_up(src, dst, prefix)
        router.routes.flip(conn, tenant, target, source)
    locked = time.monotonic() - locked_at
    say(f"route flipped after {locked:.3f} s under the lock ({caught_up} items caught up)")
    report = MoveReport(tenant, source, target, copied=copied, caught_up=caught_up,
                        trimmed=trimmed, bulk_seconds=bulk, locked_seconds=locked)
    return _finish(router, tenant, source, report, wait, say)


def _finish(router: ShardRouter, tenant: str, old: str, report: MoveReport, wait: float,
            say: Callable[[str], None]) -> MoveReport:
    """Steps 4 and 5: let cached routes expire, delete the copy on ``old``, clear it."""
    from dataclasses import replace

    started = time.monotonic()
    time.sleep(wait)
    settled = time.monotonic() - started
    started = time.monotonic()
    deleted = _delete_all(router.store(old), tenant_items(tenant))
    router.routes.cleared(tenant)
    say(f"deleted {deleted} items of {tenant} from {old}")
    return replace(report, deleted=deleted, settle_seconds=settled,
                   delete_seconds=time.monotonic() - started)


def tenant_items(tenant: str) -> tuple[str, ...]:
    """Where ``tenant``'s items are: :func:`remem.server.keys.tenant_prefix`, spelled here
    because shards sit below the server (a test keeps the two equal)."""
    return ("tenants", tenant)


def abandon_move(router: ShardRouter, tenant: str) -> int:
    """Give up an interrupted move of ``tenant`` that had not flipped its route: delete the
    partial copy on the target and clear ``moving_to``; return the items deleted."""
    route = router.routes.lookup(tenant)
    if route is None or route.moving_to is None or route.moving_to == route.shard:
        return 0
    with router.routes.exclusive(tenant) as (_conn, locked):
        if locked.moving_to is None:
            return 0
        deleted = _delete_all(router.store(locked.moving_to), tenant_items(tenant))
    router.routes.set_moving(tenant, None)
    return deleted
