"""Reads count as uses, and writes are checked against budgets, off the caller's thread.

Every search hit and get of a memory (``Memory.search`` / ``get`` and their async twins, so
also the HTTP, CLI and MCP reads) is a *use*: the flows yield a
:class:`~remem.memory.observers.Touched` notice, which lands in the store's
:class:`AccessRecorder`. The recorder only queues it; a thread of its own adds the queued
reads to ``remem_access`` (``uses`` and ``last_accessed`` per memory id, beside the jobs)
in **one transaction per batch** (a batch holds every read queued since the last one, so
never more than one write per search). A failing write is logged and dropped: counting
never slows down or fails a read. The retention score of forgetting reads these counts.

Writes yield :class:`~remem.memory.observers.Wrote`; the same thread checks the written
namespaces against their stored budgets (:mod:`remem.background.budgets`) and queues a
``forget`` job for one over its budget, and adds the history events each write made to the
tenant's memory changes per UTC day and op (``remem_activity``, read by
:mod:`remem.usage`), kept for the next batch when the write fails.

What is not guaranteed: reads and writes still queued when the process dies (``kill -9``)
are not counted or checked (:meth:`AccessRecorder.flush` runs at exit, and when the memory
closes); the next write to a namespace checks it again. Lost memory-change counts are at
most one :data:`WINDOW` of writes; the history itself is in the store, and
:func:`remem.usage.count_history` counts a window from it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from remem.background.budgets import BudgetCheck, Budgets
from remem.background.queue import JobQueue
from remem.memory.observers import Touched, Wrote, observer_for, set_observer_factory
from remem.store.types import Namespace

__all__ = ["AccessRecorder", "recorder_of", "tenant_of"]

log = logging.getLogger("remem.background")

#: seconds the recorder's thread waits for more notices before it stops (and closes its
#: connections); the next notice starts it again
LINGER = 1.0
#: seconds the thread lets notices gather before it writes them: under a stream of reads,
#: one transaction per window instead of one per read
WINDOW = 0.05


def tenant_of(store: Any) -> str:
    """The server tenant a store view belongs to (``""`` for a store of its own)."""
    tenant = getattr(store, "tenant", None)
    if isinstance(tenant, str):
        return tenant
    prefix = getattr(store, "prefix", None)
    if isinstance(prefix, tuple) and len(prefix) == 2 and prefix[0] == "tenants":
        return str(prefix[1])  # remem.server.keys.tenant_prefix
    return ""


class AccessRecorder:
    """The observer of one store: counts reads and checks written namespaces' budgets.

    ``clock``: when a read happened (a memory with a fake clock sets its own);
    ``tenant``: whose budgets apply (derived from a server's tenant view); ``queue``: where
    the counts go (default: the queue beside the store, opened while there is work).
    """

    def __init__(self, store: Any, *, clock: Callable[[], float] = time.time,
                 tenant: str | None = None, queue: JobQueue | None = None) -> None:
        self._store = weakref.ref(store)
        self.clock = clock
        self.tenant = tenant_of(store) if tenant is None else tenant
        self._reads: Counter[str] = Counter()
        self._last: dict[str, float] = {}
        self._written: set[Namespace] = set()
        #: (UTC day, history op) -> memory changes not yet added to remem_activity
        self._changes: Counter[tuple[str, str]] = Counter()
        self._state = threading.Condition()
        self._draining = threading.Lock()
        self._thread: threading.Thread | None = None
        self._queue: JobQueue | None = queue
        self._own_queue = queue is None
        #: reads written, budget checks made, drains that failed (since it started)
        self.recorded = 0
        self.checks: list[BudgetCheck] = []
        self.errors = 0
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- the observer side (the reader's or writer's thread) ----------------------------------

    def observe(self, notice: Touched | Wrote) -> None:
        """Queue ``notice``; returns at once."""
        with self._state:
            if isinstance(notice, Touched):
                now = self.clock()
                for memory_id in notice.memory_ids:
                    self._reads[memory_id] += 1
                    self._last[memory_id] = now
            else:
                self._written.add(tuple(notice.namespace))
                for at, op in notice.changes:
                    self._changes[(datetime.fromtimestamp(at, UTC).date().isoformat(), op)] += 1
            self._state.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, daemon=True,
                                                name="remem-access")
                self._thread.start()

    # -- the recorder's thread --------------------------------------------------------------------

    def _pending(self) -> bool:
        return bool(self._reads or self._written or self._changes)

    def _serve(self) -> None:
        while True:
            with self._state:
                if not self._pending():
                    self._state.wait(LINGER)
                if not self._pending():
                    self._thread = None
                    break
            time.sleep(WINDOW)
            self.flush()
        self._close_queue()

    def _close_queue(self) -> None:
        with self._draining:
            if self._queue is not None and self._own_queue:
                self._queue.close()
                self._queue = None

    def flush(self) -> None:
        """Write the queued reads and check the written namespaces now, in this thread."""
        with self._draining:
            with self._state:
                reads = [(i, n, self._last[i]) for i, n in self._reads.items()]
                written = sorted(self._written)
                changes = dict(self._changes)
                self._reads.clear()
                self._last.clear()
                self._written.clear()
                self._changes.clear()
            if not reads and not written and not changes:
                return
            store = self._store()
            if store is None:
                return
            try:
                if self._queue is None:
                    # the clock as it is at each call: a memory may set its own later
                    self._queue = JobQueue.beside(store, clock=lambda: self.clock())
                if changes:
                    self._queue.counters.add_activity(
                        [(self.tenant, day, op, n) for (day, op), n in changes.items()])
                    changes = {}
                self._queue.touch(reads)
                self.recorded += sum(n for _, n, _ in reads)
                if written:
                    self.checks += Budgets(self._queue, tenant=self.tenant).check(store, written)
                    del self.checks[:-100]  # the last ones are enough to look at
            except Exception:  # a database gone or read-only: counting never fails a read
                with self._state:  # changes not written wait for the next batch
                    self._changes.update(changes)
                self.errors += 1
                # said once per recorder (a read-only database would say it at every read)
                (log.warning if self.errors == 1 else log.debug)(
                    "could not record %d memory reads / check %d namespaces (later failures "
                    "are logged at debug level)", len(reads), len(written), exc_info=True)

    def close(self) -> None:
        """Flush, and close the connections (a later notice opens them again)."""
        self.flush()
        self._close_queue()


def recorder_of(store: Any) -> AccessRecorder | None:
    """The recorder of ``store`` (made on first use)."""
    observer = observer_for(store)
    return observer if isinstance(observer, AccessRecorder) else None


_LIVE: weakref.WeakSet[AccessRecorder] = weakref.WeakSet()
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


set_observer_factory(lambda store: AccessRecorder(store))
