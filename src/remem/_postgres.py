"""Plumbing shared by every package that keeps its tables in a PostgreSQL schema (the store,
threads, background jobs, the graph): turn a driver error into the remem error it means
(:func:`database_error`: data the database refuses is the caller's, anything else the
database's). The pool and transactions are :class:`remem.db.Database`'s, above this module."""

from __future__ import annotations

from remem.errors import InvalidInputError, RememError, StoreError

__all__ = ["database_error", "is_refused_data"]

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
