"""``remem worker``: run background jobs (debounced extraction) from the memory database.

Any number of workers, in any number of processes or machines, may run against one database:
claims are exclusive (see :mod:`remem.background.queue`). SIGTERM or Ctrl-C stops a worker
gracefully: it claims nothing more, lets running jobs finish for ``--grace`` seconds, and
hands back the rest (they run again at once elsewhere, the attempt not counted). A worker
killed outright leaves its jobs to be claimed again when their lease expires.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

import click

from remem.api import Memory
from remem.background.consolidation import CONSOLIDATE
from remem.background.extraction import EXTRACT, NOOP, handlers
from remem.background.forgetting import FORGET
from remem.background.queue import JobQueue
from remem.background.worker import Handler, Worker
from remem.cli.common import CommandFailed, db_option, embedder_hint, embedder_option, make_embedder
from remem.cli.jobs import DB_HELP, open_queue
from remem.cli.render import emit_json
from remem.cli.serve import checked_shards, shard_options
from remem.episodic.jobs import EXTRACT_EPISODES
from remem.llm.config import model_from_env
from remem.procedural.jobs import OPTIMIZE
from remem.store import BaseStore, check_embedder
from remem.store.scoped import ScopedStore
from remem.usage import RecordingChatModel, UsageRecorder

if TYPE_CHECKING:
    from remem.shards import ShardRouter

__all__ = ["MemoryHandlers", "worker_command"]


class MemoryHandlers:
    """The handlers of a worker over one memory database; a server tenant's job runs on that
    tenant's view of the store (as ``remem serve`` scopes it), its chat model calls recorded
    for the tenant in the database's usage rows (:mod:`remem.usage`) once :meth:`handlers`
    has named the queue."""

    def __init__(self, memory: Memory, router: ShardRouter | None = None) -> None:
        self.memory = memory
        #: tenants' shards (``remem worker --shard``): a tenant's job runs on its shard
        self.router = router
        self._tenants: dict[str, Memory] = {}
        self._lock = threading.Lock()
        #: where tenants' chat model calls are recorded (set by :meth:`handlers`)
        self.usage: UsageRecorder | None = None

    def memory_for(self, tenant: str) -> Memory:
        """The memory a job of ``tenant`` writes to."""
        if not tenant:
            return self.memory
        with self._lock:
            found = self._tenants.get(tenant)
            if found is None:
                from remem.server.keys import tenant_prefix

                inner: BaseStore = self.memory.store
                if self.router is not None:
                    inner = self.router.tenant_store(tenant)
                store: BaseStore = ScopedStore(inner, tenant_prefix(tenant))
                llm = self.memory.llm
                if llm is not None and self.usage is not None:
                    llm = RecordingChatModel(llm, self.usage, tenant=tenant)
                found = self._tenants[tenant] = Memory(store, llm=llm)
            return found

    def handlers(self, queue: JobQueue) -> dict[str, Handler]:
        """Kind -> handler (``queue``: where scheduled consolidation queues its next run, and
        whose database records the tenants' chat model usage)."""
        self.usage = UsageRecorder(queue)
        return handlers(self.memory_for, queue)


@click.command(name="worker")
@db_option(DB_HELP)
@embedder_option("Embedder of the memory database (the one its vectors were made with).")
@click.option("--schema", default="remem", show_default=True,
              help="PostgreSQL schema (the store's).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Jobs run at once (threads).")
@click.option("--lease", type=click.FloatRange(1, 86400), default=60.0, show_default=True,
              help="Seconds a claimed job stays this worker's without a heartbeat "
                   "(heartbeats renew it every third).")
@click.option("--poll", type=click.FloatRange(0.01, 3600), default=1.0, show_default=True,
              help="Seconds between looks at the queue when nothing is due.")
@click.option("--grace", type=click.FloatRange(0, 86400), default=30.0, show_default=True,
              help="On SIGTERM, seconds running jobs get to finish before they are released.")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice([EXTRACT, CONSOLIDATE, FORGET, OPTIMIZE, EXTRACT_EPISODES,
                                 NOOP]),
              help="Run only these job kinds (repeatable; default: all).")
@click.option("--once", is_flag=True,
              help="Run the jobs due now, then exit (for cron or tests).")
@click.option("--json", "json_output", is_flag=True,
              help="With --once: print the jobs run as one JSON document.")
@shard_options
@click.pass_context
def worker_command(ctx: click.Context, db: str, embedder: str, schema: str, concurrency: int,
                   lease: float, poll: float, grace: float, kinds: tuple[str, ...],
                   once: bool, json_output: bool, shards: tuple[str, ...] = (),
                   placement: str = "fewest") -> None:
    """Run background jobs (debounced extraction) until SIGTERM.

    The chat model comes from REMEM_LLM_* (see `remem add --help`). Queue depth and
    failures: `remem jobs stats`.
    """
    queue: JobQueue = open_queue(ctx, db, schema=schema)
    vectors = False if embedder == "none" else make_embedder(embedder)
    with embedder_hint(db):
        # the model built once here (not on the first job) so tenants' jobs share one
        # client, each through its own usage-recording wrapper
        memory = Memory.open(db, embedder=vectors, llm=model_from_env())
    ctx.call_on_close(memory.close)
    check_embedder(memory.store, db)
    router = None
    if shards:
        from remem.cli.shards import open_router

        router = open_router(db, checked_shards(shards), placement, vectors, schema=schema)
        ctx.call_on_close(router.close)
    run = MemoryHandlers(memory, router).handlers(queue)
    if kinds:
        run = {kind: run[kind] for kind in kinds}
    worker = Worker(queue, run, concurrency=concurrency, lease=lease, poll=poll)
    if once:
        jobs = worker.run_due()
        if json_output:
            emit_json({"jobs": [job.to_dict() for job in jobs]})
        else:
            click.echo(f"ran {len(jobs)} jobs: {worker.done} done, {worker.failed} failed "
                       "attempts")
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stop(wait=False)

    if threading.current_thread() is not threading.main_thread():
        raise CommandFailed("remem worker must run in the main thread (it handles SIGTERM)")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    click.echo(f"worker {worker.name}: {concurrency} at once, kinds "
               f"{', '.join(sorted(run))}", err=True)
    worker.serve(grace=grace)
    click.echo(f"worker {worker.name} stopped: {worker.done} done, {worker.failed} failed "
               "attempts", err=True)

