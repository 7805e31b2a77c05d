"""Reading and editing memories: get, search (now or ``as_of``), get_all, update, delete,
delete_all, history, undo, export and import. Each is a flow (:mod:`remem.memory.flow`), so
the facade's sync and async methods share it.

``delete_all`` writes one change (one ``change_id`` on every event) per namespace under the
scope, and marks the change id in the id index; undoing any of its events undoes them all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from remem.errors import (
    ConflictError,
    Fix,
    Hint,
    ImportFormatError,
    InvalidInputError,
    NotFoundError,
)
from remem.memory.chunks import chunk_index_fields
from remem.memory.flow import Flow, StoreBatch
from remem.memory.history import (
    BULK_CHANGE,
    HistoryEvent,
    event_ops,
    history_events,
    id_index_op,
    read_event,
    read_id_entry,
)
from remem.memory.locking import LockSettings
from remem.memory.namespaces import check_user_namespace
from remem.memory.observers import Touched
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
    memory_records,
    read_memory,
)
from remem.memory.results import ChangeResult, MemoryHit, MemoryPage, SearchResult
from remem.memory.subject_search import subject_search_flow
from remem.memory.writer import commit
from remem.retrieval.mentions import mentioned_names
from remem.retrieval.ranking import Ranking, Recency
from remem.store.bad_records import parse_items
from remem.store.base import BaseStore
from remem.store.types import (
    GetOp,
    Item,
    Namespace,
    Op,
    PutOp,
    SearchMode,
    SearchOp,
    to_timestamp,
)

__all__ = [
    "ChangeResult",
    "MemoryHit",
    "SearchResult",
    "delete_all_flow",
    "delete_flow",
    "export_lines",
    "get_all_flow",
    "get_flow",
    "history_flow",
    "import_lines",
    "locate_flow",
    "search_flow",
    "search_ranking",
    "undo_flow",
    "update_flow",
]

#: most history events returned for one memory
HISTORY_LIMIT = 10_000
#: candidates per signal a ranked search fuses, unless its page reaches deeper
DEFAULT_CANDIDATES = 100
#: memories read per store batch when listing a whole scope (delete_all)
SCAN_PAGE = 1000


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
    return read_id_entry(item, f"{what} {object_id!r}").namespace


def get_flow(memory_id: str) -> Flow[MemoryRecord]:
    """The memory ``memory_id`` (current or invalidated)."""
    namespace = yield from locate_flow(memory_id)
    found = yield StoreBatch([GetOp(namespace, memory_id.strip())])
    item = found[0]
    if not isinstance(item, Item):
        raise NotFoundError(
            f"memory {memory_id!r} was deleted for good; its history keeps its last state",
            hint=Hint(Fix.MEMORY_HISTORY, "read it with history(); undo() brings it back",
                      memory_id.strip()))
    record = read_memory(item)
    yield Touched((item.key,))  # a read counts as a use (remem.memory.observers)
    return record


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


def search_ranking(*, limit: int, offset: int = 0, min_score: float | None = None,
                   recency_half_life: float | None = None, recency_weight: float = 0.2,
                   mmr: float | None = None, now: float | None = None) -> Ranking:
    """The store ranking of a memory search: the candidate pool grown to cover the page
    (``offset + limit``, at least 100), a minimum score, recency (measured from ``now``;
    ``None``: the store's clock) and MMR diversification."""
    recency = (Recency(half_life=recency_half_life, weight=recency_weight, now=now)
               if recency_half_life is not None else None)
    return Ranking(candidates=max(DEFAULT_CANDIDATES, offset + limit), recency=recency,
                   mmr=mmr, min_score=min_score)


def _check_prefix(namespace_prefix: Namespace) -> None:
    if namespace_prefix and namespace_prefix[0] == RESERVED_LABEL:
        raise InvalidInputError(f"{RESERVED_LABEL!r} namespaces hold bookkeeping, not memories")


def search_flow(namespace_prefix: Namespace, query: str | None = None, *,
                filters: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
                as_of: datetime | float | None = None, include_invalid: bool = False,
                mode: SearchMode = "auto", ranking: Ranking | None = None
                ) -> Flow[SearchResult]:
    """Memories under ``namespace_prefix`` (current ones, or those valid at ``as_of``).

    ``ranking``: see :func:`search_ranking` (default: its pool for the page, nothing else).
    """
    _check_prefix(namespace_prefix)
    if query is not None and not query.strip():
        query = None
    ranking = ranking or search_ranking(limit=limit, offset=offset)
    store_filter = search_filter(filters, as_of, include_invalid)
    stage, ranking = ranking.subjects, replace(ranking, subjects=None)
    names = mentioned_names(query) if stage is not None and query is not None else ()
    if stage is not None and query is not None and names:
        hits = yield from subject_search_flow(
            namespace_prefix, query, names, store_filter=store_filter, limit=limit,
            offset=offset, mode=mode, ranking=ranking, stage=stage)
    else:
        op = SearchOp(namespace_prefix, filter=store_filter, query=query, limit=limit,
                      offset=offset, mode=mode, ranking=ranking)
        found = yield StoreBatch([op])
        items = found[0]
        assert isinstance(items, list)
        # a record that does not parse is left out (and reported), never fatal to the others
        hits = parse_items(items, MemoryHit.from_item, family="memories")
    if hits:  # the hits count as uses (remem.memory.observers)
        yield Touched(tuple(hit.memory.id for hit in hits))
    return SearchResult(tuple(hits))


def get_all_flow(namespace_prefix: Namespace, *, filters: Mapping[str, Any] | None = None,
                 limit: int = 100, offset: int = 0,
                 include_invalid: bool = False) -> Flow[MemoryPage]:
    """A page of the memories under ``namespace_prefix``, newest first."""
    _check_prefix(namespace_prefix)
    # one more than the page: whether a next page exists, without counting
    found = yield StoreBatch([SearchOp(namespace_prefix,
                                       filter=search_filter(filters, None, include_invalid),
                                       limit=limit + 1, offset=offset)])
    items = found[0]
    assert isinstance(items, list)
    # the page is the store's (a record left out for not parsing still moves the offset)
    records = tuple(memory_records(items[:limit]))
    return MemoryPage(records, offset + limit if len(items) > limit else None)


def history_flow(memory_id: str) -> Flow[list[HistoryEvent]]:
    """Every event of ``memory_id``, oldest first."""
    namespace = yield from locate_flow(memory_id)
    found = yield StoreBatch([SearchOp(history_namespace(namespace),
                                       filter={"memory_id": memory_id.strip()},
                                       limit=HISTORY_LIMIT)])
    items = found[0]
    assert isinstance(items, list)
    events = history_events(item for item in items
                            if item.namespace == history_namespace(namespace))
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
        record = read_memory(item)
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
        return plan_delete(read_memory(item), ctx, hard=hard, expected_version=version)

    plan = yield from commit(namespace, [GetOp(namespace, memory_id)], plan_for, lock)
    return ChangeResult.of(plan)


def delete_all_flow(namespace_prefix: Namespace, ctx: ChangeContext, lock: LockSettings, *,
                    hard: bool = False) -> Flow[ChangeResult]:
    """Invalidate every current memory under ``namespace_prefix`` (``hard``: remove every
    memory, current or not; history keeps each last state).

    One commit per namespace under the prefix, each under that namespace's lock; all events
    share ``ctx.change_id``, which the id index marks as a bulk change so that undoing any
    one event undoes the whole call (:func:`undo_flow`).
    """
    _check_prefix(namespace_prefix)
    wanted = {"type": "memory"} if hard else current_filter()
    found: dict[Namespace, list[str]] = {}
    offset = 0
    while True:
        page = yield StoreBatch([SearchOp(namespace_prefix, filter=wanted, limit=SCAN_PAGE,
                                          offset=offset)])
        items = page[0]
        assert isinstance(items, list)
        for item in items:
            keys = found.setdefault(item.namespace, [])
            if item.key not in keys:
                keys.append(item.key)
        if len(items) < SCAN_PAGE:
            break
        offset += SCAN_PAGE
    marker = PutOp(IDS_NAMESPACE, ctx.change_id,
                   {"type": BULK_CHANGE, "op": "delete_all",
                    "namespace": list(namespace_prefix)}, index=False, ttl=None)
    changes: list[Change] = []
    skipped: list[Skip] = []
    for namespace, keys in found.items():
        plan = yield from commit(namespace, [GetOp(namespace, key) for key in keys],
                                 _delete_each(ctx, hard, marker), lock)
        changes += plan.changes
        skipped += plan.skipped
    return ChangeResult(tuple(changes), tuple(skipped))


def _delete_each(ctx: ChangeContext, hard: bool, marker: PutOp
                 ) -> Callable[[list[Any], int], Plan]:
    def plan_for(results: list[Any], head: int) -> Plan:
        plan = Plan()
        # gone, or no longer current, since the scan: nothing left to delete; a record
        # that does not parse is left as it is (remem doctor repairs it)
        found = [item for item in results if isinstance(item, Item)
                 and (hard or item.value.get("status") == "current")]
        for record in memory_records(found):
            plan.extend(plan_delete(record, ctx, hard=hard))
        if plan.ops:
            plan.ops.append(marker)
        return plan

    return plan_for


def undo_flow(event_id: str, ctx: ChangeContext, lock: LockSettings) -> Flow[ChangeResult]:
    """Revert the change recorded by ``event_id`` (with its partner, for a supersession;
    with every event of the call, for a delete_all)."""
    namespace = yield from locate_flow(event_id, "event")
    where = history_namespace(namespace)
    found = yield StoreBatch([GetOp(where, event_id.strip())])
    item = found[0]
    if not isinstance(item, Item):
        raise NotFoundError(f"no event with id {event_id!r}")
    event = read_event(item)
    # the events of the same call, and whether the call was a bulk change (delete_all);
    # events written before change ids existed look up their own id entry instead
    mark, siblings = yield StoreBatch([
        GetOp(IDS_NAMESPACE, event.change_id or event.id),
        SearchOp(where, filter={"change_id": event.change_id}, limit=HISTORY_LIMIT)])
    if isinstance(mark, Item) and mark.value.get("type") == BULK_CHANGE:
        prefix = read_id_entry(mark, f"change {event.change_id!r}").namespace
        return (yield from _undo_bulk(event.change_id, prefix, ctx, lock))
    group = history_events(siblings)
    events = undo_targets(event, group)
    memory_ids = [e.memory_id for e in events]
    reads: list[Op] = [GetOp(namespace, memory_id) for memory_id in memory_ids]

    def plan_for(results: list[Any], head: int) -> Flow[Plan]:
        state = {memory_id: (read_memory(r) if isinstance(r, Item) else None)
                 for memory_id, r in zip(memory_ids, results, strict=True)}
        plan = plan_undo(events, state, ctx)
        restored = [c.memory for c in plan.changes if c.op == "restore"]
        yield from _refuse_duplicates(namespace, restored, set(memory_ids))
        return plan

    plan = yield from commit(namespace, reads, plan_for, lock)
    return ChangeResult.of(plan)


def _undo_bulk(change_id: str, prefix: Namespace, ctx: ChangeContext,
               lock: LockSettings) -> Flow[ChangeResult]:
    """Undo every event of a bulk change, one commit per namespace. A memory that changed
    since (restored already, edited, deleted for good) or whose content is now another
    current memory's is skipped, not a conflict: the rest still comes back."""
    found = yield StoreBatch([SearchOp(history_namespace(prefix),
                                       filter={"change_id": change_id}, limit=HISTORY_LIMIT)])
    by_namespace: dict[Namespace, list[HistoryEvent]] = {}
    for event in history_events(found[0]):
        if event.op != "restore":
            by_namespace.setdefault(event.namespace, []).append(event)
    changes: list[Change] = []
    skipped: list[Skip] = []
    for namespace, events in by_namespace.items():
        reads: list[Op] = [GetOp(namespace, e.memory_id) for e in events]
        plan = yield from commit(namespace, reads, _undo_each(namespace, events, ctx), lock)
        changes += plan.changes
        skipped += plan.skipped
    return ChangeResult(tuple(changes), tuple(skipped))


def _undo_each(namespace: Namespace, events: list[HistoryEvent], ctx: ChangeContext
               ) -> Callable[[list[Any], int], Flow[Plan]]:
    def plan_for(results: list[Any], head: int) -> Flow[Plan]:
        # a memory whose record does not parse is skipped like one changed since
        readable = {r.id: r for r in memory_records(r for r in results if isinstance(r, Item))}
        state = {e.memory_id: readable.get(e.memory_id) for e in events}
        unreadable = {e.memory_id for e, r in zip(events, results, strict=True)
                      if isinstance(r, Item) and e.memory_id not in readable}
        skipped: list[Skip] = []
        todo = []
        for event in events:
            if event.memory_id in unreadable:
                skipped.append(Skip("unreadable record", None, event.memory_id))
            elif _same_state(state[event.memory_id], event.record_after()):
                todo.append(event)
            else:
                skipped.append(Skip("changed since", None, event.memory_id))
        before = {e.memory_id: e.record_before() for e in todo}
        hashes = sorted({r.content_hash for r in before.values() if r is not None})
        taken: dict[str, str] = {}
        if hashes:
            current = yield StoreBatch([SearchOp(namespace, filter={
                **current_filter(), "content_hash": {"$in": hashes}}, limit=len(hashes) + 10)])
            taken = {r.content_hash: r.id for r in memory_records(current[0])
                     if r.namespace == namespace and r.id not in before}
        restore = []
        for event in todo:
            record = before[event.memory_id]
            if record is not None and record.content_hash in taken:
                skipped.append(Skip("duplicate", record.content, taken[record.content_hash]))
            else:
                restore.append(event)
        plan = plan_undo(restore, state, ctx)
        plan.skipped += skipped
        return plan

    return plan_for


def _same_state(record: MemoryRecord | None, after: MemoryRecord | None) -> bool:
    """Whether a memory is as an event left it (what undo compares; not the version)."""
    if record is None or after is None:
        return record is after
    return (record.content_hash, record.kind, record.metadata, record.status) == (
        after.content_hash, after.kind, after.metadata, after.status)


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
    ...}``) then every history event (``{"event": ...}``) under ``namespace_prefix``.
    Records and events that do not parse are left out (and reported): an import would
    refuse them; ``remem doctor`` finds them."""
    for item in store.iter_items(namespace_prefix):
        if item.value.get("type") in ("memory", "memory_version") and memory_records([item]):
            value = dict(item.value)
            yield json.dumps({"memory": value, "namespace": list(item.namespace),
                              "key": item.key, "created_at": item.created_at.timestamp(),
                              "updated_at": item.updated_at.timestamp()},
                             ensure_ascii=False)
    for item in store.iter_items(history_namespace(namespace_prefix)):
        if item.value.get("type") == "memory_event" and history_events([item]):
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
                ns = check_user_namespace(tuple(data["namespace"]))
                record = MemoryRecord.from_value(ns, data["memory"])
                key = str(data.get("key") or record.id)
                pending.append(PutOp(ns, key, data["memory"], event_at=record.event_time,
                                     created_at=data.get("created_at"),
                                     updated_at=data.get("updated_at"),
                                     index=chunk_index_fields(data["memory"])))
                if key == record.id:
                    pending.append(id_index_op(record.id, ns))
            elif "event" in data:
                event = HistoryEvent.from_value(data["event"])
                check_user_namespace(event.namespace)
                pending += event_ops(event)
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
