"""Reading and editing memories by id: get, search (now or ``as_of``), update, delete,
history, undo, export and import. Each is a flow (:mod:`remem.memory.flow`), so the facade's
sync and async methods share it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from remem.errors import ConflictError, ImportFormatError, InvalidInputError, NotFoundError
from remem.llm.base import Usage
from remem.memory.flow import Flow, StoreBatch
from remem.memory.history import HistoryEvent, event_ops, id_index_op
from remem.memory.locking import LockSettings
from remem.memory.reconcile import (
    Change,
    ChangeContext,
    Plan,
    Skip,
    plan_delete,
    plan_edit,
    plan_undo,
    undo_targets,
)
from remem.memory.records import (
    IDS_NAMESPACE,
    RESERVED_LABEL,
    MemoryRecord,
    as_of_filter,
    current_filter,
    history_namespace,
)
from remem.memory.writer import commit
from remem.store.base import BaseStore
from remem.store.types import (
    GetOp,
    Item,
    Namespace,
    Op,
    PutOp,
    SearchItem,
    SearchMode,
    SearchOp,
    to_timestamp,
)

__all__ = [
    "ChangeResult",
    "MemoryHit",
    "SearchResult",
    "delete_flow",
    "export_lines",
    "get_flow",
    "history_flow",
    "import_lines",
    "locate_flow",
    "search_flow",
    "undo_flow",
    "update_flow",
]

#: most history events returned for one memory
HISTORY_LIMIT = 10_000


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {"llm_calls": usage.calls, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens}


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A search result: the memory, its score (``None`` without a query) and per-signal
    details (``{"keyword": (rank, score), ...}``)."""

    memory: MemoryRecord
    score: float | None = None
    details: Mapping[str, tuple[int, float]] = field(default_factory=dict)

    @classmethod
    def from_item(cls, item: SearchItem) -> MemoryHit:
        """A hit from a store search result."""
        return cls(MemoryRecord.from_item(item), item.score,
                   {name: (s.rank, s.score) for name, s in item.details.items()})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"memory": self.memory.to_dict(), "score": self.score,
                "details": {k: {"rank": r, "score": s} for k, (r, s) in self.details.items()}}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Search hits, best first, and what the search cost (never an LLM call today)."""

    hits: tuple[MemoryHit, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[MemoryHit]:
        return iter(self.hits)

    def __getitem__(self, index: int) -> MemoryHit:
        return self.hits[index]

    @property
    def memories(self) -> list[MemoryRecord]:
        """The records of the hits."""
        return [hit.memory for hit in self.hits]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"hits": [h.to_dict() for h in self.hits], "usage": _usage_dict(self.usage)}


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What an update, delete or undo changed, and what it cost."""

    changes: tuple[Change, ...] = ()
    skipped: tuple[Skip, ...] = ()
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def of(cls, plan: Plan) -> ChangeResult:
        """The result of a committed plan."""
        return cls(tuple(plan.changes), tuple(plan.skipped))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"changes": [c.to_dict() for c in self.changes],
                "skipped": [s.to_dict() for s in self.skipped],
                "usage": _usage_dict(self.usage)}


# -- lookups ----------------------------------------------------------------------------------


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def locate_flow(object_id: str, what: str = "memory") -> Flow[Namespace]:
    """The namespace of a memory or event id (:class:`NotFoundError` if unknown)."""
    object_id = _check_id(object_id, f"{what}_id")
    found = yield StoreBatch([GetOp(IDS_NAMESPACE, object_id)])
    item = found[0]
    if not isinstance(item, Item):
        raise NotFoundError(f"no {what} with id {object_id!r}; search for it or list history")
    return tuple(item.value["namespace"])


def get_flow(memory_id: str) -> Flow[MemoryRecord]:
    """The memory ``memory_id`` (current or invalidated)."""
    namespace = yield from locate_flow(memory_id)
    found = yield StoreBatch([GetOp(namespace, memory_id.strip())])
    item = found[0]
    if not isinstance(item, Item):
        raise NotFoundError(
            f"memory {memory_id!r} was deleted for good; its history keeps its last state "
            "(history(), and undo() brings it back)"
        )
    return MemoryRecord.from_item(item)


