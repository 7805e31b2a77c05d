"""The :class:`Database` handle, the one place remem opens connections (SQLite) or a pool
(PostgreSQL) for a store and the families beside it (:meth:`Database.shared`), transactions
yielding a :class:`Tx`, and each family's migrations, applied once per handle.

* SQLite: one connection per OS thread (``":memory:"``: one, behind a lock), WAL; a write
  takes the database's write lock up front (``BEGIN IMMEDIATE``), so writers queue instead
  of failing to upgrade a read lock, and a read is one snapshot (``BEGIN``).
* PostgreSQL (the ``postgres`` extra): a psycopg pool whose ``search_path`` starts with the
  store's schema. A write is one transaction, optionally under a transaction-level advisory lock
  (``lock``: writers of one key queue); a read is one repeatable-read snapshot, or
  (``snapshot=False``) statements in autocommit, each reading its own. A unique violation
  is a :class:`~remem.errors.ConflictError` (retry); data the database refuses an
  ``InvalidInputError``; any other failure a ``StoreError``.
"""

from __future__ import annotations

import copy
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from remem._sqlite import SQLiteConnections
from remem.db.dialect import POSTGRES, SQLITE, Dialect, Schema, is_dsn, quote_ident
from remem.db.migrations import apply_postgres, apply_sqlite
from remem.errors import ConfigError, ConflictError, StoreError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["Database", "Tx", "database_of"]

