"""Episodes of old threads, the schedule: a ``consolidate`` job that summarises every thread
left idle for a while (``mem.background.summarize_threads(idle=7 * 86400, interval=86400)``).

A run is a ``consolidate`` job with a ``threads`` payload (the debounce key
``consolidate:threads``: at most one pending), so every worker already runs it; what a run
does (one ``episodes.extract`` job per idle thread) is episodic memory's, in
:mod:`remem.episodic.thread_episodes`, which registers it with
:func:`~remem.background.consolidation.register_consolidation_run`.
"""

from __future__ import annotations

from remem.background.consolidation import CONSOLIDATE
from remem.background.jobs import Job, Submission
from remem.background.queue import JobQueue
from remem.errors import InvalidInputError

__all__ = ["THREADS_KEY", "schedule_thread_summaries"]

#: the debounce key of the thread summary runs (one pending at a time)
THREADS_KEY = "consolidate:threads"


def schedule_thread_summaries(queue: JobQueue, *, idle: float, interval: float | None = None,
                              first_in: float = 0.0, limit: int = 1000,
                              tenant: str = "") -> Job:
    """Queue a run in ``first_in`` seconds (replacing a pending one); with ``interval``,
    each run queues the next."""
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not idle >= 0:
        raise InvalidInputError(f"idle must be a number of seconds >= 0, got {idle!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
        raise InvalidInputError(f"limit must be an integer from 1 to 100000, got {limit!r}")
    payload = {"threads": {"idle": float(idle), "limit": limit}, "interval": interval}
    return queue.submit(Submission(CONSOLIDATE, THREADS_KEY, THREADS_KEY, [], payload,
                                   delay=first_in, tenant=tenant))
