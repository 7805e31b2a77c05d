"""The pgvector type adapter (binary, NumPy float32 in and out).

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

__all__ = ["register_vector_type"]


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
