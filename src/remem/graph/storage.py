"""Where graph rows live: SQLite (a file, or ``":memory:"`` for one process) or PostgreSQL.

:class:`~remem.graph.graph.Graph` holds the logic and speaks to storage only through
:meth:`GraphStorage.transaction`, which yields a :class:`Rows` (:mod:`remem.graph.rows`) over
a :class:`GraphTx`: ``execute`` (``?`` placeholders, translated for the dialect) and ``insert``
(returns the new id). The tables and migrations are in :mod:`remem.graph.schema`.

* SQLite: one connection per OS thread (``":memory:"``: one, behind a lock); writes take the
  write lock up front (``BEGIN IMMEDIATE``); WAL. The in-memory graph is this backend on
  ``":memory:"``: the same SQL, so the conformance suite covers it with the others.
* PostgreSQL (the ``postgres`` extra): a psycopg pool whose ``search_path`` is the store's
  schema; a write transaction takes a transaction-level advisory lock per namespace, so two
  ingests into the same graph queue while other graphs write in parallel. A read runs its
  statements in autocommit (under READ COMMITTED each statement reads its own snapshot in a
  transaction too, so BEGIN and COMMIT would only add round trips).

Both refuse a statement whose text parameter holds the NUL character before running it
(:func:`_refuse_nul`), so a value PostgreSQL cannot store is refused alike on SQLite; the
graph's entry points check what the caller gave first, naming the field. A PostgreSQL error
caused by the data (:func:`remem._postgres.database_error`) is an ``InvalidInputError``, any
other a ``StoreError``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from remem._sqlite import SQLiteConnections
from remem.errors import InvalidInputError, StoreError
from remem.graph import schema
from remem.store.migrations import apply_sqlite
from remem.store.values import NUL, nul_problem

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["GraphStorage", "GraphTx", "PostgresGraphStorage", "SQLiteGraphStorage", "SharedStorage"]


class GraphTx(Protocol):
    """One open transaction."""

    #: ``"sqlite"`` or ``"postgres"``
    dialect: str

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:
        """Run ``query`` (``?`` placeholders); return the cursor."""
        ...

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``query`` once per row."""
        ...

    def insert(self, query: str, params: Sequence[Any]) -> int:
        """Run an INSERT into a table with an ``id`` key; return the new id."""
        ...


