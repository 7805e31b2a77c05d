"""Apply a plan under the namespace's write lock, in one batch, and check it landed.

Every record a plan puts (memories, archived versions, history events, id index entries) is
read back with its family's parser first: a plan that would write a record readers cannot
parse is refused (:class:`~remem.errors.RecordFormatError`) and nothing is written.

The namespace's change counter (the head) is a bookkeeping item too. One that does not
parse reads as ``0`` (reported like any bad record) and the commit then writes ``1`` over
it, which repairs it: the counter only has to differ between two readings with a commit in
between, and every commit writes a good value, so a bad head can never block a write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from remem.errors import ConflictError
from remem.memory.flow import Flow, StoreBatch
from remem.memory.history import HistoryEvent, IdEntry
from remem.memory.locking import LockSettings, acquire, release_op
from remem.memory.observers import Wrote
from remem.memory.reconcile import Plan
from remem.memory.records import HEADS_NAMESPACE, IDS_NAMESPACE, MemoryRecord
from remem.store.bad_records import check_record, int_field, parse_or_none
from remem.store.types import GetOp, Item, Namespace, Op, PutOp, Result

__all__ = ["check_ops", "commit", "head_count", "head_of", "head_op"]


def head_key(namespace: Namespace) -> str:
    """The key of a namespace's change counter."""
    return json.dumps(list(namespace), ensure_ascii=False)


def head_op(namespace: Namespace) -> GetOp:
    """Read the change counter of ``namespace`` (see :func:`head_of`)."""
    return GetOp(HEADS_NAMESPACE, head_key(namespace))


def head_count(item: Item) -> int:
    """The count a head item holds (``ValueError``/``TypeError`` if it does not parse)."""
    return int_field(item.value.get("n", 0), "n", minimum=0)


def head_of(result: Result) -> int:
    """The counter read by :func:`head_op`: how many commits changed the namespace (``0``
    when absent, or when it does not parse: see the module docstring)."""
    if not isinstance(result, Item):
        return 0
    count = parse_or_none(head_count, result, family="memory_heads", namespace=result.namespace,
                          key=result.key)
    return count or 0


def _parser(op: PutOp) -> tuple[str, Callable[[Mapping[str, Any]], object]] | None:
    """The family and parser of a memory bookkeeping or record put (``None``: not one)."""
    kind = op.value.get("type")
    if kind in ("memory", "memory_version"):
        return "memories", lambda value: MemoryRecord.from_value(op.namespace, value)
    if kind == "memory_event":
        return "memory_history", HistoryEvent.from_value
    if op.namespace == IDS_NAMESPACE:
        return "memory_ids", IdEntry.from_value
    return None


def check_ops(ops: Sequence[Op]) -> None:
    """Refuse (:class:`~remem.errors.RecordFormatError`) a batch putting a memory record,
    history event or id index entry that its family's parser would not read back."""
    for op in ops:
        if isinstance(op, PutOp):
            found = _parser(op)
            if found is not None:
                check_record(found[1], op.value, family=found[0], namespace=op.namespace,
                             key=op.key)


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
        check_ops(plan.ops)
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
