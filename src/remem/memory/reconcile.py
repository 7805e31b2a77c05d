"""Reconciliation: turn decided changes into store writes and history events (pure code).

The rules (each has a test on the scripted model in ``tests/memory/test_reconcile.py``):

* an insert whose normalised content equals a current memory's is a no-op (exact duplicate);
* an update supersedes: the old memory gets ``invalid_at`` (and ``superseded_by``), the new
  one ``valid_at`` (and ``supersedes``); both stay, and history has both events;
* an update to the content the memory already has is a no-op; an update that would duplicate
  another current memory only invalidates the old one, pointing at the existing duplicate;
* a delete invalidates (soft) unless ``hard_delete``: then the record is removed and history
  keeps its last state (so undo can bring it back);
* every write to an existing record is conditional on the version that was read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from remem.errors import ConflictError, NotFoundError
from remem.memory.chunks import chunk_index_fields
from remem.memory.history import (
    HistoryEvent,
    HistoryOp,
    drop_record_ops,
    event_ops,
    id_index_op,
    new_event_id,
)
from remem.memory.manager import MemoryExtraction, MemoryUpdate, NewMemory
from remem.memory.records import MemoryRecord, Source, new_memory_id, version_key
from remem.store.types import Namespace, Op, PutOp

__all__ = ["Change", "ChangeContext", "ChangeOp", "Plan", "Skip", "plan_changes", "plan_edit",
           "plan_undo", "record_put", "write_change"]

#: what a change did to its record: a history op, or ``remove``: an undo took away the
#: record an ``add`` had created (its history event is a ``restore`` to "absent")
ChangeOp = Literal["add", "update", "invalidate", "delete", "restore", "remove"]


@dataclass(frozen=True, slots=True)
class ChangeContext:
    """Who makes a change, why, from which messages, and when (epoch seconds)."""

    now: float
    actor: str = "user"
    reason: str = ""
    source: Source = field(default_factory=Source)
    event_time: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    change_id: str = field(default_factory=new_event_id)


@dataclass(frozen=True, slots=True)
class Change:
    """One change applied to one memory: the history event and the record after it
    (before it, for a hard delete, and for ``remove``: the record an undo took away)."""

    op: ChangeOp
    memory: MemoryRecord
    event_id: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"op": self.op, "event_id": self.event_id, "memory": self.memory.to_dict()}


@dataclass(frozen=True, slots=True)
class Skip:
    """A decided change that was not applied, and why (``existing_id``: the memory that made
    it unnecessary)."""

    reason: str
    content: str | dict[str, Any] | None = None
    existing_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"reason": self.reason, "content": self.content, "existing_id": self.existing_id}


@dataclass(slots=True)
class Plan:
    """The writes of one change set, its history events, and what it skipped."""

    ops: list[Op] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    #: (namespace, key, version) of records written conditionally, checked after the write
    guards: list[tuple[Namespace, str, int]] = field(default_factory=list)

    def extend(self, other: Plan) -> None:
        """Append another plan's writes."""
        self.ops += other.ops
        self.changes += other.changes
        self.skipped += other.skipped
        self.guards += other.guards


def version_put(record: MemoryRecord) -> PutOp:
    """The put that archives ``record`` as its version ``record.version`` (``type`` is
    ``"memory_version"``: only ``as_of`` searches see it)."""
    value = record.to_value()
    value["type"] = "memory_version"
    return PutOp(record.namespace, version_key(record.id, record.version), value,
                 event_at=record.event_time, index=chunk_index_fields(value))


def record_put(record: MemoryRecord, *, previous: MemoryRecord | None = None) -> PutOp:
    """The put of a record; conditional on ``previous``'s ``updated_at`` when given. A long
    text is embedded chunk by chunk (:mod:`remem.memory.chunks`)."""
    event_at = record.event_time
    value = record.to_value()
    return PutOp(
        record.namespace, record.id, value, event_at=event_at,
        index=chunk_index_fields(value),
        if_updated_at=previous.updated_at if previous is not None and previous.updated_at
        else None,
    )


def _event(ctx: ChangeContext, op: HistoryOp, memory_id: str, namespace: Namespace,
           before: MemoryRecord | None, after: MemoryRecord | None, *,
           undoes: str | None = None, reason: str | None = None) -> HistoryEvent:
    return HistoryEvent(
        id=new_event_id(), memory_id=memory_id, namespace=namespace, op=op,
        before=before.to_value() if before is not None else None,
        after=after.to_value() if after is not None else None,
        at=ctx.now, actor=ctx.actor, reason=ctx.reason if reason is None else reason,
        thread_id=ctx.source.thread_id, message_ids=ctx.source.message_ids,
        change_id=ctx.change_id, undoes=undoes,
    )


