"""How a graph's rows count against a storage quota (the server's per-tenant quotas,
:mod:`remem.server.quotas`), without the graph knowing about servers.

Rows counted: episodes, entities and facts, one item each; their size is the UTF-8 length of
their text (an episode's content, an entity's name, a fact's text). Profile slots and
timeline events are not counted (the profile schema bounds the slots; events come with
episodes, which are).

A store that enforces a quota offers :class:`GraphQuota`; :meth:`remem.graph.Graph.beside`
finds it among the store's layers and hands it to the graph, whose ingest asks it twice:
before the model call, for the episode alone (a tenant already full is refused before the
call is paid for), and inside the write transaction, for everything the episode adds (a
refusal rolls the transaction back: nothing is written). :func:`rows_under` is what the
quota's exact recount reads.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from remem.graph.storage import persistent_storage_beside
from remem.store.namespace_codec import prefix_range

__all__ = ["GraphQuota", "rows_under", "text_bytes"]

#: the tables whose rows count, and the column whose text is their size
_COUNTED = (("graph_episodes", "content"), ("graph_entities", "name"), ("graph_facts", "fact"))


def text_bytes(text: str) -> int:
    """The size a graph row's text counts for: its UTF-8 length."""
    return len(text.encode("utf-8", "surrogatepass"))


@runtime_checkable
class GraphQuota(Protocol):
    """What a graph asks before it grows a tenant (see the module docstring)."""

    def admit_graph(self, items: int, size: int, *, recount: bool = True) -> None:
        """Raise :class:`~remem.errors.QuotaExceededError` if adding ``items`` rows of
        ``size`` bytes would leave the tenant over its quota. ``recount=False``: decide on
        the usage as last counted, without reading the database (the caller holds a write
        transaction)."""
        ...

    def graph_written(self, items: int, size: int) -> None:
        """Record rows a graph wrote (after its transaction committed)."""
        ...


def rows_under(store: Any, prefix: tuple[str, ...]) -> tuple[int, int] | None:
    """``(rows, bytes)`` of the graphs under namespace ``prefix`` in ``store``'s database;
    ``None`` when the store keeps no database (in-memory: each graph beside it has its own,
    so its rows are known only as they are written)."""
    storage = persistent_storage_beside(store)
    if storage is None:
        return None
    bounds = prefix_range(prefix)
    # a range on ns (each counted table has an index leading with it), not substr(): a
    # tenant's recount reads its own rows only
    where, params = ("ns >= ? AND ns < ?", bounds) if bounds is not None else ("1 = 1", ())
    low = bounds[0] if bounds is not None else ""
    items = size = 0
    try:
        with storage.transaction(False, low) as tx:
            measure = ("octet_length({col})" if tx.dialect == "postgres"
                       else "length(CAST({col} AS BLOB))")
            for table, column in _COUNTED:
                count, total = tx.execute(
                    f"SELECT COUNT(*), COALESCE(SUM({measure.format(col=column)}), 0) FROM "
                    f"{table} WHERE {where}", params).fetchone()
                items += int(count)
                size += int(total)
    finally:
        storage.close()
    return items, size

