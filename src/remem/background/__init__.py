"""Background memory: a durable job queue in the store's database, debounced extraction,
and workers that run the jobs.

* :mod:`remem.background.jobs`: jobs and submissions as values, backoff and message merging;
* :mod:`remem.background.rules`: every status change as a pure function;
* :mod:`remem.background.storage`: SQLite, PostgreSQL and in-memory storage behind one seam;
* :mod:`remem.background.queue`: :class:`JobQueue`, the queue over any of them;
* :mod:`remem.background.kinds`: the registry of job kinds a worker runs, which each family
  fills with its own (:mod:`remem.background.extraction` registers extraction, no-op,
  consolidation and forgetting; :mod:`remem.episodic.jobs` and :mod:`remem.procedural.jobs`
  theirs): this package never imports a family;
* :mod:`remem.background.worker`: :class:`Worker`, which claims, runs and heartbeats jobs;
* :mod:`remem.background.consolidation` / :mod:`~remem.background.forgetting`: merges
  (atomic, undone whole) and budgets enforced by eviction;
* :mod:`remem.background.access`: reads counted as uses, writes checked against the
  budgets stored by :mod:`remem.background.budgets` (the observer of the memory flows,
  registered with :mod:`remem.memory.observers` when imported);
* :mod:`remem.background.thread_episodes`: the schedule of the episodes of idle threads (the
  run itself is :mod:`remem.episodic.thread_episodes`).

See ``docs/background.md`` for the guarantees.
"""

from remem.background.jobs import STATUSES, Job, JobStatus, NewJob, QueueStats, Submission
from remem.background.queue import JobQueue

__all__ = ["STATUSES", "Job", "JobQueue", "JobStatus", "NewJob", "QueueStats", "Submission"]