class GraphStorage(Protocol):
    """A database holding graphs."""

    #: identifies the database (vector caches are kept per location and namespace)
    location: str

    def setup(self) -> None:
        """Connect and create or migrate the graph tables (idempotent)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...

    def transaction(self, write: bool, ns: str) -> AbstractContextManager[GraphTx]:
        """A transaction over the graph of namespace ``ns`` (encoded); commits on success."""
        ...


_TABLE = re.compile(r"\b(?:INTO|UPDATE|FROM)\s+(\w+)", re.IGNORECASE)


def _refuse_nul(query: str, params: Sequence[Any]) -> None:
    """Raise :class:`InvalidInputError` if a text parameter of ``query`` holds the NUL
    character, naming the table and the value (SQLite would store it, PostgreSQL refuse it:
    remem refuses it on both)."""
    for position, param in enumerate(params):
        if type(param) is str and NUL in param:
            table = _TABLE.search(query)
            where = f"a text for {table.group(1)}" if table else "a text"
            problem = nul_problem(param, f"parameter {position + 1}") or ""
            raise InvalidInputError(f"{where} ({param[:40]!r}) cannot be stored: {problem}")


class _SQLiteGraphTx:
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:
        _refuse_nul(query, params)
        return self.conn.execute(query, params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        for row in rows:
            _refuse_nul(query, row)
        self.conn.executemany(query, rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        _refuse_nul(query, params)
        row_id = self.conn.execute(query, params).lastrowid
        assert row_id is not None
        return row_id


class SQLiteGraphStorage:
    """Graphs in a SQLite file (beside the store's tables) or in ``":memory:"``."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *,
                 busy_timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        self.location = self.path if self.path != ":memory:" else f":memory:{id(self)}"
        self._conns = SQLiteConnections(self.path, owner="Graph", busy_timeout=busy_timeout)
        self._setup_lock = threading.Lock()
        self._ready = False

    def setup(self) -> None:
        if self._ready:
            return
        with self._setup_lock:
            if not self._ready:
                with self._conns.connection() as conn:
                    apply_sqlite(conn, schema.GRAPH_MIGRATIONS)
                self._ready = True

    @contextmanager
    def transaction(self, write: bool, ns: str) -> Iterator[GraphTx]:
        self.setup()
        with self._conns.writing() if write else nullcontext(), \
                self._conns.connection() as conn:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SQLiteGraphTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        self._conns.close()


class _PostgresGraphTx:
    dialect = "postgres"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:
        _refuse_nul(query, params)
        return self.conn.execute(query.replace("?", "%s"), params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        for row in rows:
            _refuse_nul(query, row)
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(query.replace("?", "%s"), rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        row = self.execute(query + " RETURNING id", params).fetchone()
        return int(row[0])


class PostgresGraphStorage:
    """Graphs in a PostgreSQL schema (the ``postgres`` extra), by default the store's."""

    def __init__(self, dsn: str, *, schema: str = "remem", pool_max_size: int = 4,
                 connect_timeout: float = 10.0) -> None:
        from remem.store.postgres.sql import quote_ident

        self.dsn = dsn
        self.schema = schema
        self.location = f"{dsn}#{schema}"
        self._q = quote_ident(schema)
        self.pool_max_size = pool_max_size
        self.connect_timeout = connect_timeout
        self._pool: ConnectionPool[Any] | None = None
        self._setup_lock = threading.Lock()
        self._closed = False

    def _kwargs(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": max(1, int(self.connect_timeout)),
                "keepalives": 1, "keepalives_idle": 30, "application_name": "remem-graph"}

    def setup(self) -> None:
        if self._pool is not None:
            return
        with self._setup_lock:
            if self._pool is not None:
                return
            if self._closed:
                raise StoreError("this Graph is closed; open a new one")
            from remem.store.migrations.postgres import open_migrated_pool

            self._pool = open_migrated_pool(
                self.dsn, self.schema, self._q, schema.GRAPH_MIGRATIONS_POSTGRES,
                kwargs=self._kwargs(), name=f"remem-graph:{self.schema}",
                max_size=self.pool_max_size, timeout=self.connect_timeout)

    @contextmanager
    def transaction(self, write: bool, ns: str) -> Iterator[GraphTx]:
        import psycopg

        self.setup()
        assert self._pool is not None
        try:
            with self._pool.connection() as conn:
                if not write:
                    # READ COMMITTED gives each statement its own snapshot inside a
                    # transaction as well: a read needs no BEGIN / COMMIT (two round trips)
                    yield _PostgresGraphTx(conn)
                    return
                with conn.transaction():
                    # writers of one graph queue (resolution reads then writes entities)
                    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)",
                                 (0x67726170, zlib.crc32(ns.encode()) - 2**31))
                    yield _PostgresGraphTx(conn)
        except psycopg.Error as exc:
            from remem._postgres import database_error

            raise database_error(exc, f"schema {self.schema}") from exc

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def storage_at(location: str | os.PathLike[str], *, schema: str = "remem") -> GraphStorage:
    """The storage at a SQLite path, ``":memory:"`` or a PostgreSQL DSN."""
    from remem.store import is_dsn

    path = os.fspath(location)
    if is_dsn(path):
        return PostgresGraphStorage(path, schema=schema)
    return SQLiteGraphStorage(path)


class SharedStorage:
    """A handle on a storage that the graphs beside one store share (one connection set or
    pool per database, however many users' graphs a server opens); closing the last handle
    closes the storage."""

    def __init__(self, key: str, inner: GraphStorage) -> None:
        self.key = key
        self.inner = inner
        self.location = inner.location
        self._closed = False

    def setup(self) -> None:
        self.inner.setup()

    def transaction(self, write: bool, ns: str) -> AbstractContextManager[GraphTx]:
        if self._closed:
            raise StoreError("this Graph is closed; open a new one")
        return self.inner.transaction(write, ns)

    def close(self) -> None:
        with _SHARED_LOCK:
            if self._closed:
                return
            self._closed = True
            inner, users = _SHARED[self.key]
            if users > 1:
                _SHARED[self.key] = (inner, users - 1)
                return
            del _SHARED[self.key]
        inner.close()


_SHARED: dict[str, tuple[GraphStorage, int]] = {}
_SHARED_LOCK = threading.Lock()


def _shared(key: str, make: Any) -> GraphStorage:
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        inner: GraphStorage = make() if found is None else found[0]
        _SHARED[key] = (inner, 1 if found is None else found[1] + 1)
    return SharedStorage(key, inner)


def persistent_storage_beside(store: Any) -> GraphStorage | None:
    """The storage in the same database as ``store`` (its SQLite file, its PostgreSQL
    schema), shared by every graph beside a store of that database (see
    :class:`SharedStorage`); ``None`` for a store that keeps no database (in memory)."""
    while hasattr(store, "inner") and not hasattr(store, "dsn") and not hasattr(store, "path"):
        store = store.inner  # a scoped view: the store under it
    dsn = getattr(store, "dsn", None)
    if isinstance(dsn, str):
        schema_name = getattr(store, "schema", "remem")
        return _shared(f"postgres:{dsn}#{schema_name}",
                       lambda: PostgresGraphStorage(dsn, schema=schema_name))
    path = getattr(store, "path", None)
    if isinstance(path, str | os.PathLike) and os.fspath(path) != ":memory:":
        where = os.path.realpath(os.fspath(path))
        return _shared(f"sqlite:{where}", lambda: SQLiteGraphStorage(where))
    return None


def storage_beside(store: Any) -> GraphStorage:
    """The storage in the same database as ``store`` (:func:`persistent_storage_beside`), or
    (an in-memory store) a SQLite ``":memory:"`` database of this process."""
    found = persistent_storage_beside(store)
    return SQLiteGraphStorage(":memory:") if found is None else found
