"""History events: every change to a memory, recorded in the same batch as the change.

An event says what happened to one memory (``op``), its state before and after, who did it
(``actor``), why (``reason``), where the information came from (thread and message ids) and
when. :func:`undo_ops` computes the writes that put a memory back to an event's ``before``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from remem.memory.records import (
    IDS_NAMESPACE,
    MemoryRecord,
    history_namespace,
    version_key,
)
from remem.messages.types import new_id
from remem.store.bad_records import (
    check_record,
    kind_of,
    object_field,
    optional_text,
    parse_items,
    parse_or_raise,
    text_field,
    text_list,
    time_field,
)
from remem.store.types import (
    DeleteOp,
    Item,
    Namespace,
    Op,
    PutOp,
    from_timestamp,
    validate_namespace,
)

__all__ = ["BULK_CHANGE", "ID_ENTRY", "HistoryEvent", "HistoryOp", "IdEntry", "event_ops",
           "history_events", "id_index_op", "new_event_id", "read_event", "read_id_entry"]

#: ``add``: created; ``update``: content edited in place; ``invalidate``: superseded or
#: soft-deleted; ``delete``: removed for good; ``restore``: put back by an undo
HistoryOp = Literal["add", "update", "invalidate", "delete", "restore"]
_OPS: tuple[HistoryOp, ...] = ("add", "update", "invalidate", "delete", "restore")
#: ``type`` of an id index entry naming one memory's or event's namespace
ID_ENTRY = "id"
#: ``type`` of the id index entry that marks a change undone as a whole (delete_all)
BULK_CHANGE = "bulk_change"


def new_event_id() -> str:
    """A new time-ordered event id (``evt_...``)."""
    return new_id("evt")


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One change to one memory. ``before`` / ``after`` are record values (``None``: absent)."""

    id: str
    memory_id: str
    namespace: Namespace
    op: HistoryOp
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: float
    actor: str = "user"
    reason: str = ""
    thread_id: str | None = None
    message_ids: tuple[str, ...] = ()
    #: events written by the same call share it (a supersession is one invalidate + one add)
    change_id: str = ""
    #: for ``restore`` events: the event that was undone
    undoes: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_value(self) -> dict[str, Any]:
        """The store value."""
        return {
            "type": "memory_event",
            "id": self.id,
            "memory_id": self.memory_id,
            "namespace": list(self.namespace),
            "op": self.op,
            "before": self.before,
            "after": self.after,
            "at": self.at,
            "actor": self.actor,
            "reason": self.reason,
            "thread_id": self.thread_id,
            "message_ids": list(self.message_ids),
            "change_id": self.change_id,
            "undoes": self.undoes,
            "metadata": self.metadata,
        }

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> HistoryEvent:
        """Read a value written by :meth:`to_value`; another shape raises ``ValueError`` or
        ``TypeError`` naming the field (``before`` and ``after`` must read as records)."""
        if not isinstance(value, Mapping):
            raise TypeError(f"a history event must be a JSON object, got {kind_of(value)}")
        namespace = validate_namespace(value["namespace"], what="namespace")
        op = value["op"]
        if op not in _OPS:
            raise ValueError(f"op must be one of {', '.join(_OPS)}, got {kind_of(op)}")
        at = time_field(value["at"], "at")
        if at is None:
            raise TypeError("at must be a number of seconds since the epoch, got null")
        event = cls(
            id=text_field(value["id"], "id"),
            memory_id=text_field(value["memory_id"], "memory_id"),
            namespace=namespace, op=op, before=_state(value.get("before"), "before"),
            after=_state(value.get("after"), "after"), at=at,
            actor=text_field(value.get("actor", "user"), "actor"),
            reason=text_field(value.get("reason", ""), "reason"),
            thread_id=optional_text(value.get("thread_id"), "thread_id"),
            message_ids=text_list(value.get("message_ids"), "message_ids"),
            change_id=text_field(value.get("change_id", ""), "change_id"),
            undoes=optional_text(value.get("undoes"), "undoes"),
            metadata=dict(object_field(value.get("metadata"), "metadata")),
        )
        for name in ("before", "after"):  # undo puts these back: they must read as records
            state = getattr(event, name)
            if state is not None:
                try:
                    MemoryRecord.from_value(namespace, state)
                except (ValueError, TypeError, LookupError) as exc:
                    raise ValueError(f"{name} is not a memory record: {exc}") from None
        return event

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (ISO 8601 time)."""
        data = self.to_value()
        del data["type"]
        data["at"] = from_timestamp(self.at).isoformat()
        return data

    def record_before(self) -> MemoryRecord | None:
        """``before`` as a record."""
        return (MemoryRecord.from_value(self.namespace, self.before)
                if self.before is not None else None)

    def record_after(self) -> MemoryRecord | None:
        """``after`` as a record."""
        return (MemoryRecord.from_value(self.namespace, self.after)
                if self.after is not None else None)


def _state(value: Any, name: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name} must be a record (a JSON object) or null, got "
                        f"{kind_of(value)}")
    return value


@dataclass(frozen=True, slots=True)
class IdEntry:
    """An entry of the id index: the namespace of a memory or event (``type`` ``"id"``), or a
    bulk change's marker with the scope it covered (``type`` ``"bulk_change"``)."""

    type: str
    namespace: Namespace

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> IdEntry:
        """Read an entry written by :func:`id_index_op` (or a bulk change's marker)."""
        kind = value.get("type")
        if kind not in (ID_ENTRY, BULK_CHANGE):
            raise ValueError(f"type must be {ID_ENTRY!r} or {BULK_CHANGE!r}, got "
                             f"{kind_of(kind)}")
        return cls(kind, validate_namespace(value["namespace"], what="namespace",
                                            allow_empty=kind == BULK_CHANGE))