def search_filter(filters: Mapping[str, Any] | None, as_of: datetime | float | None,
                  include_invalid: bool) -> dict[str, Any]:
    """The store filter for a memory search."""
    if as_of is not None:
        ts = to_timestamp(as_of, "as_of")
        assert ts is not None
        base = as_of_filter(ts)
    elif include_invalid:
        base = {"type": "memory"}
    else:
        base = current_filter()
    return {"$and": [base, dict(filters)]} if filters else base


def search_flow(namespace_prefix: Namespace, query: str | None = None, *,
                filters: Mapping[str, Any] | None = None, limit: int = 10,
                as_of: datetime | float | None = None, include_invalid: bool = False,
                mode: SearchMode = "auto") -> Flow[SearchResult]:
    """Memories under ``namespace_prefix`` (current ones, or those valid at ``as_of``)."""
    if namespace_prefix and namespace_prefix[0] == RESERVED_LABEL:
        raise InvalidInputError(f"{RESERVED_LABEL!r} namespaces hold bookkeeping, not memories")
    if query is not None and not query.strip():
        query = None
    op = SearchOp(namespace_prefix, filter=search_filter(filters, as_of, include_invalid),
                  query=query, limit=limit, mode=mode)
    found = yield StoreBatch([op])
    items = found[0]
    assert isinstance(items, list)
    return SearchResult(tuple(MemoryHit.from_item(item) for item in items))


def history_flow(memory_id: str) -> Flow[list[HistoryEvent]]:
    """Every event of ``memory_id``, oldest first."""
    namespace = yield from locate_flow(memory_id)
    found = yield StoreBatch([SearchOp(history_namespace(namespace),
                                       filter={"memory_id": memory_id.strip()},
                                       limit=HISTORY_LIMIT)])
    items = found[0]
    assert isinstance(items, list)
    events = [HistoryEvent.from_value(item.value) for item in items
              if item.namespace == history_namespace(namespace)]
    return sorted(events, key=lambda e: (e.at, e.id))


# -- edits ------------------------------------------------------------------------------------


def update_flow(memory_id: str, ctx: ChangeContext, lock: LockSettings, *,
                content: str | dict[str, Any] | None = None, kind: str | None = None,
                metadata: Mapping[str, Any] | None = None,
                version: int | None = None) -> Flow[ChangeResult]:
    """Edit a memory in place (same id, version + 1, history keeps the old content).

    ``version``: the version you read; if the memory changed since, :class:`ConflictError`.
    """
    if content is None and kind is None and metadata is None:
        raise InvalidInputError("update needs content=, kind= or metadata=")
    if isinstance(content, str) and not content.strip():
        raise InvalidInputError("content is empty; to remove a memory use delete()")
    namespace = yield from locate_flow(memory_id)
    memory_id = memory_id.strip()

    def plan_for(results: list[Any], head: int) -> Flow[Plan]:
        item = results[0]
        if not isinstance(item, Item):
            raise NotFoundError(f"memory {memory_id!r} was deleted for good")
        record = MemoryRecord.from_item(item)
        if record.invalid_at is not None:
            raise InvalidInputError(
                f"memory {memory_id!r} is no longer current (invalidated); add a new memory, "
                "or undo the invalidation first"
            )
        plan = plan_edit(record, ctx, content=content, kind=kind, metadata=metadata,
                         expected_version=version)
        edited = [c.memory for c in plan.changes]
        yield from _refuse_duplicates(namespace, edited, {memory_id})
        return plan

    plan = yield from commit(namespace, [GetOp(namespace, memory_id)], plan_for, lock)
    return ChangeResult.of(plan)


def delete_flow(memory_id: str, ctx: ChangeContext, lock: LockSettings, *, hard: bool = False,
                version: int | None = None) -> Flow[ChangeResult]:
    """Invalidate a memory (``hard``: remove it; history keeps its last state)."""
    namespace = yield from locate_flow(memory_id)
    memory_id = memory_id.strip()

    def plan_for(results: list[Any], head: int) -> Plan:
        item = results[0]
        if not isinstance(item, Item):
            raise NotFoundError(f"memory {memory_id!r} was already deleted for good")
        return plan_delete(MemoryRecord.from_item(item), ctx, hard=hard,
                           expected_version=version)

    plan = yield from commit(namespace, [GetOp(namespace, memory_id)], plan_for, lock)
    return ChangeResult.of(plan)


