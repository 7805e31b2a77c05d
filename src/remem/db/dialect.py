"""What differs between SQLite and PostgreSQL for the families' SQL (no I/O): placeholders,
column types, how a write locks the rows it reads, and each family's migrations per dialect.

A family declares its tables once (:meth:`Schema.typed`) with ``{text}``, ``{real}``,
``{int}``, ``{bigint}`` for column types and ``{t}`` before each table name (nothing on
SQLite, the store's schema on PostgreSQL); a family whose dialects differ in more than types
gives both lists (:class:`Schema` itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from remem.store.migrations import Migration

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Engine", "Schema"]

Engine = Literal["sqlite", "postgres"]


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


SQLITE = Dialect("sqlite", "?", {"text": "TEXT", "real": "REAL", "int": "INTEGER",
                                 "bigint": "INTEGER"}, "", "", "MAX")
POSTGRES = Dialect("postgres", "%s", {"text": "text", "real": "double precision",
                                      "int": "integer", "bigint": "bigint"},
                   " FOR UPDATE", " FOR UPDATE SKIP LOCKED", "GREATEST")


@dataclass(frozen=True, slots=True)
class Schema:
    """A family's tables: its named migrations (one letter prefix per family, recorded in
    ``remem_migrations``) in each dialect."""

    family: str
    sqlite: tuple[Migration, ...]
    postgres: tuple[Migration, ...]

    @classmethod
    def typed(cls, family: str, steps: Sequence[tuple[str, Sequence[str]]]) -> Schema:
        """The schema whose ``(name, statements)`` steps differ between dialects only in
        column types and the table prefix (see the module docstring)."""
        def rendered(dialect: Dialect) -> tuple[Migration, ...]:
            return tuple(Migration(name, tuple(map(dialect.render, statements)))
                         for name, statements in steps)

        return cls(family, rendered(SQLITE), rendered(POSTGRES))

    def of(self, dialect: Dialect) -> tuple[Migration, ...]:
        """The migrations in ``dialect``."""
        return self.sqlite if dialect.name == "sqlite" else self.postgres
