"""SQLite backend: one file (or ``:memory:``), WAL, safe for many threads and processes.

Works with the stock ``sqlite3`` module (no extensions): filters compile to JSON1 SQL, vectors
are float32 BLOBs, and vector search runs exactly in NumPy over an in-process matrix that is
kept in step with the table through a sequence number (see ``m002_vectors``).

Writes are shaped by what a commit costs, which is mostly the pages it changes (each goes to
the WAL, then to the database at a checkpoint): a run of puts is a handful of statements; BM25
corpus statistics are per-namespace sums kept by triggers (``m004``), not an index over every
item; the embedding cache looks texts up in process (``m005``); new postings are appended in
item order and moved into term order in bulk (``m006``).

Concurrency: each thread gets its own connection to a file; ``:memory:`` has one connection
behind a lock. Writing batches take the write lock up front (``BEGIN IMMEDIATE``), so two
writers queue on SQLite's busy timeout instead of failing on a lock upgrade. With WAL and
``synchronous=NORMAL`` (the default ``durability="normal"``) a committed batch survives a
killed process; ``durability="full"`` also survives power loss, at the cost of an fsync per
commit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

import numpy as np

from remem._sqlite import SQLiteConnections
from remem.errors import IndexConfigError
from remem.retrieval.ranking import Candidate
from remem.store.base import (
    UPDATED_AT_TOLERANCE,
    BaseStore,
    IndexConfig,
    KeywordConfig,
    KeywordHits,
    Prepared,
    TTLConfig,
    keyword_text,
    literal_prefix,
    match_namespaces,
)
from remem.store.filters import parse_filter, to_sqlite
from remem.store.migrations import apply_sqlite
from remem.store.migrations.sqlite import (
    SQLITE_MIGRATIONS,
    backfill_keywords,
    register_model,
    register_tokenizer,
)
from remem.store.types import (
    DeleteOp,
    GetOp,
    Item,
    ListNamespacesOp,
    Namespace,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    from_timestamp,
)
from remem.store.vectors import TextHashes, VectorIndex, top_matches

__all__ = ["SQLiteStore"]

_SEP = "\x1f"
_COLUMNS = "id, ns, key, value, created_at, updated_at, expires_at, ttl, event_at"
_ALIVE = "(expires_at IS NULL OR expires_at > ?)"
_TOMBSTONES_KEPT = 10_000
# prefixes with at most this many keyword-indexed items are searched item by item (measured:
# a common term in a 100-item prefix of a 100k-item file, 10.7 ms through the term's postings)
_SMALL_KEYWORD_SCOPE = 2000
# rows of recent_postings that trigger their move into postings (m006); searches of a large
# scope scan them, so this bounds that scan
_RECENT_POSTINGS = 20_000
_LOAD_CHUNK = 8192


def encode_ns(namespace: Namespace) -> str:
    """Namespace tuple to its stored form: each label followed by the unit separator."""
    return "".join(label + _SEP for label in namespace)


def decode_ns(stored: str) -> Namespace:
    """Inverse of :func:`encode_ns`."""
    return tuple(stored.split(_SEP)[:-1])


def prefix_range(prefix: Namespace) -> tuple[str, str] | None:
    """``(low, high)`` such that namespaces under ``prefix`` are exactly ``low <= ns < high``."""
    if not prefix:
        return None
    low = encode_ns(prefix)
    return low, low[:-1] + chr(ord(_SEP) + 1)


class SQLiteStore(BaseStore):
    """A store in one SQLite file (``path``) or in memory (``":memory:"``).

    Construction does no I/O; the first batch (or :meth:`setup`, or ``with``) opens the file
    and applies migrations.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *,
                 index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 keyword: KeywordConfig | Literal[False] | None = None,
                 durability: Literal["normal", "full"] = "normal",
                 busy_timeout: float = 30.0,
                 clock: Callable[[], float] | None = None) -> None:
        if clock is None:
            super().__init__(index=index, ttl=ttl, keyword=keyword)
        else:
            super().__init__(index=index, ttl=ttl, keyword=keyword, clock=clock)
        self.path = str(path)
        self.in_memory = self.path == ":memory:"
        self.durability = durability
        self.busy_timeout = busy_timeout
        self._setup_lock = threading.Lock()
        self._ready = False
        self._conns = SQLiteConnections(self.path, owner="SQLiteStore", durability=durability,
                                        busy_timeout=busy_timeout)
        self._model_id: int | None = None
        self._cache_lock = threading.RLock()
        self._cache: VectorIndex | None = None
        self._cache_seq = -1
        self._hashes: TextHashes | None = None  # the embedding cache's text hash -> vector id

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ":memory:", **kwargs: Any) -> SQLiteStore:
        """Construct and :meth:`setup` a store."""
        store = cls(path, **kwargs)
        store.setup()
        return store

    # -- connections --------------------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's connection; SQLite failures surface as :class:`StoreError`."""
        return self._conns.connection()

    def setup(self) -> None:
        """Open the database, apply missing migrations and check the index config."""
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            with self._connection() as conn:
                apply_sqlite(conn, SQLITE_MIGRATIONS)
                if self.index is not None:
                    self._model_id = register_model(conn, self.path, self.index.model,
                                                    self.index.dims)
                if self.keyword is not None:
                    register_tokenizer(conn, self.path, self.keyword.tokenizer.name)
                    backfill_keywords(conn, self._terms_of)
            self._ready = True
        self._start_sweeper()

    def _terms_of(self, value: str) -> dict[str, int]:
        """Term frequencies of a stored value (JSON text) under this store's keyword config."""
        assert self.keyword is not None
        fields = self.keyword.fields or (self.index.fields if self.index is not None else ("$",))
        terms: dict[str, int] = {}
        for term in self.keyword.tokenizer.tokenize(keyword_text(json.loads(value), fields)):
            terms[term] = terms.get(term, 0) + 1
        return terms

    def close(self) -> None:
        """Stop the sweeper and close every connection this store opened."""
        self._stop_sweeper()
        self._conns.close()
        with self._cache_lock:
            self._cache = self._hashes = None

    # -- batch --------------------------------------------------------------------------------

    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        writes = any(isinstance(op, PutOp | DeleteOp) for op in ops)
        refreshes: list[tuple[list[int], float]] = []
        with self._conns.writing() if writes else nullcontext(), self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
            txn = _Txn(conn)
            try:
                results: list[Result] = []
                while len(results) < len(ops):
                    run = _put_run(ops, len(results))
                    if run:  # consecutive unconditional puts: a few statements for all
                        self._put_many(txn, run, prepared)
                        results.extend([None] * len(run))
                    else:
                        position = len(results)
                        results.append(self._run(txn, position, ops[position], prepared,
                                                 refreshes))
                if writes:
                    self._apply_refreshes(conn, refreshes)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                if txn.vector_seq is not None:
                    with self._cache_lock:  # the cache may hold rolled-back vectors
                        self._cache = None
                raise
            if refreshes and not writes:
                # a read-only batch refreshes TTLs in its own short write transaction, so
                # readers never upgrade a read lock (which can fail under contention)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._apply_refreshes(conn, refreshes)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        return results

    @staticmethod
    def _apply_refreshes(conn: sqlite3.Connection, refreshes: list[tuple[list[int], float]]
                         ) -> None:
        for ids, now in refreshes:
            conn.execute(
                "UPDATE items SET expires_at = ? + ttl WHERE ttl IS NOT NULL AND id IN "
                "(SELECT value FROM json_each(?))",
                (now, json.dumps(ids)),
            )

    def _run(self, txn: _Txn, position: int, op: Op, prepared: Prepared,
             refreshes: list[tuple[list[int], float]]) -> Result:
        conn, now = txn.conn, prepared.now
        if isinstance(op, GetOp):
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE ns = ? AND key = ? AND {_ALIVE}",
                (encode_ns(op.namespace), op.key, now),
            ).fetchone()
            if row is None:
                return None
            return self._finish([row], op.refresh_ttl, now, refreshes)[0][0]
        if isinstance(op, PutOp):
            self._put(txn, position, op, prepared)
            return None
        if isinstance(op, DeleteOp):
            row = conn.execute(
                "DELETE FROM items WHERE ns = ? AND key = ? RETURNING id",
                (encode_ns(op.namespace), op.key),
            ).fetchone()
            if row is not None:
                self._drop_vectors(txn, [row[0]])
                self._drop_postings(txn, [row[0]])
            return None
        if isinstance(op, SearchOp):
            return self._search(txn, position, op, prepared, refreshes)
        assert isinstance(op, ListNamespacesOp)
        sql = "SELECT DISTINCT ns FROM items WHERE " + _ALIVE
        params: list[Any] = [now]
        bounds = prefix_range(literal_prefix(op.prefix))
        if bounds is not None:
            sql += " AND ns >= ? AND ns < ?"
            params.extend(bounds)
        return match_namespaces((decode_ns(r[0]) for r in conn.execute(sql, params)), op)

    def _finish(self, rows: list[tuple[Any, ...]], refresh_flag: bool | None, now: float,
                refreshes: list[tuple[list[int], float]]) -> list[tuple[Item, int]]:
        """Rows to items, recording TTL refreshes (the returned expiry is the refreshed one)."""
        refresh = self._refresh(refresh_flag)
        out: list[tuple[Item, int]] = []
        to_refresh: list[int] = []
        for item_id, ns, key, value, created, updated, expires, ttl, event in rows:
            if refresh and ttl is not None:
                expires = now + ttl
                to_refresh.append(item_id)
            out.append((
                Item(decode_ns(ns), key, json.loads(value), from_timestamp(created),
                     from_timestamp(updated),
                     from_timestamp(expires) if expires is not None else None,
                     from_timestamp(event) if event is not None else None),
                item_id,
            ))
        if to_refresh:
            refreshes.append((to_refresh, now))
        return out

    def _put(self, txn: _Txn, position: int, op: PutOp, prepared: Prepared) -> None:
        """A conditional put: written only if the item is unchanged since it was read."""
        assert op.if_updated_at is not None
        row = txn.conn.execute(
            f"SELECT updated_at FROM items WHERE ns = ? AND key = ? AND {_ALIVE}",
            (encode_ns(op.namespace), op.key, prepared.now),
        ).fetchone()
        if row is None or abs(row[0] - op.if_updated_at) > UPDATED_AT_TOLERANCE:
            return  # the item changed or went away since it was read
        self._put_many(txn, [(position, op)], prepared)

    def _put_many(self, txn: _Txn, run: list[tuple[int, PutOp]], prepared: Prepared) -> None:
        """Upsert puts of distinct addresses in a few statements: the items (``executemany``,
        2-3x cheaper per row than one multi-row upsert with RETURNING), then every term and
        vector of the run. SQLite gives an inserted row the largest id + 1, so when the
        largest id grew by the run's length every row was new, with ids in run order; else
        the ids are read back. Only replaced items (ids up to the old largest) have old terms
        and vectors to drop."""
        conn, now = txn.conn, prepared.now
        (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
        rows: list[tuple[Any, ...]] = []
        for position, op in run:
            ttl, expires_at = self._expiry_for(op, now)
            rows.append((encode_ns(op.namespace), op.key, op.value_json,
                         op.created_at if op.created_at is not None else now,
                         op.updated_at if op.updated_at is not None else now,
                         ttl, expires_at, op.event_ts,
                         sum(prepared.put_terms.get(position, {}).values()),
                         op.created_at is not None, now))
        conn.executemany(_UPSERT, rows)
        (last,) = conn.execute("SELECT max(id) FROM items").fetchone()
        if last - top == len(rows):
            item_ids = list(range(top + 1, last + 1))
        else:
            found: dict[tuple[str, str], int] = {}
            for start in range(0, len(rows), 400):
                chunk = rows[start:start + 400]
                found.update(((ns, key), item_id) for item_id, ns, key in conn.execute(
                    f"SELECT i.id, i.ns, i.key FROM (VALUES {','.join(['(?, ?)'] * len(chunk))})"
                    " AS v CROSS JOIN items AS i ON i.ns = v.column1 AND i.key = v.column2",
                    [v for row in chunk for v in row[:2]]))
            item_ids = [found[(row[0], row[1])] for row in rows]
            replaced = [item_id for item_id in item_ids if item_id <= top]
            if replaced:
                self._drop_vectors(txn, replaced)
                self._drop_postings(txn, replaced)
        # one vector_seq number for the whole run: no search runs between its puts
        put_terms, put_vectors, model = prepared.put_terms, prepared.put_vectors, self._model_id
        seq = txn.bump_vector_seq() if any(p in put_vectors for p, _ in run) else 0
        postings: list[tuple[int, str, int]] = []
        vectors: list[tuple[int, str, int | None, bytes, int, bytes]] = []
        for (position, _), item_id in zip(run, item_ids, strict=True):
            terms = put_terms.get(position)
            if terms:
                postings += [(item_id, term, tf) for term, tf in terms.items()]
            fields = put_vectors.get(position)
            if fields:
                vectors += [(item_id, f, model, v.tobytes(), seq, h) for f, v, h in fields]
        if postings:
            _add_postings(conn, postings)
        if vectors:
            conn.executemany("INSERT INTO vectors (item_id, field, model_id, vec, seq, "
                             "text_hash) VALUES (?, ?, ?, ?, ?, ?)", vectors)

    def _drop_postings(self, txn: _Txn, item_ids: list[int]) -> None:
        if self.keyword is None and not txn.postings_exist():
            return
        for table in ("postings", "recent_postings"):
            txn.conn.execute(
                f"DELETE FROM {table} WHERE item_id IN (SELECT value FROM json_each(?))",
                (json.dumps(item_ids),),
            )

    def _holds_vectors(self) -> bool:
        self.setup()
        with self._connection() as conn:
            return conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None

    def _stored_vectors(self, hashes: list[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors already stored for these document text hashes: ids from the in-process
        map (one read transaction syncs it and reads the vectors back)."""
        found: dict[bytes, np.ndarray] = {}
        wanted = set(hashes)
        with self._connection() as conn:
            conn.execute("BEGIN")
            try:
                with self._cache_lock:
                    ids = self._synced_hashes(conn).ids_of(wanted)
                for digest, blob in conn.execute(
                    "SELECT text_hash, vec FROM vectors WHERE id IN "
                    "(SELECT value FROM json_each(?)) AND model_id = ?",
                    (json.dumps(ids), self._model_id),
                ) if ids else ():
                    if digest in wanted:
                        found[digest] = np.frombuffer(blob, dtype=np.float32).copy()
            finally:
                conn.execute("COMMIT")
        return found

    def _synced_hashes(self, conn: sqlite3.Connection) -> TextHashes:
        """The text hash map brought up to the database's current ``vector_seq``."""
        seq, pruned = (int(_meta(conn, k)) for k in ("vector_seq", "tombstones_pruned_through"))
        if self._hashes is None or self._hashes.seq < pruned:
            self._hashes = TextHashes()  # tombstones it needs are gone: read everything
        hashes = self._hashes
        if seq != hashes.seq:
            if hashes.seq >= 0:
                hashes.remove(r[0] for r in conn.execute(
                    "SELECT id FROM vector_tombstones WHERE seq > ?", (hashes.seq,)))
            rows = conn.execute("SELECT id, text_hash FROM vectors WHERE seq > ? "
                                "AND text_hash IS NOT NULL", (hashes.seq,)).fetchall()
            hashes.add((r[0] for r in rows), (r[1] for r in rows))
            hashes.seq = seq
        return hashes

    def _drop_vectors(self, txn: _Txn, item_ids: list[int]) -> None:
        if self.index is None and not txn.vectors_exist():
            return
        arg = json.dumps(item_ids)
        gone = txn.conn.execute(
            "DELETE FROM vectors WHERE item_id IN (SELECT value FROM json_each(?)) RETURNING id",
            (arg,),
        ).fetchall()
        if gone:
            seq = txn.bump_vector_seq()
            txn.conn.executemany(
                "INSERT INTO vector_tombstones (id, seq) VALUES (?, ?)",
                [(r[0], seq) for r in gone],
            )

    # -- search -------------------------------------------------------------------------------

    def _search(self, txn: _Txn, position: int, op: SearchOp, prepared: Prepared,
                refreshes: list[tuple[list[int], float]]) -> list[SearchItem]:
        now = prepared.now
        if position not in prepared.signals:  # no query: a newest-first listing
            exact = self._is_leaf(txn.conn, op.namespace_prefix)
            where, params = self._where(op, now, exact=exact)
            # Sort ids in a subquery (small sorter rows), then read the values of just the
            # page. Inside one namespace the index is already in page order, so SQLite stops
            # after `limit` matches instead of sorting the namespace.
            order = "updated_at DESC, key" if exact else "updated_at DESC, ns, key"
            rows = txn.conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE id IN (SELECT id FROM items WHERE {where} "
                f"ORDER BY {order} LIMIT ? OFFSET ?) ORDER BY updated_at DESC, ns, key",
                [*params, op.limit, op.offset],
            ).fetchall()
            return [SearchItem.from_item(item)
                    for item, _ in self._finish(rows, op.refresh_ttl, now, refreshes)]
        where, params = self._where(op, now)
        conn = txn.conn

        def vector_hits(query: np.ndarray, depth: int) -> list[Candidate]:
            fetched: dict[int, tuple[Any, ...]] = {}

            def fetch(ids: list[int]) -> dict[int, object]:
                rows = conn.execute(
                    f"SELECT id, ns, key FROM items WHERE id IN "
                    f"(SELECT value FROM json_each(?)) AND {where}",
                    [json.dumps(ids), *params],
                ).fetchall()
                fetched.update((row[0], row) for row in rows)
                return {row[0]: row for row in rows}

            with self._cache_lock:
                cache = self._synced_cache(txn)
                found = top_matches(cache.ranked_items(query, op.namespace_prefix), depth,
                                    fetch)
            out = [(i, (decode_ns(fetched[i][1]), fetched[i][2]), score) for i, score in found]
            out.sort(key=lambda c: (-c[2], c[1]))
            return out

        def keyword_hits(terms: list[str]) -> KeywordHits:
            return self._keyword_hits(conn, op, terms, now, where, params)

        def event_times(ids: Sequence[int]) -> dict[int, float]:
            return dict(conn.execute(
                "SELECT id, coalesce(event_at, created_at) FROM items WHERE id IN "
                "(SELECT value FROM json_each(?))", (json.dumps(list(ids)),),
            ).fetchall())

        def item_vectors(ids: Sequence[int]) -> dict[int, np.ndarray]:
            rows = conn.execute(
                "SELECT item_id, vec FROM vectors WHERE item_id IN "
                "(SELECT value FROM json_each(?)) AND model_id = ? ORDER BY id",
                (json.dumps(list(ids)), self._model_id),
            ).fetchall()
            out: dict[int, np.ndarray] = {}
            for item_id, blob in rows:  # an item with several fields: its first field's
                out.setdefault(item_id, np.frombuffer(blob, dtype=np.float32))
            return out

        ranked = self._ranked_search(position, op, prepared, keyword_hits=keyword_hits,
                                     vector_hits=vector_hits, event_times=event_times,
                                     item_vectors=item_vectors)
        if not ranked:
            return []
        by_id = {row[0]: row for row in conn.execute(
            f"SELECT {_COLUMNS} FROM items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([r.item_id for r in ranked]),),
        )}
        items = self._finish([by_id[r.item_id] for r in ranked], op.refresh_ttl, now, refreshes)
        return [SearchItem.from_item(item, r.score, self._details(r))
                for (item, _), r in zip(items, ranked, strict=True)]

    def _keyword_hits(self, conn: sqlite3.Connection, op: SearchOp, terms: list[str],
                      now: float, where: str, params: list[Any]) -> KeywordHits:
        """Postings of the candidates, and corpus statistics under the prefix (no filter).

        A small scope (one user's memories, say: at most ``_SMALL_KEYWORD_SCOPE`` indexed
        items) is read item by item, each looked up in the postings by (term, item): its cost
        follows the scope. Otherwise the terms' postings are read and their items checked:
        its cost follows the terms' frequency."""
        n_docs, total_len = self._corpus_stats(conn, op, now)
        terms_json = json.dumps(terms)
        if op.namespace_prefix and n_docs <= _SMALL_KEYWORD_SCOPE:
            # CROSS JOIN: SQLite keeps this join order (items, then their postings)
            text = " UNION ALL ".join(
                f"SELECT p.item_id, ns, key, p.term, p.tf, doc_len FROM items CROSS JOIN "
                f"{table} AS p ON p.item_id = items.id AND p.term IN "
                f"(SELECT value FROM json_each(?)) WHERE {where}"
                for table in ("postings", "recent_postings"))
            args = [terms_json, *params] * 2
        else:
            text = _postings_of_terms("p.item_id, ns, key, p.term, p.tf, doc_len", where)
            args = [terms_json, *params] * 2
        rows = conn.execute(text, args).fetchall()
        decoded: dict[str, Namespace] = {}
        postings = []
        for item_id, ns, key, term, tf, length in rows:
            namespace = decoded.get(ns)
            if namespace is None:
                namespace = decoded[ns] = decode_ns(ns)
            postings.append((item_id, (namespace, key), term, tf, length))
        narrowed = (op.filter is not None or op.event_after is not None
                    or op.event_before is not None)
        if narrowed:
            scope, scope_params = self._scope(op, now)
            doc_freq = dict(conn.execute(
                f"SELECT term, count(*) FROM ({_postings_of_terms('p.term', scope)}) "
                "GROUP BY term", [terms_json, *scope_params] * 2,
            ).fetchall())
        else:
            doc_freq = {}
            for _, _, term, _, _ in postings:
                doc_freq[term] = doc_freq.get(term, 0) + 1
        return KeywordHits(postings, doc_freq, n_docs, total_len)

    @staticmethod
    def _corpus_stats(conn: sqlite3.Connection, op: SearchOp, now: float) -> tuple[int, int]:
        """Count and total length of the live keyword-indexed items under the prefix: the
        per-namespace sums kept by triggers for items without an expiry (``keyword_stats``),
        plus the unexpired items with one (``items_keyword_ttl``)."""
        bounds = prefix_range(op.namespace_prefix)
        in_prefix, params = ("", []) if bounds is None else (" AND ns >= ? AND ns < ?", bounds)
        docs, total = conn.execute(
            "SELECT coalesce(sum(docs), 0), coalesce(sum(total_len), 0) FROM keyword_stats "
            f"WHERE 1{in_prefix}", params).fetchone()
        ttl_docs, ttl_total = conn.execute(
            "SELECT count(*), coalesce(sum(doc_len), 0) FROM items WHERE doc_len > 0 AND "
            f"expires_at IS NOT NULL AND expires_at > ?{in_prefix}", [now, *params]).fetchone()
        return int(docs) + int(ttl_docs), int(total) + int(ttl_total)

    @staticmethod
    def _scope(op: SearchOp, now: float) -> tuple[str, list[Any]]:
        """Live items under the prefix: the population BM25 statistics describe."""
        bounds = prefix_range(op.namespace_prefix)
        if bounds is None:
            return _ALIVE, [now]
        return f"{_ALIVE} AND ns >= ? AND ns < ?", [now, *bounds]

    @staticmethod
    def _is_leaf(conn: sqlite3.Connection, prefix: Namespace) -> bool:
        """Whether no namespace lies strictly below ``prefix`` (one index probe)."""
        bounds = prefix_range(prefix)
        if bounds is None:
            return False
        return conn.execute("SELECT 1 FROM items WHERE ns > ? AND ns < ? LIMIT 1",
                            bounds).fetchone() is None

    @staticmethod
    def _where(op: SearchOp, now: float, *, exact: bool = False) -> tuple[str, list[Any]]:
        clauses: list[str] = [_ALIVE]
        params: list[Any] = [now]
        bounds = prefix_range(op.namespace_prefix)
        if exact:
            clauses.append("ns = ?")
            params.append(encode_ns(op.namespace_prefix))
        elif bounds is not None:
            clauses.append("ns >= ? AND ns < ?")
            params.extend(bounds)
        after, before = op.event_range
        if after is not None:
            clauses.append("coalesce(event_at, created_at) >= ?")
            params.append(after)
        if before is not None:
            clauses.append("coalesce(event_at, created_at) < ?")
            params.append(before)
        sql, filter_params = to_sqlite(parse_filter(op.filter), column="value")
        if sql != "1":
            clauses.append(sql)
            params.extend(filter_params)
        return " AND ".join(f"({c})" for c in clauses), params

    def _synced_cache(self, txn: _Txn) -> VectorIndex:
        """The vector matrix brought up to the database's current ``vector_seq``."""
        assert self.index is not None
        conn = txn.conn
        seq, pruned = (int(v) for v in (_meta(conn, "vector_seq"),
                                        _meta(conn, "tombstones_pruned_through")))
        if self._cache is None or self._cache_seq < pruned:
            self._cache = VectorIndex(self.index.dims)
            self._cache_seq = -1
            (count,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
            self._cache.reserve(int(count))
        cache = self._cache
        if seq == self._cache_seq:
            return cache
        if self._cache_seq >= 0:
            for (vector_id,) in conn.execute(
                "SELECT id FROM vector_tombstones WHERE seq > ?", (self._cache_seq,)
            ):
                cache.remove(vector_id)
        cursor = conn.execute(
            "SELECT v.id, v.item_id, i.ns, v.vec FROM vectors AS v "
            "JOIN items AS i ON i.id = v.item_id WHERE v.seq > ? AND v.model_id = ?",
            (self._cache_seq, self._model_id),
        )
        dims = self.index.dims
        decoded: dict[str, Namespace] = {}
        while rows := cursor.fetchmany(_LOAD_CHUNK):  # bounded memory for large loads
            vector_ids, item_ids, stored_ns, blobs = zip(*rows, strict=True)
            if any(len(blob) != dims * 4 for blob in blobs):
                raise IndexConfigError(
                    f"{self.path} holds vectors whose size is not {dims} float32 values; "
                    "the file was written with another embedder"
                )
            for ns in set(stored_ns) - decoded.keys():
                decoded[ns] = decode_ns(ns)
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dims)
            cache.upsert_many(list(vector_ids), list(item_ids),
                              [decoded[ns] for ns in stored_ns], matrix)
            del rows, blobs, matrix  # let the chunk go before the next one is read
        self._cache_seq = seq
        return cache

    # -- maintenance --------------------------------------------------------------------------

    def sweep(self) -> int:
        """Delete expired items (and their vectors) and prune old vector tombstones."""
        self.setup()
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            txn = _Txn(conn)
            try:
                ids = [r[0] for r in conn.execute(
                    "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= ? "
                    "RETURNING id", (self.clock(),)
                )]
                if ids:
                    self._drop_vectors(txn, ids)
                    self._drop_postings(txn, ids)
                seq = int(_meta(conn, "vector_seq"))
                through = seq - _TOMBSTONES_KEPT
                if through > int(_meta(conn, "tombstones_pruned_through")):
                    conn.execute("DELETE FROM vector_tombstones WHERE seq <= ?", (through,))
                    conn.execute("UPDATE remem_meta SET value = ? WHERE key = ?",
                                 (str(through), "tombstones_pruned_through"))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return len(ids)

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Live items under the prefix in namespace then key order, read in pages of 1000."""
        self.setup()
        bounds = prefix_range(tuple(namespace_prefix))
        after: tuple[str, str] = ("", "")
        now = self.clock()
        while True:
            sql = f"SELECT {_COLUMNS} FROM items WHERE {_ALIVE} AND (ns, key) > (?, ?)"
            params: list[Any] = [now, *after]
            if bounds is not None:
                sql += " AND ns >= ? AND ns < ?"
                params.extend(bounds)
            with self._connection() as conn:
                rows = conn.execute(sql + " ORDER BY ns, key LIMIT 1000", params).fetchall()
            if not rows:
                return
            for item, _ in self._finish(rows, False, now, []):
                yield item
            after = (rows[-1][1], rows[-1][2])

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        self.setup()
        with self._connection() as conn:
            row = conn.execute("SELECT ttl FROM items WHERE ns = ? AND key = ?",
                               (encode_ns(namespace), key)).fetchone()
        return None if row is None else row[0]


# an explicit created_at (import, reindex) is kept; otherwise the first write's stays, unless
# the old item had expired (then this is a new item). Parameters: the columns, explicit, now.
_UPSERT = """INSERT INTO items (ns, key, value, created_at, updated_at, ttl, expires_at, event_at,
                   doc_len) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (ns, key) DO UPDATE SET
    value = excluded.value,
    created_at = CASE WHEN ?10 OR (items.expires_at IS NOT NULL AND items.expires_at <= ?11)
                 THEN excluded.created_at ELSE items.created_at END,
    updated_at = excluded.updated_at, ttl = excluded.ttl, expires_at = excluded.expires_at,
    event_at = excluded.event_at, doc_len = excluded.doc_len"""


def _postings_of_terms(columns: str, where: str) -> str:
    """Postings (``p``) of some terms joined with their items matching ``where``, from both
    tables; parameters: terms (JSON), then ``where``'s, twice. recent_postings has no term
    index: it is scanned (CROSS JOIN keeps that order), never the items of the scope."""
    return " UNION ALL ".join(
        f"SELECT {columns} FROM {table} AS p {join} items ON items.id = p.item_id "
        f"WHERE p.term IN (SELECT value FROM json_each(?)) AND {where}"
        for table, join in (("postings", "JOIN"), ("recent_postings", "CROSS JOIN")))


def _add_postings(conn: sqlite3.Connection, rows: list[tuple[int, str, int]]) -> None:
    """Append ``(item_id, term, tf)`` rows to recent_postings, moving them all into postings
    (in term order: each posting list's tail is written once) once enough have gathered."""
    conn.executemany("INSERT INTO recent_postings (item_id, term, tf) VALUES (?, ?, ?)", rows)
    (held,) = conn.execute(
        "UPDATE remem_meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'recent_postings' "
        "RETURNING value", (len(rows),)).fetchone()
    if int(held) >= _RECENT_POSTINGS:
        conn.execute("INSERT INTO postings (term, item_id, tf) SELECT term, item_id, tf "
                     "FROM recent_postings ORDER BY term, item_id")
        conn.execute("DELETE FROM recent_postings")
        conn.execute("UPDATE remem_meta SET value = '0' WHERE key = 'recent_postings'")


def _put_run(ops: Sequence[Op], start: int) -> list[tuple[int, PutOp]]:
    """Consecutive unconditional puts from ``start`` with distinct addresses (one multi-row
    upsert must not touch a row twice: the later put of a key starts the next run)."""
    run: list[tuple[int, PutOp]] = []
    seen: set[tuple[Namespace, str]] = set()
    for position in range(start, len(ops)):
        op = ops[position]
        if not isinstance(op, PutOp) or op.if_updated_at is not None:
            break
        if (op.namespace, op.key) in seen:
            break
        seen.add((op.namespace, op.key))
        run.append((position, op))
    return run


def _meta(conn: sqlite3.Connection, key: str) -> str:
    row = conn.execute("SELECT value FROM remem_meta WHERE key = ?", (key,)).fetchone()
    return "0" if row is None else str(row[0])


class _Txn:
    """Per-transaction state: the connection and the last vector sequence number it took
    (``None`` until its first vector write)."""

    __slots__ = ("_postings_exist", "_vectors_exist", "conn", "vector_seq")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.vector_seq: int | None = None
        self._vectors_exist: bool | None = None
        self._postings_exist: bool | None = None

    def postings_exist(self) -> bool:
        if self._postings_exist is None:
            self._postings_exist = (
                self.conn.execute("SELECT 1 FROM postings UNION ALL "
                                  "SELECT 1 FROM recent_postings LIMIT 1").fetchone() is not None
            )
        return self._postings_exist

    def bump_vector_seq(self) -> int:
        # a new number for every vector write, not once per transaction: a search earlier in
        # the same batch may have synced the shared cache to the previous number, and rows
        # written under that number would then never be loaded
        row = self.conn.execute(
            "UPDATE remem_meta SET value = CAST(value AS INTEGER) + 1 "
            "WHERE key = 'vector_seq' RETURNING value"
        ).fetchone()
        self.vector_seq = int(row[0])
        return self.vector_seq

    def vectors_exist(self) -> bool:
        if self._vectors_exist is None:
            self._vectors_exist = (
                self.conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None
            )
        return self._vectors_exist
