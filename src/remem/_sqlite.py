"""SQLite connections as every remem component opens them (the store, threads).

One connection per thread to a file, in WAL mode with a busy timeout so writers queue instead
of failing; ``:memory:`` has a single connection behind a lock (each connection would
otherwise see a database of its own). Failures surface as :class:`~remem.errors.StoreError`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from remem.errors import StoreError

__all__ = ["Durability", "SQLiteConnections"]

Durability = Literal["normal", "full"]

# WAL frames before a commit copies them into the database (SQLite's default is 1,000, 4 MB).
# A checkpoint writes every page changed since the last one and fsyncs twice; a 100-item batch
# into a 100k-item store changes ~430 pages, so at 1,000 nearly every other commit paid for a
# checkpoint. At 10,000 (~40 MB of WAL) pages changed by many commits (index pages of each
# namespace, the tails of posting lists) are copied once: steady-state batched puts went from
# 5.2k to 8.0k items/s (median of 4 runs), at the cost of a longer pause (~80 ms) on the commit
# that checkpoints. Durability is unchanged: commits are in the WAL either way.
_CHECKPOINT_PAGES = 10_000
_WAL_KEPT_BYTES = 64 * 2**20  # a checkpoint that empties the WAL truncates it to this

# One in-process write lock per database file, shared by every store, thread store and key
# store of this process that opens it. Writers of one process then queue on this lock in
# turn, instead of on SQLite's busy handler, which sleeps in growing steps (up to 100 ms)
# and gave a server's writes a long latency tail. Other processes still meet SQLite's lock.
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock_for(path: str) -> threading.RLock:
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(key)
        if lock is None:
            lock = _WRITE_LOCKS[key] = threading.RLock()
        return lock


class SQLiteConnections:
    """Per-thread connections to ``path``; ``owner`` names the component in error messages."""

    def __init__(self, path: str, *, owner: str, durability: Durability = "normal",
                 busy_timeout: float = 30.0) -> None:
        self.path = path
        self.owner = owner
        self.in_memory = path == ":memory:"
        self.durability = durability
        self.busy_timeout = busy_timeout
        self.closed = False
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._memory_lock = threading.RLock()  # serialises the one :memory: connection
        self._write_lock = self._memory_lock if self.in_memory else _write_lock_for(path)

    def _open(self) -> sqlite3.Connection:
        if self.closed:
            raise StoreError(f"this {self.owner} is closed; open a new one")
        if not self.in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        if not self.in_memory:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_KEPT_BYTES}")
        conn.execute(f"PRAGMA synchronous = {'FULL' if self.durability == 'full' else 'NORMAL'}")
        self._all.append(conn)
        return conn

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; SQLite failures surface as :class:`StoreError`."""
        try:
            if self.in_memory:
                with self._memory_lock:
                    if not self._all:
                        self._open()
                    yield self._all[0]
                return
            conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._open()
                self._local.conn = conn
            yield conn
        except sqlite3.OperationalError as exc:
            hint = ("; another writer held the lock longer than busy_timeout "
                    f"({self.busy_timeout:g} s): raise it or shorten write batches"
                    if "locked" in str(exc) else "")
            raise StoreError(f"SQLite error on {self.path}: {exc}{hint}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite error on {self.path}: {exc}") from exc

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold this process's write turn on the database (wrap ``BEGIN IMMEDIATE`` ...
        ``COMMIT`` in it)."""
        with self._write_lock:
            yield

    def close(self) -> None:
        """Close every connection; later calls raise :class:`StoreError`."""
        self.closed = True
        for conn in self._all:
            conn.close()
        self._all.clear()
        self._local = threading.local()
