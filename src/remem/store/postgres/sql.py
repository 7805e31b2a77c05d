"""I/O-free pieces of the PostgreSQL backend: settings, identifiers, its SQL dialect and the SQL
of vector search. Nothing here touches a connection, so it is shared by every code path and
unit-testable without a server.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, LiteralString

import numpy as np
import numpy.typing as npt

from remem.db import POSTGRES, quote_ident
from remem.errors import ConfigError
from remem.store.filters import FilterNode
from remem.store.filters_postgres import to_postgres
from remem.store.sql_dialect import COLUMNS, ListingPath, Statement, StoreDialect
from remem.store.types import SearchOp

__all__ = [
    "PostgresDialect",
    "VectorSearch",
    "decode_vector",
    "encode_vector",
    "exact_query",
    "quote_ident",
    "scope_count",
    "sql",
]

def sql(text: str) -> LiteralString:
    """Mark SQL assembled from trusted pieces (identifiers checked, values bound as parameters)
    as a literal for psycopg's typing."""
    return text  # mypy treats LiteralString as str; this names the intent


@dataclass(frozen=True, slots=True)
class VectorSearch:
    """How the PostgreSQL store indexes and searches vectors.

    ``method``: ``"hnsw"`` (default) builds a pgvector HNSW index per embedding model;
    ``"exact"`` builds none and always scans (recall 1.0, cost grows with the scope).
    ``precision``: ``"half"`` indexes ``halfvec`` (half the index size and build work; the table
    keeps float32 and results are re-scored in float32), ``"single"`` indexes ``vector``.
    ``m`` / ``ef_construction``: HNSW graph degree and build beam (fixed when the index is
    built). ``ef_search``: search beam; more is slower and more accurate.
    ``exact_below``: a search whose namespace scope holds at most this many vectors scans them
    exactly instead of walking the global graph (per-user search stays complete and fast).
    ``max_scan_tuples``: cap of pgvector's iterative index scan (``hnsw.max_scan_tuples``).
    """

    method: Literal["hnsw", "exact"] = "hnsw"
    precision: Literal["single", "half"] = "single"
    m: int = 16
    ef_construction: int = 64
    ef_search: int = 64
    exact_below: int = 5_000
    max_scan_tuples: int = 50_000

    def __post_init__(self) -> None:
        if self.method not in ("hnsw", "exact"):
            raise ConfigError(f"VectorSearch.method must be 'hnsw' or 'exact', got {self.method!r}")
        if self.precision not in ("single", "half"):
            raise ConfigError(
                f"VectorSearch.precision must be 'single' or 'half', got {self.precision!r}"
            )
        for name, low, high in (("m", 2, 100), ("ef_construction", 4, 1000),
                                ("ef_search", 1, 1000), ("exact_below", 0, 10**9),
                                ("max_scan_tuples", 1, 10**9)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(
                    f"VectorSearch.{name} must be an integer in [{low}, {high}], got {value!r}"
                )

    def index_name(self, model_id: int) -> str:
        """The name of the partial HNSW index of one model (differs per precision and m)."""
        tag = "h" if self.precision == "half" else "s"
        return f"vectors_hnsw_{model_id}_{tag}_m{self.m}_ef{self.ef_construction}"

    def cast(self, dims: int) -> str:
        """The type the index is built on: ``vector(d)`` or ``halfvec(d)``."""
        return f"{'halfvec' if self.precision == 'half' else 'vector'}({int(dims)})"

    def create_index(self, qschema: str, model_id: int, dims: int) -> str:
        """``CREATE INDEX`` for one model's vectors (inner product on unit vectors)."""
        ops = "halfvec_ip_ops" if self.precision == "half" else "vector_ip_ops"
        return (
            f"CREATE INDEX IF NOT EXISTS {self.index_name(model_id)} ON {qschema}.vectors "
            f"USING hnsw ((vec::{self.cast(dims)}) {ops}) "
            f"WITH (m = {int(self.m)}, ef_construction = {int(self.ef_construction)}) "
            f"WHERE model_id = {int(model_id)}"
        )

    def ann_query(self, qschema: str, dims: int, model_id: int, scoped: bool) -> str:
        """Nearest vector rows by the index: ``(item_id, distance)``. Parameters:
        query, [low, high,] limit. The namespace range is checked during the index scan
        (pgvector's iterative scan keeps going until the limit is met). The model id is a
        literal, not a parameter: a generic plan of a prepared statement could not prove the
        partial index's ``WHERE model_id = n`` and would scan the table instead."""
        cast = self.cast(dims)
        scope = " AND v.ns >= %s AND v.ns < %s" if scoped else ""
        return (
            f"SELECT v.item_id, v.vec::{cast} <#> %s::{cast} AS d FROM {qschema}.vectors "
            f"AS v WHERE v.model_id = {int(model_id)}{scope} ORDER BY d LIMIT %s"
        )


def exact_query(qschema: str, where: str, scoped: bool) -> str:
    """Nearest vector rows of live, matching items by a full scan of the scope:
    ``(item_id, ns, key, distance)``. Parameters: query, model id, [low, high,] where params,
    limit. ``v.vec <#> q`` is not the indexed expression, so the planner cannot take the
    approximate index here."""
    scope = " AND v.ns >= %s AND v.ns < %s" if scoped else ""
    return (
        f"SELECT v.item_id, i.ns, i.key, v.vec <#> %s AS d FROM {qschema}.vectors AS v "
        f"JOIN {qschema}.items AS i ON i.id = v.item_id "
        f"WHERE v.model_id = %s{scope} AND {where} ORDER BY d, v.item_id LIMIT %s"
    )


def scope_count(qschema: str, scoped: bool) -> str:
    """How many vector rows a scope holds, counting no further than the limit (bounded cost).
    Parameters: model id, [low, high,] limit."""
    scope = " AND ns >= %s AND ns < %s" if scoped else ""
    return (f"SELECT count(*) FROM (SELECT 1 FROM {qschema}.vectors WHERE model_id = %s{scope} "
            "LIMIT %s) AS t")


class PostgresDialect(StoreDialect):
    """Statements for PostgreSQL (tables in one schema, ``prefix`` is its quoted name and a
    dot): ``%s`` placeholders, id lists as arrays, filters over the ``jsonb`` shadow ``doc``,
    conditional puts and TTL refreshes that lock rows in id order (no deadlocks between
    batches), and postings in one table with the corpus statistics counted from the items."""

    def __init__(self, prefix: str) -> None:
        super().__init__(POSTGRES, prefix)

    def ids_in(self, column: str) -> str:
        return f"{column} = ANY(%s)"

    def ids_param(self, ids: Sequence[int]) -> Any:
        return list(ids)

    def compile_filter(self, node: FilterNode | None) -> Statement:
        text, params = to_postgres(node, column="i.doc")
        return ("", []) if text == "true" else (text, params)

    def listing_sql(self, where: str, order: str, path: ListingPath) -> str:
        # the planner picks the index from its statistics; ``path`` only guides SQLite
        return (f"SELECT {COLUMNS} FROM {self.t('items')} AS i WHERE {where} ORDER BY {order} "
                "LIMIT %s OFFSET %s")

    def refresh_ttls(self, ids: Sequence[int], now: float) -> Statement:
        items = self.t("items")
        return (f"UPDATE {items} AS i SET expires_at = %s + i.ttl FROM (SELECT id FROM {items} "
                "WHERE id = ANY(%s) AND ttl IS NOT NULL ORDER BY id FOR UPDATE) AS s "
                "WHERE i.id = s.id", [now, list(ids)])

    def corpus_stats(self, op: SearchOp, now: float) -> list[Statement]:
        scope, params = self.scope_where(op, now)
        return [(f"SELECT count(*), coalesce(sum(i.doc_len), 0) FROM {self.t('items')} AS i "
                 f"WHERE i.doc_len > 0 AND {scope}", params)]

    def keyword_postings(self, terms: list[str], where: str, params: list[Any], *,
                         items_first: bool) -> Statement:
        return (f"SELECT p.item_id, i.ns, i.key, p.term, p.tf, i.doc_len FROM "
                f"{self.t('postings')} AS p JOIN {self.t('items')} AS i ON i.id = p.item_id "
                f"WHERE p.term = ANY(%s) AND {where}", [terms, *params])

    def doc_freq(self, terms: list[str], scope: str, params: list[Any]) -> Statement:
        return (f"SELECT p.term, count(*) FROM {self.t('postings')} AS p JOIN "
                f"{self.t('items')} AS i ON i.id = p.item_id WHERE p.term = ANY(%s) AND "
                f"{scope} GROUP BY p.term", [terms, *params])


# -- the pgvector wire format (binary): int16 dims, int16 unused, float32 big-endian values --

_HEADER = struct.Struct(">HH")


def encode_vector(vector: npt.NDArray[np.float32]) -> bytes:
    """pgvector's binary representation of a float32 vector."""
    return _HEADER.pack(len(vector), 0) + np.asarray(vector, dtype=">f4").tobytes()


def decode_vector(data: bytes | bytearray | memoryview) -> npt.NDArray[np.float32]:
    """Inverse of :func:`encode_vector` (a native float32 array)."""
    dims, _ = _HEADER.unpack_from(data)
    out: npt.NDArray[np.float32] = np.frombuffer(data, dtype=">f4", count=dims,
                                                 offset=4).astype(np.float32)
    return out
