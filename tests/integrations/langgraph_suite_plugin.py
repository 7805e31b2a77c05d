"""A pytest plugin loaded (``-p langgraph_suite_plugin``) into LangGraph's own test suites,
which tests/integrations/langgraph_suites.py runs in a subprocess from their sdists: it puts
remem where their tests put LangGraph's savers and stores. Nothing here is imported by remem's
own test run.

Two environment variables choose what runs:

* ``REMEM_LANGGRAPH_SUITE``: ``langgraph`` (the ``langgraph`` sdist: graphs run on the
  checkpointer and store fixtures of its conftest) or ``modules`` (the ``langgraph-checkpoint``
  and ``langgraph-checkpoint-sqlite`` sdists: tests that build a saver or store by class).
* ``REMEM_LANGGRAPH_VARIANT``: ``remem``, ``memory`` (LangGraph's ``InMemorySaver`` and
  ``InMemoryStore``) or ``sqlite`` (its ``SqliteSaver``/``AsyncSqliteSaver``; in the sdist
  modules, ``SqliteStore`` too). Each suite's own saver is its reference: the ``langgraph``
  and ``langgraph-checkpoint`` tests unchanged are ``memory``, the SQLite ones ``sqlite``.

In the ``langgraph`` suite their conftest's four fixtures (``sync_checkpointer``,
``async_checkpointer``, ``sync_store``, ``async_store``) are replaced, before pytest reads
them, by fixtures with one parameter (the variant's saver or store, ``remem`` for ours) that
open the other variants with their conftest's own helpers; tests that take none of them are
deselected (they would run the same code in every variant). In the ``modules`` suites the
class names their tests build savers and stores from (``InMemorySaver``, ``SqliteStore``...)
are rebound in each test module to classes with the same constructors over the variant's
saver or store (remem's, or the other LangGraph one).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import ModuleType
from typing import Any

import pytest

from remem.integrations.langgraph import RememSaver, RememStore
from remem.testing import block_remote_requests
from remem.threads import ThreadStore

block_remote_requests()  # remem inside their suite reaches no provider either


def _sqlite_with_extensions() -> None:
    """LangGraph's SqliteStore loads sqlite-vec, which this Python's stock sqlite3 may not
    allow (no ``enable_load_extension``): their reference run then uses pysqlite3 (from the
    test extra) under the name ``sqlite3``, as LangGraph's users do. remem keeps the stock
    module."""
    import sqlite3

    probe = sqlite3.connect(":memory:")
    capable = hasattr(probe, "enable_load_extension")
    probe.close()
    if capable:
        return
    try:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]
    except ImportError:
        return
    sys.modules["sqlite3"] = dbapi2
    sys.modules["sqlite3.dbapi2"] = dbapi2


SUITE = os.environ.get("REMEM_LANGGRAPH_SUITE", "langgraph")
VARIANT = os.environ.get("REMEM_LANGGRAPH_VARIANT", "memory")
if VARIANT not in ("remem", "memory", "sqlite"):
    raise pytest.UsageError(f"REMEM_LANGGRAPH_VARIANT must be remem, memory or sqlite, "
                            f"got {VARIANT!r}")
if SUITE == "modules" and VARIANT != "remem":
    _sqlite_with_extensions()

#: the parameter each replaced fixture takes in each variant (their conftest's names)
PARAMS = {
    "sync_checkpointer": {"remem": "remem", "memory": "memory", "sqlite": "sqlite"},
    "async_checkpointer": {"remem": "remem", "memory": "memory", "sqlite": "sqlite_aio"},
    "sync_store": {"remem": "remem", "memory": "in_memory", "sqlite": "in_memory"},
    "async_store": {"remem": "remem", "memory": "in_memory", "sqlite": "in_memory"},
}
#: their conftest's helper (a context manager) for each parameter
HELPERS = {"memory": "_checkpointer_memory", "sqlite": "_checkpointer_sqlite",
           "sqlite_aio": "_checkpointer_sqlite_aio", "in_memory": "_store_memory"}

_theirs: dict[str, ModuleType] = {}  # their tests/conftest.py, once registered
_rebound: list[str] = []  # "module.Name" rebound to a remem class


def _helper(name: str) -> Any:
    return getattr(_theirs["conftest"], HELPERS[name])


def _fixtures() -> dict[str, Any]:
    """The four fixtures, made here so that pytest does not also register them as this
    plugin's (global) fixtures."""

    @pytest.fixture(params=[PARAMS["sync_checkpointer"][VARIANT]])
    def sync_checkpointer(request: pytest.FixtureRequest) -> Iterator[Any]:
        if request.param == "remem":
            saver = RememSaver.open(":memory:")
            yield saver
            saver.close()
        else:
            with _helper(request.param)() as saver:
                yield saver

    @pytest.fixture(params=[PARAMS["async_checkpointer"][VARIANT]])
    async def async_checkpointer(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
        if request.param == "remem":
            saver = RememSaver.open(":memory:")
            yield saver
            saver.close()
        elif request.param == "memory":
            with _helper(request.param)() as saver:
                yield saver
        else:
            async with _helper(request.param)() as saver:
                yield saver

    @pytest.fixture(params=[PARAMS["sync_store"][VARIANT]])
    def sync_store(request: pytest.FixtureRequest) -> Iterator[Any]:
        if request.param == "remem":
            with RememStore.open(":memory:") as store:
                yield store
        else:
            with _helper(request.param)() as store:
                yield store

    @pytest.fixture(params=[PARAMS["async_store"][VARIANT]])
    async def async_store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
        if request.param == "remem":
            with RememStore.open(":memory:") as store:
                yield store
        else:
            with _helper(request.param)() as store:
                yield store

    return {"sync_checkpointer": sync_checkpointer, "async_checkpointer": async_checkpointer,
            "sync_store": sync_store, "async_store": async_store}


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: object, plugin_name: str) -> None:
    """Swap the fixtures of their ``tests/conftest.py`` for ours as it registers (pytest
    reads a conftest's fixtures when its directory is collected, after this)."""
    if (SUITE == "langgraph" and isinstance(plugin, ModuleType)
            and str(plugin_name).replace("\\", "/").endswith("tests/conftest.py")
            and hasattr(plugin, "sync_checkpointer")):
        _theirs["conftest"] = plugin
        for name, fixture in _fixtures().items():
            setattr(plugin, name, fixture)


