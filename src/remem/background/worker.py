"""Worker: claims due jobs, runs their handlers, heartbeats, and stops gracefully.

Two ways to drive one:

* :meth:`Worker.run_due` runs what is due now in the calling thread and returns (tests with a
  fake clock, ``Memory.flush``, cron-style use);
* :meth:`Worker.serve` (or :meth:`Worker.start`, in a thread) loops: it keeps up to
  ``concurrency`` jobs running in a thread pool, renews their leases every third of the lease,
  and sleeps up to ``poll`` seconds when nothing is due (:meth:`wake` cuts the sleep short).
  :meth:`stop` lets running jobs finish for ``grace`` seconds and releases the rest (they
  are queued again at once, the attempt not counted); ``remem worker`` calls it on SIGTERM.

A handler's error fails the attempt: the job is queued again after a backoff, or ``dead``
after its last attempt. Errors that no retry can fix (bad input, missing configuration,
something deleted) fail it at once (status ``failed``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from remem.background.jobs import Job
from remem.background.queue import JobQueue
from remem.errors import ConfigError, InvalidInputError, NotFoundError, UsageError

__all__ = ["Handler", "Worker", "worker_name"]

log = logging.getLogger("remem.worker")

#: what a job kind runs: the job in, a JSON-ready result out
Handler = Callable[[Job], Mapping[str, Any] | None]
#: errors a retry cannot fix: the job fails at once
PERMANENT: tuple[type[BaseException], ...] = (InvalidInputError, NotFoundError, UsageError,
                                              ConfigError)


def worker_name() -> str:
    """A name unique to this process and thread's worker: ``host:pid:n``."""
    return f"{socket.gethostname()}:{os.getpid()}:{next(_numbers)}"


class _Counter:
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def __next__(self) -> int:
        with self.lock:
            self.n += 1
            return self.n


_numbers = _Counter()


