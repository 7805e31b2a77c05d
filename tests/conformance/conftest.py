"""The conformance suite runs every test against every store backend.

A backend joins by adding one entry to ``BACKENDS``: a name and a factory taking the test's
temporary directory and the store's keyword arguments. PostgreSQL factories also take ``dsn``
(the test module's fresh database); each store gets its own schema, so tests stay isolated.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.store import BaseStore, InMemoryStore, SQLiteStore

Factory = Callable[..., BaseStore]

_counter = itertools.count()


def _sqlite_file(tmp: Path, **kwargs: Any) -> BaseStore:
    return SQLiteStore(tmp / f"store-{next(_counter)}.db", **kwargs)


def _postgres(tmp: Path, *, dsn: str, **kwargs: Any) -> BaseStore:
    from remem.store.postgres import PostgresStore

    return PostgresStore(dsn, schema=f"s{next(_counter)}", **kwargs)


def _postgres_exact(tmp: Path, *, dsn: str, **kwargs: Any) -> BaseStore:
    """HNSW built but every scope searched through the index path (``exact_below=0``), with
    a half-precision index: the approximate code path under the exact-result tests."""
    from remem.store.postgres import PostgresStore, VectorSearch

    return PostgresStore(dsn, schema=f"s{next(_counter)}", pool_max_size=2,
                         vector=VectorSearch(exact_below=0, precision="half"), **kwargs)


BACKENDS: dict[str, Callable[..., BaseStore]] = {
    "memory": lambda tmp, **kw: InMemoryStore(**kw),
    "sqlite-memory": lambda tmp, **kw: SQLiteStore(":memory:", **kw),
    "sqlite-file": _sqlite_file,
    "postgres": _postgres,
    "postgres-hnsw-half": _postgres_exact,
}
#: backends whose factory needs the ``dsn`` of a PostgreSQL database
POSTGRES_BACKENDS = frozenset({"postgres", "postgres-hnsw-half"})


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path, clock: Any,
               request: pytest.FixtureRequest) -> Iterator[Factory]:
    """A factory of fresh stores of the parametrised backend, closed after the test."""
    opened: list[BaseStore] = []
    extra: dict[str, Any] = {}
    if backend in POSTGRES_BACKENDS:
        extra["dsn"] = request.getfixturevalue("pg_database")

    def factory(**kwargs: Any) -> BaseStore:
        kwargs.setdefault("clock", clock)
        store = BACKENDS[backend](tmp_path, **extra, **kwargs)
        store.setup()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Factory) -> BaseStore:
    return make_store()


_PROPERTY_DSN: list[str] = []


@pytest.fixture(autouse=True, scope="module")
def _postgres_for_properties(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give the property tests (which build their stores inside ``@given``) a database."""
    if request.module.__name__.rsplit(".", 1)[-1] in ("test_properties", "test_relevance"):
        # no PostgreSQL here: the other backends still run
        with contextlib.suppress(pytest.skip.Exception):
            _PROPERTY_DSN.append(request.getfixturevalue("pg_database"))
    yield
    _PROPERTY_DSN.clear()


def property_stores(**kwargs: Any) -> list[BaseStore]:
    """The PostgreSQL backends for the property tests, emptied: one schema per variant is
    reused across examples (a fresh schema per example would cost a tenth of a second)."""
    if not _PROPERTY_DSN:
        return []
    from remem.store.postgres import PostgresStore, VectorSearch

    stores: list[BaseStore] = []
    for schema, vector in (("props", VectorSearch()),
                           ("props_hnsw", VectorSearch(exact_below=0, precision="half"))):
        store = PostgresStore(_PROPERTY_DSN[0], schema=schema, pool_max_size=2, vector=vector,
                              **kwargs)
        store.setup()
        store._transact(  # test-only shortcut to an empty store
            lambda conn, q=store._q: conn.execute(f"DELETE FROM {q}.items"),  # type: ignore[misc]
            writes=True)
        stores.append(store)
    return stores
