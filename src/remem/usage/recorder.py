"""Durable chat model usage: :class:`RecordingChatModel` wraps any
:class:`~remem.llm.ChatModel` and hands what each call cost to a :class:`UsageRecorder`,
which adds it to the ``remem_usage`` table of a :class:`~remem.usage.storage.UsageStorage`
(the server's SQLite file or PostgreSQL schema, beside the job queue).

Write policy: **no buffering**. Each call's usage is written by an upsert that adds
(``calls = calls + 1``...) before :meth:`RecordingChatModel.complete` returns, one short
transaction per call: a chat model call takes hundreds of milliseconds, the upsert about a
millisecond, so a buffer would save little and lose what a ``kill -9`` catches in it.
Concurrent writers (threads, server and worker processes) each add their own figures; no
count overwrites another. A write that fails (database locked past its timeout, gone) never
fails the call that was answered: its row is kept in memory and written with the next one,
at :meth:`UsageRecorder.flush`, or at exit; only such rows are lost to a ``kill -9``.

Calls that raise (the provider refused or was unreachable) are not counted: there are no
token figures to count. The wrapped model's own :class:`~remem.llm.UsageLedger` still
counts every call in the process (``model.usage`` is the inner model's).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from remem.llm.base import ChatModel, ChatRequest, ChatResponse, Usage, WrappedChatModel
from remem.usage.activity import ActivityReport, activity_report
from remem.usage.records import DayWindow, UsageReport, UsageRow, day_of
from remem.usage.storage import UsageStorage, usage_storage_of

__all__ = ["RecordingChatModel", "UsageRecorder"]

log = logging.getLogger("remem.usage")

_Key = tuple[str, str, str, str]


@runtime_checkable
class Counted(Protocol):
    """What keeps its counters in a :class:`UsageStorage` (a job queue does)."""

    counters: UsageStorage

    def close(self) -> None:
        """Release what it opened."""
        ...


class UsageRecorder:
    """Adds chat model usage to the ``remem_usage`` rows of ``storage`` (or of a job
    queue's counters), per tenant, UTC day, operation label and model; reads them back as a
    :class:`~remem.usage.UsageReport`.

    ``owns_storage``: close the storage (its ``close``) with the recorder. ``clock``: when a
    call happened.
    """

    def __init__(self, storage: UsageStorage | Counted, *, owns_storage: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self.storage: UsageStorage = (storage.counters if isinstance(storage, Counted)
                                      else storage)
        self._owned = storage if owns_storage else None
        self.clock = clock
        self._lock = threading.Lock()
        self._unwritten: dict[_Key, Usage] = {}
        #: calls written, and writes that failed (their rows wait in memory), since it started
        self.recorded = 0
        self.errors = 0
        with _LIVE_LOCK:
            _LIVE.add(self)

    @classmethod
    def beside(cls, store: Any, *, clock: Callable[[], float] = time.time) -> UsageRecorder:
        """A recorder in the database of ``store`` (:func:`remem.db.database_of`), or this
        process's memory for an in-memory store."""
        return cls(usage_storage_of(store), owns_storage=True, clock=clock)

    def record(self, tenant: str, operation: str, model: str, usage: Usage, *,
               at: float | None = None) -> None:
        """Add ``usage`` to the row of ``(tenant, day of at, operation, model)`` now, with any
        rows an earlier failed write left behind. Never raises on a database error."""
        key = (tenant, day_of(self.clock() if at is None else at), operation, model)
        with self._lock:
            self._unwritten[key] = self._unwritten.get(key, Usage()) + usage
        self.flush()

    def flush(self) -> bool:
        """Write the rows waiting in memory; whether none is left waiting."""
        with self._lock:
            rows = self._unwritten
            self._unwritten = {}
        if not rows:
            return True
        try:
            self.storage.add_usage([(*key, u.calls, u.input_tokens, u.output_tokens)
                                    for key, u in rows.items()])
        except Exception:  # counting never fails the call it counts; retried next time
            with self._lock:
                for key, usage in rows.items():
                    self._unwritten[key] = self._unwritten.get(key, Usage()) + usage
                self.errors += 1
            (log.warning if self.errors == 1 else log.debug)(
                "could not record chat model usage (%d rows kept in memory, written with "
                "the next call); later failures are logged at debug level", len(rows),
                exc_info=True)
            return False
        self.recorded += sum(u.calls for u in rows.values())
        return True

    def unwritten(self) -> Usage:
        """What waits in memory after failed writes (lost if the process is killed)."""
        with self._lock:
            return Usage.total(self._unwritten.values())

    def report(self, window: DayWindow, *, tenant: str | None) -> UsageReport:
        """The rows of ``window`` for ``tenant`` (``None``: every tenant's)."""
        rows = self.storage.usage(tenant, window.since.isoformat(), window.until.isoformat())
        return UsageReport(window, tuple(UsageRow.of_storage(row) for row in rows))

    def activity(self, window: DayWindow, *, tenant: str | None) -> ActivityReport:
        """Memories written, changed and removed per day of ``window`` for ``tenant``
        (``None``: every tenant's), from the counters the writes added
        (:mod:`remem.usage.activity`)."""
        rows = self.storage.activity(tenant, window.since.isoformat(),
                                     window.until.isoformat())
        return activity_report(rows, window)

    def close(self) -> None:
        """Flush, and close the storage if the recorder owns it."""
        self.flush()
        if self._owned is not None:
            self._owned.close()


class RecordingChatModel(WrappedChatModel):
    """A :class:`~remem.llm.ChatModel` that answers through ``inner`` and records what each
    call cost for ``tenant`` (model name: ``inner.model``; operation: the request's label).

    Anything else (``close``, a scripted model's ``requests``) is the inner model's.
    """

    def __init__(self, inner: ChatModel, recorder: UsageRecorder, *, tenant: str = "") -> None:
        super().__init__(inner)
        self.recorder = recorder
        self.tenant = tenant

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer through the inner model, then record the answer's usage."""
        response = self.inner.complete(request)
        self.recorder.record(self.tenant, request.operation, self.inner.model, response.usage)
        return response

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async :meth:`complete`; the write runs in a thread, off the event loop."""
        response = await self.inner.acomplete(request)
        await asyncio.to_thread(self.recorder.record, self.tenant, request.operation,
                                self.inner.model, response.usage)
        return response

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"RecordingChatModel({self.inner!r}, tenant={self.tenant!r})"


_LIVE: weakref.WeakSet[UsageRecorder] = weakref.WeakSet()
# recorders are made in any thread, and the exit flush walks the set: a walk that met an
# addition would fail ("Set changed size") and leave the rest unflushed
_LIVE_LOCK = threading.Lock()


@atexit.register
def _flush_all() -> None:
    with _LIVE_LOCK:
        recorders = list(_LIVE)
    for recorder in recorders:
        with contextlib.suppress(Exception):  # exiting: nothing more to do
            recorder.flush()