class Worker:
    """Runs the jobs of ``queue`` whose kind has a handler in ``handlers``."""

    def __init__(self, queue: JobQueue, handlers: Mapping[str, Handler], *,
                 name: str | None = None, concurrency: int = 1, lease: float = 120.0,
                 poll: float = 1.0, tenant: str | None = None) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not (
                1 <= concurrency <= 256):
            raise InvalidInputError(f"concurrency must be an integer from 1 to 256, got "
                                    f"{concurrency!r}")
        if not handlers:
            raise InvalidInputError("a worker needs at least one handler (kind -> function)")
        self.queue = queue
        self.handlers = dict(handlers)
        self.name = name or worker_name()
        self.concurrency = concurrency
        self.lease = lease
        self.poll = poll
        #: only this tenant's jobs (``None``: every tenant's; the handlers scope them)
        self.tenant = tenant
        #: jobs this worker finished (done) and failed attempts, since it started
        self.done = 0
        self.failed = 0
        self._held: dict[str, Job] = {}
        self._state = threading.Condition()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one job --------------------------------------------------------------------------------

    def run_job(self, job: Job) -> Job | None:
        """Run a job this worker claimed; record its result or failure. Returns the job as
        stored afterwards (``None`` if the worker lost it meanwhile)."""
        result, error = self._attempt(job)
        if error is not None:
            return self._failed(job, error)
        finished = self.queue.finish(job.id, self.name, dict(result or {}))
        if finished is None:
            log.warning("job %s finished after worker %s lost it", job.id, self.name)
            return None
        self.done += 1
        return finished

    def _attempt(self, job: Job) -> tuple[Mapping[str, Any] | None, Exception | None]:
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise UsageError(f"no handler for job kind {job.kind!r}; this worker runs "
                                 f"{sorted(self.handlers)}")
            return handler(job), None
        except Exception as exc:  # every failure is recorded on the job
            return None, exc

    def _failed(self, job: Job, exc: Exception) -> Job | None:
        self.failed += 1
        permanent = isinstance(exc, PERMANENT)
        log.warning("job %s (%s) attempt %d failed%s: %s", job.id, job.kind, job.attempts,
                    " permanently" if permanent else "", exc)
        return self.queue.fail(job.id, self.name, f"{type(exc).__name__}: {exc}",
                               permanent=permanent)

    def run_batch(self, jobs: Sequence[Job]) -> list[Job]:
        """Run jobs this worker claimed, one after the other, and record the successes in
        one transaction (short jobs: one commit per batch instead of one per job). A crash
        before that commit runs the batch again elsewhere: handlers are idempotent."""
        succeeded: list[tuple[str, Mapping[str, Any] | None]] = []
        after: list[Job] = []
        for job in jobs:
            result, error = self._attempt(job)
            if error is None:
                succeeded.append((job.id, dict(result or {})))
            else:
                failed = self._failed(job, error)
                if failed is not None:
                    after.append(failed)
        finished = self.queue.finish_many(self.name, succeeded)
        self.done += len(finished)
        return after + finished

    def run_due(self, *, limit: int = 1000) -> list[Job]:
        """Claim and run due jobs in this thread, one at a time, until none is due (at most
        ``limit``); return them as stored afterwards."""
        finished: list[Job] = []
        while len(finished) < limit:
            claimed = self.queue.claim(self.name, limit=1, lease=self.lease,
                                       kinds=list(self.handlers), tenant=self.tenant)
            if not claimed:
                break
            after = self.run_job(claimed[0])
            finished.append(after if after is not None else claimed[0])
        return finished

    # -- serving --------------------------------------------------------------------------------

    def wake(self) -> None:
        """Look for due jobs now instead of after the poll interval."""
        self._wake.set()

    def _track(self, job: Job, pool: ThreadPoolExecutor) -> None:
        def run() -> None:
            try:
                self.run_job(job)
            except Exception:  # the queue itself failed: the lease will expire, a retry runs
                log.exception("worker %s could not record job %s", self.name, job.id)
            finally:
                with self._state:
                    self._held.pop(job.id, None)
                    self._state.notify_all()

        with self._state:
            self._held[job.id] = job
        pool.submit(run)

    def _heartbeats(self, served: threading.Event) -> None:
        # renews every held lease each third of a lease, until serve() has returned
        while not served.wait(self.lease / 3):
            with self._state:
                held = list(self._held)
            for job_id in held:
                try:
                    if not self.queue.heartbeat(job_id, self.name, lease=self.lease):
                        log.warning("worker %s lost the lease of job %s", self.name, job_id)
                except Exception:
                    log.exception("heartbeat of job %s failed", job_id)

    def serve(self, *, grace: float = 30.0, kinds: Sequence[str] | None = None) -> None:
        """Run jobs until :meth:`stop`; then wait ``grace`` seconds for the running ones
        and release those still running."""
        wanted = list(kinds) if kinds else list(self.handlers)
        served = threading.Event()
        beats = threading.Thread(target=self._heartbeats, args=(served,),
                                 name=f"{self.name}-heartbeat", daemon=True)
        beats.start()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix=f"remem-job-{self.name}")
        try:
            while not self._stopping.is_set():
                with self._state:
                    while len(self._held) >= self.concurrency and not self._stopping.is_set():
                        self._state.wait(0.5)
                    free = self.concurrency - len(self._held)
                if self._stopping.is_set():
                    break
                try:
                    claimed = self.queue.claim(self.name, limit=free, lease=self.lease,
                                               kinds=wanted, tenant=self.tenant)
                except Exception:
                    log.exception("worker %s could not claim jobs", self.name)
                    claimed = []
                for job in claimed:
                    self._track(job, pool)
                if not claimed:
                    self._wake.wait(self.poll)
                    self._wake.clear()
        finally:
            deadline = time.monotonic() + grace
            with self._state:
                while self._held and time.monotonic() < deadline:
                    self._state.wait(max(0.0, min(0.5, deadline - time.monotonic())))
                left = list(self._held)
            for job_id in left:  # still running after the grace period: hand them back
                try:
                    self.queue.release(job_id, self.name)
                except Exception:
                    log.exception("could not release job %s", job_id)
            pool.shutdown(wait=False, cancel_futures=True)
            self._stopping.set()
            served.set()

    def start(self, *, grace: float = 30.0) -> None:
        """Serve in a daemon thread (see :meth:`serve`)."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self.serve, kwargs={"grace": grace},
                                        name=f"remem-worker-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Stop claiming; with ``wait``, return once :meth:`serve` has finished."""
        self._stopping.set()
        self._wake.set()
        with self._state:
            self._state.notify_all()
        if wait and self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> int:
        """Jobs running now."""
        return len(self._held)
