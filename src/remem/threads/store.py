"""Thread storage: SQLite (a file, or ``":memory:"``) or PostgreSQL (a ``postgresql://`` DSN).

:class:`ThreadStore` keeps every thread's messages and checkpoints (see
:mod:`remem.threads.schema` for the storage model) and holds all the logic; the database is a
:class:`remem.db.Database`. It can live in the same SQLite file or PostgreSQL
schema as the long-term store: both apply their own named migrations to one database.

Concurrency and durability follow the store: every write is one transaction that excludes
other writers to the same thread (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the thread's row
lock), so processes appending to one thread get distinct positions, and a committed append
survives a killed process.

Every operation is a request value (:mod:`remem.threads.requests`): the methods, inherited
from :class:`~remem.threads.api.ThreadAPI`, build one and :meth:`ThreadStore.run` executes it
(``_op_<operation>``). Async twins run the same code in a worker thread.

A :class:`~remem.threads.scoped.ScopedThreads` view shares a store's database and shows one
tenant's threads only; the ``_key``/``_shown``/``_scope``... hooks below are where it narrows
the id space (they are the identity here).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

from remem.db import Database, Tx
from remem.errors import (
    ConflictError,
    Fix,
    Hint,
    InvalidInputError,
    NotFoundError,
    RememError,
    StoreError,
    UsageError,
)
from remem.messages.types import Message, new_id
from remem.store.filters import parse_filter, to_sqlite
from remem.store.filters_postgres import postgres_document, to_postgres
from remem.store.types import NOT_PROVIDED, NotProvided, validate_value
from remem.threads import schema as sql
from remem.threads._aio import in_thread
from remem.threads.api import TTL, ThreadAPI
from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadContextRequest,
    ThreadRequest,
    UpdateStateRequest,
    ttl_or_default,
)
from remem.threads.types import Checkpoint, ThreadInfo

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.threads.search import MessageMatch, ThreadHit, ThreadIndex
    from remem.threads.summary import SummaryPolicy
    from remem.threads.thread import Thread

__all__ = ["ThreadStore"]

logger = logging.getLogger("remem.threads")
R = TypeVar("R")


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


def _dumps(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shared_prefix(base_of: Callable[[int], tuple[int | None, int]], a: Checkpoint,
                   b: Checkpoint) -> int:
    """How many leading positions checkpoints ``a`` and ``b`` share (the same stored rows)."""
    end = min(a.position, b.position)
    left = sql.segments(base_of, a.branch, 0, end)
    right = sql.segments(base_of, b.branch, 0, end)
    shared = 0
    for x, y in zip(left, right, strict=False):
        if x.branch != y.branch or x.start != y.start:
            break
        shared = min(x.stop, y.stop)
        if x.stop != y.stop:
            break
    return shared


def _checkpoint(row: Sequence[Any]) -> Checkpoint:
    """A :data:`~remem.threads.schema.SELECT_CHECKPOINT` row as a :class:`Checkpoint`."""
    cid, thread_id, parent, branch, position, state_id, state, meta, created = row
    return Checkpoint(cid, thread_id, parent, position, json.loads(state), json.loads(meta),
                      created, branch=branch, state_id=state_id)


class ThreadStore(ThreadAPI):
    """Threads in one database: create, append, read, list, fork, copy, rewind, delete.

    ``path``: a SQLite file (shared with a :class:`~remem.store.SQLiteStore` if you like),
    ``":memory:"``, a ``postgresql://`` DSN (the ``postgres`` extra; tables in ``schema``,
    by default the one :class:`~remem.store.postgres.PostgresStore` uses), or an open
    :class:`~remem.db.Database` handle (its own location, schema and options; closed with
    the thread store). ``durability``
    and ``busy_timeout`` are SQLite's, as in the store. ``ttl``: default time to live of new
    threads in seconds (renewed by every change; ``None``: threads never expire).
    ``summarizer`` and ``policy``: when both are set, an append that takes a thread past
    ``policy.trigger_tokens`` compacts it (see :meth:`compact`). ``index``: a
    :class:`~remem.threads.search.ThreadIndex` that makes appended messages searchable
    across threads.

    Construction does no I/O; the first call (or :meth:`setup`, or ``with``) opens the database.
    The methods come from :class:`~remem.threads.api.ThreadAPI`: each builds its request and
    :meth:`run` executes it.
    """

    def __init__(self, path: str | os.PathLike[str] | Database = ":memory:", *,
                 ttl: TTL = None,
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
        self.db = path if isinstance(path, Database) else Database(
            path, schema=schema, owner="ThreadStore", durability=durability,
            busy_timeout=busy_timeout, pool_max_size=10, check_connections=True)
        self.path = self.db.target
        self.default_ttl = _ttl_seconds(ttl, "ThreadStore ttl")
        self.summarizer = summarizer
        self.policy = policy
        self.index = index
        self.clock = clock
        # a branch's base never changes and ids are never reused, so this cache cannot go stale
        self._bases: dict[int, tuple[int | None, int]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str] | Database = ":memory:",
             **kwargs: Any) -> ThreadStore:
        """Construct and :meth:`setup` a thread store."""
        store = cls(path, **kwargs)
        store.setup()
        return store

    # -- database -----------------------------------------------------------------------------

    def _transaction(self, write: bool) -> Any:
        """One transaction (a context manager yielding a :class:`~remem.db.Tx`)."""
        self.setup()
        return self.db.transaction(write)

    def _sql(self, text: str) -> str:
        """``text`` in the dialect's placeholders (for queries mixed with a filter)."""
        return self.db.dialect.sql(text)

    def _metadata_filter(self, filter: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
        """The filter as SQL over the thread alias ``t``, in the dialect's placeholders."""
        if self.db.dialect.name == "sqlite":
            return to_sqlite(parse_filter(filter), column="t.metadata")
        return to_postgres(parse_filter(filter), column="t.metadata_doc")

    def _metadata_columns(self, metadata: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
        """``(column, placeholder, value)`` of the columns that store a thread's metadata
        (PostgreSQL keeps a jsonb shadow that filters run on)."""
        columns = [("metadata", "?", _dumps(metadata))]
        if self.db.dialect.name == "postgres":
            columns.append(("metadata_doc", "CAST(? AS jsonb)", postgres_document(metadata)))
        return columns

    def setup(self) -> None:
        """Open the database and apply missing thread migrations (idempotent)."""
        self.db.migrate(sql.THREAD_SCHEMA)

    def close(self) -> None:
        """Close every connection; the store cannot be used afterwards."""
        self.db.close()

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
        if lock and self.db.dialect.lock:
            # lock the row alone first: a locking join would be re-checked against the new
            # row version with the other tables' old rows, and miss a head committed meanwhile
            tx.execute("SELECT 1 FROM threads t WHERE t.id = ?" + self.db.dialect.lock,
                       (thread_id,))
        row = tx.execute(sql.SELECT_HEAD + "WHERE t.id = ? AND " + sql.ALIVE,
                         (thread_id, self.clock())).fetchone()
        if row is None:
            raise NotFoundError(
                f"thread {self._shown(thread_id)!r} does not exist (or its TTL expired)",
                hint=Hint(Fix.LIST_THREADS, "list them with ThreadStore.list_threads()"))
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
                f"checkpoint {checkpoint_id!r} is not a checkpoint of thread "
                f"{self._shown(thread_id)!r}",
                hint=Hint(Fix.LIST_CHECKPOINTS, "list them with checkpoints()",
                          self._shown(thread_id)))
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

    def _insert_thread(self, tx: Tx, tid: str, metadata: Mapping[str, Any],
                       ttl: TTL | NotProvided, *, base: Checkpoint | None, copy: bool,
                       source: str | None, state_id: int | None, parent_id: str | None,
                       checkpoint_meta: Mapping[str, Any]) -> str:
        meta = validate_value(metadata)
        seconds = self.default_ttl if ttl is NOT_PROVIDED else _ttl_seconds(ttl)
        now = self.clock()
        # a thread of this id that expired but was not swept yet gives way to the new one
        expired = tx.execute("SELECT 1 FROM threads WHERE id = ? AND expires_at <= ?",
                               (tid, now)).fetchone()
        if expired:
            self._delete_rows(tx, tid)
        elif tx.execute("SELECT 1 FROM threads WHERE id = ?", (tid,)).fetchone():
            raise ConflictError(f"thread {self._shown(tid)!r} already exists; pick another "
                                "thread_id or open it with ThreadStore.thread()")
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
        columns = self._metadata_columns(meta)
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

    # -- the id space (a ScopedThreads view narrows it to one tenant) -------------------------

    def _key(self, thread_id: str) -> str:
        """The stored id of the thread the caller calls ``thread_id``."""
        return thread_id

    def _shown(self, key: str) -> str:
        """The caller's id of the thread stored as ``key``."""
        return key

    def _scope(self) -> tuple[str, tuple[Any, ...]]:
        """A condition on ``t.id`` selecting the caller's threads (with its parameters)."""
        return "", ()

    def _metadata_in(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """Metadata as stored for the caller's ``metadata``."""
        return dict(metadata)

    def _metadata_out(self, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
        """Stored metadata as the caller sees it."""
        return metadata

    def _info_out(self, info: ThreadInfo) -> ThreadInfo:
        """A thread record as the caller sees it."""
        return info

    def _checkpoint_out(self, checkpoint: Checkpoint) -> Checkpoint:
        """A checkpoint as the caller sees it."""
        return checkpoint

    def _handle(self, thread_id: str) -> Thread:
        from remem.threads.thread import Thread

        return Thread(self, thread_id)

    # -- running requests ---------------------------------------------------------------------

    def run(self, request: ThreadRequest[R]) -> R:
        """Run one thread request against the database and return its result."""
        handler = getattr(self, f"_op_{request.operation}", None)
        if handler is None or not isinstance(request, ThreadRequest):
            raise UsageError(f"{type(request).__name__} is not a thread request; build one "
                             "from remem.threads.requests")
        return cast(R, handler(request))

    async def arun(self, request: ThreadRequest[R]) -> R:
        """Async :meth:`run` (the same code, in a worker thread)."""
        return await asyncio.to_thread(self.run, request)

    # -- operations: threads ------------------------------------------------------------------

    def _op_create(self, req: CreateThreadRequest) -> Thread:
        public = req.thread_id or new_id("thread")
        items = req.messages or ()
        with self._transaction(write=True) as tx:
            tid = self._insert_thread(tx, self._key(public), self._metadata_in(req.metadata or {}),
                                      ttl_or_default(req), base=None, copy=False, source=None,
                                      state_id=None, parent_id=None,
                                      checkpoint_meta={"source": "create"})
            info = self._head(tx, tid)
            if items:
                self._save(tx, info, parent=info.head, messages=items,
                           metadata={"source": "append", "added": len(items)})
        self._after_append(public, info.metadata, items, 0)
        return self._handle(public)

    def _op_get(self, req: GetThreadRequest) -> ThreadInfo:
        with self._transaction(write=False) as tx:
            return self._info_out(self._head(tx, self._key(req.thread_id)))

    def _op_list_threads(self, req: ListThreadsRequest) -> list[ThreadInfo]:
        where, params = self._metadata_filter(req.filter)
        scope, scope_params = self._scope()
        query = (self._sql(sql.SELECT_HEAD + f"WHERE {sql.ALIVE} AND {scope or '1 = 1'} AND ")
                 + where + self._sql(" ORDER BY t.updated_at DESC, t.id LIMIT ? OFFSET ?"))
        with self._transaction(write=False) as tx:
            rows = tx.execute(query, (self.clock(), *scope_params, *params, req.limit,
                                      req.offset), translated=True).fetchall()
        return [self._info_out(self._info(row)) for row in rows]

    def _op_delete(self, req: DeleteThreadRequest) -> bool:
        tid = self._key(req.thread_id)
        with self._transaction(write=True) as tx:
            found = tx.execute("SELECT 1 FROM threads t WHERE t.id = ?" + self.db.dialect.lock,
                               (tid,)).fetchone()
            if found:
                self._delete_rows(tx, tid)
        if found and self.index is not None:
            self.index.remove_thread(req.thread_id)
        return bool(found)

    def _op_set_metadata(self, req: SetMetadataRequest) -> ThreadInfo:
        tid = self._key(req.thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, tid, lock=True)
            new = {**self._metadata_out(info.metadata), **req.metadata} if req.merge \
                else req.metadata
            meta = validate_value(self._metadata_in(new))
            columns = self._metadata_columns(meta)
            sets = ", ".join(f"{name} = {mark}" for name, mark, _ in columns)
            tx.execute(f"UPDATE threads SET {sets} WHERE id = ?",
                       (*(value for _, _, value in columns), tid))
            updated = self._info_out(self._head(tx, tid))
        if self.index is not None and self.index.owner_of(updated.metadata) != \
                self.index.owner_of(self._metadata_out(info.metadata)):
            # the index files messages under their owner: move them to the new one's
            try:
                self.index.index_thread(self, req.thread_id)
            except RememError as exc:
                logger.warning("thread %r: owner changed, but its search index was not "
                               "moved (%s); run ThreadIndex.index_thread to repair",
                               req.thread_id, exc)
        return updated

    def sweep(self) -> int:
        """Delete expired threads now; return how many. Reads never see expired threads
        anyway; sweeping reclaims their space."""
        scope, params = self._scope()
        with self._transaction(write=True) as tx:
            expired = [r[0] for r in tx.execute(
                "SELECT t.id FROM threads t WHERE t.expires_at <= ?"
                + (f" AND {scope}" if scope else ""), (self.clock(), *params))]
            for thread_id in expired:
                self._delete_rows(tx, thread_id)
        if self.index is not None:
            for thread_id in expired:
                self.index.remove_thread(self._shown(thread_id))
        return len(expired)

    # -- operations: messages and checkpoints -------------------------------------------------

    def _op_append(self, req: AppendRequest) -> Checkpoint:
        tid = self._key(req.thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, tid, lock=True)
            if req.expected_head is not None and req.expected_head != info.head.id:
                raise ConflictError(
                    f"thread {req.thread_id!r} moved on: its head is {info.head.id!r}, not "
                    f"{req.expected_head!r}; read it again and retry")
            checkpoint = self._save(tx, info, parent=info.head, messages=req.messages,
                                    metadata={"source": "append", "added": len(req.messages),
                                              **(req.metadata or {})})
        compacted = self._after_append(req.thread_id, info.metadata, req.messages,
                                       checkpoint.position - len(req.messages))
        return compacted or self._checkpoint_out(checkpoint)

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
                self.index.index_messages(thread_id, self._metadata_out(metadata), items, start)
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

    def _op_messages(self, req: MessagesRequest) -> list[Message]:
        with self._transaction(write=False) as tx:
            checkpoint = self._find_checkpoint(tx, self._key(req.thread_id), req.checkpoint_id)
            if req.last is not None:
                begin, end = max(0, checkpoint.position - req.last), checkpoint.position
            else:
                begin, end, _ = slice(req.start, req.stop).indices(checkpoint.position)
            return self._load(tx, checkpoint, begin, end) if begin < end else []

    def _op_checkpoint(self, req: CheckpointRequest) -> Checkpoint:
        with self._transaction(write=False) as tx:
            return self._checkpoint_out(self._find_checkpoint(tx, self._key(req.thread_id),
                                                              req.checkpoint_id))

    def _op_checkpoints(self, req: CheckpointsRequest) -> list[Checkpoint]:
        tid = self._key(req.thread_id)
        with self._transaction(write=False) as tx:
            self._head(tx, tid)
            rows = tx.execute(sql.SELECT_CHECKPOINT + "WHERE c.thread_id = ? "
                              "ORDER BY c.seq DESC LIMIT ? OFFSET ?",
                              (tid, req.limit, req.offset)).fetchall()
        return [self._checkpoint_out(_checkpoint(row)) for row in rows]

    def _op_update_state(self, req: UpdateStateRequest) -> Checkpoint:
        tid = self._key(req.thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, tid, lock=True)
            if req.expected_head is not None and req.expected_head != info.head.id:
                raise ConflictError(
                    f"thread {req.thread_id!r} moved on: its head is {info.head.id!r}, not "
                    f"{req.expected_head!r}; read it again and retry")
            new = {**info.head.state, **req.state} if req.merge else req.state
            return self._checkpoint_out(self._save(
                tx, info, parent=info.head, state=new,
                metadata={"source": "update", **(req.metadata or {})}))

    def _op_rewind(self, req: RewindRequest) -> Checkpoint:
        tid = self._key(req.thread_id)
        with self._transaction(write=True) as tx:
            info = self._head(tx, tid, lock=True)
            target = self._find_checkpoint(tx, tid, req.checkpoint_id)
            head = self._save(tx, info, parent=target,
                              metadata={"source": "rewind", "from": info.head.id})
            # what the index must forget (positions from `kept` on) and relearn (the target's)
            kept = _shared_prefix(self._base_of(tx), info.head, target)
            back = self._load(tx, target, kept, target.position) \
                if self.index is not None and kept < target.position else []
        if self.index is not None and (kept < info.head.position or back):
            self._reindex_from(req.thread_id, info.metadata, kept, back)
        return self._checkpoint_out(head)

    def _reindex_from(self, thread_id: str, metadata: Mapping[str, Any], position: int,
                      messages: Sequence[Message]) -> None:
        """After a rewind committed: drop the index's items from ``position`` on and index
        ``messages`` there. A failure is logged (the rewind stands; search still checks every
        hit against the current history) with the repair."""
        assert self.index is not None
        try:
            self.index.remove_from(thread_id, position)
            if messages:
                self.index.index_messages(thread_id, self._metadata_out(metadata), messages,
                                          position)
        except RememError as exc:
            logger.warning("thread %r: rewound, but its search index was not updated (%s); "
                           "run ThreadIndex.index_thread to repair", thread_id, exc)

    def _op_fork(self, req: ForkRequest) -> Thread:
        return self._derive(req, copy=False)

    def _op_copy(self, req: CopyRequest) -> Thread:
        return self._derive(req, copy=True)

    def _derive(self, req: ForkRequest | CopyRequest, *, copy: bool) -> Thread:
        tid, public = self._key(req.thread_id), req.new_thread_id or new_id("thread")
        with self._transaction(write=True) as tx:
            info = self._head(tx, tid)
            base = self._find_checkpoint(tx, tid, req.checkpoint_id)
            ttl = ttl_or_default(req)
            self._insert_thread(
                tx, self._key(public),
                self._metadata_in({**self._metadata_out(info.metadata), **(req.metadata or {})}),
                info.ttl if ttl is NOT_PROVIDED else ttl, base=base, copy=copy,
                source=base.id, state_id=base.state_id, parent_id=None if copy else base.id,
                checkpoint_meta={"source": "copy" if copy else "fork", "from_thread": tid,
                                 "from_checkpoint": base.id})
        if copy and self.index is not None:
            self.index.index_thread(self, public)
        return self._handle(public)

    # -- operations: search, summaries, prompts (see remem.threads.compaction) ----------------

    def _op_search(self, req: SearchThreadsRequest) -> list[ThreadHit]:
        if self.index is None:
            raise UsageError("thread search needs an index: open the ThreadStore with "
                             "index=ThreadIndex(store) (a long-term store to index into)")
        return self.index.search(req.query, owner=req.owner, limit=req.limit,
                                 per_thread=req.per_thread, exclude=req.exclude, mode=req.mode,
                                 keep=self._held)

    def _held(self, found: Mapping[str, Sequence[MessageMatch]]
              ) -> dict[str, list[MessageMatch]]:
        """The matches that the threads' current histories hold, read in one transaction: the
        index is updated after a thread's change commits, so it may lag (or, after a crash,
        miss the change); the answer never does."""
        kept: dict[str, list[MessageMatch]] = {}
        with self._transaction(write=False) as tx:
            for thread_id, matches in found.items():
                try:
                    head = self._head(tx, self._key(thread_id)).head
                except NotFoundError:
                    continue
                kept[thread_id] = [
                    match for match in matches if 0 <= match.position < head.position
                    and self._load(tx, head, match.position, match.position + 1)[0].id
                    == match.message_id]
        return kept

    def _op_compact(self, req: CompactRequest) -> Checkpoint:
        from remem.threads.compaction import compact_thread
        from remem.threads.summary import SummaryPolicy

        model = req.model or self.summarizer
        if model is None:
            raise InvalidInputError(
                "compact needs a chat model: pass model= or open the store with summarizer=")
        done = compact_thread(self, req.thread_id, model,
                              req.policy or self.policy or SummaryPolicy(), force=req.force)
        return done or self.checkpoint(req.thread_id)

    def _op_context(self, req: ThreadContextRequest) -> list[Message]:
        from remem.threads.compaction import prompt_view

        return prompt_view(self, req.thread_id, max_tokens=req.max_tokens,
                           max_messages=req.max_messages, checkpoint_id=req.checkpoint_id,
                           counter=req.counter)

    asetup = in_thread(setup)
    asweep = in_thread(sweep)
