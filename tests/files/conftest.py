"""Every file test runs against every backend: a name and a factory in ``BACKENDS``.

Store-backed files run on the in-memory store, a SQLite file and PostgreSQL (the module's
fresh database, one schema per store); the composite mounts a store backend and a disk
backend under prefixes, with an in-memory default. ``async-*`` backends are the async shell
(:class:`remem.files.aio.AsyncFiles`) over a sync one, driven from the suite's sync calls
through an event loop per call, so the async twins answer exactly what the sync ones do.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.files import (
    CompositeBackend,
    FileBackend,
    InMemoryFileBackend,
    LocalFileBackend,
    StoreFileBackend,
)
from remem.files.aio import AsyncFiles
from remem.store import BaseStore, InMemoryStore, SQLiteStore

_counter = itertools.count()


def _store(kind: str, tmp: Path, dsn: str | None) -> BaseStore:
    if kind == "memory":
        return InMemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp / f"files-{next(_counter)}.db")
    from remem.store.postgres import PostgresStore

    assert dsn is not None
    return PostgresStore(dsn, schema=f"f{next(_counter)}", pool_max_size=4)


BACKENDS = ("memory", "store-memory", "store-sqlite", "store-postgres", "local",
            "composite-default", "composite-memories", "composite-workspace",
            "async-store-sqlite", "async-local")
#: backends keeping history (undo)
HISTORY = frozenset({"memory", "store-memory", "store-sqlite", "store-postgres",
                     "composite-default", "composite-memories", "async-store-sqlite"})
#: the directory each backend's tests work in (the composite's: under each mount)
BASES = {"composite-memories": "/memories/proj", "composite-workspace": "/workspace/proj"}


class Opened:
    """Stores opened by a test, closed after it."""

    def __init__(self) -> None:
        self.stores: list[BaseStore] = []

    def close(self) -> None:
        for store in self.stores:
            store.close()


class SyncOverAsync:
    """The sync protocol over an async backend: each call runs the coroutine to completion
    on an event loop of its own (what the suite's sync tests drive)."""

    def __init__(self, files: AsyncFiles) -> None:
        self.async_files = files
        self.keeps_history = files.keeps_history

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.async_files, name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


def make_backend(name: str, tmp: Path, opened: Opened,
                 dsn: str | None = None) -> FileBackend:
    """A fresh backend called ``name``."""
    if name.startswith("async-"):
        inner = make_backend(name.removeprefix("async-"), tmp, opened, dsn)
        return SyncOverAsync(AsyncFiles(inner))  # type: ignore[return-value]
    if name == "memory":
        return InMemoryFileBackend()
    if name.startswith("store-"):
        store = _store(name.removeprefix("store-"), tmp, dsn)
        store.setup()
        opened.stores.append(store)
        return StoreFileBackend(store, ("agents", f"a{next(_counter)}"))
    if name == "local":
        return LocalFileBackend(tmp / f"root-{next(_counter)}", durable=False)
    assert name.startswith("composite")
    store = SQLiteStore(tmp / f"composite-{next(_counter)}.db")
    store.setup()
    opened.stores.append(store)
    return CompositeBackend(
        {"/memories": StoreFileBackend(store, ("composite",)),
         "/workspace": LocalFileBackend(tmp / f"ws-{next(_counter)}", durable=False)},
        default=InMemoryFileBackend())


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_files(backend_name: str, tmp_path: Path,
               request: pytest.FixtureRequest) -> Iterator[Callable[[], FileBackend]]:
    """A factory of fresh backends of the parametrised kind."""
    opened = Opened()
    dsn = request.getfixturevalue("pg_database") if backend_name.endswith(
        "store-postgres") else None
    yield lambda: make_backend(backend_name, tmp_path, opened, dsn)
    opened.close()


@pytest.fixture
def base(backend_name: str) -> str:
    """The directory the test works in."""
    return BASES.get(backend_name, "/proj")


@pytest.fixture
def keeps_history(backend_name: str) -> bool:
    return backend_name in HISTORY


@pytest.fixture
def files(make_files: Callable[[], FileBackend]) -> FileBackend:
    return make_files()
