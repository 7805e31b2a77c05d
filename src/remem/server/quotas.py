"""Storage quotas per tenant: how many items and how many bytes of values a tenant may keep.

What counts: every item of the tenant's store outside remem's bookkeeping (``"_remem"``, the
bookkeeping root of :mod:`remem.store.reserved`): memories (current and invalidated), raw
store items, and the thread search index. Its size is the value as compact UTF-8 JSON
(vectors and index rows are not counted). History, ids and locks are bookkeeping: they are
not counted and never refused, so an undo or a hard delete always goes through, and frees
room. The tenant's temporal graphs count too: each episode, entity and fact is an item, its
text its size (:mod:`remem.graph.quota`).

How it is enforced: the tenant's store is a :class:`QuotaStore`, which checks each write
batch before it runs. A batch that would leave the tenant over a quota writes nothing and
raises :class:`QuotaExceededError` (HTTP 413 ``quota_exceeded``; waiting does not free room,
so it is not a 429). A batch that does not grow the tenant (deletes, a smaller update) is
always allowed, even over the quota.

The usage is counted exactly by reading every item of the tenant (:func:`measure`), at
most every ``recount_seconds`` per tenant and process; in between, each batch's exact
growth is added (its keys are read before it runs). Before a refusal the tenant is counted
again unless its count is under :data:`FRESH_SECONDS` old, so a refusal is always based on
a recent count, and writes refused in a loop cost at most one count per second. The quota
is soft by what other processes (``--workers``, other servers) wrote since this process
last counted, and by the batches running at the same moment.

A graph ingest (:class:`QuotaStore` is a :class:`~remem.graph.quota.GraphQuota`) is checked
twice: before its model call for the episode alone, as a batch is, and inside its write
transaction for every row it adds, on the count the first check used (no database read
while the graph holds its write lock). Graphs of an in-memory store each live in their own
in-memory database, which no recount reads: their rows are added as they are written.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from remem.errors import ConfigError, QuotaExceededError
from remem.store import BaseStore, DeleteOp, GetOp, Item, Op, PutOp, Result
from remem.store.reserved import BOOKKEEPING, is_bookkeeping
from remem.store.scoped import ScopedStore

__all__ = ["BOOKKEEPING", "FRESH_SECONDS", "Quota", "QuotaExceededError", "QuotaStore",
           "TenantUsage", "batch_growth", "measure", "value_bytes"]

#: a refusal is decided on a count at most this old (seconds)
FRESH_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Quota:
    """Limits per tenant: ``max_items`` items and ``max_bytes`` bytes of values (``None``:
    unlimited); ``recount_seconds``: how old a tenant's exact count may get in a process."""

    max_items: int | None = None
    max_bytes: int | None = None
    recount_seconds: float = 60.0

    def __post_init__(self) -> None:
        for name, option in (("max_items", "--quota-items"), ("max_bytes", "--quota-bytes")):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ConfigError(f"quota {name} must be a positive integer or None, got "
                                  f"{value!r} (remem serve {option})")
        if (isinstance(self.recount_seconds, bool)
                or not isinstance(self.recount_seconds, int | float)
                or not 0 <= self.recount_seconds <= 86_400):
            raise ConfigError(f"quota recount_seconds must be seconds in [0, 86400], got "
                              f"{self.recount_seconds!r}")

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return self.max_items is not None or self.max_bytes is not None


@dataclass(frozen=True, slots=True)
class TenantUsage:
    """What a tenant holds: ``items`` and ``bytes`` of values (bookkeeping excluded)."""

    items: int = 0
    bytes: int = 0

    def __add__(self, other: TenantUsage) -> TenantUsage:
        return TenantUsage(self.items + other.items, self.bytes + other.bytes)


def value_bytes(value: Mapping[str, Any]) -> int:
    """The size quotas count for a value: its compact JSON in UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8", "surrogatepass"))


def _counted(namespace: Sequence[str]) -> bool:
    return not is_bookkeeping(namespace)


def measure(items: Iterable[Item]) -> TenantUsage:
    """The usage ``items`` amount to (bookkeeping items are skipped)."""
    count = size = 0
    for item in items:
        if _counted(item.namespace):
            count += 1
            size += value_bytes(item.value)
    return TenantUsage(count, size)


def batch_growth(ops: Sequence[Op], existing: Mapping[tuple[tuple[str, ...], str], int]
                 ) -> TenantUsage:
    """How much running ``ops`` grows a tenant, given the value size of each key the ops write
    that exists now (``existing``; absent keys do not exist). Later ops on a key replace
    earlier ones, as in a batch."""
    final: dict[tuple[tuple[str, ...], str], int | None] = {}
    for op in ops:
        if isinstance(op, PutOp | DeleteOp) and _counted(op.namespace):
            where = (tuple(op.namespace), op.key)
            final[where] = value_bytes(op.value) if isinstance(op, PutOp) else None
    items = size = 0
    for where, after in final.items():
        before = existing.get(where)
        items += (after is not None) - (before is not None)
        size += (after or 0) - (before or 0)
    return TenantUsage(items, size)


class _Ledger:
    """One tenant's usage as last counted, plus the growth of the batches since."""

    def __init__(self) -> None:
        self.usage: TenantUsage | None = None
        self.counted_at = 0.0
        #: rows of graphs that no recount reads (an in-memory store's), as written
        self.unrecounted = TenantUsage()
        self.lock = threading.Lock()


