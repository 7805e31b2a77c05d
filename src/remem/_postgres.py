"""Plumbing shared by every package that keeps its own tables in a PostgreSQL schema (threads,
background jobs, the graph) and by the store: apply its migrations, open a connection pool
whose connections use that schema, and turn a driver error into the remem error it means
(:func:`database_error`: data the database refuses is the caller's, anything else the
database's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remem.errors import ConfigError, InvalidInputError, RememError, StoreError

__all__ = ["database_error", "is_refused_data", "open_migrated_pool"]

#: SQLSTATE classes of errors caused by the data a statement carries, never by the server's
#: state: 22 (data exception: a NUL byte, a character the encoding lacks, a number out of
#: range) and 54 (program limit exceeded: an index row or a statement past a size limit).
#: Retrying them gives the same answer, so they are the caller's (4xx), not a 503.
_DATA_CLASSES = ("22", "54")


def is_refused_data(exc: BaseException) -> bool:
    """Whether psycopg error ``exc`` refuses the data it was given (see
    :data:`_DATA_CLASSES`; psycopg also raises ``DataError`` itself, before sending, for a
    string holding a NUL byte)."""
    import psycopg

    if isinstance(exc, psycopg.DataError):
        return True
    state = getattr(exc, "sqlstate", None)
    return isinstance(exc, psycopg.Error) and isinstance(state, str) and \
        state[:2] in _DATA_CLASSES


def database_error(exc: BaseException, where: str) -> RememError:
    """The remem error a psycopg error means: data the database refuses is an
    :class:`InvalidInputError` (HTTP 422: sending it again cannot succeed), anything else a
    :class:`StoreError` naming ``where`` (HTTP 503: the database failed or is unreachable).

    The refusal's message is the server's first line only (its detail lines may quote the
    data), without ``where``: a client reads it, and ``where`` names the server."""
    if is_refused_data(exc):
        diag = getattr(exc, "diag", None)
        reason = (getattr(diag, "message_primary", None) or str(exc)).splitlines()[0]
        return InvalidInputError(
            f"the database refused a value of this request ({reason}); nothing was written: "
            "change the value (shorten it, or drop the character the reason names)")
    return StoreError(f"PostgreSQL error on {where}: {exc}")


def open_migrated_pool(dsn: str, schema: str, quoted: str, migrations: Sequence[Any], *,
                       kwargs: dict[str, Any], name: str, max_size: int, timeout: float,
                       min_size: int = 1, check: bool = False) -> Any:
    """Apply ``migrations`` to ``schema`` (``quoted``: its quoted identifier) over one direct
    connection, then return an opened (not yet waited for) ``psycopg_pool.ConnectionPool``
    whose connections set ``search_path`` to it. ``kwargs``: connection arguments;
    ``check``: test each connection when it leaves the pool."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ConfigError("a postgresql:// location needs the PostgreSQL extra: "
                          f"pip install 'remem[postgres]' ({exc})") from None
    from remem.store.migrations.postgres import apply_postgres

    try:
        with psycopg.connect(dsn, **kwargs) as conn:
            apply_postgres(conn, schema, quoted, migrations)
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL setup failed (schema {schema}): {exc}") from exc

    def configure(conn: Any) -> None:
        conn.execute(f"SET search_path TO {quoted}")

    pool = psycopg_pool.ConnectionPool(
        dsn, min_size=min_size, max_size=max_size, kwargs=kwargs, configure=configure,
        open=False, timeout=timeout, name=name,
        check=psycopg_pool.ConnectionPool.check_connection if check else None)
    pool.open(wait=False)
    return pool