# -- the sdist modules: remem classes under the names their tests construct ------------------

class RememInMemorySaver(RememSaver):
    """``InMemorySaver(serde=...)``: a RememSaver over a new in-memory thread store."""

    def __init__(self, *, serde: Any = None, factory: Any = None) -> None:
        super().__init__(ThreadStore(":memory:"), serde=serde, owns_threads=True)


class RememSqliteSaver(RememSaver):
    """``SqliteSaver.from_conn_string(path)``: a RememSaver over a thread store at path."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str) -> Iterator[RememSaver]:
        saver = cls.open(conn_string)
        try:
            yield saver
        finally:
            saver.close()


class RememAsyncSqliteSaver(RememSaver):
    """``AsyncSqliteSaver.from_conn_string(path)`` (an async context manager)."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator[RememSaver]:
        saver = cls.open(conn_string)
        try:
            yield saver
        finally:
            saver.close()


class RememInMemoryStore(RememStore):
    """``InMemoryStore(index=..., ttl=...)``: a RememStore over a new in-memory store."""

    def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
        vars(self).update(vars(RememStore.open(":memory:", index=index, ttl=ttl)))


class RememSqliteStore(RememStore):
    """``SqliteStore.from_conn_string(path, index=..., ttl=...)``."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: Any = None,
                         ttl: Any = None) -> Iterator[RememStore]:
        with cls.open(conn_string, index=index, ttl=ttl) as store:
            yield store


class RememAsyncSqliteStore(RememStore):
    """``AsyncSqliteStore.from_conn_string(path, index=..., ttl=...)``, and its maintenance
    methods, coroutines there, as RememStore's async twins."""

    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return int(await self.asweep_ttl())

    async def start_ttl_sweeper(self, *args: Any) -> Any:  # type: ignore[override]
        return await self.astart_ttl_sweeper(*args)

    async def stop_ttl_sweeper(self, *args: Any) -> Any:  # type: ignore[override]
        return await self.astop_ttl_sweeper(*args)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str, *, index: Any = None,
                               ttl: Any = None) -> AsyncIterator[RememStore]:
        with cls.open(conn_string, index=index, ttl=ttl) as store:
            yield store


