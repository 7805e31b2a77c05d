"""The :class:`Database` handle: connections (SQLite) or a pool (PostgreSQL), transactions
yielding a :class:`Tx`, and each family's migrations, applied once per handle.

* SQLite: one connection per OS thread (``":memory:"``: one, behind a lock), WAL; a write
  takes the database's write lock up front (``BEGIN IMMEDIATE``), so writers queue instead
  of failing to upgrade a read lock, and a read is one snapshot (``BEGIN``).
* PostgreSQL (the ``postgres`` extra): a psycopg pool whose ``search_path`` is the store's
  schema. A write is one transaction, optionally under a transaction-level advisory lock
  (``lock``: writers of one key queue); a read is one repeatable-read snapshot, or
  (``snapshot=False``) statements in autocommit, each reading its own. A unique violation
  is a :class:`~remem.errors.ConflictError` (retry); data the database refuses an
  ``InvalidInputError``; any other failure a ``StoreError``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from remem._sqlite import SQLiteConnections
from remem.db.dialect import POSTGRES, SQLITE, Dialect, Schema
from remem.errors import ConflictError, StoreError
from remem.store.migrations import apply_sqlite

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["Database", "Tx", "database_of"]


class Tx:
    """One open transaction: SQL with ``?`` placeholders, translated for the dialect."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def execute(self, query: str, params: Sequence[Any] = (), *,
                translated: bool = False) -> Any:
        """Run ``query`` (already in the dialect's placeholders when ``translated``);
        return the cursor (``fetchone``, ``fetchall``, iteration, ``rowcount``)."""
        return self.conn.execute(query if translated else self.dialect.sql(query), params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``query`` once per row (psycopg sends them in one pipeline)."""
        if isinstance(self.conn, sqlite3.Connection):
            self.conn.executemany(query, rows)
        elif rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(self.dialect.sql(query), rows)

    def insert(self, query: str, params: Sequence[Any]) -> int:
        """Run an INSERT into a table with an ``id`` key and return the new id."""
        if isinstance(self.conn, sqlite3.Connection):
            row_id = self.conn.execute(query, params).lastrowid
            assert row_id is not None
            return row_id
        return int(self.execute(query + " RETURNING id", params).fetchone()[0])


class Database:
    """A SQLite file, ``":memory:"`` or a PostgreSQL DSN (``schema``: where the tables are).

    ``owner`` names the component in errors and in PostgreSQL's ``application_name``;
    ``durability`` and ``busy_timeout`` are SQLite's; the pool options PostgreSQL's
    (``check_connections``: test a connection as it leaves the pool). Construction does no
    I/O; :meth:`migrate` or the first transaction connects.
    """

    def __init__(self, location: str | os.PathLike[str], *, schema: str = "remem",
                 owner: str = "remem", durability: Literal["normal", "full"] = "normal",
                 busy_timeout: float = 30.0, pool_min_size: int = 1, pool_max_size: int = 4,
                 connect_timeout: float = 10.0, check_connections: bool = False) -> None:
        from remem.store import is_dsn

        self.target = os.fspath(location)
        self.schema = schema
        self.owner = owner
        self.dialect: Dialect = POSTGRES if is_dsn(self.target) else SQLITE
        self.in_memory = self.target == ":memory:"
        #: identifies the database (caches are kept per location)
        self.location = (f"{self.target}#{schema}" if self.dialect is POSTGRES
                         else f":memory:{id(self)}" if self.in_memory else self.target)
        self._pool_options = (pool_min_size, pool_max_size, connect_timeout, check_connections)
        self._conns: SQLiteConnections | None = None
        if self.dialect is SQLITE:
            self._conns = SQLiteConnections(self.target, owner=owner, durability=durability,
                                            busy_timeout=busy_timeout)
        self._pool: ConnectionPool[Any] | None = None
        self._migrated: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"Database({self.location!r})"

    # -- connecting and migrating -------------------------------------------------------------

    def _open_pool(self) -> ConnectionPool[Any]:
        if self._pool is None:
            if self._closed:
                raise StoreError(f"this {self.owner} is closed; open a new one")
            from remem.store.migrations.postgres import open_migrated_pool
            from remem.store.postgres.sql import quote_ident

            min_size, max_size, timeout, check = self._pool_options
            kwargs = {"autocommit": True, "connect_timeout": max(1, int(timeout)),
                      "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                      "keepalives_count": 3, "application_name": f"remem-{self.owner}"}
            # no migrations yet: this creates the schema; each family's come in migrate()
            self._pool = open_migrated_pool(
                self.target, self.schema, quote_ident(self.schema), (), kwargs=kwargs,
                name=f"remem-{self.owner}:{self.schema}", min_size=min_size,
                max_size=max_size, timeout=timeout, check=check)
        return self._pool

    def migrate(self, schema: Schema) -> None:
        """Apply ``schema``'s missing migrations (once per handle; concurrent processes
        serialise on the database's own lock)."""
        if schema.family in self._migrated:
            return
        with self._lock:
            if schema.family in self._migrated:
                return
            migrations = schema.of(self.dialect)
            if self._conns is not None:
                with self._conns.connection() as conn:
                    apply_sqlite(conn, migrations)
            else:
                self._migrate_postgres(migrations)
            self._migrated.add(schema.family)

    def _migrate_postgres(self, migrations: Sequence[Any]) -> None:
        import psycopg

        from remem.store.migrations.postgres import apply_postgres
        from remem.store.postgres.sql import quote_ident

        try:
            with self._open_pool().connection() as conn:
                apply_postgres(conn, self.schema, quote_ident(self.schema), migrations)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL setup failed (schema {self.schema}): {exc}") from exc

    # -- transactions -------------------------------------------------------------------------

    def transaction(self, write: bool, *, snapshot: bool = True,
                    lock: tuple[int, int] | None = None) -> Any:
        """A context manager yielding a :class:`Tx`; commits on success, rolls back on an
        error. ``snapshot``: a read sees one snapshot (``False``: PostgreSQL runs each
        statement on its own, saving two round trips); ``lock``: a PostgreSQL write first
        takes this advisory lock (two 32-bit keys)."""
        if self._conns is not None:
            return self._sqlite(write)
        return self._postgres(write, snapshot, lock)

    @contextmanager
    def _sqlite(self, write: bool) -> Iterator[Tx]:
        assert self._conns is not None
        with self._conns.writing() if write else nullcontext(), \
                self._conns.connection() as conn, \
                _between(conn, "BEGIN IMMEDIATE" if write else "BEGIN", SQLITE) as tx:
            yield tx

    @contextmanager
    def _postgres(self, write: bool, snapshot: bool,
                  lock: tuple[int, int] | None) -> Iterator[Tx]:
        import psycopg

        pool = self._open_pool()
        try:
            with pool.connection() as conn:
                if write:
                    with conn.transaction():
                        if lock is not None:
                            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", lock)
                        yield Tx(conn, POSTGRES)
                elif not snapshot:
                    yield Tx(conn, POSTGRES)
                else:
                    # the same two round trips as a plain BEGIN, and one snapshot for the
                    # whole read, as on SQLite
                    with _between(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                                  POSTGRES) as tx:
                        yield tx
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(f"a concurrent write created the same row first: "
                                f"{exc.diag.message_detail or exc}; retry") from exc
        except psycopg.Error as exc:  # refused data is the caller's (422), else a 503
            from remem._postgres import database_error

            raise database_error(exc, f"schema {self.schema}") from exc

    def close(self) -> None:
        """Release the connections (SQLite checkpoints its WAL first); later transactions
        raise :class:`~remem.errors.StoreError`."""
        self._closed = True
        if self._conns is not None:
            self._conns.close()
        if self._pool is not None:
            self._pool.close()
            self._pool = None


@contextmanager
def _between(conn: Any, begin: str, dialect: Dialect) -> Iterator[Tx]:
    """A transaction opened with ``begin``: committed on success, rolled back on an error."""
    conn.execute(begin)
    try:
        yield Tx(conn, dialect)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def database_of(store: Any, **options: Any) -> Database | None:
    """A new handle on the database ``store`` keeps its tables in (its SQLite file, its
    PostgreSQL DSN and schema), with ``options`` as :class:`Database` takes them; ``None``
    for a store that keeps none (in memory). A scoped or guarded view answers for the store
    under it."""
    while hasattr(store, "inner") and not hasattr(store, "dsn") and not hasattr(store, "path"):
        store = store.inner
    dsn = getattr(store, "dsn", None)
    if isinstance(dsn, str):
        return Database(dsn, schema=getattr(store, "schema", "remem"), **options)
    path = getattr(store, "path", None)
    if isinstance(path, str | os.PathLike) and os.fspath(path) != ":memory:":
        return Database(os.path.realpath(os.fspath(path)), **options)
    return None
