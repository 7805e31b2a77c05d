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
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from remem.db import Database, Tx, database_of
from remem.errors import InvalidInputError, StoreError
from remem.graph import schema
from remem.store.values import NUL, nul_problem

__all__ = ["DatabaseGraphStorage", "GraphStorage", "GraphTx", "PostgresGraphStorage",
           "SQLiteGraphStorage", "SharedStorage"]


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


class _GraphTx:
    """A :class:`~remem.db.Tx` that refuses the NUL character on both dialects."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.dialect: str = tx.dialect.name

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:
        _refuse_nul(query, params)
        return self.tx.execute(query, params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        for row in rows:
            _refuse_nul(query, row)
        self.tx.executemany(query, rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        _refuse_nul(query, params)
        return self.tx.insert(query, params)


class DatabaseGraphStorage:
    """Graphs in a :class:`~remem.db.Database` (beside the store's tables, or
    ``":memory:"``); :meth:`close` closes it."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = db.location

    def setup(self) -> None:
        self.db.migrate(schema.GRAPH_SCHEMA)

    @contextmanager
    def transaction(self, write: bool, ns: str) -> Iterator[GraphTx]:
        self.setup()
        # PostgreSQL: writers of one graph queue (resolution reads then writes entities); a
        # read runs each statement on its own (no BEGIN / COMMIT round trips)
        with self.db.transaction(write, snapshot=False,
                                 lock=(0x67726170, zlib.crc32(ns.encode()) - 2**31)) as tx:
            yield _GraphTx(tx)

    def close(self) -> None:
        self.db.close()


class SQLiteGraphStorage(DatabaseGraphStorage):
    """Graphs in a SQLite file (beside the store's tables) or in ``":memory:"``."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *,
                 busy_timeout: float = 30.0) -> None:
        super().__init__(Database(path, owner="Graph", busy_timeout=busy_timeout))


class PostgresGraphStorage(DatabaseGraphStorage):
    """Graphs in a PostgreSQL schema (the ``postgres`` extra), by default the store's."""

    def __init__(self, dsn: str, *, schema: str = "remem", pool_max_size: int = 4,
                 connect_timeout: float = 10.0) -> None:
        super().__init__(Database(dsn, schema=schema, owner="Graph",
                                  pool_max_size=pool_max_size, connect_timeout=connect_timeout))


def storage_at(location: str | os.PathLike[str], *, schema: str = "remem") -> GraphStorage:
    """The storage at a SQLite path, ``":memory:"`` or a PostgreSQL DSN."""
    return DatabaseGraphStorage(Database(location, schema=schema, owner="Graph"))


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
    """The storage in the same database as ``store`` (:func:`remem.db.database_of`), shared
    by every graph beside a store of that database (see :class:`SharedStorage`); ``None``
    for a store that keeps no database (in memory)."""
    db = database_of(store, "Graph")
    if db is None:
        return None
    return _shared(db.handle_key, lambda: DatabaseGraphStorage(db))


def storage_beside(store: Any) -> GraphStorage:
    """The storage in the same database as ``store`` (:func:`persistent_storage_beside`), or
    (an in-memory store) a SQLite ``":memory:"`` database of this process."""
    found = persistent_storage_beside(store)
    return SQLiteGraphStorage(":memory:") if found is None else found
