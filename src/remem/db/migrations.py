"""Named, versioned schema migrations, recorded in the ``remem_migrations`` table, and the one
runner every family's migrations go through (the store's, threads', jobs', the graph's...).

A migration is a name (``m001_items``) and SQL statements; each family keeps its own list with
its own letter prefix (``m`` store, ``t`` threads, ``j`` jobs) in the same database. The
missing ones run in order inside one write transaction: SQLite's ``BEGIN IMMEDIATE``, or on
PostgreSQL one transaction under an advisory lock derived from the schema name, so several
processes opening the same database at once cannot both apply a migration.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from remem.errors import MigrationError

__all__ = ["Migration", "advisory_key", "applied_postgres", "applied_sqlite", "apply_postgres",
           "apply_sqlite"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: a unique, sortable name and its SQL statements."""

    name: str
    statements: tuple[str, ...]


def _family(name: str) -> str:
    """The letters before a migration's number (``m`` for ``m001_items``)."""
    return name[: len(name) - len(name.lstrip("abcdefghijklmnopqrstuvwxyz"))]


def advisory_key(schema: str) -> str:
    """SQL for the advisory lock key of ``schema``'s setup (a literal-free expression)."""
    del schema  # the key is computed in SQL from the bound schema name
    return "hashtextextended('remem.setup:' || %s::text, 0)"


Run = Callable[[str, Sequence[Any]], Any]


def _applied(run: Run, table: str, types: tuple[str, str]) -> list[str]:
    run(f"CREATE TABLE IF NOT EXISTS {table} (name {types[0]} PRIMARY KEY, "
        f"applied_at {types[1]} NOT NULL)", ())
    return [str(row[0]) for row in run(f"SELECT name FROM {table} ORDER BY name", ()).fetchall()]


def _apply(run: Run, migrations: Sequence[Migration], *, table: str, types: tuple[str, str],
           placeholder: str, schema: str, where: str) -> list[str]:
    """Apply the migrations not yet recorded, inside the caller's write transaction.

    Several families keep their lists in one database; a recorded name is "unknown" (written
    by a newer remem) only within the families of the list being applied."""
    known = {m.name for m in migrations}
    families = {_family(name) for name in known}
    done = _applied(run, table, types)
    unknown = [name for name in done if name not in known and _family(name) in families]
    if unknown:
        raise MigrationError(f"{where} was migrated by a newer remem (unknown migrations "
                             f"{unknown}); upgrade remem to open it")
    applied: list[str] = []
    for migration in migrations:
        if migration.name in done:
            continue
        for statement in migration.statements:
            run(statement.replace("{s}", schema), ())
        run(f"INSERT INTO {table} (name, applied_at) VALUES ({placeholder}, {placeholder})",
            (migration.name, time.time()))
        applied.append(migration.name)
    return applied


def applied_sqlite(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations recorded in the database, in order."""
    return _applied(conn.execute, "remem_migrations", ("TEXT", "REAL"))


def apply_sqlite(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not yet recorded; return the names applied now. ``conn`` must be
    in autocommit mode (``isolation_level=None``)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        applied = _apply(conn.execute, migrations, table="remem_migrations",
                         types=("TEXT", "REAL"), placeholder="?", schema="",
                         where="the database")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return applied


def applied_postgres(conn: Any, qschema: str) -> list[str]:
    """Names of the migrations recorded in ``qschema`` (a quoted identifier), in order."""
    return _applied(conn.execute, f"{qschema}.remem_migrations", ("text", "double precision"))


def apply_postgres(conn: Any, schema: str, qschema: str,
                   migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not yet recorded in ``schema`` (``qschema``: quoted; statements
    name tables ``{s}.table``); return the names applied now. ``conn`` (psycopg) must be in
    autocommit mode: the work runs in one transaction under the schema's advisory lock, so
    concurrent callers serialise and a failure leaves nothing half-done."""
    with conn.transaction():
        conn.execute(f"SELECT pg_advisory_xact_lock({advisory_key(schema)})", (schema,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {qschema}")
        return _apply(conn.execute, migrations, table=f"{qschema}.remem_migrations",
                      types=("text", "double precision"), placeholder="%s", schema=qschema,
                      where=f"schema {schema!r}")
