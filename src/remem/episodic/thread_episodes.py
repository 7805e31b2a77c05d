"""Episodes of old threads: a scheduled run summarises every thread left idle for a while.

``mem.background.summarize_threads(idle=7 * 86400, interval=86400)`` schedules a run
(:mod:`remem.background.thread_episodes`) that looks at the threads of the memory's database
(the :class:`~remem.threads.ThreadStore` on the same SQLite file or PostgreSQL schema) and,
for each thread unchanged for ``idle`` seconds, queues one ``episodes.extract`` job
(:mod:`remem.episodic.jobs`): one chat-model call turns the conversation into episodes
(situation, thought, action, result), stored as episodic memory
(:class:`~remem.episodic.EpisodeStore`, searchable with ``remem episodes`` and
``/v1/episodes``).

Idempotent: the extraction job of a thread is keyed by the thread and its head checkpoint,
so a thread is summarised once for what it holds; one that gets new messages and goes idle
again is summarised again (its new head), never twice for the same messages. A run itself
is a ``consolidate`` job with a ``threads`` payload, so every worker already runs it: this
module registers :func:`thread_summary_run` for that payload
(:func:`~remem.background.consolidation.register_consolidation_run`) when imported, as the
facade (:mod:`remem.api`) does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from remem.background.consolidation import register_consolidation_run
from remem.background.jobs import Job
from remem.background.queue import JobQueue
from remem.background.thread_episodes import schedule_thread_summaries
from remem.db import database_of
from remem.episodic.jobs import EXTRACT_EPISODES, extract_job
from remem.errors import UnsupportedError
from remem.memory.facade import MemoryFacade
from remem.threads import ThreadStore

__all__ = ["ThreadSummaryReport", "summarize_idle_threads", "thread_summary_run",
           "threads_beside"]

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


def threads_beside(store: Any) -> ThreadStore:
    """The thread store in the same database as ``store`` (:func:`remem.db.database_of`:
    its SQLite file or PostgreSQL schema)."""
    db = database_of(store, "ThreadStore")
    if db is None:
        raise UnsupportedError("summarising threads needs the memory in a SQLite file or "
                               "PostgreSQL (its threads live beside it); an in-memory memory "
                               "has no thread store to read")
    return ThreadStore.open(db)


def summarize_idle_threads(memory: MemoryFacade, queue: JobQueue,
                           payload: Mapping[str, Any], *,
                           tenant: str = "") -> ThreadSummaryReport:
    """One run: queue an ``episodes.extract`` job for every thread idle for
    ``payload["idle"]`` seconds that has none for its current messages."""
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
                existing = queue.list_jobs(thread_id=info.thread_id, kind=EXTRACT_EPISODES,
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


def thread_summary_run(memory: MemoryFacade, job: Job, queue: JobQueue | None
                       ) -> Mapping[str, Any]:
    """A ``consolidate`` job with a ``threads`` payload: one :func:`summarize_idle_threads`
    run, then (with ``queue`` and an ``interval``) the next one scheduled."""
    own = queue if queue is not None else JobQueue.beside(memory.store)
    try:
        settings = job.payload["threads"]
        report = summarize_idle_threads(memory, own, settings, tenant=job.tenant)
        interval = job.payload.get("interval")
        if queue is not None and interval:
            schedule_thread_summaries(queue, idle=settings["idle"], interval=interval,
                                      first_in=interval, limit=settings.get("limit", 1000),
                                      tenant=job.tenant)
        return report.to_dict()
    finally:
        if own is not queue:
            own.close()


register_consolidation_run("threads", thread_summary_run)
