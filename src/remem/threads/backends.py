"""Where thread rows live: SQLite (a file or ``":memory:"``) or PostgreSQL, behind one seam.

:class:`~remem.threads.store.ThreadStore` holds all the logic and speaks to a backend only
through :meth:`Backend.transaction`, which yields a :class:`ThreadTx`: ``execute`` (SQL written with
``?`` placeholders, translated for the dialect), ``executemany`` and ``insert`` (returns the new
row's id). The SQL and the migrations of both dialects live in :mod:`remem.threads.schema`.

* SQLite: each OS thread gets its own connection (``":memory:"``: one, behind a lock); writes
  take the write lock up front (``BEGIN IMMEDIATE``); WAL; ``durability`` as in the store.
* PostgreSQL (the ``postgres`` extra): a psycopg pool; every connection's ``search_path`` is
  the store's schema (``remem`` by default, shared with a ``PostgresStore``); writes lock the
  thread's row (``FOR UPDATE``), so appends to one thread queue and others run in parallel;
  reads run in one repeatable-read snapshot.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Protocol

from remem._sqlite import SQLiteConnections
from remem.errors import ConflictError, StoreError
from remem.store.filters import parse_filter, to_sqlite
from remem.store.filters_postgres import postgres_document, to_postgres
from remem.store.migrations import apply_sqlite
from remem.threads import schema as sql

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["Backend", "PostgresBackend", "SQLiteBackend", "ThreadTx"]


class Cursor(Protocol):
    """What both drivers' cursors offer."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class ThreadTx(Protocol):
    """One open transaction."""

    def execute(self, query: str, params: Sequence[Any] = (), *,
                translated: bool = False) -> Cursor:
        """Run ``query`` (``?`` placeholders unless ``translated``)."""
        ...

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``query`` once per row."""
        ...

    def insert(self, query: str, params: Sequence[Any]) -> int:
        """Run an INSERT into a table with an ``id`` key and return the new id."""
        ...


class Backend(Protocol):
    """A database holding threads."""

    #: ``"sqlite"`` or ``"postgres"``
    dialect: str
    #: appended to a one-row select of a thread, in a write, to lock the row ("": the
    #: transaction already excludes other writers)
    lock_head: str

    def setup(self) -> None:
        """Connect and apply the thread migrations (idempotent)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...

    def transaction(self, write: bool) -> Any:
        """A context manager yielding a :class:`ThreadTx`; commits on success."""
        ...

    def metadata_filter(self, filter: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
        """The filter as SQL over the thread alias ``t``, in this dialect's placeholders."""
        ...

    def metadata_columns(self, metadata_json: str,
                         metadata: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        """``(column, placeholder, value)`` of the columns that store a thread's metadata."""
        ...


class _SQLiteThreadTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] = (), *,
                translated: bool = False) -> Cursor:
        return self.conn.execute(query, params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(query, rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        row_id = self.conn.execute(query, params).lastrowid
        assert row_id is not None
        return row_id


class SQLiteBackend:
    """Threads in a SQLite file or ``":memory:"``."""

    dialect = "sqlite"
    lock_head = ""  # BEGIN IMMEDIATE already holds the database's write lock

    def __init__(self, path: str | os.PathLike[str], *,
                 durability: Literal["normal", "full"] = "normal",
                 busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        self.in_memory = self.path == ":memory:"
        self.durability = durability
        self.busy_timeout = busy_timeout
        self._setup_lock = threading.Lock()
        self._ready = False
        self._conns = SQLiteConnections(self.path, owner="ThreadStore", durability=durability,
                                        busy_timeout=busy_timeout)

    def _connection(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._conns.connection()

    def setup(self) -> None:
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            with self._connection() as conn:
                apply_sqlite(conn, sql.THREAD_MIGRATIONS)
            self._ready = True

    @contextmanager
    def transaction(self, write: bool) -> Iterator[ThreadTx]:
        # writes take the write lock up front, so concurrent writers queue on busy_timeout
        # instead of failing to upgrade a read lock; reads get a consistent snapshot
        self.setup()
        with self._conns.writing() if write else nullcontext(), self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SQLiteThreadTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        self._conns.close()

    def metadata_filter(self, filter: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
        return to_sqlite(parse_filter(filter), column="t.metadata")

    def metadata_columns(self, metadata_json: str,
                         metadata: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        return [("metadata", "?", metadata_json)]


class _PostgresThreadTx:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] = (), *,
                translated: bool = False) -> Cursor:
        cursor: Cursor = self.conn.execute(query if translated else query.replace("?", "%s"),
                                           params)
        return cursor

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(query.replace("?", "%s"), rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        row = self.execute(query + " RETURNING id", params).fetchone()
        return int(row[0])


class PostgresBackend:
    """Threads in a PostgreSQL schema (the ``postgres`` extra)."""

    dialect = "postgres"
    lock_head = " FOR UPDATE"

    def __init__(self, dsn: str, *, schema: str = "remem", pool_min_size: int = 1,
                 pool_max_size: int = 10, connect_timeout: float = 10.0) -> None:
        from remem.store.postgres.sql import quote_ident

        self.dsn = dsn
        self.schema = schema
        self._q = quote_ident(schema)
        self.pool_min_size = pool_min_size
        self.pool_max_size = pool_max_size
        self.connect_timeout = connect_timeout
        self._pool: ConnectionPool[Any] | None = None
        self._setup_lock = threading.Lock()
        self._closed = False

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": max(1, int(self.connect_timeout)),
                "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                "keepalives_count": 3, "application_name": "remem-threads"}

    def setup(self) -> None:
        if self._pool is not None:
            return
        with self._setup_lock:
            if self._pool is not None:
                return
            if self._closed:
                raise StoreError("this ThreadStore is closed; open a new one")
            from remem.store.migrations.postgres import open_migrated_pool

            self._pool = open_migrated_pool(
                self.dsn, self.schema, self._q, sql.THREAD_MIGRATIONS_POSTGRES,
                kwargs=self._connect_kwargs(), name=f"remem-threads:{self.schema}",
                min_size=self.pool_min_size, max_size=self.pool_max_size,
                timeout=self.connect_timeout, check=True)

    @contextmanager
    def transaction(self, write: bool) -> Iterator[ThreadTx]:
        import psycopg

        self.setup()
        assert self._pool is not None
        try:
            with self._pool.connection() as conn:
                if write:
                    with conn.transaction():
                        yield _PostgresThreadTx(conn)
                else:
                    # one snapshot for the whole read, as on SQLite: a thread deleted meanwhile
                    # is read whole or not at all (the same two round trips as a plain BEGIN)
                    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    try:
                        yield _PostgresThreadTx(conn)
                    except BaseException:
                        conn.execute("ROLLBACK")
                        raise
                    conn.execute("COMMIT")
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(f"a concurrent write created the same row first: "
                                f"{exc.diag.message_detail or exc}; retry") from exc
        except psycopg.Error as exc:  # refused data is the caller's (422), else a 503
            from remem._postgres import database_error

            raise database_error(exc, f"schema {self.schema}") from exc

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def metadata_filter(self, filter: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
        return to_postgres(parse_filter(filter), column="t.metadata_doc")

    def metadata_columns(self, metadata_json: str,
                         metadata: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        return [("metadata", "?", metadata_json),
                ("metadata_doc", "CAST(? AS jsonb)", postgres_document(metadata))]