def read_id_entry(item: Item, what: str) -> IdEntry:
    """The id index entry ``item``; one that does not parse raises
    :class:`~remem.errors.BadRecordError` naming ``what``."""
    return parse_or_raise(lambda i: IdEntry.from_value(i.value), item, family="memory_ids",
                          namespace=item.namespace, key=item.key,
                          what=f"the id index entry of {what}")


def history_events(items: Iterable[Item]) -> list[HistoryEvent]:
    """The events of store items, in order; one that does not parse is left out and
    reported (:mod:`remem.store.bad_records`)."""
    return parse_items(items, lambda i: HistoryEvent.from_value(i.value),
                       family="memory_history")


def read_event(item: Item) -> HistoryEvent:
    """One event the caller needs (an undo); one that does not parse raises
    :class:`~remem.errors.BadRecordError`."""
    return parse_or_raise(lambda i: HistoryEvent.from_value(i.value), item,
                          family="memory_history", namespace=item.namespace, key=item.key,
                          what=f"history event {item.key!r}")


def id_index_op(object_id: str, namespace: Namespace) -> PutOp:
    """The put that lets a memory or event be found by its id alone."""
    return PutOp(IDS_NAMESPACE, object_id, {"type": ID_ENTRY, "namespace": list(namespace)},
                 index=False, ttl=None)


def event_ops(event: HistoryEvent) -> list[Op]:
    """The writes that record ``event`` (the event and its id index entry); an event that
    would not read back is refused (:class:`~remem.errors.RecordFormatError`)."""
    value = event.to_value()
    where = history_namespace(event.namespace)
    check_record(HistoryEvent.from_value, value, family="memory_history", namespace=where,
                 key=event.id)
    return [
        # bookkeeping never expires, whatever the store's default TTL
        PutOp(where, event.id, value, index=False, ttl=None),
        id_index_op(event.id, event.namespace),
    ]


def drop_record_ops(record: MemoryRecord) -> list[Op]:
    """Remove a record for good, with its archived versions. Its id index entry stays, so
    its history (which keeps the last state) can still be found by the id."""
    return [DeleteOp(record.namespace, record.id),
            *(DeleteOp(record.namespace, version_key(record.id, v))
              for v in range(1, record.version))]
