"""Vector search on PostgreSQL: complete pages inside namespaces and under filters.

The defect this avoids: a planner that walks one global HNSW graph and applies the namespace
or filter afterwards returns fewer than k results (ef_search candidates, most of them someone
else's), or gives up on the index and scans everything. Here every search is a loop of
*candidate rounds*, each asking for more rows until the page is provably complete:

* ``exact``: the scope (a namespace prefix) holds at most ``VectorSearch.exact_below`` vectors,
  counted with a bounded query. Its rows are read through the ``(model_id, ns)`` index and
  ranked by distance: recall 1.0 at a cost proportional to the scope, not the table.
* ``ann``: a larger scope walks the HNSW index with pgvector's iterative scan
  (``hnsw.iterative_scan = relaxed_order``), the namespace range checked during the scan.
* ``join``: when the filter keeps so few candidates that the index would have to return more
  than ``max_scan_tuples`` rows, one exact query joins vectors and items with the filter
  pushed down.

Candidates of a round are kept if their item is alive and matches (one indexed look-up), and a
round is enough once every item that could tie with or beat the k-th has been seen. Final
scores are recomputed in float32 NumPy with the other backends' arithmetic, so scores and tie
order agree across backends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from remem.retrieval.ranking import Candidate
from remem.store.namespace_codec import decode_ns, prefix_range
from remem.store.postgres.sql import VectorSearch, exact_query, scope_count, sql
from remem.store.types import Namespace, SearchOp
from remem.store.vectors import _dot_rows

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["VectorScope", "vector_hits", "vectors_of"]

_TIE = 1e-5  # pgvector and NumPy sum float32 in different orders: scores differ by ulps
# seconds a scope's size verdict is trusted: a scope that grew past exact_below meanwhile is
# still searched exactly (correct, a little slower) until the next count
_SIZE_TTL = 30.0
Mode = Literal["exact", "ann", "join"]
Ranked = list[tuple[int, tuple[Namespace, str], float]]


@dataclass
class VectorScope:
    """What a search needs to know about the store."""

    qschema: str
    model_id: int
    dims: int
    settings: VectorSearch
    #: prefix -> (whether it held more than ``exact_below`` vectors, monotonic time counted)
    sizes: dict[Namespace, tuple[bool, float]] = field(default_factory=dict)


def vectors_of(conn: Conn, qschema: str, model_id: int | None, ids: list[int]
               ) -> list[tuple[int, npt.NDArray[np.float32]]]:
    """``(item id, vector)`` rows of these items, in insertion order (first field first)."""
    with conn.cursor(binary=True) as cur:
        cur.execute(sql(
            f"SELECT item_id, vec FROM {qschema}.vectors WHERE item_id = ANY(%s) "
            "AND model_id = %s ORDER BY id"), (ids, model_id))
        return [(int(item_id), vec) for item_id, vec in cur.fetchall()]


def _mode(conn: Conn, scope: VectorScope, prefix: Namespace, bounds: list[str]) -> Mode:
    settings = scope.settings
    if settings.method == "exact":
        return "exact"
    if settings.exact_below == 0:
        return "ann"
    seen = scope.sizes.get(prefix)
    now = time.monotonic()
    if seen is None or now - seen[1] > _SIZE_TTL:
        limit = settings.exact_below + 1
        row = conn.execute(sql(scope_count(scope.qschema, bool(bounds))),
                           [scope.model_id, *bounds, limit]).fetchone()
        if len(scope.sizes) > 10_000:
            scope.sizes.clear()
        seen = scope.sizes[prefix] = (row is None or int(row[0]) >= limit, now)
    return "ann" if seen[0] else "exact"


def _candidates(conn: Conn, scope: VectorScope, mode: Mode, query: npt.NDArray[np.float32],
                fetch: int, bounds: list[str], where: str, params: list[Any]
                ) -> tuple[Ranked, float, bool]:
    """One round: ``(matching candidates by distance, the largest distance read, whether the
    scope ran out)``."""
    q = scope.qschema
    if mode == "join":
        conn.execute("SELECT set_config('plan_cache_mode', 'force_custom_plan', true)")
        rows = conn.execute(sql(exact_query(q, where, bool(bounds))),
                            [query, scope.model_id, *bounds, *params, fetch]).fetchall()
        ranked = [(int(r[0]), (decode_ns(r[1]), r[2]), float(r[3])) for r in rows]
        return ranked, (ranked[-1][2] if ranked else np.inf), len(rows) < fetch
    in_scope = " AND v.ns >= %s AND v.ns < %s" if bounds else ""
    if mode == "ann":
        settings = scope.settings
        # custom plans: a generic plan cannot see that the namespace range holds most rows,
        # guesses a narrow range and picks a btree range scan plus a sort over the index
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('plan_cache_mode', 'force_custom_plan', true), "
            "set_config('hnsw.max_scan_tuples', %s, true)",
            (str(min(max(settings.ef_search, fetch), 1000)),
             str(max(settings.max_scan_tuples, fetch))))
        inner = settings.ann_query(q, scope.dims, scope.model_id, bool(bounds))
    else:  # not the indexed expression: the planner reads the scope through (model_id, ns)
        inner = (f"SELECT v.item_id, v.vec <#> %s AS d FROM {q}.vectors AS v "
                 f"WHERE v.model_id = {int(scope.model_id)}{in_scope} ORDER BY d LIMIT %s")
    # MATERIALIZED: the nearest rows are found first, as a plain index or range scan; the
    # item check (alive, filter) then runs on them alone, in the same round trip. Vectors are
    # not read here: only the page's few items need theirs (vectors_of), not every candidate
    text = (f"WITH c AS MATERIALIZED ({inner}) SELECT c.item_id, c.d, i.ns, i.key, "
            f"coalesce(({where}), false) FROM c LEFT JOIN {q}.items AS i ON i.id = c.item_id")
    with conn.cursor(binary=True) as cur:
        cur.execute(sql(text), [query, *bounds, fetch, *params])
        rows = cur.fetchall()
    if not rows:
        return [], np.inf, True
    rows.sort(key=lambda r: r[1])  # relaxed order: sort what the scan returned
    ranked = [(int(r[0]), (decode_ns(r[2]), r[3]), float(r[1])) for r in rows if r[4]]
    return ranked, float(rows[-1][1]), len(rows) < fetch


def vector_hits(conn: Conn, scope: VectorScope, op: SearchOp, query: npt.NDArray[np.float32],
                depth: int, where: str, params: list[Any]) -> list[Candidate]:
    """The ``depth`` best items under the op's prefix, filter and time range (plus any tied
    with the last), best first, ties by (namespace, key)."""
    prefix_bounds = prefix_range(op.namespace_prefix)
    bounds = list(prefix_bounds) if prefix_bounds is not None else []
    settings = scope.settings
    mode = _mode(conn, scope, op.namespace_prefix, bounds)
    small = max(depth * 2, depth + 16)
    fetch = small if mode == "exact" else max(settings.ef_search, depth * 4)
    while True:
        ranked, last, exhausted = _candidates(conn, scope, mode, query, fetch, bounds, where,
                                              params)
        best: dict[int, tuple[tuple[Namespace, str], float]] = {}
        for item_id, address, distance in ranked:
            best.setdefault(item_id, (address, distance))  # an item's best field comes first
        order = sorted(best.items(), key=lambda kv: kv[1][1])
        if exhausted or (len(order) >= depth and last > order[depth - 1][1][1] + 2 * _TIE):
            break
        # rows the scan would have to return for the page, at the match rate seen so far
        wanted = fetch * (depth + 1) / max(len(order), 0.5)
        if mode == "ann" and wanted > settings.max_scan_tuples:
            mode, fetch = "join", small  # a filter too selective for the index
            continue
        fetch = int(max(fetch * 4, wanted * 1.5))
        if mode == "ann":
            fetch = min(fetch, settings.max_scan_tuples)
    if not order:
        return []
    cut = order[min(depth, len(order)) - 1][1][1] + 2 * _TIE
    keep = [item_id for item_id, (_, distance) in order if distance <= cut]
    scores: dict[int, float] = {}
    pairs = vectors_of(conn, scope.qschema, scope.model_id, keep)
    if pairs:
        matrix = np.stack([vec for _, vec in pairs])
        for (item_id, _), score in zip(pairs, _dot_rows(matrix, query).tolist(), strict=True):
            if score > scores.get(item_id, -np.inf):
                scores[item_id] = score
    # an item deleted by a transaction that committed since the candidate round has no
    # vectors left (batches run at READ COMMITTED): it is gone, so it leaves the page
    out = [(item_id, best[item_id][0], scores[item_id]) for item_id in keep if item_id in scores]
    out.sort(key=lambda c: (-c[2], c[1]))
    if len(out) <= depth:
        return out
    return out[:depth] + [c for c in out[depth:] if c[2] == out[depth - 1][2]]
