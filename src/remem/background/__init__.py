"""Background memory: a durable job queue in the store's database, debounced extraction,
and workers that run the jobs.

* :mod:`remem.background.jobs`: jobs and submissions as values, backoff and message merging;
* :mod:`remem.background.rules`: every status change as a pure function;
* :mod:`remem.background.storage`: SQLite, PostgreSQL and in-memory storage behind one seam;
* :mod:`remem.background.queue`: :class:`JobQueue`, the queue over any of them;
* :mod:`remem.background.handlers`: what each job kind does (extraction, no-op);
* :mod:`remem.background.worker`: :class:`Worker`, which claims, runs and heartbeats jobs;
* :mod:`remem.background.consolidation` / :mod:`~remem.background.forgetting`: merges
  (atomic, undone whole) and budgets enforced by eviction;
* :mod:`remem.background.access`: reads counted as uses, writes checked against the
  budgets stored by :mod:`remem.background.budgets`;
* :mod:`remem.background.thread_episodes`: episodes of idle threads, on a schedule.

See ``docs/background.md`` for the guarantees.
"""

from remem.background.jobs import STATUSES, Job, JobStatus, NewJob, QueueStats, Submission
from remem.background.queue import JobQueue

__all__ = ["STATUSES", "Job", "JobQueue", "JobStatus", "NewJob", "QueueStats", "Submission"]
