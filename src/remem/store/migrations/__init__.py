"""Named, versioned schema migrations, recorded in the ``remem_migrations`` table.

A migration is a name (``m001_items``) and SQL statements; each component keeps its own
list with its own letter prefix (``m`` store, ``t`` threads) in the same database.
:func:`apply_sqlite` runs the missing ones in order inside one ``BEGIN IMMEDIATE``
transaction, so several processes opening the same file at once cannot both apply a
migration.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from remem.errors import MigrationError

__all__ = ["Migration", "applied_sqlite", "apply_sqlite"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: a unique, sortable name and its SQL statements."""

    name: str
    statements: tuple[str, ...]


_TABLE = (
    "CREATE TABLE IF NOT EXISTS remem_migrations "
    "(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
)


def _family(name: str) -> str:
    """The letters before a migration's number (``m`` for ``m001_items``)."""
    return name[: len(name) - len(name.lstrip("abcdefghijklmnopqrstuvwxyz"))]


def applied_sqlite(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations recorded in the database, in order."""
    conn.execute(_TABLE)
    return [row[0] for row in conn.execute("SELECT name FROM remem_migrations ORDER BY name")]


def apply_sqlite(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not yet recorded; return the names applied now.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    known = {m.name for m in migrations}
    # several components (store ``m...``, threads ``t...``) keep their lists in one database;
    # a name is "unknown" only within the families of the list being applied
    families = {_family(name) for name in known}
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = applied_sqlite(conn)
        unknown = [name for name in done if name not in known and _family(name) in families]
        if unknown:
            raise MigrationError(
                f"the database was migrated by a newer remem (unknown migrations {unknown}); "
                "upgrade remem to open it"
            )
        applied: list[str] = []
        for migration in migrations:
            if migration.name in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO remem_migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, time.time()),
            )
            applied.append(migration.name)
        conn.execute("COMMIT")
        return applied
    except BaseException:
        conn.execute("ROLLBACK")
        raise
