"""The SQL of the store, I/O-free: statements shared by SQLite and PostgreSQL, and the seam
where they differ.

:class:`StoreDialect` builds every statement the shared SQL store runs
(:mod:`remem.store.sql_store`) as ``(text, params)``, with the item table aliased ``i``. A
dialect supplies only what truly differs: the placeholder, how a list of ids is passed, how a
filter compiles (JSON1 over the value text, or ``jsonb`` over a shadow document), the shape of
a newest-first listing, the TTL refresh, and where keyword postings and corpus statistics come
from. The SQLite dialect is in :mod:`remem.store.sqlite_sql`, the PostgreSQL one in
:mod:`remem.store.postgres.sql`.

Nothing here touches a connection: statements are unit-testable without a database, and the
values (namespaces, keys, times, filter operands) are always bound as parameters.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from remem.db import Dialect as Engine
from remem.store.base import literal_prefix
from remem.store.filters import FilterNode
from remem.store.namespace_codec import encode_ns, prefix_range
from remem.store.types import CountOp, ListNamespacesOp, Namespace, SearchOp

__all__ = ["COLUMNS", "ListingPath", "Statement", "StoreDialect", "wide_scope"]

#: item columns read into an :class:`~remem.store.types.Item` (table alias ``i``), in the
#: order :meth:`remem.store.sql_store.SQLStore._finish` unpacks them
COLUMNS = ("i.id, i.ns, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl, "
           "i.event_at")
#: ``(text, params)``
Statement = tuple[str, list[Any]]
_PAGE = 1000  # rows per page of iter_items
#: how a newest-first listing reads: ``"leaf"`` one namespace in its (ns, updated_at) index
#: order; ``"scope"`` every item under the prefix through that index, then a sort; ``"newest"``
#: the global updated_at index from the newest entry, skipping entries outside the prefix,
#: until the page is full
ListingPath: TypeAlias = Literal["leaf", "scope", "newest"]
#: measured on SQLite (100k memories under one prefix of a 400k-item file): reading and
#: filtering one item of the scope costs ~3.5 us, skipping one entry of the updated_at index
#: ~0.1 us, so the newest-first walk wins once scope^2 > needed * total * 0.1 / 3.5
_ROW_OVER_ENTRY = 35.0


def wide_scope(total: int, needed: int) -> int:
    """How many items a prefix must hold for a newest-first listing of ``needed`` rows
    (offset + limit) to walk the global updated_at index rather than read the prefix and
    sort: the walk skips about ``needed * total / scope`` entries outside the prefix, the
    sort reads ``scope`` items. At least 200, so a small scope is always read whole (a
    selective filter then costs no more than the scope)."""
    return max(200, math.ceil(math.sqrt(max(total, 1) * needed / _ROW_OVER_ENTRY)))


class StoreDialect(ABC):
    """Statement builders for one SQL engine, on its spelling in :mod:`remem.db` (``engine``:
    placeholders, column types, row locks). ``prefix`` qualifies table names (PostgreSQL's
    quoted schema and a dot; empty on SQLite)."""

    def __init__(self, engine: Engine, prefix: str = "") -> None:
        self.engine = engine
        #: the parameter placeholder
        self.p = engine.placeholder
        #: appended to the read of a conditional put: lock the row until the transaction ends
        self.lock_row = engine.lock
        self.prefix = prefix

    def t(self, name: str) -> str:
        """A table's qualified name."""
        return self.prefix + name

    # -- what differs --------------------------------------------------------------------------

    @abstractmethod
    def ids_in(self, column: str) -> str:
        """``column`` is one of the ids bound by the next parameter (:meth:`ids_param`)."""

    @abstractmethod
    def ids_param(self, ids: Sequence[int]) -> Any:
        """The parameter value of a list of ids for :meth:`ids_in`."""

    @abstractmethod
    def compile_filter(self, node: FilterNode | None) -> Statement:
        """The filter as a boolean expression over the item alias ``i``; ``("", [])`` for
        none."""

    @abstractmethod
    def listing_sql(self, where: str, order: str, path: ListingPath) -> str:
        """Newest-first page of the items matching ``where`` (parameters: ``where``'s, limit,
        offset), in ``updated_at DESC, ns, key`` order, read the way ``path`` says."""

    @abstractmethod
    def refresh_ttls(self, ids: Sequence[int], now: float) -> Statement:
        """Push the expiry of these items (those with a TTL) to ``now`` + TTL."""

    @abstractmethod
    def corpus_stats(self, op: SearchOp, now: float) -> list[Statement]:
        """Statements each giving one row ``(documents, total length)`` over the live
        keyword-indexed items under the prefix; BM25's statistics are their sums."""

    @abstractmethod
    def keyword_postings(self, terms: list[str], where: str, params: list[Any], *,
                         items_first: bool) -> Statement:
        """Rows ``(item id, ns, key, term, tf, doc_len)`` of the postings of ``terms`` whose
        item matches ``where``. ``items_first``: the scope is small, read it item by item."""

    @abstractmethod
    def doc_freq(self, terms: list[str], scope: str, params: list[Any]) -> Statement:
        """Rows ``(term, documents)``: how many live items in ``scope`` hold each term."""

    # -- shared --------------------------------------------------------------------------------

    @property
    def alive(self) -> str:
        """The item has not expired (parameter: now)."""
        return f"(i.expires_at IS NULL OR i.expires_at > {self.p})"

    def _in_range(self, column: str = "i.ns") -> str:
        return f"{column} >= {self.p} AND {column} < {self.p}"

    def get_item(self, namespace: Namespace, key: str, now: float) -> Statement:
        """The live item at an address."""
        p = self.p
        return (f"SELECT {COLUMNS} FROM {self.t('items')} AS i WHERE i.ns = {p} AND "
                f"i.key = {p} AND {self.alive}", [encode_ns(namespace), key, now])

    def current_version(self, namespace: Namespace, key: str, now: float) -> Statement:
        """``updated_at`` of the live item at an address (a conditional put's check)."""
        p = self.p
        return (f"SELECT i.updated_at FROM {self.t('items')} AS i WHERE i.ns = {p} AND "
                f"i.key = {p} AND {self.alive}{self.lock_row}", [encode_ns(namespace), key, now])

    def delete_item(self, namespace: Namespace, key: str) -> Statement:
        """Delete an item; returns its id."""
        p = self.p
        return (f"DELETE FROM {self.t('items')} WHERE ns = {p} AND key = {p} RETURNING id",
                [encode_ns(namespace), key])

    def ttl_of(self, namespace: Namespace, key: str) -> Statement:
        """The TTL recorded for an item, expired or not."""
        p = self.p
        return (f"SELECT ttl FROM {self.t('items')} WHERE ns = {p} AND key = {p}",
                [encode_ns(namespace), key])

    def namespaces(self, op: ListNamespacesOp, now: float) -> Statement:
        """Distinct namespaces of live items, narrowed to the pattern's literal head."""
        text = f"SELECT DISTINCT i.ns FROM {self.t('items')} AS i WHERE {self.alive}"
        params: list[Any] = [now]
        bounds = prefix_range(literal_prefix(op.prefix))
        if bounds is not None:
            text += f" AND {self._in_range()}"
            params.extend(bounds)
        return text, params

    def is_leaf(self, prefix: Namespace) -> Statement | None:
        """A row when some namespace lies strictly below ``prefix`` (one index probe);
        ``None`` for the empty prefix (everything lies below it)."""
        bounds = prefix_range(prefix)
        if bounds is None:
            return None
        p = self.p
        return (f"SELECT 1 FROM {self.t('items')} WHERE ns > {p} AND ns < {p} LIMIT 1",
                list(bounds))

    def items_where(self, op: SearchOp | CountOp, now: float, *, exact_ns: bool = False,
                    with_filter: bool = True) -> Statement:
        """The WHERE clause (alias ``i``) of a search or a count: alive, under the prefix, in
        the event range, matching the filter (unless ``with_filter`` is false). ``exact_ns``:
        the prefix is a leaf, compare with ``=`` so the (ns, updated_at) index gives rows in
        page order."""
        p = self.p
        clauses = [self.alive]
        params: list[Any] = [now]
        bounds = prefix_range(op.namespace_prefix)
        if exact_ns:
            clauses.append(f"i.ns = {p}")
            params.append(encode_ns(op.namespace_prefix))
        elif bounds is not None:
            clauses.append(self._in_range())
            params.extend(bounds)
        after, before = op.event_range
        if after is not None:
            clauses.append(f"coalesce(i.event_at, i.created_at) >= {p}")
            params.append(after)
        if before is not None:
            clauses.append(f"coalesce(i.event_at, i.created_at) < {p}")
            params.append(before)
        text, filter_params = self.compile_filter(op.parsed_filter if with_filter else None)
        if text:
            clauses.append(text)
            params.extend(filter_params)
        return " AND ".join(f"({c})" for c in clauses), params

    def count(self, op: CountOp, now: float) -> Statement:
        """How many live items match a count's prefix, filter and event range (one row)."""
        where, params = self.items_where(op, now)
        return f"SELECT count(*) FROM {self.t('items')} AS i WHERE {where}", params

    def scope_where(self, op: SearchOp, now: float) -> Statement:
        """Live items under the prefix (no filter, no time range): what BM25 statistics
        cover."""
        bounds = prefix_range(op.namespace_prefix)
        if bounds is None:
            return self.alive, [now]
        return f"{self.alive} AND {self._in_range()}", [now, *bounds]

    def table_size(self) -> Statement:
        """One row: about how many items the table holds (the largest id; cheap)."""
        return f"SELECT coalesce(max(id), 0) FROM {self.t('items')}", []

    def scope_size(self, prefix: Namespace, cap: int) -> Statement:
        """One row: how many items (expired ones too) lie under a non-empty ``prefix``,
        counting no further than ``cap`` (an index range scan of bounded cost)."""
        bounds = prefix_range(prefix)
        assert bounds is not None, "the empty prefix holds every item"
        p = self.p
        return (f"SELECT count(*) FROM (SELECT 1 FROM {self.t('items')} WHERE ns >= {p} AND "
                f"ns < {p} LIMIT {p}) AS s", [*bounds, cap])

    def listing(self, op: SearchOp, now: float, *, path: ListingPath) -> Statement:
        """The page of a search without a query: newest first."""
        leaf = path == "leaf"
        where, params = self.items_where(op, now, exact_ns=leaf)
        order = "i.updated_at DESC, i.key" if leaf else "i.updated_at DESC, i.ns, i.key"
        return self.listing_sql(where, order, path), [*params, op.limit, op.offset]

    def items_by_id(self, ids: Sequence[int]) -> Statement:
        """The items with these ids."""
        return (f"SELECT {COLUMNS} FROM {self.t('items')} AS i WHERE {self.ids_in('i.id')}",
                [self.ids_param(ids)])

    def addresses(self, ids: Sequence[int], where: str, params: list[Any]) -> Statement:
        """``(id, ns, key)`` of the items with these ids that match ``where``."""
        return (f"SELECT i.id, i.ns, i.key FROM {self.t('items')} AS i WHERE "
                f"{self.ids_in('i.id')} AND {where}", [self.ids_param(ids), *params])

    def event_times(self, ids: Sequence[int]) -> Statement:
        """``(id, event time)`` of these items (``event_at``, else ``created_at``)."""
        return (f"SELECT i.id, coalesce(i.event_at, i.created_at) FROM {self.t('items')} AS i "
                f"WHERE {self.ids_in('i.id')}", [self.ids_param(ids)])

    def items_page(self, prefix: Namespace, after: tuple[str, str], now: float) -> Statement:
        """Live items under ``prefix`` after the stored ``(ns, key)`` ``after``, in that
        order, one page."""
        p = self.p
        text = (f"SELECT {COLUMNS} FROM {self.t('items')} AS i WHERE {self.alive} AND "
                f"(i.ns, i.key) > ({p}, {p})")
        params: list[Any] = [now, *after]
        bounds = prefix_range(prefix)
        if bounds is not None:
            text += f" AND {self._in_range()}"
            params.extend(bounds)
        return text + f" ORDER BY i.ns, i.key LIMIT {_PAGE}", params

    def any_vector(self) -> Statement:
        """A row when the store holds any vector."""
        return f"SELECT 1 FROM {self.t('vectors')} LIMIT 1", []

    def vector_models(self) -> Statement:
        """Names of the embedding models whose vectors the store holds."""
        return (f"SELECT name FROM {self.t('embedding_models')} WHERE id IN "
                f"(SELECT DISTINCT model_id FROM {self.t('vectors')}) ORDER BY name", [])

