"""One handle on the database a store and its families share (:class:`Database`): where it
is (a SQLite file, ``":memory:"``, a PostgreSQL DSN and schema), its connections or pool,
its dialect (placeholders, column types, row locks) and each family's named migrations
(:mod:`remem.db.migrations`, one runner for all).

A SQL store opens its :class:`Database`; threads, background jobs, the graph and the usage
counters find it with :func:`database_of` and share its connections (SQLite) or pool
(PostgreSQL). SQL is written once with ``?`` placeholders; a transaction's
:meth:`Tx.execute` translates it.
"""

from remem.db.database import Database, Tx, database_of
from remem.db.dialect import POSTGRES, SQLITE, Dialect, Schema, is_dsn, quote_ident
from remem.db.migrations import Migration

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "Migration", "Schema", "Tx",
           "database_of", "is_dsn", "quote_ident"]
