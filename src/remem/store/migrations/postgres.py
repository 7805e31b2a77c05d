"""The PostgreSQL schema, one migration per step, and the code that applies them.

Never edit a released migration: add one. Statements name tables as ``{s}.table``; the store
fills in its (quoted) schema, so several stores can live in one database.

:func:`apply_postgres` runs the missing migrations in one transaction holding a transaction-level
advisory lock derived from the schema name, so any number of servers may call ``setup()`` at
the same moment: one applies, the others wait and then find nothing to do.
:func:`open_migrated_pool` does that for a package that keeps its own tables in the schema
(threads, background jobs, the graph), then opens a pool over it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remem.errors import ConfigError, MigrationError, StoreError
from remem.store.migrations import Migration, _family

if TYPE_CHECKING:  # psycopg is an optional dependency
    import psycopg

__all__ = ["POSTGRES_MIGRATIONS", "advisory_key", "applied_postgres", "apply_postgres",
           "open_migrated_pool"]

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "m001_items",
        (
            "CREATE TABLE IF NOT EXISTS {s}.remem_meta (key text PRIMARY KEY, value text NOT NULL)",
            # ns: the labels, each followed by \x1f, so a namespace prefix is a string prefix
            # and byte order (COLLATE "C") equals tuple order, as in the SQLite backend.
            # value: the JSON text exactly as written (round trips NUL and key order);
            # doc: the jsonb shadow filters run on (remem.store.filters_postgres.postgres_document).
            """CREATE TABLE {s}.items (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                ns text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value text NOT NULL,
                doc jsonb NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                ttl double precision,
                expires_at double precision,
                event_at double precision,
                doc_len integer NOT NULL DEFAULT 0,
                UNIQUE (ns, key)
            )""",
            # newest-first pages of one namespace walk this index and stop after LIMIT rows
            "CREATE INDEX items_ns_updated ON {s}.items (ns, updated_at DESC, key)",
            "CREATE INDEX items_expires ON {s}.items (expires_at) WHERE expires_at IS NOT NULL",
            # BM25 statistics (count, total length) under a prefix
            "CREATE INDEX items_keyword ON {s}.items (ns) INCLUDE (doc_len, expires_at) "
            "WHERE doc_len > 0",
            # one row per (term, item); BM25 is computed in Python from these, as on every
            # backend, so ranking is identical
            """CREATE TABLE {s}.postings (
                term text COLLATE "C" NOT NULL,
                item_id bigint NOT NULL REFERENCES {s}.items (id) ON DELETE CASCADE,
                tf integer NOT NULL,
                PRIMARY KEY (term, item_id)
            )""",
            "CREATE INDEX postings_item ON {s}.postings (item_id)",
            """CREATE TABLE {s}.embedding_models (
                id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name text NOT NULL,
                dims integer NOT NULL,
                UNIQUE (name, dims)
            )""",
            # vec has no fixed dimension: each model gets a partial HNSW index on
            # (vec::vector(dims)) WHERE model_id = its id, built by PostgresStore.setup.
            # ns is copied from the item so a namespace-scoped search reads only its rows.
            """CREATE TABLE {s}.vectors (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                item_id bigint NOT NULL REFERENCES {s}.items (id) ON DELETE CASCADE,
                ns text COLLATE "C" NOT NULL,
                field text NOT NULL,
                model_id integer NOT NULL REFERENCES {s}.embedding_models (id),
                vec vector NOT NULL,
                text_hash bytea
            )""",
            "CREATE INDEX vectors_item ON {s}.vectors (item_id)",
            "CREATE INDEX vectors_scope ON {s}.vectors (model_id, ns)",
            "CREATE INDEX vectors_text_hash ON {s}.vectors (text_hash) "
            "WHERE text_hash IS NOT NULL",
        ),
    ),
    Migration(
        "m002_items_newest_first",
        (
            # a newest-first listing of a wide prefix (a whole tenant) walks this from the
            # newest entry and stops once the page is full, instead of sorting the prefix
            "CREATE INDEX IF NOT EXISTS items_updated ON {s}.items (updated_at DESC, ns, key)",
        ),
    ),
)

_TABLE = (
    "CREATE TABLE IF NOT EXISTS {s}.remem_migrations "
    "(name text PRIMARY KEY, applied_at double precision NOT NULL)"
)


def advisory_key(schema: str) -> str:
    """SQL for the advisory lock key of ``schema``'s setup (a literal-free expression)."""
    del schema  # the key is computed in SQL from the bound schema name
    return "hashtextextended('remem.setup:' || %s::text, 0)"


def applied_postgres(conn: psycopg.Connection[tuple[object, ...]], qschema: str) -> list[str]:
    """Names of the migrations recorded in ``qschema`` (a quoted identifier), in order."""
    conn.execute(_TABLE.format(s=qschema))
    cur = conn.execute(f"SELECT name FROM {qschema}.remem_migrations ORDER BY name")
    return [str(row[0]) for row in cur.fetchall()]


def apply_postgres(conn: psycopg.Connection[tuple[object, ...]], schema: str, qschema: str,
                   migrations: Sequence[Migration] = POSTGRES_MIGRATIONS) -> list[str]:
    """Apply the migrations not yet recorded in ``schema``; return the names applied now.

    ``conn`` must be in autocommit mode; the work runs in one transaction under the schema's
    advisory lock, so concurrent callers serialise and a failure leaves nothing half-done.
    """
    known = {m.name for m in migrations}
    families = {_family(name) for name in known}  # store "m...", threads "t..." share a schema
    with conn.transaction():
        conn.execute(f"SELECT pg_advisory_xact_lock({advisory_key(schema)})", (schema,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {qschema}")
        done = applied_postgres(conn, qschema)
        unknown = [name for name in done if name not in known and _family(name) in families]
        if unknown:
            raise MigrationError(
                f"schema {schema!r} was migrated by a newer remem (unknown migrations "
                f"{unknown}); upgrade remem to open it"
            )
        applied: list[str] = []
        for migration in migrations:
            if migration.name in done:
                continue
            for statement in migration.statements:
                conn.execute(statement.format(s=qschema))
            conn.execute(
                f"INSERT INTO {qschema}.remem_migrations (name, applied_at) VALUES (%s, %s)",
                (migration.name, time.time()),
            )
            applied.append(migration.name)
    return applied


def open_migrated_pool(dsn: str, schema: str, quoted: str, migrations: Sequence[Any], *,
                       kwargs: dict[str, Any], name: str, max_size: int, timeout: float,
                       min_size: int = 1, check: bool = False) -> Any:
    """Apply ``migrations`` to ``schema`` (``quoted``: its quoted identifier) over one direct
    connection, then return an opened (not yet waited for) ``psycopg_pool.ConnectionPool``
    whose connections set ``search_path`` to it. ``kwargs``: connection arguments;
    ``check``: test each connection when it leaves the pool."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ConfigError("a postgresql:// location needs the PostgreSQL extra: "
                          f"pip install 'remem[postgres]' ({exc})") from None
    try:
        with psycopg.connect(dsn, **kwargs) as conn:
            apply_postgres(conn, schema, quoted, migrations)
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL setup failed (schema {schema}): {exc}") from exc

    def configure(conn: Any) -> None:
        conn.execute(f"SET search_path TO {quoted}")

    pool = psycopg_pool.ConnectionPool(
        dsn, min_size=min_size, max_size=max_size, kwargs=kwargs, configure=configure,
        open=False, timeout=timeout, name=name,
        check=psycopg_pool.ConnectionPool.check_connection if check else None)
    pool.open(wait=False)
    return pool
