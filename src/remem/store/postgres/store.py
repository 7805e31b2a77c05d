"""The PostgreSQL + pgvector store: the same store as SQLite, for many servers and workers.

Design (see ``docs/postgres.md``):

* The operations are the shared SQL store's (:mod:`remem.store.sql_store`) with the statements
  of :class:`~remem.store.postgres.sql.PostgresDialect`; this module keeps the pool, the
  transaction and its retries, setup, the bulk write of a run of puts, and sweeping.

* One psycopg 3 connection pool per store. Connections are checked when taken from the pool
  and use TCP keepalives, so a restarted server or a pooler that dropped a connection costs a
  reconnect, not an error. ``prepare_threshold=None`` turns server-side prepared statements
  off for pgbouncer in transaction mode.
* A batch is one transaction (READ COMMITTED). It is retried automatically, with the same
  clock reading, when the failure left nothing committed: a dropped connection before COMMIT,
  a deadlock or a serialization failure. A read-only batch is also retried when the connection
  dropped during COMMIT; a writing one then raises :class:`~remem.errors.StoreError` (the
  outcome is unknown, and replaying it could overwrite a newer write by someone else).
  A statement the server refuses for its data (SQLSTATE classes 22 and 54: a character the
  encoding lacks, an index row past its size limit) is neither retried nor a ``StoreError``:
  it is the caller's :class:`~remem.errors.InvalidInputError`
  (:func:`remem._postgres.database_error`), so a server answers 422, never 503.
* Keyword search reads postings (term, item, tf) and computes BM25 in Python, exactly as the
  other backends do; filters compile to SQL over a jsonb shadow of each value
  (:func:`remem.store.filters_postgres.to_postgres`).
* Vector search: scopes of at most ``VectorSearch.exact_below`` vectors are scanned exactly
  (a user's namespace); larger ones walk the HNSW index with pgvector's iterative scan, the
  namespace range checked during the scan and the filter checked on the candidates, fetching
  more until the page is full. Final scores are recomputed in float32 NumPy exactly as the
  other backends compute them, so scores and ties agree across backends.
* The async API runs the sync code in a worker thread (``asyncio.to_thread``, from
  :class:`~remem.store.base.BaseStore`), as the other backends do: one code path, one pool.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from remem._postgres import database_error, is_refused_data
from remem.db import Database
from remem.db.migrations import advisory_key
from remem.errors import ConfigError, IndexConfigError, StoreError
from remem.retrieval.ranking import Candidate
from remem.store.base import IndexConfig, KeywordConfig, Prepared, TTLConfig
from remem.store.filters_postgres import postgres_document
from remem.store.migrations import STORE_SCHEMA
from remem.store.namespace_codec import encode_ns
from remem.store.postgres.sql import PostgresDialect, VectorSearch, quote_ident, sql
from remem.store.postgres.vector_search import VectorScope, vector_hits, vectors_of
from remem.store.sql_store import SQLStore
from remem.store.types import DeleteOp, Op, PutOp, Result, SearchOp

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["PostgresStore"]

logger = logging.getLogger("remem.store.postgres")
T = TypeVar("T")


class PostgresStore(SQLStore["Conn"]):
    """A store in a PostgreSQL database with pgvector.

    ``dsn``: a libpq connection string or ``postgresql://`` URI. ``schema``: the schema holding
    the tables (created if missing), so several stores can share a database.
    ``vector``: HNSW / exact search settings (:class:`VectorSearch`). ``pool_min_size`` /
    ``pool_max_size``: connections kept / allowed. ``prepare_threshold``: psycopg's (``None``
    turns prepared statements off, as pgbouncer in transaction mode needs).
    ``statement_timeout``: seconds any statement may run (``None``: the server's setting); set
    once per connection, or in every transaction when ``prepare_threshold`` is ``None``
    (pooler mode).
    ``connect_timeout``: seconds to wait for a connection (also how long a batch keeps retrying
    while the server is unreachable). ``retries``: attempts after the first for failures that
    left nothing committed.

    Construction does no I/O; :meth:`setup` (or the first batch, or ``with``) connects, creates
    the extension and schema and applies migrations under an advisory lock.
    """

    def __init__(self, dsn: str, *, schema: str = "remem", index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None,
                 keyword: KeywordConfig | Literal[False] | None = None,
                 vector: VectorSearch | None = None, pool_min_size: int = 1,
                 pool_max_size: int = 10, prepare_threshold: int | None = 5,
                 statement_timeout: float | None = 30.0, connect_timeout: float = 10.0,
                 retries: int = 8, clock: Callable[[], float] | None = None) -> None:
        if clock is None:
            super().__init__(index=index, ttl=ttl, keyword=keyword)
        else:
            super().__init__(index=index, ttl=ttl, keyword=keyword, clock=clock)
        if not isinstance(dsn, str) or not dsn:
            raise ConfigError("PostgresStore needs a DSN such as 'postgresql://user@host/db'")
        if not 1 <= pool_min_size <= pool_max_size:
            raise ConfigError(
                f"pool sizes must satisfy 1 <= pool_min_size <= pool_max_size, got "
                f"{pool_min_size} and {pool_max_size}"
            )
        self.dsn = dsn
        self.schema = schema
        self._q = quote_ident(schema)
        self.dialect = PostgresDialect(f"{self._q}.")
        self.vector = vector or VectorSearch()
        self.pool_min_size = pool_min_size
        self.pool_max_size = pool_max_size
        self.prepare_threshold = prepare_threshold
        self.statement_timeout = statement_timeout
        self.connect_timeout = connect_timeout
        self.retries = retries
        #: the pool (its families share it): connections are checked as they leave it
        self.database = Database(
            dsn, schema=schema, owner="PostgresStore", pool_min_size=pool_min_size,
            pool_max_size=pool_max_size, connect_timeout=connect_timeout,
            check_connections=True, prepare=self._create_extension, configure=self._configure,
            connect_options={"prepare_threshold": prepare_threshold,
                             "application_name": "remem"})
        self._setup_lock = threading.Lock()
        self._ready = False
        self._model_id: int | None = None
        self._vector_oid: int | None = None
        #: namespace prefix -> (too large for exact search?, when counted)
        self._scope_sizes: dict[tuple[str, ...], tuple[bool, float]] = {}

    @classmethod
    def open(cls, dsn: str, **kwargs: Any) -> PostgresStore:
        """Construct and :meth:`setup` a store."""
        store = cls(dsn, **kwargs)
        store.setup()
        return store

    def _t(self, name: str) -> str:
        return f"{self._q}.{name}"

    # -- connections --------------------------------------------------------------------------

    def setup(self) -> None:
        """Connect, create the ``vector`` extension and the schema, apply migrations, register
        the embedding model and tokenizer and build the model's HNSW index if missing.
        Idempotent, and safe when many processes call it at once (advisory locks)."""
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            # opens the pool (a ConfigError naming the extra without psycopg), the extension
            # first
            self.database.migrate(STORE_SCHEMA)
            import psycopg

            try:
                with self.database.connection() as conn:
                    self._register(conn)
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL setup failed on {self.database.where}: {exc}"
                                 ) from exc
            self._ready = True
        self._start_sweeper()

    def _create_extension(self, conn: Conn) -> None:
        """Before the pool opens: the ``vector`` type its connections load as NumPy."""
        with conn.transaction():
            # CREATE EXTENSION is not safe to race; one global advisory lock serialises it
            conn.execute(f"SELECT pg_advisory_xact_lock({advisory_key('')})", ("",))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute("SELECT 'vector'::regtype::oid").fetchone()
        assert row is not None
        self._vector_oid = int(row[0])

    def _register(self, conn: Conn) -> None:
        """Record the embedding model and the tokenizer; build the model's index."""
        with conn.transaction():
            conn.execute(sql(f"SELECT pg_advisory_xact_lock({advisory_key(self.schema)})"),
                         (self.schema,))
            if self.index is not None:
                self._model_id = self._register_model(conn, self.index)
            if self.keyword is not None:
                self._register_tokenizer(conn, self.keyword)
        if self.index is not None and self.vector.method == "hnsw":
            assert self._model_id is not None
            with conn.transaction():
                conn.execute(sql(f"SELECT pg_advisory_xact_lock({advisory_key(self.schema)})"),
                             (self.schema,))
                conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
                conn.execute(sql(self.vector.create_index(self._q, self._model_id,
                                                          self.index.dims)))

    def _register_model(self, conn: Conn, index: IndexConfig) -> int:
        used = conn.execute(sql(
            f"SELECT m.id, m.name, m.dims FROM {self._t('embedding_models')} AS m WHERE EXISTS "
            f"(SELECT 1 FROM {self._t('vectors')} AS v WHERE v.model_id = m.id)"
        )).fetchall()
        for _, name, dims in used:
            if name != index.model or dims != index.dims:
                raise IndexConfigError(
                    f"{self.database.where} holds vectors of model {name!r} ({dims} dims); "
                    f"this store was opened with {index.model!r} ({index.dims} dims). Open it "
                    "with the same embedder, or export and re-import into a new schema"
                )
        conn.execute(sql(
            f"INSERT INTO {self._t('embedding_models')} (name, dims) VALUES (%s, %s) "
            "ON CONFLICT (name, dims) DO NOTHING"), (index.model, index.dims))
        row = conn.execute(sql(
            f"SELECT id FROM {self._t('embedding_models')} WHERE name = %s AND dims = %s"),
            (index.model, index.dims)).fetchone()
        assert row is not None
        return int(row[0])

    def _register_tokenizer(self, conn: Conn, config: KeywordConfig) -> None:
        name = config.tokenizer.name
        row = conn.execute(sql(
            f"SELECT value FROM {self._t('remem_meta')} WHERE key = 'keyword_tokenizer'"
        )).fetchone()
        if row is not None and row[0] != name and conn.execute(sql(
            f"SELECT 1 FROM {self._t('postings')} LIMIT 1"
        )).fetchone() is not None:
            raise IndexConfigError(
                f"{self.database.where} holds keyword terms made by tokenizer {row[0]!r}; "
                f"this store was opened with {name!r}. Open it with the same tokenizer "
                "(KeywordConfig(tokenizer=...)), or export and re-import into a new schema"
            )
        conn.execute(sql(
            f"INSERT INTO {self._t('remem_meta')} (key, value) VALUES ('keyword_tokenizer', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"), (name,))

    def _configure(self, conn: Conn) -> None:
        from remem.store.postgres.wire import register_vector_type

        assert self._vector_oid is not None
        register_vector_type(conn, self._vector_oid)
        if self.statement_timeout is not None and self.prepare_threshold is not None:
            # a direct connection keeps its session: set the timeout once, not per batch
            conn.execute("SELECT set_config('statement_timeout', %s, false)",
                         (self._timeout_setting(),))

    def _timeout_setting(self) -> str:
        assert self.statement_timeout is not None
        return f"{max(1, int(self.statement_timeout * 1000))}ms"

    def close(self) -> None:
        """Stop the sweeper and close the pool (idempotent)."""
        self._stop_sweeper()
        self._ready = False
        self.database.close()

    def _transact(self, body: Callable[[Conn], T], *, writes: bool) -> T:
        """Run ``body`` in one transaction, retrying failures that left nothing committed."""
        import psycopg  # setup() imported it
        import psycopg_pool

        errors = psycopg.errors
        deadline = time.monotonic() + self.connect_timeout
        attempt = 0
        while True:
            committing = False
            try:
                with self.database.connection() as conn:
                    with conn.transaction():
                        if self.statement_timeout is not None and self.prepare_threshold is None:
                            # behind a transaction pooler a session setting would not stick
                            # to our next transaction: set it in every transaction
                            conn.execute("SELECT set_config('statement_timeout', %s, true)",
                                         (self._timeout_setting(),))
                        result = body(conn)
                        committing = True
                    return result
            except (errors.DeadlockDetected, errors.SerializationFailure,
                    errors.UniqueViolation) as exc:
                # the server rolled the whole transaction back: replaying it is safe
                attempt += 1
                if attempt > self.retries:
                    raise StoreError(f"PostgreSQL kept aborting this batch ({exc}); "
                                     "retry later or reduce write contention") from exc
                # jitter, so the transactions that collided do not collide again
                time.sleep(random.uniform(0.005, 0.02 * 2 ** min(attempt, 5)))
            except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
                if is_refused_data(exc):  # a value past a limit (54xxx): retrying cannot help
                    raise database_error(exc, self.database.where) from exc
                if isinstance(exc, errors.QueryCanceled):
                    raise StoreError(
                        f"a statement ran longer than statement_timeout "
                        f"({self.statement_timeout} s): raise it (PostgresStore("
                        "statement_timeout=...)) or narrow the search") from exc
                if committing and writes:
                    raise StoreError(
                        f"the connection to {self.database.where} dropped while committing a "
                        "writing batch; whether it was applied is unknown: read the items back "
                        f"before retrying ({exc})") from exc
                attempt += 1
                if attempt > self.retries and time.monotonic() > deadline:
                    raise StoreError(
                        f"cannot reach PostgreSQL at {self.database.where}: {exc}; check that "
                        "the server is running and the DSN is right") from exc
                logger.info("retrying a batch after a connection failure: %s", exc)
                time.sleep(min(0.05 * 2**attempt, 1.0))
            except psycopg.Error as exc:
                # refused data is the caller's (422); anything else the database's (503)
                raise database_error(exc, self.database.where) from exc

    # -- batch --------------------------------------------------------------------------------

    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        writes = any(isinstance(op, PutOp | DeleteOp) for op in ops)

        def body(conn: Conn) -> list[Result]:
            refreshes: list[int] = []
            results = self._run_ops(conn, ops, prepared, refreshes)
            self._apply_refreshes(conn, refreshes, prepared.now)
            return results

        return self._transact(body, writes=writes)

    def _query(self, tx: Conn, text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = tx.execute(sql(text), params)
        return cursor.fetchall() if cursor.description is not None else []

    def _read(self, body: Callable[[Conn], T]) -> T:
        self.setup()
        return self._transact(body, writes=False)

    def _put_many(self, conn: Conn, run: list[tuple[int, PutOp]], prepared: Prepared) -> None:
        """Upsert a run of puts in a few statements: items, then their terms and vectors.

        The run's rows are written (and so locked) in (namespace, key) order, whatever the
        order of the ops: two batches putting the same keys cannot deadlock on each other."""
        now = prepared.now
        cols: dict[str, list[Any]] = {name: [] for name in (
            "ns", "key", "value", "doc", "created", "updated", "ttl", "expires", "event",
            "doc_len", "explicit")}
        for position, op in run:
            ttl, expires_at = self._expiry_for(op, now)
            cols["ns"].append(encode_ns(op.namespace))
            cols["key"].append(op.key)
            cols["value"].append(op.value_json)
            cols["doc"].append(postgres_document(op.value))
            cols["created"].append(op.created_at if op.created_at is not None else now)
            cols["updated"].append(op.updated_at if op.updated_at is not None else now)
            cols["ttl"].append(ttl)
            cols["expires"].append(expires_at)
            cols["event"].append(op.event_ts)
            cols["doc_len"].append(sum(prepared.put_terms.get(position, {}).values()))
            cols["explicit"].append(op.created_at is not None)
        rows: list[tuple[Any, ...]] = []
        for explicit in (False, True):
            picked = [i for i, flag in enumerate(cols["explicit"]) if flag is explicit]
            if not picked:
                continue
            # an explicit created_at (import, reindex) is kept; otherwise the first write's
            # stays, unless the old item had expired (then this is a new item)
            created = ("excluded.created_at" if explicit else
                       "CASE WHEN it.expires_at IS NOT NULL AND it.expires_at <= %s "
                       "THEN excluded.created_at ELSE it.created_at END")
            arrays = [[cols[name][i] for i in picked] for name in (
                "ns", "key", "value", "doc", "created", "updated", "ttl", "expires", "event",
                "doc_len")]
            rows.extend(conn.execute(sql(
                f"""INSERT INTO {self._t('items')} AS it (ns, key, value, doc, created_at,
                       updated_at, ttl, expires_at, event_at, doc_len)
                   SELECT u.ns, u.key, u.value, u.doc::jsonb, u.created, u.updated, u.ttl,
                          u.expires, u.event, u.doc_len
                   FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[],
                               %s::float8[], %s::float8[], %s::float8[], %s::float8[],
                               %s::int4[])
                        AS u(ns, key, value, doc, created, updated, ttl, expires, event,
                             doc_len)
                   ORDER BY u.ns, u.key
                   ON CONFLICT (ns, key) DO UPDATE SET
                     value = excluded.value, doc = excluded.doc, created_at = {created},
                     updated_at = excluded.updated_at, ttl = excluded.ttl,
                     expires_at = excluded.expires_at, event_at = excluded.event_at,
                     doc_len = excluded.doc_len
                   RETURNING it.id, (it.xmax = 0) AS inserted, it.ns, it.key"""),
                [*arrays, *([] if explicit else [now])]).fetchall())
        ids = {(ns, key): int(item_id) for item_id, _, ns, key in rows}
        replaced = [int(item_id) for item_id, inserted, _, _ in rows if not inserted]
        if replaced:
            conn.execute(sql(f"DELETE FROM {self._t('postings')} WHERE item_id = ANY(%s)"),
                         (replaced,))
            conn.execute(sql(f"DELETE FROM {self._t('vectors')} WHERE item_id = ANY(%s)"),
                         (replaced,))
        terms: list[str] = []
        term_items: list[int] = []
        tfs: list[int] = []
        vector_rows: list[tuple[Any, ...]] = []
        for position, op in run:
            ns = encode_ns(op.namespace)
            item_id = ids[(ns, op.key)]
            for term, tf in prepared.put_terms.get(position, {}).items():
                terms.append(term)
                term_items.append(item_id)
                tfs.append(tf)
            for field_path, vector, digest in prepared.put_vectors.get(position, ()):
                vector_rows.append((item_id, ns, field_path, self._model_id, vector, digest))
        if terms:
            conn.execute(sql(
                f"INSERT INTO {self._t('postings')} (term, item_id, tf) "
                "SELECT * FROM unnest(%s::text[], %s::int8[], %s::int4[])"),
                (terms, term_items, tfs))
        if vector_rows:
            # binary COPY: one round trip and no per-row statement, several times faster
            # than INSERTs for a large batch
            assert self._vector_oid is not None
            with conn.cursor() as cur, cur.copy(sql(
                f"COPY {self._t('vectors')} (item_id, ns, field, model_id, vec, text_hash) "
                "FROM STDIN (FORMAT BINARY)")) as copy:
                copy.set_types(["int8", "text", "text", "int4", self._vector_oid, "bytea"])
                for row in vector_rows:
                    copy.write_row(row)

    def _stored_vectors(self, hashes: list[bytes]) -> dict[bytes, npt.NDArray[np.float32]]:
        """Vectors of this model already stored for these document text hashes."""
        if self._model_id is None:
            self.setup()

        def body(conn: Conn) -> dict[bytes, npt.NDArray[np.float32]]:
            with conn.cursor(binary=True) as cur:
                cur.execute(sql(
                    f"SELECT DISTINCT ON (text_hash) text_hash, vec FROM {self._t('vectors')} "
                    "WHERE text_hash = ANY(%s) AND model_id = %s"), (hashes, self._model_id))
                return {bytes(digest): vec for digest, vec in cur.fetchall()}

        return self._transact(body, writes=False)

    # -- search -------------------------------------------------------------------------------

    def _field_vectors(self, tx: Conn, ids: Sequence[int]
                       ) -> list[tuple[int, npt.NDArray[np.float32]]]:
        return vectors_of(tx, self._q, self._model_id, list(ids))

    def _vector_hits(self, tx: Conn, op: SearchOp, query: npt.NDArray[np.float32], depth: int,
                     where: str, params: list[Any]) -> list[Candidate]:
        assert self.index is not None and self._model_id is not None
        return vector_hits(tx, VectorScope(self._q, self._model_id, self.index.dims,
                                           self.vector, self._scope_sizes),
                           op, query, depth, where, params)

    # -- maintenance --------------------------------------------------------------------------

    def sweep(self) -> int:
        """Delete expired items (their terms and vectors go with them), in chunks."""
        self.setup()
        total = 0
        now = self.clock()
        while True:
            deleted = self._transact(lambda conn: len(conn.execute(sql(
                f"DELETE FROM {self._t('items')} WHERE id IN (SELECT id FROM "
                f"{self._t('items')} WHERE expires_at IS NOT NULL AND expires_at <= %s "
                "LIMIT 5000) RETURNING id"), (now,)).fetchall()), writes=False)
            total += deleted
            if deleted < 5000:
                return total
