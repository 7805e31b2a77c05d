"""Connection settings and the pgvector type adapter (binary, NumPy float32 in and out).

Imported only by the PostgreSQL store, after psycopg has been found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

from remem.store.postgres.sql import decode_vector, encode_vector

if TYPE_CHECKING:
    import psycopg

    from remem.store.postgres.store import PostgresStore

__all__ = ["connect_kwargs", "register_vector_type"]


def connect_kwargs(store: PostgresStore) -> dict[str, Any]:
    """Keyword arguments of every connection: autocommit (transactions are explicit), the
    prepared-statement threshold, a connect timeout and TCP keepalives, so a connection that a
    firewall or pooler dropped silently is noticed in under a minute instead of hanging."""
    return {
        "autocommit": True,
        "prepare_threshold": store.prepare_threshold,
        "connect_timeout": max(1, int(store.connect_timeout)),
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 10,
        "keepalives_count": 3,
        "application_name": "remem",
    }


class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return encode_vector(np.asarray(obj, dtype=np.float32).ravel())


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> npt.NDArray[np.float32]:
        return decode_vector(bytes(data))


def register_vector_type(conn: psycopg.Connection[Any], oid: int) -> None:
    """Send NumPy arrays as pgvector ``vector`` values and read ``vector`` columns of binary
    cursors back as float32 arrays (the type's oid is looked up once, at setup)."""
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(oid, _VectorLoader)
