"""Apply a plan under the namespace's write lock, in one batch, and check it landed."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence

from remem.errors import ConflictError
from remem.memory.flow import Flow, StoreBatch
from remem.memory.locking import LockSettings, acquire, release_op
from remem.memory.observers import Wrote
from remem.memory.reconcile import Plan
from remem.memory.records import HEADS_NAMESPACE
from remem.store.types import GetOp, Item, Namespace, Op, PutOp, Result

__all__ = ["commit", "head_of", "head_op"]


def head_key(namespace: Namespace) -> str:
    """The key of a namespace's change counter."""
    return json.dumps(list(namespace), ensure_ascii=False)


def head_op(namespace: Namespace) -> GetOp:
    """Read the change counter of ``namespace`` (see :func:`head_of`)."""
    return GetOp(HEADS_NAMESPACE, head_key(namespace))


def head_of(result: Result) -> int:
    """The counter read by :func:`head_op`: how many commits changed the namespace."""
    return int(result.value.get("n", 0)) if isinstance(result, Item) else 0


def _changes(ops: Sequence[Op]) -> tuple[tuple[float, str], ...]:
    """``(at, op)`` of the history events among ``ops``."""
    return tuple((float(op.value["at"]), str(op.value["op"])) for op in ops
                 if isinstance(op, PutOp) and isinstance(op.value, dict)
                 and op.value.get("type") == "memory_event")


def commit(namespace: Namespace, reads: Sequence[Op],
           plan_for: Callable[[list[Result], int], Plan | Flow[Plan]],
           lock: LockSettings) -> Flow[Plan]:
    """Take the lock with ``reads`` in the same batch, build the plan from their results, and
    write it together with the lock's release (one atomic batch).

    ``plan_for`` gets the reads' results and the namespace's change counter (every commit
    that writes adds one, in the same batch: a reader that saw the same counter saw the same
    namespace). It may be a flow itself (it may then call the model while the lock is held),
    and may raise (a conflict it detected); the lock is released and the error goes to the
    caller. Every conditional write is read back in the writing batch; one that was
    skipped (another writer got past an expired lock) raises :class:`ConflictError`.
    """
    token, results = yield from acquire(namespace, [*reads, head_op(namespace)], lock)
    released = False
    try:
        head = head_of(results[-1])
        planned = plan_for(results[:-1], head)
        plan = (yield from planned) if isinstance(planned, Generator) else planned
        if not plan.ops:
            return plan
        checks = [GetOp(ns, key) for ns, key, _ in plan.guards]
        bump = PutOp(HEADS_NAMESPACE, head_key(namespace), {"type": "head", "n": head + 1},
                     index=False, ttl=None)
        written = yield StoreBatch([*plan.ops, bump, release_op(namespace, token), *checks])
        released = True
        # a budget may now be exceeded, and the day's changes are counted (observers)
        yield Wrote(namespace, _changes(plan.ops))
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
