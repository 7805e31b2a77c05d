"""Long-term store: JSON items under hierarchical namespaces, searched by filter, keywords and
meaning.

>>> from remem.store import open_store
>>> store = open_store(":memory:")
>>> store.put(("users", "u1"), "prefs", {"theme": "dark"})
>>> store.get(("users", "u1"), "prefs").value
{'theme': 'dark'}
"""

from __future__ import annotations

import os
from typing import Any

from remem.retrieval import Ranking, Recency
from remem.store.base import BaseStore, IndexConfig, KeywordConfig, TTLConfig
from remem.store.filters import parse_filter
from remem.store.jsonl import export_jsonl, import_jsonl
from remem.store.memory import InMemoryStore
from remem.store.sqlite import SQLiteStore
from remem.store.types import (
    NOT_PROVIDED,
    DeleteOp,
    GetOp,
    Item,
    ListNamespacesOp,
    Namespace,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    SignalScore,
)

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "DeleteOp",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "Item",
    "KeywordConfig",
    "ListNamespacesOp",
    "Namespace",
    "Op",
    "PutOp",
    "Ranking",
    "Recency",
    "Result",
    "SQLiteStore",
    "SearchItem",
    "SearchOp",
    "SignalScore",
    "TTLConfig",
    "export_jsonl",
    "import_jsonl",
    "is_dsn",
    "open_store",
    "parse_filter",
]


def is_dsn(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return os.fspath(location).startswith(("postgresql://", "postgres://"))


def open_store(location: str | os.PathLike[str] = ":memory:", **kwargs: Any) -> BaseStore:
    """Open a store by location and set it up.

    ``"memory://"`` is the in-memory backend; a ``postgresql://`` (or ``postgres://``) DSN is
    PostgreSQL with pgvector (the ``postgres`` extra); anything else is a SQLite path
    (``":memory:"`` for a private in-memory database). Keyword arguments go to the backend
    (``index=``, ``ttl=``...).
    """
    text = os.fspath(location)
    store: BaseStore
    if is_dsn(text):
        from remem.store.postgres import PostgresStore  # psycopg loads only for a DSN

        store = PostgresStore(text, **kwargs)
    else:
        store = InMemoryStore(**kwargs) if text == "memory://" else SQLiteStore(text, **kwargs)
    store.setup()
    return store