def _substitutes() -> dict[str, type]:
    """The classes this variant rebinds, by the name the test modules use."""
    if VARIANT == "remem":
        return {"InMemorySaver": RememInMemorySaver, "SqliteSaver": RememSqliteSaver,
                "AsyncSqliteSaver": RememAsyncSqliteSaver, "InMemoryStore": RememInMemoryStore,
                "SqliteStore": RememSqliteStore, "AsyncSqliteStore": RememAsyncSqliteStore}
    import sqlite3  # after _sqlite_with_extensions

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    if VARIANT == "memory":  # the SQLite tests on InMemorySaver and InMemoryStore
        class MemorySqliteSaver(InMemorySaver):
            @classmethod
            @contextmanager
            def from_conn_string(cls, conn_string: str) -> Iterator[InMemorySaver]:
                yield cls()

        class MemoryAsyncSqliteSaver(InMemorySaver):
            @classmethod
            @asynccontextmanager
            async def from_conn_string(cls, conn_string: str) -> AsyncIterator[InMemorySaver]:
                yield cls()

        class MemorySqliteStore(InMemoryStore):
            @classmethod
            @contextmanager
            def from_conn_string(cls, conn_string: str, *, index: Any = None,
                                 ttl: Any = None) -> Iterator[InMemoryStore]:
                yield cls(index=index)

            def setup(self) -> None:  # SqliteStore makes its tables; nothing to make here
                pass

        class MemoryAsyncSqliteStore(InMemoryStore):
            @classmethod
            @asynccontextmanager
            async def from_conn_string(cls, conn_string: str, *, index: Any = None,
                                       ttl: Any = None) -> AsyncIterator[InMemoryStore]:
                yield cls(index=index)

            async def setup(self) -> None:
                pass

        return {"SqliteSaver": MemorySqliteSaver, "AsyncSqliteSaver": MemoryAsyncSqliteSaver,
                "SqliteStore": MemorySqliteStore, "AsyncSqliteStore": MemoryAsyncSqliteStore}

    def connect() -> Any:
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)

    class SqliteInMemorySaver(SqliteSaver):  # the in-memory tests on SQLite
        def __init__(self, *, serde: Any = None, factory: Any = None) -> None:
            super().__init__(connect(), serde=serde)

    class SqliteInMemoryStore(SqliteStore):
        def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
            super().__init__(connect(), index=index, ttl=ttl)
            self.setup()

    return {"InMemorySaver": SqliteInMemorySaver, "InMemoryStore": SqliteInMemoryStore}


def pytest_configure(config: pytest.Config) -> None:
    # their test_ttl.py marks timing tests flaky for pytest-retry, which is not installed
    # here: registered so that --strict-markers accepts it, such a test runs once
    config.addinivalue_line("markers", "flaky: retried by pytest-retry (not installed)")


def compare_as(item: pytest.Item) -> str:
    """The test's id without the saver's and store's parameters, the same in every variant:
    ``file::name[other=value,...]``, each other parameter by its value (or its index when the
    value is not a plain one). Their own ids stay as they are: snapshot names hold them."""
    callspec = getattr(item, "callspec", None)
    base = item.nodeid.split("[", 1)[0]
    if callspec is None:
        return base
    others = []
    for name, value in sorted(callspec.params.items()):
        if name not in PARAMS:
            plain = value is None or isinstance(value, str | int | float | bool)
            others.append(f"{name}={value!r}" if plain else f"{name}#{callspec.indices[name]}")
    return f"{base}[{','.join(others)}]" if others else base


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # in the junit report, for the runner
        item.user_properties += [("nodeid", item.nodeid), ("compare_as", compare_as(item))]
    if SUITE == "langgraph":
        # only the tests that run on a checkpointer or store fixture
        kept = [item for item in items if set(getattr(item, "fixturenames", ())) & set(PARAMS)]
        dropped = [item for item in items if not set(getattr(item, "fixturenames", ()))
                   & set(PARAMS)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    else:
        substitutes = _substitutes()
        for module in {id(item.module): item.module for item in items
                       if isinstance(item, pytest.Function) and item.module}.values():
            for name, substitute in substitutes.items():
                if name in vars(module):
                    setattr(module, name, substitute)
                    _rebound.append(f"{module.__name__}.{name}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line the runner checks: what this run put remem in place of."""
    swapped = sorted(PARAMS) if "conftest" in _theirs else []
    terminalreporter.write_line(
        f"langgraph_suite_plugin: suite={SUITE} variant={VARIANT} "
        f"fixtures={','.join(swapped) or '-'} rebound={','.join(sorted(_rebound)) or '-'}")
