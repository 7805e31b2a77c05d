"""The SQLite dialect of the store's SQL (I/O-free; see :mod:`remem.store.sql_dialect`).

What differs from PostgreSQL: ``?`` placeholders; id lists travel as one JSON text read with
``json_each``; filters compile to JSON1 over the value text; a listing sorts ids in a subquery
(small sorter rows) and reads the values of the page only; keyword postings live in two tables
(``postings`` in term order, ``recent_postings`` in arrival order, see ``m006``) and hold a
term's integer id (``m010``: the store passes ids for terms, and maps them back), and the corpus
statistics are per-namespace sums kept by triggers plus the items that may expire (``m004``).

The global ``updated_at`` index that a wide newest-first listing walks is not part of the
schema (``m009`` drops it): the store builds it from :data:`NEWEST_INDEX` the first time it
needs it, so writers of files never listed that way do not maintain it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from remem.db import SQLITE
from remem.store.filters import FilterNode, to_sqlite
from remem.store.namespace_codec import prefix_range
from remem.store.sql_dialect import COLUMNS, ListingPath, Statement, StoreDialect
from remem.store.types import SearchOp

__all__ = ["NEWEST_INDEX", "NEWEST_INDEX_PROBE", "SQLiteDialect"]

#: the index a ``"newest"`` listing walks, built on demand (see the module docstring): from the
#: newest entry, entries outside the prefix are skipped without reading their row
NEWEST_INDEX = ("CREATE INDEX IF NOT EXISTS items_updated ON items (updated_at DESC, ns, key, "
                "expires_at)")
#: one row if that index exists (built by this process or another)
NEWEST_INDEX_PROBE = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'items_updated'"


class SQLiteDialect(StoreDialect):
    """Statements for the stock ``sqlite3`` module (JSON1, no extensions)."""

    def __init__(self) -> None:
        super().__init__(SQLITE)

    def ids_in(self, column: str) -> str:
        return f"{column} IN (SELECT value FROM json_each(?))"

    def ids_param(self, ids: Sequence[int]) -> Any:
        return json.dumps(list(ids))

    def compile_filter(self, node: FilterNode | None) -> Statement:
        text, params = to_sqlite(node, column="i.value")
        return ("", []) if text == "1" else (text, params)

    def listing_sql(self, where: str, order: str, path: ListingPath) -> str:
        # inside one namespace, and in the updated_at index, rows come in page order, so
        # SQLite stops after `limit` matches instead of sorting. Without statistics (no
        # ANALYZE) the planner always takes the namespace range: the store chose, so say which.
        # "newest" only once items_updated exists (NEWEST_INDEX): the store checks first
        index = "items_updated" if path == "newest" else "items_ns_updated"
        return (f"SELECT {COLUMNS} FROM items AS i WHERE i.id IN (SELECT i.id FROM items AS i "
                f"INDEXED BY {index} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?) "
                "ORDER BY i.updated_at DESC, i.ns, i.key")

    def refresh_ttls(self, ids: Sequence[int], now: float) -> Statement:
        return ("UPDATE items SET expires_at = ? + ttl WHERE ttl IS NOT NULL AND id IN "
                "(SELECT value FROM json_each(?))", [now, self.ids_param(ids)])

    def corpus_stats(self, op: SearchOp, now: float) -> list[Statement]:
        bounds = prefix_range(op.namespace_prefix)
        in_prefix, params = ("", []) if bounds is None else (" AND ns >= ? AND ns < ?", bounds)
        return [
            ("SELECT coalesce(sum(docs), 0), coalesce(sum(total_len), 0) FROM keyword_stats "
             f"WHERE 1{in_prefix}", list(params)),
            ("SELECT count(*), coalesce(sum(doc_len), 0) FROM items WHERE doc_len > 0 AND "
             f"expires_at IS NOT NULL AND expires_at > ?{in_prefix}", [now, *params]),
        ]

    def keyword_postings(self, terms: list[str], where: str, params: list[Any], *,
                         items_first: bool) -> Statement:
        args = [json.dumps(terms), *params] * 2
        if items_first:
            # each item of the scope looked up in the postings by (term, item): the cost
            # follows the scope. CROSS JOIN: SQLite keeps this join order
            return (" UNION ALL ".join(
                f"SELECT p.item_id, i.ns, i.key, p.term, p.tf, i.doc_len FROM items AS i "
                f"CROSS JOIN {table} AS p ON p.item_id = i.id AND p.term IN "
                f"(SELECT value FROM json_each(?)) WHERE {where}"
                for table in ("postings", "recent_postings")), args)
        return _postings_of_terms("p.item_id, i.ns, i.key, p.term, p.tf, i.doc_len", where), args

    def doc_freq(self, terms: list[str], scope: str, params: list[Any]) -> Statement:
        return (f"SELECT term, count(*) FROM ({_postings_of_terms('p.term', scope)}) "
                "GROUP BY term", [json.dumps(terms), *params] * 2)


def _postings_of_terms(columns: str, where: str) -> str:
    """Postings (``p``) of some terms joined with their items matching ``where``, from both
    tables; parameters: terms (JSON), then ``where``'s, twice. recent_postings has no term
    index: it is scanned (CROSS JOIN keeps that order), never the items of the scope."""
    return " UNION ALL ".join(
        f"SELECT {columns} FROM {table} AS p {join} items AS i {_COVER} ON i.id = p.item_id "
        f"WHERE p.term IN (SELECT value FROM json_each(?)) AND {where}"
        for table, join in (("postings", "JOIN"), ("recent_postings", "CROSS JOIN")))


# the postings' side of an item (see m007): read without touching the row and its value
_COVER = "INDEXED BY items_postings_cover"