def write_change(plan: Plan, ctx: ChangeContext, op: HistoryOp, before: MemoryRecord | None,
                 after: MemoryRecord, *, undoes: str | None = None,
                 reason: str | None = None) -> None:
    """Add to ``plan`` the put of ``after`` (conditional on ``before``) and its event.

    When a current memory's content changes in place, its previous state is kept as a
    version item (valid until now), so ``as_of`` searches still see what was said then; the
    new content is valid from now.
    """
    if (before is not None and before.invalid_at is None and after.invalid_at is None
            and before.content_hash != after.content_hash):
        after = after.evolve(valid_at=ctx.now, recorded_at=ctx.now)
        plan.ops.append(version_put(before.evolve(invalid_at=ctx.now)))
    plan.ops.append(record_put(after, previous=before))
    if before is None:
        plan.ops.append(id_index_op(after.id, after.namespace))
    else:
        plan.guards.append((after.namespace, after.id, after.version))
    event = _event(ctx, op, after.id, after.namespace, before, after, undoes=undoes,
                   reason=reason)
    plan.ops += event_ops(event)
    plan.changes.append(Change(op, after, event.id))


def new_record(namespace: Namespace, memory: NewMemory | MemoryUpdate, ctx: ChangeContext, *,
               supersedes: str | None = None) -> MemoryRecord:
    """A new current record for ``memory``: valid from the stated ``valid_from`` (else from
    now) until the stated ``valid_until``, recorded now; said where and when the memory
    says (:class:`NewMemory` ``source`` / ``event_time``), else as the add."""
    own = memory if isinstance(memory, NewMemory) else None
    source = own.source if own is not None and own.source is not None else ctx.source
    event_time = (own.event_time if own is not None and own.event_time is not None
                  else ctx.event_time)
    return MemoryRecord(
        id=new_memory_id(), namespace=namespace, content=memory.content, kind=memory.kind,
        schema=memory.schema,
        valid_at=memory.valid_from if memory.valid_from is not None else ctx.now,
        valid_until=memory.valid_until, recorded_at=ctx.now, event_time=event_time,
        source=source, metadata=dict(ctx.metadata), supersedes=supersedes,
        created_at=ctx.now, updated_at=ctx.now,
    )


def _stated_end(old: MemoryRecord, fresh: MemoryRecord, now: float) -> float | None:
    """The ``valid_until`` of a superseded record: the new fact's stated start when that is
    in the past ("since March I live in Munich" ends Berlin in March), else its own. Never
    before its own start: a fact the new one says was already over when it was recorded
    keeps an empty validity (``as_of`` never finds it)."""
    if fresh.valid_at < now and (old.valid_until is None or fresh.valid_at < old.valid_until):
        return max(fresh.valid_at, old.valid_at)
    return old.valid_until


def plan_changes(extraction: MemoryExtraction, namespace: Namespace,
                 current: Mapping[str, MemoryRecord], by_hash: Mapping[str, MemoryRecord],
                 ctx: ChangeContext, *, hard_delete: bool = False) -> Plan:
    """The writes for ``extraction``.

    ``current``: the records it may update or delete, by id, as read under the write lock;
    ``by_hash``: current records of the namespace by content hash (for duplicate checks).
    A target that is gone or no longer current raises :class:`ConflictError` (the caller
    reads again and retries).
    """
    plan = Plan()
    hashes = dict(by_hash)
    invalidated: set[str] = set()

    def target(memory_id: str) -> MemoryRecord:
        record = current.get(memory_id)
        if record is None or record.invalid_at is not None:
            raise ConflictError(
                f"memory {memory_id} changed while the model decided what to do with it; "
                "read again and retry"
            )
        return record

    for update in extraction.updates:
        old = target(update.id)
        fresh = new_record(namespace, update, ctx, supersedes=old.id)
        if fresh.content_hash == old.content_hash:
            plan.skipped.append(Skip("unchanged", update.content, old.id))
            continue
        duplicate = hashes.get(fresh.content_hash)
        if duplicate is not None and duplicate.id != old.id and duplicate.id not in invalidated:
            # the new content is already a current memory: only the old one goes
            closed = old.evolve(invalid_at=ctx.now, superseded_by=duplicate.id,
                                version=old.version + 1, updated_at=ctx.now)
            write_change(plan, ctx, "invalidate", old, closed)
            invalidated.add(old.id)
            plan.skipped.append(Skip("duplicate", update.content, duplicate.id))
            continue
        closed = old.evolve(invalid_at=ctx.now, superseded_by=fresh.id, version=old.version + 1,
                            updated_at=ctx.now, valid_until=_stated_end(old, fresh, ctx.now))
        write_change(plan, ctx, "invalidate", old, closed)
        write_change(plan, ctx, "add", None, fresh)
        invalidated.add(old.id)
        hashes.pop(old.content_hash, None)
        hashes[fresh.content_hash] = fresh
    for memory_id in extraction.deletes:
        old = target(memory_id)
        invalidated.add(old.id)
        hashes.pop(old.content_hash, None)
        if hard_delete:
            plan.ops += drop_record_ops(old)
            event = _event(ctx, "delete", old.id, namespace, old, None)
            plan.ops += event_ops(event)
            plan.changes.append(Change("delete", old, event.id))
        else:
            closed = old.evolve(invalid_at=ctx.now, version=old.version + 1, updated_at=ctx.now)
            write_change(plan, ctx, "invalidate", old, closed)
    for insert in extraction.inserts:
        fresh = new_record(namespace, insert, ctx)
        duplicate = hashes.get(fresh.content_hash)
        if duplicate is not None:
            plan.skipped.append(Skip("duplicate", insert.content, duplicate.id))
            continue
        write_change(plan, ctx, "add", None, fresh)
        hashes[fresh.content_hash] = fresh
    return plan