_OUTLIVING = threading.Lock()  # a shared handle turning into one of its own
#: what runs on a PostgreSQL connection: the pool's ``configure`` and ``prepare`` hooks
Hook = Callable[[Any], None]


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
    (``check_connections``: test a connection as it leaves the pool; ``connect_options``:
    extra psycopg connection arguments; ``prepare``: run once on a direct connection, after
    the schema exists and before the pool opens; ``configure``: run on each new pooled
    connection). Construction does no I/O; :meth:`migrate`, :meth:`connection` or the first
    transaction connects. :meth:`shared` hands a family the same connections or pool.
    """

    def __init__(self, location: str | os.PathLike[str], *, schema: str = "remem",
                 owner: str = "remem", durability: Literal["normal", "full"] = "normal",
                 busy_timeout: float = 30.0, pool_min_size: int = 1, pool_max_size: int = 4,
                 connect_timeout: float = 10.0, check_connections: bool = False,
                 connect_options: Mapping[str, Any] | None = None, prepare: Hook | None = None,
                 configure: Hook | None = None) -> None:
        self.target = os.fspath(location)
        self.schema = schema
        self.owner = owner
        self.dialect: Dialect = POSTGRES if is_dsn(self.target) else SQLITE
        self.in_memory = self.target == ":memory:"
        #: identifies the database (caches are kept per location)
        self.location = (f"{self.target}#{schema}" if self.dialect is POSTGRES
                         else f":memory:{id(self)}" if self.in_memory else self.target)
        self.connect_timeout = connect_timeout
        #: what a shared handle reopens with when it outlives its root (:meth:`_check_open`)
        self._options: dict[str, Any] = {
            "schema": schema, "durability": durability, "busy_timeout": busy_timeout,
            "pool_min_size": pool_min_size, "pool_max_size": pool_max_size,
            "connect_timeout": connect_timeout, "check_connections": check_connections,
            "connect_options": connect_options, "prepare": prepare, "configure": configure}
        self._conns: SQLiteConnections | None = None
        if self.dialect is SQLITE:
            self._conns = SQLiteConnections(self.target, owner=owner, durability=durability,
                                            busy_timeout=busy_timeout)
        self._pool: ConnectionPool[Any] | None = None
        self._migrated: set[str] = set()
        self._lock = threading.Lock()  # migrations
        self._pool_lock = threading.Lock()
        self._closed = False
        self._root: Database | None = None  # the handle whose connections a shared one uses

    def __repr__(self) -> str:
        return f"Database({self.location!r})"

    @property
    def where(self) -> str:
        """The database for messages: the SQLite path, or PostgreSQL's server, database and
        schema (never the credentials)."""
        if self.dialect is SQLITE:
            return self.target
        try:
            from psycopg.conninfo import conninfo_to_dict

            info = conninfo_to_dict(self.target)
            return (f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/"
                    f"{info.get('dbname', '')} (schema {self.schema})")
        except Exception:
            return f"schema {self.schema}"

    @property
    def handle_key(self) -> str:
        """Identifies these connections: the database and the handle that opened them (what a
        family keeps per-database state under)."""
        return f"{self.dialect.name}:{self.location}@{id(self._root or self)}"

    def shared(self, owner: str) -> Database:
        """Another handle on this database's connections (SQLite) or pool (PostgreSQL) and
        migrations, for a family beside the store (``owner`` names it in errors). Closing it
        leaves them open: the handle they came from closes them."""
        view = copy.copy(self)
        view.owner, view._closed = owner, False
        view._root = self._root or self
        return view

    # -- connecting and migrating -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"this {self.owner} is closed; open a new one")
        root = self._root
        if root is not None and root._closed and not self.in_memory:
            # the store closed first (a short-lived process flushing its counters at exit):
            # this family goes on with connections of its own, closed with it
            with _OUTLIVING:
                if self._root is root:
                    vars(self).update(vars(Database(self.target, owner=self.owner,
                                                    **self._options)))

    def _open_pool(self) -> ConnectionPool[Any]:
        self._check_open()
        if self._root is not None:
            return self._root._open_pool()
        with self._pool_lock:
            if self._pool is None:
                self._pool = self._connect_pool()
        return self._pool

    def _connect_pool(self) -> ConnectionPool[Any]:
        """Create the schema (and run ``prepare``) over one direct connection, then open the
        pool (not waited for) whose connections look in the schema first."""
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:
            raise ConfigError("a postgresql:// location needs the PostgreSQL extra: "
                              f"pip install 'remem[postgres]' ({exc})") from None
        options = self._options
        prepare, configure = options["prepare"], options["configure"]
        kwargs = {"autocommit": True, "connect_timeout": max(1, int(self.connect_timeout)),
                  "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                  "keepalives_count": 3, "application_name": f"remem-{self.owner}",
                  **(options["connect_options"] or {})}
        quoted = quote_ident(self.schema)
        try:
            with psycopg.connect(self.target, **kwargs) as conn:
                apply_postgres(conn, self.schema, quoted, ())  # creates the schema
                if prepare is not None:
                    prepare(conn)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL setup failed on {self.where}: {exc}") from exc

        def on_connect(conn: Any) -> None:
            # the schema first, then the session's usual path (where pgvector's types are)
            conn.execute("SELECT set_config('search_path', %s || ', ' || "
                         "current_setting('search_path'), false)", (quoted,))
            if configure is not None:
                configure(conn)

        pool = psycopg_pool.ConnectionPool(
            self.target, min_size=options["pool_min_size"],
            max_size=options["pool_max_size"], kwargs=kwargs,
            configure=on_connect, open=False, timeout=self.connect_timeout, max_idle=300.0,
            max_lifetime=1800.0, reconnect_timeout=max(self.connect_timeout, 60.0),
            name=f"remem-{self.owner}:{self.schema}",
            check=psycopg_pool.ConnectionPool.check_connection
            if options["check_connections"] else None)
        try:
            pool.open(wait=False)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open a connection pool to {self.where}: {exc}") from exc
        return pool

    def connection(self) -> AbstractContextManager[Any]:
        """This thread's SQLite connection (failures surface as
        :class:`~remem.errors.StoreError`), or a connection from the PostgreSQL pool, in
        autocommit mode: the caller opens its own transactions."""
        self._check_open()
        if self._conns is not None:
            return self._conns.connection()
        return self._open_pool().connection()

    def writing(self) -> AbstractContextManager[None]:
        """This process's write turn on a SQLite database (wrap ``BEGIN IMMEDIATE`` ...
        ``COMMIT`` in it: writers queue on a lock, not on SQLite's busy handler); nothing on
        PostgreSQL."""
        return self._conns.writing() if self._conns is not None else nullcontext()

    def migrate(self, schema: Schema) -> None:
        """Apply ``schema``'s missing migrations (once per database handle and its shared
        ones; concurrent processes serialise on the database's own lock)."""
        if schema.family in self._migrated:
            return
        with self._lock:
            if schema.family in self._migrated:
                return
            migrations = schema.of(self.dialect)
            if self._conns is not None:
                with self.writing(), self.connection() as conn:
                    apply_sqlite(conn, migrations)
            else:
                self._migrate_postgres(migrations)
            self._migrated.add(schema.family)

    def _migrate_postgres(self, migrations: Sequence[Any]) -> None:
        pool = self._open_pool()  # without psycopg: a ConfigError naming the extra
        import psycopg

        try:
            with pool.connection() as conn:
                apply_postgres(conn, self.schema, quote_ident(self.schema), migrations)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL setup failed on {self.where}: {exc}") from exc

    # -- transactions -------------------------------------------------------------------------

    def transaction(self, write: bool, *, snapshot: bool = True,
                    lock: tuple[int, int] | None = None) -> Any:
        """A context manager yielding a :class:`Tx`; commits on success, rolls back on an
        error. ``snapshot``: a read sees one snapshot (``False``: PostgreSQL runs each
        statement on its own, saving two round trips); ``lock``: a PostgreSQL write first
        takes this advisory lock (two 32-bit keys)."""
        self._check_open()
        if self._conns is not None:
            return self._sqlite(write)
        return self._postgres(write, snapshot, lock)

    @contextmanager
    def _sqlite(self, write: bool) -> Iterator[Tx]:
        conns = self._conns
        assert conns is not None
        # one generator, not three: a get's transaction costs ~20 us in all
        with conns.writing() if write else nullcontext(), conns.connection() as conn:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Tx(conn, SQLITE)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _postgres(self, write: bool, snapshot: bool,
                  lock: tuple[int, int] | None) -> Iterator[Tx]:
        import psycopg

        try:
            with self.connection() as conn:
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
        raise :class:`~remem.errors.StoreError`. A :meth:`shared` handle only stops: the
        connections stay open for the handle they came from."""
        self._closed = True
        if self._root is not None:
            return
        if self._conns is not None:
            self._conns.close()
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


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


def database_of(store: Any, owner: str = "remem") -> Database | None:
    """A :meth:`~Database.shared` handle (``owner`` names the family in errors) on the
    database ``store`` keeps its tables in: the same SQLite connections (``":memory:"``
    included: its families see the store's database) or PostgreSQL pool. ``None`` for a
    store that keeps none (the in-memory store). A scoped or guarded view answers for the
    store under it."""
    while not hasattr(store, "database") and hasattr(store, "inner"):
        store = store.inner
    database = getattr(store, "database", None)
    return database.shared(owner) if isinstance(database, Database) else None
