"""History events: every change to a memory, recorded in the same batch as the change.

An event says what happened to one memory (``op``), its state before and after, who did it
(``actor``), why (``reason``), where the information came from (thread and message ids) and
when. :func:`undo_ops` computes the writes that put a memory back to an event's ``before``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from remem.memory.records import IDS_NAMESPACE, MemoryRecord, history_namespace, version_key
from remem.messages.types import new_id
from remem.store.types import DeleteOp, Namespace, Op, PutOp, from_timestamp

__all__ = ["HistoryEvent", "HistoryOp", "event_ops", "id_index_op", "new_event_id"]

#: ``add``: created; ``update``: content edited in place; ``invalidate``: superseded or
#: soft-deleted; ``delete``: removed for good; ``restore``: put back by an undo
HistoryOp = Literal["add", "update", "invalidate", "delete", "restore"]


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
        """Read a value written by :meth:`to_value`."""
        return cls(
            id=value["id"], memory_id=value["memory_id"], namespace=tuple(value["namespace"]),
            op=value["op"], before=value.get("before"), after=value.get("after"),
            at=float(value["at"]), actor=value.get("actor", "user"),
            reason=value.get("reason", ""), thread_id=value.get("thread_id"),
            message_ids=tuple(value.get("message_ids") or ()),
            change_id=value.get("change_id", ""), undoes=value.get("undoes"),
            metadata=dict(value.get("metadata") or {}),
        )

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


def id_index_op(object_id: str, namespace: Namespace) -> PutOp:
    """The put that lets a memory or event be found by its id alone."""
    return PutOp(IDS_NAMESPACE, object_id, {"type": "id", "namespace": list(namespace)},
                 index=False, ttl=None)


def event_ops(event: HistoryEvent) -> list[Op]:
    """The writes that record ``event`` (the event and its id index entry)."""
    return [
        # bookkeeping never expires, whatever the store's default TTL
        PutOp(history_namespace(event.namespace), event.id, event.to_value(), index=False,
              ttl=None),
        id_index_op(event.id, event.namespace),
    ]


def drop_record_ops(record: MemoryRecord) -> list[Op]:
    """Remove a record for good, with its archived versions. Its id index entry stays, so
    its history (which keeps the last state) can still be found by the id."""
    return [DeleteOp(record.namespace, record.id),
            *(DeleteOp(record.namespace, version_key(record.id, v))
              for v in range(1, record.version))]
