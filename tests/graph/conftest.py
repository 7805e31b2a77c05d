"""Graph fixtures: the same tests over every backend (SQLite memory, SQLite file, PostgreSQL).

``make_graph(model=..., ...)`` builds a graph on the backend of the test's parameter. On
PostgreSQL every graph of a module shares one fresh database and gets its own namespace,
which is also how tenants share the tables."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.graph import Graph, PostgresGraphStorage, SQLiteGraphStorage
from remem.graph.storage import GraphStorage

_names = itertools.count()


class Clock:
    """A settable clock (knowledge time of writes)."""

    def __init__(self, now: float = 1_750_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_storage(backend: str, tmp_path: Path,
                 request: pytest.FixtureRequest) -> Iterator[Callable[[], GraphStorage]]:
    made: list[GraphStorage] = []
    dsn = request.getfixturevalue("pg_database") if backend == "postgres" else None

    def make() -> GraphStorage:
        storage: GraphStorage
        if backend == "memory":
            storage = SQLiteGraphStorage(":memory:")
        elif backend == "sqlite":
            storage = SQLiteGraphStorage(tmp_path / "graph.db")
        else:
            assert dsn is not None
            storage = PostgresGraphStorage(dsn)
        made.append(storage)
        return storage

    yield make
    for storage in made:
        storage.close()


@pytest.fixture
def make_graph(make_storage: Callable[[], GraphStorage]) -> Callable[..., Graph]:
    def make(namespace: tuple[str, ...] | None = None, *, storage: GraphStorage | None = None,
             **kwargs: Any) -> Graph:
        kwargs.setdefault("clock", Clock())
        graph = Graph(storage or make_storage(),
                      namespace or ("t", f"g{next(_names)}"), **kwargs)
        graph.setup()
        return graph

    return make
