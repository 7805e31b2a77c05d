"""Two PostgreSQL servers for the shard tests: the session's (the control database and shard
``a``) and one started for the module (shard ``b``), each database fresh."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.pg_fixtures import _start_local, _with_database

_names = itertools.count()


@dataclass(frozen=True)
class TwoServers:
    """DSNs of the control database and the two shards (``a`` beside the control database,
    ``b`` on another server)."""

    control: str
    a: str
    b: str

    def shards(self) -> tuple[str, ...]:
        """The ``--shard`` values."""
        return (f"a={self.a}", f"b={self.b}")


def _create(server_dsn: str, label: str) -> str:
    import psycopg

    name = f"remem_shards_{label}_{os.getpid()}_{next(_names)}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    dsn = _with_database(server_dsn, name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return dsn


@pytest.fixture(scope="module")
def second_server() -> Iterator[str]:
    """A second embedded PostgreSQL server, for the module."""
    import psycopg

    server = _start_local()
    try:
        with psycopg.connect(server.dsn("template1"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield server.dsn()
    finally:
        server.cleanup()


@contextlib.contextmanager
def _fresh(postgres_dsn: str, second_server: str) -> Iterator[TwoServers]:
    servers = TwoServers(_create(postgres_dsn, "control"), _create(postgres_dsn, "a"),
                         _create(second_server, "b"))
    try:
        yield servers
    finally:  # the second server goes with the module; the session's stays: drop them
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for dsn in (servers.control, servers.a):
                name = conninfo_to_dict(dsn)["dbname"]
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


@pytest.fixture
def two_servers(postgres_dsn: str, second_server: str) -> Iterator[TwoServers]:
    """Fresh databases for one test: control and ``a`` on one server, ``b`` on the other."""
    with _fresh(postgres_dsn, second_server) as servers:
        yield servers


@pytest.fixture(scope="module")
def module_servers(postgres_dsn: str, second_server: str) -> Iterator[TwoServers]:
    """As :func:`two_servers`, for a whole module."""
    with _fresh(postgres_dsn, second_server) as servers:
        yield servers
