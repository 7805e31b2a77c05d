"""SQLite connections as :class:`remem.db.Database` opens them for a store and the families
beside it, the WAL checkpoint a closing process runs, and online backups
(:func:`backup_file`).

One connection per thread to a file, in WAL mode with a busy timeout so writers queue instead
of failing; ``:memory:`` has a single connection behind a lock (each connection would
otherwise see a database of its own). Failures surface as :class:`~remem.errors.StoreError`.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from remem.errors import StoreError

__all__ = ["CHECKPOINT_WAIT", "Backup", "Durability", "SQLiteConnections", "backup_file",
           "checkpoint_file"]

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
#: seconds :meth:`SQLiteConnections.checkpoint` waits for other processes' readers and writers
#: (a closing process should not hang on a long read elsewhere)
CHECKPOINT_WAIT = 2.0

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
        """Checkpoint the WAL into the database file (:meth:`checkpoint`), then close every
        connection; later calls raise :class:`StoreError`."""
        if not self.closed:
            self.checkpoint()
        self.closed = True
        for conn in self._all:
            conn.close()
        self._all.clear()
        self._local = threading.local()

    def checkpoint(self) -> bool:
        """Copy every committed page from the WAL into the database file and empty the WAL
        (``PRAGMA wal_checkpoint(TRUNCATE)``), so the file alone holds the data: a copy of
        it without its ``-wal`` is complete. Returns whether it finished. Another process
        reading or writing the file may keep it from finishing (SQLITE_BUSY after
        :data:`CHECKPOINT_WAIT` seconds); then the pages stay in the WAL, as safe as before,
        and whoever closes the file last checkpoints them. ``:memory:`` has no WAL: ``True``."""
        if self.in_memory or self.closed or not self._all:
            return True  # nothing opened here, so nothing of ours is in the WAL
        with self._write_lock:  # not while this process's own writers are committing
            return _truncate_wal(self._all[0], self.busy_timeout)


def _truncate_wal(conn: sqlite3.Connection, busy_timeout: float) -> bool:
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(CHECKPOINT_WAIT * 1000)}")
        try:
            row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    except sqlite3.Error:  # busy or locked: the WAL keeps the pages, nothing is lost
        return False
    return row is not None and row[0] == 0


def checkpoint_file(path: str) -> bool:
    """:meth:`SQLiteConnections.checkpoint` for the database file at ``path``, from a
    connection of its own (any connection's checkpoint copies every commit of every
    connection); under this process's write lock of the file. ``False``: another process
    kept it from finishing. A missing file or ``:memory:`` has nothing to copy: ``True``."""
    if path == ":memory:" or not Path(path).exists():
        return True
    with _write_lock_for(path):
        try:
            conn = sqlite3.connect(path, timeout=CHECKPOINT_WAIT, isolation_level=None)
        except sqlite3.Error:
            return False
        try:
            return _truncate_wal(conn, CHECKPOINT_WAIT)
        finally:
            conn.close()


@dataclass(frozen=True, slots=True)
class Backup:
    """What :func:`backup_file` wrote: the copy's path, its pages and bytes."""

    path: str
    pages: int
    bytes: int


def backup_file(source: str, target: str) -> Backup:
    """Copy the SQLite database at ``source`` into a new file ``target`` with SQLite's online
    backup API, safe while other connections and processes write to it.

    The copy is one consistent snapshot: it is read in a single step inside one read
    transaction, so it holds every transaction committed before the step began (those still
    in ``source``'s WAL included) and none of a later one; in WAL mode that read blocks no
    writer. It is written to a temporary file beside ``target``, checked
    (``PRAGMA quick_check``), switched to a rollback journal (one self-contained file, no
    ``-wal``), synced, and only then renamed to ``target``, so a failed backup leaves no
    partial file. Raises :class:`StoreError` naming the file and the fix; ``target`` must not
    exist (the caller decides about replacing it)."""
    if not Path(source).is_file():
        raise StoreError(f"no SQLite database at {source}; pass the file a server or "
                         "Memory.open uses")
    if Path(target).exists():
        raise StoreError(f"{target} exists; remove it or choose another file")
    parent = Path(target).resolve().parent
    fd, temp = tempfile.mkstemp(prefix=f".{Path(target).name}.", suffix=".backup", dir=parent)
    os.close(fd)
    try:
        src = sqlite3.connect(source, timeout=30.0, isolation_level=None)
        try:
            dst = sqlite3.connect(temp, isolation_level=None)
            try:
                src.backup(dst)  # pages=-1: every page in one step, one snapshot
                dst.execute("PRAGMA journal_mode = DELETE")
                check = dst.execute("PRAGMA quick_check").fetchone()
                pages = int(dst.execute("PRAGMA page_count").fetchone()[0])
            finally:
                dst.close()
        finally:
            src.close()
        if check is None or check[0] != "ok":
            raise StoreError(f"the copy of {source} failed SQLite's quick_check ({check}); "
                             "the database may be damaged: run PRAGMA integrity_check on it")
        os.chmod(temp, Path(source).stat().st_mode & 0o777)  # as readable as the source
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, target)
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite error backing up {source} to {target}: {exc}") from exc
    finally:
        Path(temp).unlink(missing_ok=True)
    return Backup(target, pages, Path(target).stat().st_size)
