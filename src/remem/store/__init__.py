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

from remem.db import is_dsn
from remem.errors import IndexConfigError, RememError
from remem.retrieval import Ranking, Recency
from remem.store.base import BaseStore, IndexConfig, KeywordConfig, TTLConfig
from remem.store.filters import parse_filter
from remem.store.jsonl import export_jsonl, import_jsonl
from remem.store.memory import InMemoryStore
from remem.store.sqlite import SQLiteStore
from remem.store.types import (
    NOT_PROVIDED,
    CountOp,
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
    "CountOp",
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
    "check_embedder",
    "export_jsonl",
    "import_jsonl",
    "is_dsn",
    "open_store",
    "parse_filter",
    "stored_vector_models",
]


def open_store(location: str | os.PathLike[str] = ":memory:", *, strict: bool = False,
               **kwargs: Any) -> BaseStore:
    """Open a store by location and set it up.

    ``"memory://"`` is the in-memory backend; a ``postgresql://`` (or ``postgres://``) DSN is
    PostgreSQL with pgvector (the ``postgres`` extra); anything else is a SQLite path
    (``":memory:"`` for a private in-memory database). Keyword arguments go to the backend
    (``index=``, ``ttl=``...).

    ``strict=True`` refuses a database that holds vectors when no ``index=`` (embedder) is
    given, since its searches would quietly run on keywords alone; the error names the model
    the vectors were made with (see :func:`check_embedder`). The CLI opens every store this
    way. An ``index=`` of another model than the stored vectors' is always refused (by the
    backend's setup).
    """
    text = os.fspath(location)
    store: BaseStore
    if is_dsn(text):
        from remem.store.postgres import PostgresStore  # psycopg loads only for a DSN

        store = PostgresStore(text, **kwargs)
    else:
        store = InMemoryStore(**kwargs) if text == "memory://" else SQLiteStore(text, **kwargs)
    store.setup()
    if strict:
        try:
            check_embedder(store, text)
        except BaseException:
            store.close()
            raise
    return store


def check_embedder(store: BaseStore, location: str = "the store") -> None:
    """Raise :class:`~remem.errors.IndexConfigError` when ``store`` has no embedder but holds
    vectors (its searches would use keywords only), naming the model of its vectors and the
    fix."""
    if store.index is None and store._holds_vectors():
        raise _keyword_only_refused(location, stored_vector_models(store))


def stored_vector_models(store: BaseStore) -> list[str]:
    """The embedding models whose vectors ``store`` holds (by the names the store records,
    e.g. ``"fake-256"``); empty when it holds none or cannot tell."""
    try:
        return store._vector_models()
    except RememError:  # unreadable: the caller's message then names no model
        return []


def _keyword_only_refused(location: str, models: list[str]) -> IndexConfigError:
    from remem.settings import embedder_for_model

    if models:
        names = sorted({name for name in map(embedder_for_model, models) if name is not None})
        cli = f"--embedder {names[0]}" if len(names) == 1 else "--embedder ..."
        made = f"vectors made with {', '.join(repr(m) for m in models)}"
    else:
        cli, made = "--embedder local", "vectors"
    return IndexConfigError(
        f"{location} holds {made}, but it was opened without an embedder: its searches "
        f"would use keywords only and quietly miss what only meaning finds. Open it with "
        f"the same embedder (index=IndexConfig(embedder=...); CLI: {cli} or REMEM_EMBEDDER)")