def undo_flow(event_id: str, ctx: ChangeContext, lock: LockSettings) -> Flow[ChangeResult]:
    """Revert the change recorded by ``event_id`` (with its partner, for a supersession)."""
    namespace = yield from locate_flow(event_id, "event")
    where = history_namespace(namespace)
    found = yield StoreBatch([GetOp(where, event_id.strip())])
    item = found[0]
    if not isinstance(item, Item):
        raise NotFoundError(f"no event with id {event_id!r}")
    event = HistoryEvent.from_value(item.value)
    siblings = yield StoreBatch([SearchOp(where, filter={"change_id": event.change_id},
                                          limit=HISTORY_LIMIT)])
    group = [HistoryEvent.from_value(i.value) for i in siblings[0]]
    events = undo_targets(event, group)
    memory_ids = [e.memory_id for e in events]
    reads: list[Op] = [GetOp(namespace, memory_id) for memory_id in memory_ids]

    def plan_for(results: list[Any], head: int) -> Flow[Plan]:
        state = {memory_id: (MemoryRecord.from_item(r) if isinstance(r, Item) else None)
                 for memory_id, r in zip(memory_ids, results, strict=True)}
        plan = plan_undo(events, state, ctx)
        restored = [c.memory for c in plan.changes if c.op == "restore"]
        yield from _refuse_duplicates(namespace, restored, set(memory_ids))
        return plan

    plan = yield from commit(namespace, reads, plan_for, lock)
    return ChangeResult.of(plan)


def _refuse_duplicates(namespace: Namespace, records: Sequence[MemoryRecord],
                       ignore: set[str]) -> Flow[None]:
    """Raise if a record about to be current says what another current memory says (read
    under the write lock, so the answer holds until the write)."""
    current = [r for r in records if r.invalid_at is None]
    if not current:
        return
    found = yield StoreBatch([SearchOp(namespace, filter={
        **current_filter(), "content_hash": {"$in": sorted({r.content_hash for r in current})},
    }, limit=len(current) + 10)])
    for item in found[0]:
        if item.key not in ignore:
            raise ConflictError(
                f"memory {item.key} already says {item.value.get('text')!r}; a second current "
                f"copy is not allowed: delete {item.key} first, or delete this memory instead"
            )


# -- export / import --------------------------------------------------------------------------


def export_lines(store: BaseStore, namespace_prefix: Namespace = ()) -> Iterator[str]:
    """JSONL lines: every memory record and archived version (``{"memory": ..., "key":
    ...}``) then every history event (``{"event": ...}``) under ``namespace_prefix``."""
    for item in store.iter_items(namespace_prefix):
        if item.value.get("type") in ("memory", "memory_version"):
            value = dict(item.value)
            yield json.dumps({"memory": value, "namespace": list(item.namespace),
                              "key": item.key, "created_at": item.created_at.timestamp(),
                              "updated_at": item.updated_at.timestamp()},
                             ensure_ascii=False)
    for item in store.iter_items(history_namespace(namespace_prefix)):
        if item.value.get("type") == "memory_event":
            yield json.dumps({"event": item.value}, ensure_ascii=False)


def import_lines(store: BaseStore, lines: Iterable[str], *, batch_size: int = 500) -> int:
    """Write records and events read from :func:`export_lines` output; return how many.

    Records keep their ids, versions and timestamps; importing the same file twice writes
    the same items again (idempotent).
    """
    count = 0
    pending: list[Op] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if "memory" in data:
                ns = tuple(data["namespace"])
                record = MemoryRecord.from_value(ns, data["memory"])
                key = str(data.get("key") or record.id)
                pending.append(PutOp(ns, key, data["memory"], event_at=record.event_time,
                                     created_at=data.get("created_at"),
                                     updated_at=data.get("updated_at")))
                if key == record.id:
                    pending.append(id_index_op(record.id, ns))
            elif "event" in data:
                pending += event_ops(HistoryEvent.from_value(data["event"]))
            else:
                raise KeyError("memory or event")
        except (ValueError, KeyError, TypeError) as exc:
            raise ImportFormatError(
                f"line {number}: not a remem memory export line ({exc}); expected "
                '{"memory": ..., "namespace": [...]} or {"event": ...}'
            ) from None
        count += 1
        if len(pending) >= batch_size:
            store.batch(pending)
            pending = []
    if pending:
        store.batch(pending)
    return count


def namespaces_of(values: Sequence[Mapping[str, Any]]) -> list[Namespace]:
    """Distinct namespaces of exported lines (for reports)."""
    return sorted({tuple(v["namespace"]) for v in values if "namespace" in v})
