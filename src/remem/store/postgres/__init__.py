"""PostgreSQL + pgvector backend (the ``postgres`` extra: ``pip install 'remem[postgres]'``).

Importing this package does not import psycopg; :class:`PostgresStore` loads it when it is
set up, and a missing extra raises :class:`~remem.errors.ConfigError` naming the install
command.
"""

from __future__ import annotations

from remem.store.postgres.sql import VectorSearch
from remem.store.postgres.store import PostgresStore

__all__ = ["PostgresStore", "VectorSearch"]
