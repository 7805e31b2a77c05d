"""A short write lock per namespace, built from store batches alone.

Why: a reconciliation writes several records at once (invalidate one, insert another, history
events), and a conditional put protects one item only. So writers to one namespace take
turns, and each writer's changes plus the lock's release are one atomic batch.

How: a writer puts a ticket item (with a TTL, so a crashed writer's ticket expires) and, in
the same batch, lists the tickets of the namespace. Acquiring batches of one namespace are
serialised (SQLite's write transactions and the in-memory store's lock do it; on a backend
running batches at READ COMMITTED, a put to one shared "gate" row at the start of the batch
queues them), so of two writers the later batch sees the earlier ticket: a writer holds the
lock only when its ticket is the only one. Otherwise it removes its ticket and tries again
after a random pause. Because the reads that validate a plan run in the acquiring batch,
they see a state no other writer can change until the release.

A ticket names its holder's process and, for an async writer, its event loop. A blocking
writer on a loop's thread that finds the lock held by a task of that same loop fails at once
(:class:`ConflictError` naming the async twin): the task cannot finish while the thread
blocks, so waiting would only run out the ticket's TTL.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from remem.errors import ConflictError
from remem.memory.flow import Flow, Pause, StoreBatch, blocked_loop, driver
from remem.memory.records import GATES_NAMESPACE, locks_namespace
from remem.messages.types import new_id
from remem.store.types import DeleteOp, Namespace, Op, PutOp, Result, SearchOp

__all__ = ["LockSettings", "acquire", "release_op"]


@dataclass(frozen=True, slots=True)
class LockSettings:
    """``ttl``: seconds a ticket lives (a crashed writer blocks others at most this long);
    ``timeout``: seconds to keep trying before :class:`ConflictError`."""

    ttl: float = 10.0
    timeout: float = 30.0


def release_op(namespace: Namespace, token: str) -> DeleteOp:
    """The delete that releases the lock (put it in the writing batch)."""
    return DeleteOp(locks_namespace(namespace), token)


def acquire(namespace: Namespace, reads: Sequence[Op], settings: LockSettings,
            clock: Callable[[], float] = time.monotonic) -> Flow[tuple[str, list[Result]]]:
    """Take the lock of ``namespace``; return the ticket and the results of ``reads``, which
    run in the acquiring batch (so they see a state no other writer can change now)."""
    where = locks_namespace(namespace)
    label = json.dumps(list(namespace), ensure_ascii=False)
    deadline = clock() + settings.timeout
    attempt = 0
    while True:
        token = new_id("lock")
        ops: list[Op] = [
            # every acquiring batch of this namespace writes this one row first: on a backend
            # whose batches run at READ COMMITTED, its row lock queues them, so each sees the
            # tickets of those before it (SQLite and the in-memory store serialise anyway)
            PutOp(GATES_NAMESPACE, label, {"type": "gate"}, index=False, ttl=None),
            PutOp(where, token, {"type": "lock", "ns": label, **driver()}, ttl=settings.ttl,
                  index=False),
            # exact namespace only: tickets of deeper namespaces share the prefix
            SearchOp(where, filter={"ns": label}, limit=2, refresh_ttl=False),
            *reads,
        ]
        results = yield StoreBatch(ops)
        holders = results[2]
        assert isinstance(holders, list)
        if [item.key for item in holders] == [token]:
            return token, results[3:]
        yield StoreBatch([DeleteOp(where, token)])
        starved = blocked_loop()
        if starved is not None and any(
                item.value.get("loop") == starved and item.value.get("pid") == driver()["pid"]
                for item in holders if item.key != token):
            raise ConflictError(
                f"namespace {namespace!r} is being written by a task of the event loop this "
                "blocking call runs on; the task cannot finish while the call waits: await "
                "the async method (e.g. `await memory.aadd(...)`) or await the task first")
        attempt += 1
        if clock() > deadline:
            raise ConflictError(
                f"could not get a turn to write to namespace {namespace!r} within "
                f"{settings.timeout:g} s (other writers kept it busy); retry later"
            )
        yield Pause(random.uniform(0.0005, 0.003) * min(attempt, 20))
