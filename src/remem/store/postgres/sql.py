"""I/O-free pieces of the PostgreSQL backend: settings, identifiers, WHERE clauses and the SQL
of vector search. Nothing here touches a connection, so it is shared by every code path and
unit-testable without a server.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Literal, LiteralString

import numpy as np
import numpy.typing as npt

from remem.errors import ConfigError
from remem.store.filters import to_postgres
from remem.store.sqlite import encode_ns, prefix_range
from remem.store.types import SearchOp

__all__ = [
    "ALIVE",
    "COLUMNS",
    "VectorSearch",
    "decode_vector",
    "encode_vector",
    "exact_query",
    "items_where",
    "quote_ident",
    "scope_count",
    "scope_where",
    "sql",
]

#: item columns read into an :class:`~remem.store.types.Item` (table alias ``i``)
COLUMNS = ("i.id, i.ns, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl, "
           "i.event_at")
ALIVE = "(i.expires_at IS NULL OR i.expires_at > %s)"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def sql(text: str) -> LiteralString:
    """Mark SQL assembled from trusted pieces (identifiers checked, values bound as parameters)
    as a literal for psycopg's typing."""
    return text  # mypy treats LiteralString as str; this names the intent


def quote_ident(name: str, what: str = "schema") -> str:
    """``name`` double-quoted, after checking it is a plain identifier (no quoting games)."""
    if not _IDENT.fullmatch(name):
        raise ConfigError(
            f"{what} {name!r} must be a plain identifier (letters, digits, underscore, at most "
            "63 characters, not starting with a digit)"
        )
    return f'"{name}"'


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


def items_where(op: SearchOp, now: float, *, exact_ns: bool = False,
                with_filter: bool = True) -> tuple[str, list[Any]]:
    """The WHERE clause (alias ``i``) for a search: alive, under the prefix, in the event
    range, matching the filter. ``exact_ns``: the prefix is a leaf, compare with ``=`` so the
    (ns, updated_at) index gives rows in page order."""
    clauses = [ALIVE]
    params: list[Any] = [now]
    bounds = prefix_range(op.namespace_prefix)
    if exact_ns:
        clauses.append("i.ns = %s")
        params.append(encode_ns(op.namespace_prefix))
    elif bounds is not None:
        clauses.append("i.ns >= %s AND i.ns < %s")
        params.extend(bounds)
    after, before = op.event_range
    if after is not None:
        clauses.append("coalesce(i.event_at, i.created_at) >= %s")
        params.append(after)
    if before is not None:
        clauses.append("coalesce(i.event_at, i.created_at) < %s")
        params.append(before)
    if with_filter:
        text, filter_params = to_postgres(op.parsed_filter, column="i.doc")
        if text != "true":
            clauses.append(text)
            params.extend(filter_params)
    return " AND ".join(f"({c})" for c in clauses), params


def scope_where(op: SearchOp, now: float) -> tuple[str, list[Any]]:
    """Live items under the prefix (no filter, no time range): what BM25 statistics cover."""
    bounds = prefix_range(op.namespace_prefix)
    if bounds is None:
        return ALIVE, [now]
    return f"{ALIVE} AND i.ns >= %s AND i.ns < %s", [now, *bounds]


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
