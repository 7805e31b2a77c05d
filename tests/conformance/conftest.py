"""The conformance suite runs every test against every store backend.

A backend joins by adding one entry to ``BACKENDS``: a name and a factory taking the test's
temporary directory and the store's keyword arguments.
"""

from __future__ import annotations

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


BACKENDS: dict[str, Callable[..., BaseStore]] = {
    "memory": lambda tmp, **kw: InMemoryStore(**kw),
    "sqlite-memory": lambda tmp, **kw: SQLiteStore(":memory:", **kw),
    "sqlite-file": _sqlite_file,
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path, clock: Any) -> Iterator[Factory]:
    """A factory of fresh stores of the parametrised backend, closed after the test."""
    opened: list[BaseStore] = []

    def factory(**kwargs: Any) -> BaseStore:
        kwargs.setdefault("clock", clock)
        store = BACKENDS[backend](tmp_path, **kwargs)
        store.setup()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Factory) -> BaseStore:
    return make_store()
