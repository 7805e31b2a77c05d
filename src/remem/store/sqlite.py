"""SQLite backend: one file (or ``:memory:``), WAL, safe for many threads and processes.

Works with the stock ``sqlite3`` module (no extensions): filters compile to JSON1 SQL, vectors
are float32 BLOBs, and vector search runs exactly in NumPy over the searched prefix's vectors,
read from the table on its first search and held in a partition of a byte-bounded LRU
(``vector_cache_bytes``, :mod:`remem.store.vector_partitions`), kept in step with the table
through a sequence number (see ``m002_vectors``); a scope too large for the budget is streamed
from the table on each search, or, when asked for, searched through an approximate index of
compact codes held in the process (:mod:`remem.store.ann`).

The operations themselves are the shared SQL store's (:mod:`remem.store.sql_store`) with the
statements of :mod:`remem.store.sqlite_sql`; this module keeps what is SQLite's own: the
transaction, the bulk write of a run of puts, postings and vector bookkeeping, the vector
partitions, and sweeping.

Writes are shaped by what a commit costs, which is mostly the pages it changes (each goes to
the WAL, then to the database at a checkpoint): a run of puts is a handful of statements; BM25
corpus statistics are per-namespace sums kept by triggers (``m004``), not an index over every
item; the embedding cache looks texts up in process (``m005``); a put's keyword terms are
written in its own transaction, a run's at once, as postings of integer term ids appended in
item order and moved into term order in bulk (``m006``, ``m010``,
:mod:`remem.store.sqlite_postings`), so every acknowledged put is in the keyword index and a
search never writes.

Concurrency: each thread gets its own connection to a file; ``:memory:`` has one connection
behind a lock. Writing batches take the write lock up front (``BEGIN IMMEDIATE``), so two
writers queue on SQLite's busy timeout instead of failing on a lock upgrade. With WAL and
``synchronous=NORMAL`` (the default ``durability="normal"``) a committed batch survives a
killed process; ``durability="full"`` also survives power loss, at the cost of an fsync per
commit.

The global ``updated_at`` index of wide newest-first listings is built on demand (``m009``),
in its own short write transaction: a read-only batch builds it before its listing, a writing
one reads the slower way (same page) and builds it after its commit; a busy or read-only file
leaves it for a later listing.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from remem.db import Database
from remem.errors import IndexConfigError
from remem.retrieval.ranking import Candidate
from remem.store.ann import READ_ROWS, AnnConfig, AnnIndex, Codes, ann_hits, build_codes
from remem.store.base import IndexConfig, KeywordConfig, Prepared, TTLConfig, keyword_text
from remem.store.index_text import WHOLE_VALUE
from remem.store.migrations import STORE_SCHEMA
from remem.store.migrations.sqlite import backfill_keywords, register_model, register_tokenizer
from remem.store.namespace_codec import decode_ns, encode_ns, prefix_range
from remem.store.sql_dialect import ListingPath
from remem.store.sql_store import SQLStore
from remem.store.sqlite_postings import TermIds, drop_terms, term_keys, write_terms
from remem.store.sqlite_sql import NEWEST_INDEX, NEWEST_INDEX_PROBE, SQLiteDialect
from remem.store.types import DeleteOp, Namespace, Op, PutOp, Result, SearchOp
from remem.store.vector_partitions import (
    DEFAULT_VECTOR_CACHE_BYTES,
    VectorPartitions,
    partition_for,
    stream_ranked,
)
from remem.store.vectors import TextHashes, VectorIndex, matrix_hits, ranked_hits

# encode_ns, decode_ns and prefix_range live in namespace_codec; kept importable from here
__all__ = ["SQLiteStore", "decode_ns", "encode_ns", "prefix_range"]

T = TypeVar("T")
_TOMBSTONES_KEPT = 10_000
# prefixes with at most this many keyword-indexed items are searched item by item (measured:
# a common term in a 100-item prefix of a 100k-item file, 10.7 ms through the term's postings)
_SMALL_KEYWORD_SCOPE = 2000
_LOAD_CHUNK = 8192
# more new vector rows than this since the partitions' sequence number (a bulk load by another
# process, say): drop the partitions and read each again on its next search, rather than
# applying every new row to them
_RESYNC_ROWS = 50_000
# seconds a scope counted too large to hold is trusted (a prefix of 600k items costs ~50 ms to
# count): one that shrank meanwhile is still searched approximately or streamed until then
_LARGE_SCOPE_TTL = 30.0
# how long building the newest-first index waits for another process's write lock before it
# gives up until the next wide listing (the listing has its page already; it must not stall)
_BUILD_BUSY_TIMEOUT_MS = 200
logger = logging.getLogger("remem.store")


class SQLiteStore(SQLStore["_Txn"]):
    """A store in one SQLite file (``path``) or in memory (``":memory:"``).

    Construction does no I/O; the first batch (or :meth:`setup`, or ``with``) opens the file
    and applies migrations. ``vector_cache_bytes`` bounds the vectors held in process (default
    1 GiB): a search of a prefix holds that prefix's vectors once read, least recently used
    out first; a scope needing more than the budget is streamed from the file instead (exact),
    or searched through an approximate index (``ann``, an :class:`~remem.store.ann.AnnConfig`;
    default ``AnnConfig()``: sign bits and four-bit codes in the process, built in the
    background, exact answers until it is ready; recall@10 0.974 at a million near-uniform
    vectors, docs/vectors.md). ``ann=False`` streams such a scope exactly (seconds a search at
    a million vectors). A scope within the budget is always searched exactly.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *,
                 index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 keyword: KeywordConfig | Literal[False] | None = None,
                 durability: Literal["normal", "full"] = "normal",
                 busy_timeout: float = 30.0,
                 vector_cache_bytes: int = DEFAULT_VECTOR_CACHE_BYTES,
                 ann: AnnConfig | Literal[False] | None = None,
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
        #: the connections (one per thread; ``:memory:`` one) its families share too
        self.database = Database(self.path, owner="SQLiteStore", durability=durability,
                                 busy_timeout=busy_timeout)
        self._model_id: int | None = None
        self._cache_lock = threading.RLock()
        # vectors of searched prefixes, loaded on demand within vector_cache_bytes
        self._parts = VectorPartitions(vector_cache_bytes)
        self._hashes: TextHashes | None = None  # the embedding cache's text hash -> vector id
        # approximate index of scopes past the budget (remem.store.ann): past the budget the
        # choice is that index or a linear stream of the file (ann=False), seconds a search
        self._ann_config = AnnConfig() if ann is None else (ann or None)
        self._ann: AnnIndex | None = None
        self._ann_stop = threading.Event()  # set by close(): a background build stops
        # prefixes lately counted too large to hold (monotonic time of the count)
        self._large_scopes: dict[Namespace, float] = {}
        self._term_ids = TermIds()  # keyword term -> its id in keyword_terms
        self.dialect = SQLiteDialect()

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ":memory:", **kwargs: Any) -> SQLiteStore:
        """Construct and :meth:`setup` a store."""
        store = cls(path, **kwargs)
        store.setup()
        return store

    # -- connections --------------------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's connection; SQLite failures surface as :class:`StoreError`."""
        return self.database.connection()

    def setup(self) -> None:
        """Open the database, apply missing migrations and check the index config."""
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            self.database.migrate(STORE_SCHEMA)
            if self.index is not None or self.keyword is not None:
                with self.database.transaction(True) as tx:
                    if self.index is not None:
                        self._model_id = register_model(tx.conn, self.path, self.index.model,
                                                        self.index.dims)
                    if self.keyword is not None:
                        register_tokenizer(tx.conn, self.path, self.keyword.tokenizer.name)
                if self.keyword is not None:
                    backfill_keywords(self.database, self._terms_of)
            self._ready = True
        self._start_sweeper()

    def _terms_of(self, value: str) -> dict[str, int]:
        """Term frequencies of a stored value (JSON text) under this store's keyword config
        (the fields of a put with ``index=None``: as ``BaseStore._term_counts``)."""
        assert self.keyword is not None
        config = self.keyword
        fields = (config.fields if config.fields is not None
                  else self.index.fields if self.index is not None else (WHOLE_VALUE,))
        terms: dict[str, int] = {}
        for term in config.tokenizer.tokenize(keyword_text(json.loads(value), fields)):
            terms[term] = terms.get(term, 0) + 1
        return terms

    def close(self) -> None:
        """Stop the sweeper and close every connection this store opened."""
        self._stop_sweeper()
        self._stop_ann_build()
        self.database.close()
        with self._cache_lock:
            self._parts.clear()
            self._hashes = None
            self._ann = None

    # -- batch --------------------------------------------------------------------------------

    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        writes = any(isinstance(op, PutOp | DeleteOp) for op in ops)
        index_build: _IndexBuild = "after" if writes else "first"
        try:
            return self._execute_once(ops, prepared, writes, index_build)
        except _BuildFirst:
            # a read-only batch met a wide listing before its index existed: build it, then
            # run the batch again walking it (at 100k memories the page then takes ~35 ms
            # instead of ~400 ms reading the prefix, on top of the build either way)
            self._build_newest_index()
            return self._execute_once(ops, prepared, writes, "never")

    def _execute_once(self, ops: Sequence[Op], prepared: Prepared, writes: bool,
                      index_build: _IndexBuild) -> list[Result]:
        refreshes: list[int] = []
        txn: _Txn | None = None
        try:
            with self.database.transaction(writes) as tx:
                txn = _Txn(tx.conn, index_build)
                results = self._run_ops(txn, ops, prepared, refreshes)
                if writes:
                    self._apply_refreshes(txn, refreshes, prepared.now)
        except BaseException:  # rolled back
            if writes:  # term ids assigned in the transaction are gone with it
                self._term_ids.forget()
            if txn is not None and txn.vector_seq is not None:
                with self._cache_lock:  # the cache may hold rolled-back vectors
                    self._parts.clear()
            raise
        if refreshes and not writes:
            # a read-only batch refreshes TTLs in its own short write transaction, so
            # readers never upgrade a read lock (which can fail under contention)
            with self.database.transaction(True) as tx:
                self._apply_refreshes(_Txn(tx.conn), refreshes, prepared.now)
        if txn.wants_newest_index:
            self._build_newest_index()
        return results

    def _listing_path(self, tx: _Txn, op: SearchOp) -> ListingPath:
        """The shared choice, except when a ``"newest"`` listing finds its index missing: a
        read-only batch stops so the index is built first (:meth:`_execute`); a writing one
        (or one whose build just failed) reads the prefix and sorts (the same page), and a
        writing batch builds the index after its commit. Whether it exists is asked in the
        listing's own transaction (~20 us), not remembered: built by another process, or
        dropped by hand, the answer is never stale."""
        path = super()._listing_path(tx, op)
        if path != "newest" or tx.conn.execute(NEWEST_INDEX_PROBE).fetchone() is not None:
            return path
        if tx.index_build == "first":
            raise _BuildFirst
        tx.wants_newest_index = tx.index_build == "after"
        return "scope"

    def _build_newest_index(self) -> None:
        """Build the newest-first index in its own write transaction, never inside a batch's
        transaction. Never fails the caller: a file locked by another process (waited for
        briefly), read-only or full keeps it unbuilt, and the next wide listing tries again.
        Several builders at once are harmless: ``IF NOT EXISTS`` under the write lock."""
        with self.database.writing(), self._connection() as conn:
            wait_ms = min(_BUILD_BUSY_TIMEOUT_MS, int(self.busy_timeout * 1000))
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(NEWEST_INDEX)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                logger.info("newest-first index of %s not built (%s); listings read the "
                            "prefix and sort until it is", self.path, exc)
            finally:  # also when interrupted: the connection must not stay in a transaction
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def _query(self, tx: _Txn, text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return tx.conn.execute(text, params).fetchall()

    def _read(self, body: Callable[[_Txn], T]) -> T:
        self.setup()
        with self._connection() as conn:
            return body(_Txn(conn))

    def _after_delete(self, tx: _Txn, item_ids: list[int]) -> None:
        self._drop_vectors(tx, item_ids)
        self._drop_postings(tx, item_ids)

    def _put_many(self, txn: _Txn, run: list[tuple[int, PutOp]], prepared: Prepared) -> None:
        """Upsert puts of distinct addresses in a few statements: the items (``executemany``,
        2-3x cheaper per row than one multi-row upsert with RETURNING), then every term and
        vector of the run. SQLite gives an inserted row the largest id + 1, so when the
        largest id grew by the run's length every row was new, with ids in run order; else
        the ids are read back. Only replaced items (ids up to the old largest) have old terms
        and vectors to drop."""
        conn, now, put_terms = txn.conn, prepared.now, prepared.put_terms
        (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
        rows: list[tuple[Any, ...]] = []
        for position, op in run:
            ttl, expires_at = self._expiry_for(op, now)
            rows.append((encode_ns(op.namespace), op.key, op.value_json,
                         op.created_at if op.created_at is not None else now,
                         op.updated_at if op.updated_at is not None else now,
                         ttl, expires_at, op.event_ts,
                         sum(put_terms.get(position, {}).values()),
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
        put_vectors, model = prepared.put_vectors, self._model_id
        seq = txn.bump_vector_seq() if any(p in put_vectors for p, _ in run) else 0
        postings: list[tuple[int, dict[str, int]]] = []
        vectors: list[tuple[int, str, int | None, bytes, int, bytes]] = []
        for (position, _), item_id in zip(run, item_ids, strict=True):
            terms = put_terms.get(position)
            if terms:
                postings.append((item_id, terms))
            fields = put_vectors.get(position)
            if fields:
                vectors += [(item_id, f, model, v.tobytes(), seq, h) for f, v, h in fields]
        if postings:
            write_terms(conn, postings, self._term_ids)
        if vectors:
            conn.executemany("INSERT INTO vectors (item_id, field, model_id, vec, seq, "
                             "text_hash) VALUES (?, ?, ?, ?, ?, ?)", vectors)

    def _term_keys(self, tx: _Txn, terms: list[str]) -> dict[Any, str]:
        return term_keys(tx.conn, terms)

    def _drop_postings(self, txn: _Txn, item_ids: list[int]) -> None:
        if self.keyword is None and not txn.postings_exist():
            return
        drop_terms(txn.conn, item_ids)

    def _stored_vectors(self, hashes: list[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors already stored for these document text hashes: ids from the in-process
        map (one read transaction syncs it and reads the vectors back)."""
        found: dict[bytes, np.ndarray] = {}
        wanted = set(hashes)
        with self.database.transaction(False) as tx:
            with self._cache_lock:
                ids = self._synced_hashes(tx.conn).ids_of(wanted)
            for digest, blob in tx.execute(
                "SELECT text_hash, vec FROM vectors WHERE id IN "
                "(SELECT value FROM json_each(?)) AND model_id = ?",
                (json.dumps(ids), self._model_id),
            ) if ids else ():
                if digest in wanted:
                    found[digest] = np.frombuffer(blob, dtype=np.float32).copy()
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

    def _vector_hits(self, tx: _Txn, op: SearchOp, query: npt.NDArray[np.float32], depth: int,
                     where: str, params: list[Any]) -> list[Candidate]:
        """Exact search over the prefix's partition (read from the table on its first search,
        then kept up to date); for a scope past the budget (or ``AnnConfig.above``), the
        approximate index when asked for and built, else every vector of the scope streamed
        from the table; candidates are confirmed by the items table (alive, filter) in
        chunks."""
        def addresses(ids: list[int]) -> dict[int, tuple[Namespace, str]]:
            rows = self._query(tx, *self.dialect.addresses(ids, where, params))
            return {item_id: (decode_ns(ns), key) for item_id, ns, key in rows}

        def matching() -> list[Candidate]:  # the items matching the search, read exactly
            return ranked_hits(stream_ranked(self._matching_chunks(tx, where, params), query),
                               depth, addresses)

        prefix = op.namespace_prefix
        with self._cache_lock:
            part = self._synced_partition(tx, prefix)
            if part is not None:
                return matrix_hits(part, query, prefix, depth, addresses)
            config = self._ann_config
            codes = None if config is None else self._synced_ann(tx)
            if config is not None and codes is not None:  # else not asked for, or not built
                return ann_hits(codes, config, query, depth,
                                lambda ids: self._vectors_by_id(tx, ids), addresses, matching)
        return ranked_hits(stream_ranked(self._vector_chunks(tx, prefix), query), depth,
                           addresses)

    def _synced_ann(self, txn: _Txn) -> Codes | None:
        """The approximate index's codes brought up to the database's ``vector_seq``, or
        ``None`` while they are not built: a file's are built in a background thread, started
        here (the search is answered exactly meanwhile); ``:memory:``'s (or with
        ``AnnConfig.background=False``) in this search, from its transaction."""
        assert self.index is not None and self._model_id is not None
        config = self._ann_config
        assert config is not None
        ann = self._ann
        if ann is None:
            ann = self._ann = AnnIndex(self.index.dims, config)
        conn = txn.conn
        seq, pruned = (int(_meta(conn, k)) for k in ("vector_seq", "tombstones_pruned_through"))
        if ann.ready and ann.sync(seq, pruned, lambda since: self._ann_rows(conn, since),
                                  lambda since: [r[0] for r in conn.execute(
                                      "SELECT id FROM vector_tombstones WHERE seq > ?",
                                      (since,))]):
            return ann.codes
        if not ann.may_build(time.monotonic()):
            return None  # being built, or failed a moment ago
        if self.in_memory or not config.background:
            codes = build_codes(self._ann_rows(conn, None))
            if codes is not None:
                ann.install(codes, seq)
            return codes
        ann.builder = threading.Thread(target=self._build_ann, args=(ann,), daemon=True,
                                       name="remem-ann-build")
        ann.builder.start()
        return None

    def _build_ann(self, ann: AnnIndex) -> None:
        """Build the codes from one read snapshot of the table on this (background) thread's
        connection, then hand them over; a failure is logged and leaves searches exact (a
        search tries again after ``RETRY_AFTER`` seconds)."""
        codes: Codes | None = None
        seq = -1
        try:
            with self._connection() as conn:
                conn.execute("BEGIN")  # one snapshot: the rows and the seq agree
                try:
                    seq = int(_meta(conn, "vector_seq"))
                    codes = build_codes(row for row in self._ann_rows(conn, None)
                                        if not self._ann_stop.is_set())
                finally:
                    conn.execute("ROLLBACK")
        except Exception as exc:  # a background build must not die silently
            if not self._ann_stop.is_set():
                logger.warning("building the approximate index of %s failed: %s", self.path,
                               exc)
            with self._cache_lock:
                ann.error, ann.failed_at, ann.builder = exc, time.monotonic(), None
            return
        with self._cache_lock:
            if codes is not None and not self._ann_stop.is_set():
                ann.install(codes, seq)
            ann.builder = None

    def _stop_ann_build(self) -> None:
        """Stop a background build (between chunks) and wait for it."""
        self._ann_stop.set()
        ann = self._ann
        builder = None if ann is None else ann.builder
        if builder is not None and builder is not threading.current_thread():
            builder.join()

    def _ann_rows(self, conn: sqlite3.Connection, since: int | None
                  ) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
        """``(vector ids, matrix)`` chunks of the model's rows: every row (``None``, in table
        order), or those written after ``since`` (through the seq index)."""
        cursor = conn.execute(
            "SELECT id, vec FROM vectors WHERE model_id = ?", (self._model_id,)
        ) if since is None else conn.execute(
            "SELECT id, vec FROM vectors WHERE seq > ? AND model_id = ?",
            (since, self._model_id))
        while rows := cursor.fetchmany(READ_ROWS):
            ids, blobs = zip(*rows, strict=True)
            yield list(ids), self._matrix(blobs)

    def _vectors_by_id(self, txn: _Txn, ids: Sequence[int]
                       ) -> list[tuple[int, npt.NDArray[np.float32]]]:
        """``(item id, vector)`` of these vector ids still in the table."""
        rows = txn.conn.execute(
            "SELECT item_id, vec FROM vectors WHERE id IN (SELECT value FROM json_each(?)) "
            "AND model_id = ?", (json.dumps(list(ids)), self._model_id)).fetchall()
        return [(int(item_id), np.frombuffer(blob, dtype=np.float32)) for item_id, blob in rows]

    def _field_vectors(self, tx: _Txn, ids: Sequence[int]
                       ) -> list[tuple[int, npt.NDArray[np.float32]]]:
        rows = tx.conn.execute(
            "SELECT item_id, vec FROM vectors WHERE item_id IN "
            "(SELECT value FROM json_each(?)) AND model_id = ? ORDER BY id",
            (json.dumps(list(ids)), self._model_id),
        ).fetchall()
        return [(int(item_id), np.frombuffer(blob, dtype=np.float32)) for item_id, blob in rows]

    def _items_first(self, op: SearchOp, n_docs: int) -> bool:
        # a small scope (one user's memories, say) is read item by item: its cost follows
        # the scope; otherwise the terms' postings are read: their cost follows frequency
        return bool(op.namespace_prefix) and n_docs <= _SMALL_KEYWORD_SCOPE

    def _synced_partition(self, txn: _Txn, prefix: Namespace) -> VectorIndex | None:
        """The partition of ``prefix`` brought up to the database's current ``vector_seq``
        (read on a miss), or ``None`` when the scope is too large to hold."""
        assert self.index is not None
        self._sync_partitions(txn.conn)
        part = self._parts.get(prefix)
        if part is not None:
            return part
        counted = self._large_scopes.get(prefix)
        if counted is not None and time.monotonic() - counted < _LARGE_SCOPE_TTL:
            return None  # counted as too large a moment ago: not counted on every search
        dims = self.index.dims
        bounds = prefix_range(prefix)
        budget_rows = self._parts.budget // (dims * 4 + 12)
        ann_above = (None if self._ann_config is None
                     else self._ann_config.threshold(budget_rows))
        cap = max(budget_rows, ann_above or 0) + 1
        # every vector: the span of their ids (an upper bound, two index probes), never a
        # count, which reads the table; a prefix: its items, counted no further than cap
        (rows,) = txn.conn.execute(
            # (each of max and min alone: SQLite probes the index only for a lone min/max;
            # "max(id) - min(id)" in one select scans the table)
            "SELECT coalesce((SELECT max(id) FROM vectors) - (SELECT min(id) FROM vectors) + 1,"
            " 0)" if bounds is None else
            "SELECT count(*) FROM (SELECT 1 FROM items WHERE ns >= ? AND ns < ? LIMIT ?)",
            () if bounds is None else (*bounds, cap)).fetchone()
        if not self._parts.fits(int(rows), dims) or (ann_above is not None
                                                      and int(rows) > ann_above):
            if len(self._large_scopes) > 10_000:
                self._large_scopes.clear()
            self._large_scopes[prefix] = time.monotonic()
            return None
        part = partition_for(dims, int(rows))
        in_scope = "" if bounds is None else " AND i.ns >= ? AND i.ns < ?"
        for ids, items, namespaces, matrix in self._read_vectors(txn.conn.execute(
                "SELECT v.id, v.item_id, i.ns, v.vec FROM items AS i CROSS JOIN vectors AS v "
                f"ON v.item_id = i.id WHERE v.model_id = ?{in_scope}",
                (self._model_id, *(bounds or ())))):
            part.upsert_many(ids, items, namespaces, matrix)
        self._parts.add(prefix, part)
        return part

    def _sync_partitions(self, conn: sqlite3.Connection) -> None:
        """Bring the resident partitions up to the database's ``vector_seq``: tombstones and
        new rows since theirs, or drop them all when the tombstones they need are pruned or
        too many rows are new."""
        parts = self._parts
        seq, pruned = (int(v) for v in (_meta(conn, "vector_seq"),
                                        _meta(conn, "tombstones_pruned_through")))
        if parts.seq == seq:
            return
        if not len(parts) or parts.seq < pruned:
            parts.clear()
            parts.seq = seq
            return
        (new,) = conn.execute("SELECT count(*) FROM (SELECT 1 FROM vectors WHERE seq > ? "
                              "LIMIT ?)", (parts.seq, _RESYNC_ROWS)).fetchone()
        if new >= _RESYNC_ROWS:
            parts.clear()
            parts.seq = seq
            return
        parts.remove(r[0] for r in conn.execute(
            "SELECT id FROM vector_tombstones WHERE seq > ?", (parts.seq,)))
        for ids, items, namespaces, matrix in self._read_vectors(conn.execute(
                "SELECT v.id, v.item_id, i.ns, v.vec FROM vectors AS v "
                "JOIN items AS i ON i.id = v.item_id WHERE v.seq > ? AND v.model_id = ?",
                (parts.seq, self._model_id))):
            parts.apply(list(zip(ids, items, namespaces, matrix, strict=True)))
        parts.seq = seq

    def _read_vectors(self, cursor: sqlite3.Cursor) -> Iterator[
            tuple[list[int], list[int], list[Namespace], npt.NDArray[np.float32]]]:
        """Rows ``(vector id, item id, ns, vec)`` of ``cursor`` in chunks (bounded memory)."""
        decoded: dict[str, Namespace] = {}
        while rows := cursor.fetchmany(_LOAD_CHUNK):
            vector_ids, item_ids, stored_ns, blobs = zip(*rows, strict=True)
            for ns in set(stored_ns) - decoded.keys():
                decoded[ns] = decode_ns(ns)
            yield (list(vector_ids), list(item_ids), [decoded[ns] for ns in stored_ns],
                   self._matrix(blobs))

    def _matrix(self, blobs: Sequence[bytes]) -> npt.NDArray[np.float32]:
        assert self.index is not None
        dims = self.index.dims
        if any(len(blob) != dims * 4 for blob in blobs):
            raise IndexConfigError(
                f"{self.path} holds vectors whose size is not {dims} float32 values; "
                "the file was written with another embedder"
            )
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dims)

    def _vector_chunks(self, txn: _Txn, prefix: Namespace) -> Iterator[
            tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """Every vector of the scope as ``(item ids, matrix)`` chunks, read from the table
        (a scope too large to hold): in rowid order for every item, else by the items'
        namespace range."""
        bounds = prefix_range(prefix)
        cursor = txn.conn.execute(
            "SELECT item_id, vec FROM vectors WHERE model_id = ?", (self._model_id,)
        ) if bounds is None else txn.conn.execute(
            "SELECT v.item_id, v.vec FROM items AS i CROSS JOIN vectors AS v "
            "ON v.item_id = i.id WHERE i.ns >= ? AND i.ns < ? AND v.model_id = ?",
            (*bounds, self._model_id))
        while rows := cursor.fetchmany(_LOAD_CHUNK):
            item_ids, blobs = zip(*rows, strict=True)
            yield np.asarray(item_ids, dtype=np.int64), self._matrix(blobs)

    def _matching_chunks(self, txn: _Txn, where: str, params: list[Any]) -> Iterator[
            tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """The vectors of the items matching a search (``where``: alive, prefix, filter) as
        ``(item ids, matrix)`` chunks: an approximate search's exact fallback."""
        cursor = txn.conn.execute(
            "SELECT v.item_id, v.vec FROM items AS i CROSS JOIN vectors AS v "
            f"ON v.item_id = i.id WHERE {where} AND v.model_id = ?",
            (*params, self._model_id))
        while rows := cursor.fetchmany(_LOAD_CHUNK):
            item_ids, blobs = zip(*rows, strict=True)
            yield np.asarray(item_ids, dtype=np.int64), self._matrix(blobs)

    # -- maintenance --------------------------------------------------------------------------

    def sweep(self) -> int:
        """Delete expired items (and their vectors) and prune old vector tombstones."""
        self.setup()
        with self.database.transaction(True) as tx:
            conn, txn = tx.conn, _Txn(tx.conn)
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
        return len(ids)


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


def _meta(conn: sqlite3.Connection, key: str) -> str:
    row = conn.execute("SELECT value FROM remem_meta WHERE key = ?", (key,)).fetchone()
    return "0" if row is None else str(row[0])


# when a batch builds a missing newest-first index: before reading ("first": stop and run
# again), after its commit ("after"), or not at all ("never": the build just failed)
_IndexBuild: TypeAlias = Literal["first", "after", "never"]


class _BuildFirst(Exception):
    """A read-only batch stops here: build the newest-first index, then run it again."""


class _Txn:
    """Per-transaction state: the connection, the last vector sequence number it took
    (``None`` until its first vector write), and what a wide listing does about a missing
    newest-first index."""

    __slots__ = ("_postings_exist", "_vectors_exist", "conn", "index_build", "vector_seq",
                 "wants_newest_index")

    def __init__(self, conn: sqlite3.Connection, index_build: _IndexBuild = "never") -> None:
        self.conn = conn
        self.vector_seq: int | None = None
        self.index_build = index_build
        self.wants_newest_index = False  # a listing read the slow way: build after commit
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