class QuotaStore(ScopedStore):
    """A tenant's :class:`~remem.store.scoped.ScopedStore` that refuses write batches over
    ``quota`` (see the module docstring). ``tenant`` names the tenant in refusals; ``clock``
    (monotonic seconds) decides when a count is stale."""

    def __init__(self, inner: BaseStore, prefix: Sequence[str], quota: Quota, *,
                 tenant: str, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(inner, prefix)
        self.quota = quota
        self.tenant = tenant
        self._monotonic = clock
        self._ledger = _Ledger()
        #: whether a recount reads the tenant's graph rows (False: an in-memory store)
        self._graphs_recounted = True

    def usage(self, *, fresh: bool = False) -> TenantUsage:
        """The tenant's usage: counted again if the count is stale, or with ``fresh`` if it
        is older than :data:`FRESH_SECONDS` (so refused writes cannot make the server read
        a whole tenant per request)."""
        ledger = self._ledger
        with ledger.lock:
            age = self._monotonic() - ledger.counted_at
            stale = (ledger.usage is None or age >= self.quota.recount_seconds
                     or (fresh and age >= FRESH_SECONDS))
        if stale:  # counted outside the lock: a large tenant takes a while to read
            counted = measure(self.iter_items(())) + self._graph_rows()
            with ledger.lock:
                ledger.usage, ledger.counted_at = counted, self._monotonic()
        with ledger.lock:
            assert ledger.usage is not None
            return ledger.usage + ledger.unrecounted

    def _graph_rows(self) -> TenantUsage:
        """The tenant's graph rows in the store's database (none for an in-memory store)."""
        from remem.graph.quota import rows_under

        found = rows_under(self.inner, tuple(self.prefix))
        self._graphs_recounted = found is not None
        return TenantUsage() if found is None else TenantUsage(*found)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` if they leave the tenant within its quota; else raise
        :class:`QuotaExceededError` and write nothing."""
        op_list = list(ops)
        writes = [op for op in op_list
                  if isinstance(op, PutOp | DeleteOp) and _counted(op.namespace)]
        # deletes alone are never refused; they are only read first to keep a running count
        deletes_only = not any(isinstance(op, PutOp) for op in writes)
        if not writes or (deletes_only and self._ledger.usage is None):
            return super().batch(op_list)
        growth = self._growth(writes)
        if growth.items > 0 or growth.bytes > 0:
            usage = self.usage()
            if self._refusal(usage, growth) is not None:
                usage = self.usage(fresh=True)  # refuse only on a fresh count
                refusal = self._refusal(usage, growth)
                if refusal is not None:
                    raise refusal
        results = super().batch(op_list)
        with self._ledger.lock:
            if self._ledger.usage is not None:
                self._ledger.usage = self._ledger.usage + growth
        return results

    def admit_graph(self, items: int, size: int, *, recount: bool = True) -> None:
        """Refuse (raise :class:`QuotaExceededError`) a graph write adding ``items`` rows of
        ``size`` bytes that would leave the tenant over its quota; ``recount=False``: on the
        usage as last counted (the graph holds a write transaction)."""
        growth = TenantUsage(items, size)
        if recount:
            usage = self.usage()
            if self._refusal(usage, growth, graph=True) is None:
                return
            usage = self.usage(fresh=True)
        else:
            with self._ledger.lock:
                usage = (TenantUsage() if self._ledger.usage is None
                         else self._ledger.usage) + self._ledger.unrecounted
        refusal = self._refusal(usage, growth, graph=True)
        if refusal is not None:
            raise refusal

    def graph_written(self, items: int, size: int) -> None:
        """Add rows a graph wrote to the running count."""
        grown = TenantUsage(items, size)
        with self._ledger.lock:
            if not self._graphs_recounted:
                self._ledger.unrecounted = self._ledger.unrecounted + grown
            elif self._ledger.usage is not None:
                self._ledger.usage = self._ledger.usage + grown

    def _growth(self, writes: Sequence[Op]) -> TenantUsage:
        keys = {(tuple(op.namespace), op.key) for op in writes
                if isinstance(op, PutOp | DeleteOp)}
        gets = [GetOp(namespace, key, refresh_ttl=False) for namespace, key in keys]
        found = super().batch(gets)
        existing = {(tuple(item.namespace), item.key): value_bytes(item.value)
                    for item in found if isinstance(item, Item)}
        return batch_growth(writes, existing)

    def _refusal(self, usage: TenantUsage, growth: TenantUsage, *,
                 graph: bool = False) -> QuotaExceededError | None:
        after = usage + growth
        what = "this graph episode" if graph else "this write"
        fix = ("nothing was written. Delete memories (hard=true) or store items to make "
               "room, or ask the operator to raise the quota")
        limit = self.quota.max_items
        if limit is not None and growth.items > 0 and after.items > limit:
            return QuotaExceededError(
                f"tenant {self.tenant!r} holds {usage.items:,} items and {what} adds "
                f"{growth.items:,}, over its quota of {limit:,} items (remem serve "
                f"--quota-items); {fix}",
                quota="items", limit=limit, usage=usage.items, after=after.items)
        limit = self.quota.max_bytes
        if limit is not None and growth.bytes > 0 and after.bytes > limit:
            return QuotaExceededError(
                f"tenant {self.tenant!r} holds {usage.bytes:,} bytes of values and {what} "
                f"adds {growth.bytes:,}, over its quota of {limit:,} bytes (remem serve "
                f"--quota-bytes); {fix}",
                quota="bytes", limit=limit, usage=usage.bytes, after=after.bytes)
        return None
