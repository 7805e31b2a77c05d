"""Apply a plan under the namespace's write lock, in one batch, and check it landed."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from remem.errors import ConflictError
from remem.memory.flow import Flow, StoreBatch
from remem.memory.locking import LockSettings, acquire, release_op
from remem.memory.reconcile import Plan
from remem.store.types import GetOp, Item, Namespace, Op, Result

__all__ = ["commit"]


def commit(namespace: Namespace, reads: Sequence[Op],
           plan_for: Callable[[list[Result]], Plan | Flow[Plan]],
           lock: LockSettings) -> Flow[Plan]:
    """Take the lock with ``reads`` in the same batch, build the plan from their results, and
    write it together with the lock's release (one atomic batch).

    ``plan_for`` may be a flow itself (it may then call the model while the lock is held),
    and may raise (a conflict it detected); the lock is released and the error goes to the
    caller. Every conditional write is read back in the writing batch; one that was
    skipped (another writer got past an expired lock) raises :class:`ConflictError`.
    """
    token, results = yield from acquire(namespace, reads, lock)
    released = False
    try:
        planned = plan_for(results)
        plan = (yield from planned) if isinstance(planned, Generator) else planned
        if not plan.ops:
            return plan
        checks = [GetOp(ns, key) for ns, key, _ in plan.guards]
        written = yield StoreBatch([*plan.ops, release_op(namespace, token), *checks])
        released = True
        found = written[len(written) - len(checks):] if checks else []
        for (ns, key, version), item in zip(plan.guards, found, strict=True):
            if not isinstance(item, Item) or item.value.get("version") != version:
                raise ConflictError(
                    f"memory {key} in {ns!r} was changed by another writer during this write "
                    "(its lock expired); read it again and retry"
                )
        return plan
    finally:
        if not released:
            yield StoreBatch([release_op(namespace, token)])
