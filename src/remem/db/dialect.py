"""What differs between SQLite and PostgreSQL for the families' SQL (no I/O): placeholders,
column types, how a write locks the rows it reads, and each family's migrations per dialect.

A family declares its tables once (:meth:`Schema.typed`) with ``{text}``, ``{real}``,
``{int}``, ``{bigint}``, ``{blob}`` for column types, ``{serial}`` for an id column that
numbers itself, ``{clustered}`` after a table stored in key order (SQLite's ``WITHOUT
ROWID``) and ``{t}`` before each table name (nothing on SQLite, the store's schema on
PostgreSQL); a step that only one dialect needs gives its statements per engine. A family
whose dialects differ in more gives both lists (:class:`Schema` itself).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from remem.db.migrations import Migration
from remem.errors import ConfigError

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Engine", "Schema", "is_dsn", "quote_ident"]

Engine = Literal["sqlite", "postgres"]
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def is_dsn(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return os.fspath(location).startswith(("postgresql://", "postgres://"))


def quote_ident(name: str, what: str = "schema") -> str:
    """``name`` double-quoted, after checking it is a plain identifier (no quoting games)."""
    if not _IDENT.fullmatch(name):
        raise ConfigError(
            f"{what} {name!r} must be a plain identifier (letters, digits, underscore, at most "
            "63 characters, not starting with a digit)"
        )
    return f'"{name}"'


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's spelling. ``lock``: appended to a select in a write transaction to lock
    the rows it reads (``""`` where the transaction already excludes other writers);
    ``skip_locked``: the same, skipping rows another transaction holds; ``greatest``: the
    two-argument maximum."""

    name: Engine
    placeholder: str
    types: Mapping[str, str]
    lock: str
    skip_locked: str
    greatest: str

    def sql(self, query: str) -> str:
        """``query`` (``?`` placeholders) in this dialect's placeholders."""
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    def render(self, statement: str) -> str:
        """A :meth:`Schema.typed` statement in this dialect (PostgreSQL's keeps ``{s}``,
        which the migration runner fills with the quoted schema)."""
        return statement.format(t="" if self.name == "sqlite" else "{s}.", **self.types)


SQLITE = Dialect("sqlite", "?", {
    "text": "TEXT", "real": "REAL", "int": "INTEGER", "bigint": "INTEGER", "blob": "BLOB",
    "serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "clustered": " WITHOUT ROWID",
}, "", "", "MAX")
POSTGRES = Dialect("postgres", "%s", {
    "text": "text", "real": "double precision", "int": "integer", "bigint": "bigint",
    "blob": "bytea", "serial": "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "clustered": "",
}, " FOR UPDATE", " FOR UPDATE SKIP LOCKED", "GREATEST")


@dataclass(frozen=True, slots=True)
class Schema:
    """A family's tables: its named migrations (one letter prefix per family, recorded in
    ``remem_migrations``) in each dialect."""

    family: str
    sqlite: tuple[Migration, ...]
    postgres: tuple[Migration, ...]

    @classmethod
    def typed(cls, family: str,
              steps: Sequence[tuple[str, Sequence[str] | Mapping[Engine, Sequence[str]]]]
              ) -> Schema:
        """The schema whose ``(name, statements)`` steps differ between dialects only in
        column types and the table prefix (see the module docstring); ``statements`` may be
        given per engine."""
        def rendered(dialect: Dialect) -> tuple[Migration, ...]:
            return tuple(Migration(name, tuple(map(dialect.render, (
                statements[dialect.name] if isinstance(statements, Mapping) else statements))))
                for name, statements in steps)

        return cls(family, rendered(SQLITE), rendered(POSTGRES))

    def of(self, dialect: Dialect) -> tuple[Migration, ...]:
        """The migrations in ``dialect``."""
        return self.sqlite if dialect.name == "sqlite" else self.postgres
