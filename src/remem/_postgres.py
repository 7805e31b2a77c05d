"""Plumbing shared by every package that keeps its own tables in a PostgreSQL schema (threads,
background jobs, the graph): apply its migrations, then open a connection pool whose
connections use that schema."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remem.errors import ConfigError, StoreError

__all__ = ["open_migrated_pool"]


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
