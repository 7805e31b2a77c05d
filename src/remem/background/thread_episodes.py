"""Episodes of old threads: a scheduled run summarises every thread left idle for a while.

``mem.background.summarize_threads(idle=7 * 86400, interval=86400)`` schedules a run that
looks at the threads of the memory's database (the :class:`~remem.threads.ThreadStore` on
the same SQLite file or PostgreSQL schema) and, for each thread unchanged for ``idle``
seconds, queues one ``episodes.extract`` job (:mod:`remem.episodic.jobs`): one chat-model
call turns the conversation into episodes (situation, thought, action, result), stored as
episodic memory (:class:`~remem.episodic.EpisodeStore`, searchable with ``remem episodes``
and ``/v1/episodes``).

Idempotent: the extraction job of a thread is keyed by the thread and its head checkpoint,
so a thread is summarised once for what it holds; one that gets new messages and goes idle
again is summarised again (its new head), never twice for the same messages. A run itself
is a ``consolidate`` job with a ``threads`` payload (the debounce key
``consolidate:threads``: at most one pending), so every worker already runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.background.jobs import Job, Submission
from remem.background.queue import JobQueue
from remem.errors import InvalidInputError, UnsupportedError

if TYPE_CHECKING:
    from remem.api import Memory
    from remem.threads import ThreadStore

__all__ = ["THREADS_KEY", "ThreadSummaryReport", "schedule_thread_summaries",
           "summarize_idle_threads", "threads_beside"]

#: the debounce key of the thread summary runs (one pending at a time)
THREADS_KEY = "consolidate:threads"
_PAGE = 100


@dataclass(frozen=True, slots=True)
class ThreadSummaryReport:
    """What a run found: threads looked at, idle ones, extraction jobs queued now, and
    idle threads already summarised (their job exists)."""

    threads: int
    idle: int
    queued: tuple[str, ...]
    already: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"threads": self.threads, "idle": self.idle, "queued": list(self.queued),
                "already": self.already}


def schedule_thread_summaries(queue: JobQueue, *, idle: float, interval: float | None = None,
                              first_in: float = 0.0, limit: int = 1000,
                              tenant: str = "") -> Job:
    """Queue a run in ``first_in`` seconds (replacing a pending one); with ``interval``,
    each run queues the next."""
    from remem.background.consolidation import CONSOLIDATE

    if isinstance(idle, bool) or not isinstance(idle, int | float) or not idle >= 0:
        raise InvalidInputError(f"idle must be a number of seconds >= 0, got {idle!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
        raise InvalidInputError(f"limit must be an integer from 1 to 100000, got {limit!r}")
    payload = {"threads": {"idle": float(idle), "limit": limit}, "interval": interval}
    return queue.submit(Submission(CONSOLIDATE, THREADS_KEY, THREADS_KEY, [], payload,
                                   delay=first_in, tenant=tenant))


def threads_beside(store: Any) -> ThreadStore:
    """The thread store in the same database as ``store`` (its SQLite file or PostgreSQL
    schema)."""
    from remem.threads import ThreadStore

    while hasattr(store, "inner") and not hasattr(store, "dsn") and not hasattr(store, "path"):
        store = store.inner
    dsn = getattr(store, "dsn", None)
    if isinstance(dsn, str):
        return ThreadStore.open(dsn, schema=getattr(store, "schema", "remem"))
    path = getattr(store, "path", None)
    if isinstance(path, str) and path != ":memory:":
        return ThreadStore.open(path)
    raise UnsupportedError("summarising threads needs the memory in a SQLite file or "
                           "PostgreSQL (its threads live beside it); an in-memory memory "
                           "has no thread store to read")


def summarize_idle_threads(memory: Memory, queue: JobQueue, payload: Mapping[str, Any], *,
                           tenant: str = "") -> ThreadSummaryReport:
    """One run: queue an ``episodes.extract`` job for every thread idle for
    ``payload["idle"]`` seconds that has none for its current messages."""
    from remem.episodic.jobs import extract_job

    if tenant:
        raise UnsupportedError("thread summaries run over the database's own threads; a "
                               "server tenant's threads are not summarised yet")
    idle = float(payload.get("idle", 7 * 86400.0))
    limit = int(payload.get("limit", 1000))
    cutoff = memory.clock() - idle
    seen = idle_count = already = 0
    queued: list[str] = []
    with threads_beside(memory.store) as threads:
        offset = 0
        while seen < limit:
            page = threads.list_threads(limit=min(_PAGE, limit - seen), offset=offset)
            for info in page:
                seen += 1
                if info.updated_at > cutoff or info.length == 0:
                    continue
                idle_count += 1
                key = f"thread-episodes:{info.thread_id}:{info.head.id}"
                existing = queue.list_jobs(thread_id=info.thread_id, kind="episodes.extract",
                                           limit=1000)
                if any(job.idempotency_key == key for job in existing):
                    already += 1
                    continue
                messages = threads.messages(info.thread_id)
                job = queue.enqueue(extract_job(messages, thread_id=info.thread_id,
                                                idempotency_key=key, tenant=tenant))
                queued.append(job.id)
            if len(page) < _PAGE:
                break
            offset += len(page)
    return ThreadSummaryReport(seen, idle_count, tuple(queued), already)
