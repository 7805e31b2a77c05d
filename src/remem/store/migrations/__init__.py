"""The store's tables (:data:`STORE_SCHEMA`): its named migrations (``m001_items`` ...) per
dialect, applied by :meth:`remem.db.Database.migrate` like every family's."""

from __future__ import annotations

from remem.db import Schema
from remem.store.migrations.postgres import POSTGRES_MIGRATIONS
from remem.store.migrations.sqlite import SQLITE_MIGRATIONS

__all__ = ["STORE_SCHEMA"]

STORE_SCHEMA = Schema("store", SQLITE_MIGRATIONS, POSTGRES_MIGRATIONS)