def plan_edit(old: MemoryRecord, ctx: ChangeContext, *, content: Any = None,
              kind: str | None = None, metadata: Mapping[str, Any] | None = None,
              expected_version: int | None = None) -> Plan:
    """An in-place edit of ``old`` (same id, version + 1): a correction, not a new fact."""
    if expected_version is not None and expected_version != old.version:
        raise ConflictError(
            f"memory {old.id} is at version {old.version}, not {expected_version}: it changed "
            "since you read it; get it again and retry"
        )
    changes: dict[str, Any] = {"version": old.version + 1, "updated_at": ctx.now}
    if content is not None:
        changes["content"] = content
    if kind is not None:
        changes["kind"] = kind
    if metadata is not None:
        changes["metadata"] = {**old.metadata, **metadata}
    plan = Plan()
    new = old.evolve(**changes)
    if (new.content_hash, new.kind, new.metadata) == (old.content_hash, old.kind, old.metadata):
        plan.skipped.append(Skip("unchanged", old.content, old.id))
        return plan
    write_change(plan, ctx, "update", old, new)
    return plan


def plan_delete(old: MemoryRecord, ctx: ChangeContext, *, hard: bool = False,
                expected_version: int | None = None) -> Plan:
    """Invalidate ``old`` (or remove it, ``hard``)."""
    if expected_version is not None and expected_version != old.version:
        raise ConflictError(
            f"memory {old.id} is at version {old.version}, not {expected_version}; get it "
            "again and retry"
        )
    plan = Plan()
    if hard:
        plan.ops += drop_record_ops(old)
        event = _event(ctx, "delete", old.id, old.namespace, old, None)
        plan.ops += event_ops(event)
        plan.changes.append(Change("delete", old, event.id))
        return plan
    if old.invalid_at is not None:
        plan.skipped.append(Skip("already invalid", old.content, old.id))
        return plan
    closed = old.evolve(invalid_at=ctx.now, version=old.version + 1, updated_at=ctx.now)
    write_change(plan, ctx, "invalidate", old, closed)
    return plan


def undo_targets(event: HistoryEvent, change_events: Iterable[HistoryEvent]) -> list[HistoryEvent]:
    """The events one undo reverts: ``event``, and its partner when it is half of a
    supersession (the invalidation of the old fact and the addition of the new one)."""
    linked = {event.memory_id}
    for state in (event.before, event.after):
        if state:
            linked.update(x for x in (state.get("supersedes"), state.get("superseded_by")) if x)
    out = [event]
    for other in change_events:
        if other.id == event.id or other.memory_id not in linked or other.op == "restore":
            continue
        partner_states = [s for s in (other.before, other.after) if s]
        if any(event.memory_id in (s.get("supersedes"), s.get("superseded_by"))
               for s in partner_states):
            out.append(other)
    return out


def _state(record: MemoryRecord | None) -> tuple[Any, ...] | None:
    """What undo compares: content, kind, metadata and validity (not the version number, so
    undoing two changes in reverse order works)."""
    if record is None:
        return None
    return (record.content_hash, record.kind, record.metadata, record.invalid_at is None)


def plan_undo(events: Sequence[HistoryEvent], now_state: Mapping[str, MemoryRecord | None],
              ctx: ChangeContext) -> Plan:
    """Put each event's memory back to the event's ``before``.

    Each change reports what happened to its record: ``restore`` (back to the event's
    ``before``) or ``remove`` (the event created the record, so undo took it away).

    ``now_state``: each memory's current record (``None`` when absent). A memory that changed
    after the event (it is not in the state the event left) raises :class:`ConflictError`:
    undo the later change first.
    """
    plan = Plan()
    for event in events:
        current = now_state.get(event.memory_id)
        after = event.record_after()
        current_version = current.version if current is not None else None
        if _state(current) != _state(after):
            raise ConflictError(
                f"memory {event.memory_id} changed after event {event.id} (it is not in the "
                "state the event left it in); undo the later events first (see history)"
            )
        target = event.record_before()
        if target is None:
            if current is None:
                raise NotFoundError(f"memory {event.memory_id} is already absent")
            plan.ops += drop_record_ops(current)
            undo_event = _event(ctx, "restore", current.id, current.namespace, current, None,
                                undoes=event.id)
            plan.ops += event_ops(undo_event)
            plan.changes.append(Change("remove", current, undo_event.id))
            continue
        version = max(target.version, current_version or 0) + 1
        restored = target.evolve(version=version, updated_at=ctx.now,
                                 created_at=target.created_at)
        write_change(plan, ctx, "restore", current, restored, undoes=event.id)
    return plan
