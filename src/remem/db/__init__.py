"""One handle on the database a store's families share (:class:`Database`): where it is
(a SQLite file, ``":memory:"``, a PostgreSQL DSN and schema), its connections or pool, its
dialect (placeholders, column types, row locks) and each family's named migrations.

Threads, background jobs, the graph and the usage counters open their storage on a
:class:`Database`; :func:`database_of` finds the one a store keeps its tables in. SQL is
written once with ``?`` placeholders; a transaction's :meth:`Tx.execute` translates it.
"""

from remem.db.database import Database, Tx, database_of
from remem.db.dialect import POSTGRES, SQLITE, Dialect, Schema

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "Schema", "Tx", "database_of"]
