"""Thread storage: SQLite (a file, or ``":memory:"``) or PostgreSQL (a ``postgresql://`` DSN).

:class:`ThreadStore` keeps every thread's messages and checkpoints (see
:mod:`remem.threads.schema` for the storage model) and holds all the logic; the database is
behind :mod:`remem.threads.backends`. It can live in the same SQLite file or PostgreSQL
schema as the long-term store: both apply their own named migrations to one database.

Concurrency and durability follow the store: every write is one transaction that excludes
other writers to the same thread (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the thread's row
lock), so processes appending to one thread get distinct positions, and a committed append
survives a killed process.

Every ``a``-prefixed method is the async twin of the method without the prefix, run in a
worker thread.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from remem.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RememError,
    StoreError,
    UsageError,
)
from remem.messages.types import Message, new_id
from remem.store import is_dsn
from remem.store.types import NOT_PROVIDED, NotProvided, SearchMode, validate_value
from remem.threads import schema as sql
from remem.threads._aio import in_thread
from remem.threads.backends import Backend, PostgresBackend, SQLiteBackend, Tx
from remem.threads.types import Checkpoint, ThreadInfo
from remem.tokens import TokenCounter

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.threads.search import ThreadHit, ThreadIndex
    from remem.threads.summary import SummaryPolicy
    from remem.threads.thread import Thread

__all__ = ["ThreadStore"]

MAX_ID_LENGTH = 256
logger = logging.getLogger("remem.threads")
TTL = float | timedelta | None


def _check_thread_id(thread_id: Any, what: str = "thread_id") -> str:
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"{what} must be a non-empty string, got {thread_id!r}")
    if len(thread_id) > MAX_ID_LENGTH or any(ord(c) < 32 for c in thread_id):
        raise InvalidInputError(
            f"{what} must be at most {MAX_ID_LENGTH} characters without control characters, "
            f"got {thread_id[:40]!r}")
    return thread_id


def _check_page(limit: Any, offset: Any) -> None:
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{name} must be an integer >= 0, got {value!r}")


def _ttl_seconds(ttl: TTL, what: str = "ttl") -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        ttl = ttl.total_seconds()
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) \
            or ttl <= 0:
        raise InvalidInputError(
            f"{what} must be a positive number of seconds, a timedelta or None, got {ttl!r}")
    return float(ttl)


def _as_messages(messages: Message | Sequence[Message]) -> list[Message]:
    items = [messages] if isinstance(messages, Message) else list(messages)
    for position, message in enumerate(items):
        if not isinstance(message, Message):
            raise InvalidInputError(
                f"messages[{position}] is a {type(message).__name__}; pass remem.messages."
                "Message values (e.g. Message.user('hi'))")
    return items


def _dumps(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _checkpoint(row: Sequence[Any]) -> Checkpoint:
    """A :data:`~remem.threads.schema.SELECT_CHECKPOINT` row as a :class:`Checkpoint`."""
    cid, thread_id, parent, branch, position, state_id, state, meta, created = row
    return Checkpoint(cid, thread_id, parent, position, json.loads(state), json.loads(meta),
                      created, branch=branch, state_id=state_id)


class ThreadStore:
    """Threads in one database: create, append, read, list, fork, copy, rewind, delete.

    ``path``: a SQLite file (shared with a :class:`~remem.store.SQLiteStore` if you like),
    ``":memory:"``, or a ``postgresql://`` DSN (the ``postgres`` extra; tables in ``schema``,
    by default the one :class:`~remem.store.postgres.PostgresStore` uses). ``durability``
    and ``busy_timeout`` are SQLite's, as in the store. ``ttl``: default time to live of new
    threads in seconds (renewed by every change; ``None``: threads never expire).
    ``summarizer`` and ``policy``: when both are set, an append that takes a thread past
    ``policy.trigger_tokens`` compacts it (see :meth:`compact`). ``index``: a
    :class:`~remem.threads.search.ThreadIndex` that makes appended messages searchable
    across threads.

    Construction does no I/O; the first call (or :meth:`setup`, or ``with``) opens the database.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, ttl: TTL = None,
                 summarizer: ChatModel | None = None, policy: SummaryPolicy | None = None,
                 index: ThreadIndex | None = None,
                 durability: Literal["normal", "full"] = "normal", busy_timeout: float = 30.0,
                 schema: str = "remem", clock: Callable[[], float] = time.time) -> None:
        if durability not in ("normal", "full"):
            raise InvalidInputError(
                f"durability must be 'normal' or 'full', got {durability!r}")
        if (summarizer is None) != (policy is None) and summarizer is None:
            raise InvalidInputError(
                "policy= is set but summarizer= is not: auto-compaction needs a chat model "
                "(summarizer=ChatModel) as well as the SummaryPolicy")
        self.path = os.fspath(path)
        self.backend: Backend = (
            PostgresBackend(self.path, schema=schema) if is_dsn(self.path)
            else SQLiteBackend(self.path, durability=durability, busy_timeout=busy_timeout))
        self.default_ttl = _ttl_seconds(ttl, "ThreadStore ttl")
        self.summarizer = summarizer
        self.policy = policy
        self.index = index
        self.clock = clock
        # a branch's base never changes and ids are never reused, so this cache cannot go stale
        self._bases: dict[int, tuple[int | None, int]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ":memory:", **kwargs: Any) -> ThreadStore:
        """Construct and :meth:`setup` a thread store."""
        store = cls(path, **kwargs)
        store.setup()
        return store

    # -- backend ------------------------------------------------------------------------------

    def _transaction(self, write: bool) -> Any:
        """One transaction of the backend (a context manager yielding a ``Tx``)."""
        return self.backend.transaction(write)

    def _sql(self, text: str) -> str:
        """``text`` in the backend's placeholder style (for queries mixed with a filter)."""
        return text if self.backend.dialect == "sqlite" else text.replace("?", "%s")

    def setup(self) -> None:
        """Open the database and apply missing thread migrations (idempotent)."""
        self.backend.setup()

    def close(self) -> None:
        """Close every connection; the store cannot be used afterwards."""
        self.backend.close()

    def __enter__(self) -> Self:
        self.setup()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        await self.asetup()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    # -- reading helpers ----------------------------------------------------------------------

    def _head(self, tx: Tx, thread_id: str, *, lock: bool = False) -> ThreadInfo:
        """The thread with its head; ``lock`` (writes) locks its row until the commit."""
        if lock and self.backend.lock_head:
            # lock the row alone first: a locking join would be re-checked against the new
            # row version with the other tables' old rows, and miss a head committed meanwhile
            tx.execute("SELECT 1 FROM threads t WHERE t.id = ?" + self.backend.lock_head,
                       (thread_id,))
        row = tx.execute(sql.SELECT_HEAD + "WHERE t.id = ? AND " + sql.ALIVE,
                         (thread_id, self.clock())).fetchone()
        if row is None:
            raise NotFoundError(
                f"thread {thread_id!r} does not exist (or its TTL expired); list threads with "
                "ThreadStore.list_threads() or `remem threads ls`")
        return self._info(row)

    @staticmethod
    def _info(row: Sequence[Any]) -> ThreadInfo:
        (tid, meta, head, source, created, updated, ttl, expires, parent, branch, position,
         state_id, state, cmeta, ccreated, owner, length) = row
        checkpoint = Checkpoint(head, tid, parent, position, json.loads(state),
                                json.loads(cmeta), ccreated, branch=branch, state_id=state_id)
        return ThreadInfo(tid, json.loads(meta), checkpoint, created, updated, source, ttl,
                          expires, head_branch=(owner, length))

    def _find_checkpoint(self, tx: Tx, thread_id: str,
                         checkpoint_id: str | None) -> Checkpoint:
        head = self._head(tx, thread_id).head
        if checkpoint_id is None or checkpoint_id == head.id:
            return head
        row = tx.execute(sql.SELECT_CHECKPOINT + "WHERE c.id = ?", (checkpoint_id,)).fetchone()
        if row is None or row[1] != thread_id:
            raise NotFoundError(
                f"checkpoint {checkpoint_id!r} is not a checkpoint of thread {thread_id!r}; "
                "list them with checkpoints() or `remem threads show --checkpoints`")
        return _checkpoint(row)

    def _base_of(self, tx: Tx) -> Callable[[int], tuple[int | None, int]]:
        def lookup(branch: int) -> tuple[int | None, int]:
            found = self._bases.get(branch)
            if found is None:
                row = tx.execute("SELECT base_id, base_position FROM thread_branches "
                                   "WHERE id = ?", (branch,)).fetchone()
                if row is None:
                    raise StoreError(f"thread branch {branch} is missing from {self.path}")
                found = self._bases[branch] = (row[0], row[1])
            return found
        return lookup

    def _load(self, tx: Tx, checkpoint: Checkpoint, start: int,
              stop: int) -> list[Message]:
        out: list[Message] = []
        for seg in sql.segments(self._base_of(tx), checkpoint.branch, start, stop):
            rows = tx.execute(sql.SELECT_MESSAGES, (seg.branch, seg.start, seg.stop))
            out.extend(Message.model_validate_json(row[0]) for row in rows)
        return out

    # -- writing helpers ----------------------------------------------------------------------

    def _new_state(self, tx: Tx, state: Mapping[str, Any]) -> int:
        return tx.insert("INSERT INTO thread_states (data) VALUES (?)",
                         (_dumps(validate_value(state)),))

    def _save(self, tx: Tx, info: ThreadInfo, *, parent: Checkpoint,
              messages: Sequence[Message] = (), state: Mapping[str, Any] | None = None,
              metadata: Mapping[str, Any]) -> Checkpoint:
        """Write a new head checkpoint built on ``parent``: its messages plus ``messages``."""
        now = self.clock()
        branch, position = parent.branch, parent.position
        if messages:
            # the head's branch came with the thread's row (read under the write lock)
            owner, length = info.head_branch if parent.id == info.head.id else tx.execute(
                "SELECT thread_id, length FROM thread_branches WHERE id = ?", (branch,)
            ).fetchone()
            if owner != info.thread_id or length != position:
                # the parent is not the end of a branch this thread owns: start a new one on it
                branch = tx.insert(sql.INSERT_BRANCH,
                                   (info.thread_id, branch, position, position))
            tx.executemany(sql.INSERT_MESSAGE, [
                (branch, position + offset, m.id, m.model_dump_json())
                for offset, m in enumerate(messages)])
            position += len(messages)
            tx.execute("UPDATE thread_branches SET length = ? WHERE id = ?", (position, branch))
        state_id = parent.state_id if state is None else self._new_state(tx, state)
        cid = new_id("ckpt")
        meta = validate_value(metadata)
        tx.execute(sql.INSERT_CHECKPOINT, (cid, info.thread_id, parent.id, branch, position,
                                             state_id, _dumps(meta), now))
        expires = now + info.ttl if info.ttl is not None else None
        tx.execute("UPDATE threads SET head = ?, updated_at = ?, expires_at = ? WHERE id = ?",
                     (cid, now, expires, info.thread_id))
        new_state = parent.state if state is None else dict(state)
        return Checkpoint(cid, info.thread_id, parent.id, position, new_state, meta, now,
                          branch=branch, state_id=state_id)

    def _insert_thread(self, tx: Tx, thread_id: str | None,
                       metadata: Mapping[str, Any] | None, ttl: TTL | NotProvided, *,
                       base: Checkpoint | None, copy: bool, source: str | None,
                       state_id: int | None, parent_id: str | None,
                       checkpoint_meta: Mapping[str, Any]) -> str:
        tid = new_id("thread") if thread_id is None else _check_thread_id(thread_id)
        meta = validate_value(metadata or {})
        seconds = self.default_ttl if ttl is NOT_PROVIDED else _ttl_seconds(ttl)
        now = self.clock()
        # a thread of this id that expired but was not swept yet gives way to the new one
        expired = tx.execute("SELECT 1 FROM threads WHERE id = ? AND expires_at <= ?",
                               (tid, now)).fetchone()
        if expired:
            self._delete_rows(tx, tid)
        elif tx.execute("SELECT 1 FROM threads WHERE id = ?", (tid,)).fetchone():
            raise ConflictError(f"thread {tid!r} already exists; pick another thread_id or "
                                "open it with ThreadStore.thread()")
        position = 0 if base is None else base.position
        if base is None or copy:
            branch = tx.insert(sql.INSERT_BRANCH, (tid, None, 0, position))
        else:
            branch = tx.insert(sql.INSERT_BRANCH, (tid, base.branch, position, position))
        if base is not None and copy:
            for seg in sql.segments(self._base_of(tx), base.branch, 0, position):
                tx.execute(sql.COPY_MESSAGES, (branch, seg.branch, seg.start, seg.stop))
        if state_id is None:
            state_id = self._new_state(tx, {})
        cid = new_id("ckpt")
        tx.execute(sql.INSERT_CHECKPOINT, (cid, tid, parent_id, branch, position, state_id,
                                             _dumps(validate_value(checkpoint_meta)), now))
        columns = self.backend.metadata_columns(_dumps(meta), meta)
        names = "".join(f", {name}" for name, _, _ in columns)
        marks = "".join(f", {mark}" for _, mark, _ in columns)
        tx.execute(
            f"INSERT INTO threads (id, head, source, created_at, updated_at, ttl, expires_at"
            f"{names}) VALUES (?, ?, ?, ?, ?, ?, ?{marks})",
            (tid, cid, source, now, now, seconds, now + seconds if seconds is not None else None,
             *(value for _, _, value in columns)))
        return tid

    def _delete_rows(self, tx: Tx, thread_id: str) -> None:
        """Delete a thread, then every branch and state nothing refers to any more (a fork's
        shared history stays until the fork goes too)."""
        states = [r[0] for r in tx.execute(
            "SELECT DISTINCT state_id FROM thread_checkpoints WHERE thread_id = ?", (thread_id,))]
        tx.execute("DELETE FROM thread_checkpoints WHERE thread_id = ?", (thread_id,))
        tx.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
        tx.execute("UPDATE thread_branches SET thread_id = NULL WHERE thread_id = ?",
                     (thread_id,))
        while True:
            orphans = [r[0] for r in tx.execute(sql.ORPHAN_BRANCHES)]
            if not orphans:
                break
            for branch in orphans:
                tx.execute("DELETE FROM thread_messages WHERE branch_id = ?", (branch,))
                tx.execute("DELETE FROM thread_branches WHERE id = ?", (branch,))
                self._bases.pop(branch, None)
        for state_id in states:
            tx.execute("DELETE FROM thread_states WHERE id = ? AND NOT EXISTS (SELECT 1 FROM "
                         "thread_checkpoints WHERE state_id = ?)", (state_id, state_id))

    # -- public API: threads ------------------------------------------------------------------

    def create(self, thread_id: str | None = None, *, metadata: Mapping[str, Any] | None = None,
               messages: Sequence[Message] = (),
               ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Create a thread (a new id unless ``thread_id`` is given) and return its handle.

        ``metadata``: JSON object to list and search threads by (e.g. ``{"user_id": "u1"}``).
        ``messages``: its first messages. ``ttl``: seconds (or ``None``) instead of the
        store's default. Raises :class:`~remem.errors.ConflictError` if the id is taken.
        """
        items = _as_messages(messages)
        with self._transaction(write=True) as tx:
            tid = self._insert_thread(tx, thread_id, metadata, ttl, base=None, copy=False,
                                      source=None, state_id=None, parent_id=None,
                                      checkpoint_meta={"source": "create"})
            info = self._head(tx, tid)
            if items:
                self._save(tx, info, parent=info.head, messages=items,
                           metadata={"source": "append", "added": len(items)})
        self._after_append(tid, info.metadata, items, 0)
        return self.thread(tid)

    def thread(self, thread_id: str) -> Thread:
        """A handle on an existing thread (raises :class:`~remem.errors.NotFoundError`)."""
        from remem.threads.thread import Thread

        self.get(thread_id)
        return Thread(self, thread_id)

    def get(self, thread_id: str) -> ThreadInfo:
        """The thread's record; raises :class:`~remem.errors.NotFoundError` if it does not
        exist or expired."""
        _check_thread_id(thread_id)
        with self._transaction(write=False) as tx:
            return self._head(tx, thread_id)

    def exists(self, thread_id: str) -> bool:
        """Whether the thread exists (and has not expired)."""
        try:
            self.get(thread_id)
        except NotFoundError:
            return False
        return True

    def list_threads(self, filter: Mapping[str, Any] | None = None, *, limit: int = 20,
             offset: int = 0) -> list[ThreadInfo]:
        """Live threads whose metadata matches ``filter`` (the store's filter language, e.g.
        ``{"user_id": "u1"}`` or ``{"topic": {"$in": ["a", "b"]}}``), most recently changed
        first."""
        _check_page(limit, offset)
        where, params = self.backend.metadata_filter(filter)
        query = (self._sql(sql.SELECT_HEAD + f"WHERE {sql.ALIVE} AND ") + where
                 + self._sql(" ORDER BY t.updated_at DESC, t.id LIMIT ? OFFSET ?"))
        with self._transaction(write=False) as tx:
            rows = tx.execute(query, (self.clock(), *params, limit, offset),
                              translated=True).fetchall()
        return [self._info(row) for row in rows]

    def delete(self, thread_id: str) -> bool:
        """Delete a thread and its checkpoints; return whether it existed. Forks made from it
        keep their messages."""
        _check_thread_id(thread_id)
        with self._transaction(write=True) as tx:
            found = tx.execute("SELECT 1 FROM threads t WHERE t.id = ?" + self.backend.lock_head,
                               (thread_id,)).fetchone()
            if found:
                self._delete_rows(tx, thread_id)
        if found and self.index is not None:
            self.index.remove_thread(thread_id)
        return bool(found)

    def set_metadata(self, thread_id: str, metadata: Mapping[str, Any], *,
                     merge: bool = True) -> ThreadInfo:
        """Update the thread's metadata (merged into the old one unless ``merge=False``)."""
        _check_thread_id(thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, thread_id, lock=True)
            meta = validate_value({**info.metadata, **metadata} if merge else metadata)
            columns = self.backend.metadata_columns(_dumps(meta), meta)
            sets = ", ".join(f"{name} = {mark}" for name, mark, _ in columns)
            tx.execute(f"UPDATE threads SET {sets} WHERE id = ?",
                       (*(value for _, _, value in columns), thread_id))
            return self._head(tx, thread_id)

    def sweep(self) -> int:
        """Delete expired threads now; return how many. Reads never see expired threads
        anyway; sweeping reclaims their space."""
        with self._transaction(write=True) as tx:
            expired = [r[0] for r in tx.execute(
                "SELECT id FROM threads WHERE expires_at <= ?", (self.clock(),))]
            for thread_id in expired:
                self._delete_rows(tx, thread_id)
        if self.index is not None:
            for thread_id in expired:
                self.index.remove_thread(thread_id)
        return len(expired)

    # -- public API: messages and checkpoints -------------------------------------------------

    def append(self, thread_id: str, messages: Message | Sequence[Message], *,
               expected_head: str | None = None,
               metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Append messages as one new checkpoint and return the thread's head afterwards.

        ``expected_head``: the checkpoint id you last read; if the thread moved on meanwhile
        the append raises :class:`~remem.errors.ConflictError` instead of interleaving.
        ``metadata`` is recorded on the checkpoint. With auto-compaction configured, the
        returned head may be the compaction checkpoint that followed the append.
        """
        _check_thread_id(thread_id)
        items = _as_messages(messages)
        if not items:
            raise InvalidInputError("append needs at least one message, got none")
        with self._transaction(write=True) as tx:
            info = self._head(tx, thread_id, lock=True)
            if expected_head is not None and expected_head != info.head.id:
                raise ConflictError(
                    f"thread {thread_id!r} moved on: its head is {info.head.id!r}, not "
                    f"{expected_head!r}; read it again and retry")
            checkpoint = self._save(tx, info, parent=info.head, messages=items,
                                    metadata={"source": "append", "added": len(items),
                                              **(metadata or {})})
        return self._after_append(thread_id, info.metadata, items,
                                  checkpoint.position - len(items)) or checkpoint

    def _after_append(self, thread_id: str, metadata: Mapping[str, Any],
                      items: Sequence[Message], start: int) -> Checkpoint | None:
        """Index the new messages and compact if due; the new head if compaction ran.

        The append has committed by now, so a failure here must not look like a failed append
        (a retry would store the messages twice): it is logged as a warning on the
        ``remem.threads`` logger and repaired later (the next append compacts again;
        :meth:`ThreadIndex.index_thread` re-indexes a thread).
        """
        if not items:
            return None
        if self.index is not None:
            try:
                self.index.index_messages(thread_id, metadata, items, start)
            except RememError as exc:
                logger.warning("thread %r: %d new message(s) stored but not indexed for "
                               "search (%s); run ThreadIndex.index_thread to repair",
                               thread_id, len(items), exc)
        if self.summarizer is not None and self.policy is not None:
            from remem.threads.compaction import compact_thread

            try:
                return compact_thread(self, thread_id, self.summarizer, self.policy,
                                      force=False)
            except RememError as exc:
                logger.warning("thread %r: messages stored, automatic compaction failed (%s); "
                               "the next append tries again", thread_id, exc)
        return None

    def messages(self, thread_id: str, *, checkpoint_id: str | None = None, start: int = 0,
                 stop: int | None = None, last: int | None = None) -> list[Message]:
        """The thread's messages at its head (or at ``checkpoint_id``): positions
        ``start .. stop - 1`` (Python slice rules for negatives), or the ``last`` n."""
        _check_thread_id(thread_id)
        if last is not None and last < 0:
            raise InvalidInputError(f"last must be >= 0, got {last}")
        with self._transaction(write=False) as tx:
            checkpoint = self._find_checkpoint(tx, thread_id, checkpoint_id)
            if last is not None:
                begin, end = max(0, checkpoint.position - last), checkpoint.position
            else:
                begin, end, _ = slice(start, stop).indices(checkpoint.position)
            return self._load(tx, checkpoint, begin, end) if begin < end else []

    def checkpoint(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint:
        """A checkpoint of the thread (its head when ``checkpoint_id`` is ``None``)."""
        _check_thread_id(thread_id)
        with self._transaction(write=False) as tx:
            return self._find_checkpoint(tx, thread_id, checkpoint_id)

    def checkpoints(self, thread_id: str, *, limit: int = 100,
                    offset: int = 0) -> list[Checkpoint]:
        """The thread's checkpoints, newest first (a fork's start from its source thread's
        checkpoint, which is its first checkpoint's parent)."""
        _check_thread_id(thread_id)
        _check_page(limit, offset)
        with self._transaction(write=False) as tx:
            self._head(tx, thread_id)
            rows = tx.execute(sql.SELECT_CHECKPOINT + "WHERE c.thread_id = ? "
                                "ORDER BY c.seq DESC LIMIT ? OFFSET ?",
                                (thread_id, limit, offset)).fetchall()
        return [_checkpoint(row) for row in rows]

    def update_state(self, thread_id: str, state: Mapping[str, Any], *, merge: bool = True,
                     expected_head: str | None = None,
                     metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Save a new head checkpoint with the same messages and a new state (merged into the
        head's unless ``merge=False``). ``expected_head`` as in :meth:`append`."""
        _check_thread_id(thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, thread_id, lock=True)
            if expected_head is not None and expected_head != info.head.id:
                raise ConflictError(
                    f"thread {thread_id!r} moved on: its head is {info.head.id!r}, not "
                    f"{expected_head!r}; read it again and retry")
            new = {**info.head.state, **state} if merge else dict(state)
            return self._save(tx, info, parent=info.head, state=new,
                              metadata={"source": "update", **(metadata or {})})

    def rewind(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        """Time travel in place: the head becomes a new checkpoint with the messages and state
        of ``checkpoint_id`` (its parent). Later checkpoints stay listed and readable; the next
        append branches off from here."""
        _check_thread_id(thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, thread_id, lock=True)
            target = self._find_checkpoint(tx, thread_id, checkpoint_id)
            return self._save(tx, info, parent=target,
                              metadata={"source": "rewind", "from": info.head.id})

    def fork(self, thread_id: str, checkpoint_id: str | None = None, *,
             new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """A new thread that starts at ``checkpoint_id`` (default: the head) of ``thread_id``,
        sharing its history without copying it. ``metadata`` is merged into the source's."""
        _check_thread_id(thread_id)
        return self._derive(thread_id, checkpoint_id, new_thread_id, metadata, ttl, copy=False)

    def copy(self, thread_id: str, checkpoint_id: str | None = None, *,
             new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Like :meth:`fork`, but the new thread gets its own copy of the messages (it stays
        whole whatever happens to the source; costs time and space per message)."""
        _check_thread_id(thread_id)
        return self._derive(thread_id, checkpoint_id, new_thread_id, metadata, ttl, copy=True)

    def _derive(self, thread_id: str, checkpoint_id: str | None, new_thread_id: str | None,
                metadata: Mapping[str, Any] | None, ttl: TTL | NotProvided,
                *, copy: bool) -> Thread:
        kind = "copy" if copy else "fork"
        with self._transaction(write=True) as tx:
            info = self._head(tx, thread_id)
            base = self._find_checkpoint(tx, thread_id, checkpoint_id)
            if ttl is NOT_PROVIDED:
                ttl = info.ttl
            tid = self._insert_thread(
                tx, new_thread_id, {**info.metadata, **(metadata or {})}, ttl, base=base,
                copy=copy, source=base.id, state_id=base.state_id,
                parent_id=None if copy else base.id,
                checkpoint_meta={"source": kind, "from_thread": thread_id,
                                 "from_checkpoint": base.id})
        if copy and self.index is not None:
            self.index.index_thread(self, tid)
        return self.thread(tid)

    def search(self, query: str, *, owner: str | None = None, limit: int = 5,
               per_thread: int = 3, exclude: Sequence[str] = (),
               mode: SearchMode = "auto") -> list[ThreadHit]:
        """Past threads matching ``query`` by keywords and meaning (see
        :meth:`ThreadIndex.search`); threads deleted or expired since are left out."""
        if self.index is None:
            raise UsageError("thread search needs an index: open the ThreadStore with "
                             "index=ThreadIndex(store) (a long-term store to index into)")
        hits = self.index.search(query, owner=owner, limit=limit + 5, per_thread=per_thread,
                                 exclude=exclude, mode=mode)
        return [hit for hit in hits if self.exists(hit.thread_id)][:limit]

    # -- summaries and prompt views (see remem.threads.compaction) ----------------------------

    def compact(self, thread_id: str, model: ChatModel | None = None,
                policy: SummaryPolicy | None = None, *, force: bool = True) -> Checkpoint:
        """Fold the older messages into the running summary (stored in the checkpoint state
        with what it covers and what it cost) and return the head. ``model``/``policy``
        default to the store's ``summarizer``/``policy``; ``force=False`` compacts only past
        ``policy.trigger_tokens``."""
        from remem.threads.compaction import compact_thread
        from remem.threads.summary import SummaryPolicy

        model = model or self.summarizer
        if model is None:
            raise InvalidInputError(
                "compact needs a chat model: pass model= or open the store with summarizer=")
        done = compact_thread(self, thread_id, model, policy or self.policy or SummaryPolicy(),
                              force=force)
        return done or self.checkpoint(thread_id)

    def context(self, thread_id: str, *, max_tokens: int | None = None,
                max_messages: int | None = None, checkpoint_id: str | None = None,
                counter: TokenCounter | None = None) -> list[Message]:
        """The messages to send to a model: system prompt, running summary, then the messages
        it does not cover, trimmed to ``max_tokens`` / ``max_messages`` (counted with
        ``counter``, an offline estimate by default) without breaking tool calls."""
        from remem.threads.compaction import prompt_view

        return prompt_view(self, thread_id, max_tokens=max_tokens, max_messages=max_messages,
                           checkpoint_id=checkpoint_id, counter=counter)

    # -- async twins ----------------------------------------------------------------------------

    asetup = in_thread(setup)
    acreate = in_thread(create)
    athread = in_thread(thread)
    aget = in_thread(get)
    aexists = in_thread(exists)
    alist_threads = in_thread(list_threads)
    adelete = in_thread(delete)
    aset_metadata = in_thread(set_metadata)
    asweep = in_thread(sweep)
    aappend = in_thread(append)
    amessages = in_thread(messages)
    acheckpoint = in_thread(checkpoint)
    acheckpoints = in_thread(checkpoints)
    aupdate_state = in_thread(update_state)
    arewind = in_thread(rewind)
    afork = in_thread(fork)
    acopy = in_thread(copy)
    asearch = in_thread(search)
    acompact = in_thread(compact)
    acontext = in_thread(context)

