"""The memory pages: the namespace tree, the memory list with search and score bars, a
memory with its history and ``as_of`` view, and undo with a confirmation step.

Everything goes through the tenant's :class:`~remem.api.Memory` (:meth:`Inspector.memory`),
one bounded page at a time; nothing here reads tables.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response

from remem.errors import InvalidInputError, NotFoundError
from remem.memory.records import current_filter
from remem.memory.requests import (
    GetRequest,
    HistoryRequest,
    SearchRequest,
    UndoRequest,
)
from remem.store.types import CountOp, Namespace
from remem.ui.views import hit_bars, namespace_rows, parse_time, state_at, version_views
from remem.ui.web import inspector, ns_query

__all__ = ["router"]

router = APIRouter()

#: namespaces per page of the tree
TREE_PAGE = 20
MEMORIES_PREFIX: Namespace = ("memories",)

Labels = Annotated[list[str], Query(max_length=16, description="namespace labels")]
Offset = Annotated[int, Query(ge=0, le=10_000)]
IdPath = Annotated[str, Path(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f/]+$")]


@router.get("/namespaces")
async def namespaces(request: Request, offset: Offset = 0) -> Response:
    """The tenant's memory namespaces as a tree, a page at a time, each with the exact count
    of its current memories (those below it included), counted by the store in one batch."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    store = ui.memory(who).store

    def load() -> tuple[list[Namespace], dict[Namespace, int]]:
        found = store.list_namespaces(prefix=MEMORIES_PREFIX, limit=TREE_PAGE + 1,
                                      offset=offset)
        shown = found[:TREE_PAGE]
        counted = store.batch([CountOp(ns, filter=current_filter()) for ns in shown])
        return found, {ns: int(n) for ns, n in zip(shown, counted, strict=True)
                       if isinstance(n, int)}

    found, counts = await ui.run(load)
    rows = namespace_rows(found[:TREE_PAGE], counts)
    return ui.page(request, viewer, "namespaces.html", rows=rows, offset=offset,
                   next_offset=offset + TREE_PAGE if len(found) > TREE_PAGE else None,
                   prev_offset=max(0, offset - TREE_PAGE) if offset else None)


def _days(text: str) -> float | None:
    """The recency half-life field: empty (a form sends the blank field) is none, else a
    number of days in (0, 36500]; an :class:`InvalidInputError` names the field."""
    if not text.strip():
        return None
    try:
        days = float(text)
    except ValueError:
        days = math.nan
    if not 0 < days <= 36_500:  # NaN fails too
        raise InvalidInputError(f"recency_days must be a number of days from 0 (exclusive) "
                                f"to 36500, or empty for no recency weighting; got {text!r}")
    return days


@router.get("/memories")
async def memories(
        request: Request, ns: Labels = [],  # noqa: B006 (FastAPI copies defaults)
        q: Annotated[str, Query(max_length=10_000)] = "",
        mode: Literal["auto", "hybrid", "keyword", "vector"] = "auto",
        kind: Annotated[str, Query(max_length=64)] = "",
        as_of: Annotated[str, Query(max_length=64)] = "",
        include_invalid: bool = False,
        recency_days: Annotated[str, Query(max_length=32)] = "",
        limit: Annotated[int, Query(ge=1, le=100)] = 20, offset: Offset = 0) -> Response:
    """Memories of the tenant (or of namespace ``ns``), newest first, or best first for
    ``q`` with each signal's score as a bar."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    memory = ui.memory(who)
    when = parse_time(as_of)
    half_life = _days(recency_days)
    search = SearchRequest.of(
        query=q.strip() or None, namespace=ns or None, filters={"kind": kind} if kind else None,
        limit=limit, offset=offset, as_of=when, include_invalid=include_invalid, mode=mode,
        recency_half_life=half_life * 86_400 if half_life else None)
    result = await ui.run(lambda: memory.run(search))
    hits = list(result.hits)
    params: dict[str, Any] = {"q": q, "mode": mode if mode != "auto" else None, "kind": kind,
                              "as_of": as_of, "include_invalid": include_invalid or None,
                              "recency_days": half_life, "limit": limit}
    return ui.page(request, viewer, "memories.html", hits=hits, bars=hit_bars(hits), ns=ns,
                   q=q, mode=mode, kind=kind, as_of=as_of, include_invalid=include_invalid,
                   recency_days=half_life, limit=limit, offset=offset, params=params,
                   next_offset=offset + limit if len(hits) == limit else None,
                   prev_offset=max(0, offset - limit) if offset else None,
                   searched=bool(q.strip()),
                   clear_as_of=f"{ui.prefix}/memories?{ns_query(ns, **{**params, 'as_of': None})}")


@router.get("/memories/{memory_id}")
async def memory_page(request: Request, memory_id: IdPath,
                      as_of: Annotated[str, Query(max_length=64)] = "") -> Response:
    """A memory: its current value, its history as a timeline with diffs (each change
    undoable), and its value at ``as_of``."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    memory = ui.memory(who)
    when = parse_time(as_of)

    def load() -> tuple[Any, Any]:
        return (memory.run(GetRequest.of(memory_id=memory_id)),
                memory.run(HistoryRequest.of(memory_id=memory_id)))

    record, events = await ui.run(load)
    at = state_at(events, when) if when is not None else None
    times = [event.at for event in events]
    return ui.page(request, viewer, "memory.html", record=record,
                   versions=list(reversed(version_views(events))), as_of=as_of, at=at,
                   first=min(times) if times else None, last=max(times) if times else None)


async def _event(request: Request, memory_id: str, event_id: str) -> tuple[Any, Any, Any]:
    ui = inspector(request)
    viewer, who = await ui.member(request)
    memory = ui.memory(who)
    events = await ui.run(lambda: memory.run(HistoryRequest.of(memory_id=memory_id)))
    event = next((e for e in events if e.id == event_id), None)
    if event is None:
        raise NotFoundError(f"memory {memory_id!r} has no history event {event_id!r}; open "
                            "the memory's page and pick an event of its history")
    return viewer, who, event


@router.get("/memories/{memory_id}/undo/{event_id}")
async def undo_confirm(request: Request, memory_id: IdPath, event_id: IdPath) -> Response:
    """The confirmation step of an undo: what it will revert, and the button."""
    ui = inspector(request)
    viewer, _, event = await _event(request, memory_id, event_id)
    views = version_views([event])
    return ui.page(request, viewer, "undo.html", memory_id=memory_id, version=views[0])


@router.post("/memories/{memory_id}/undo/{event_id}")
async def undo(request: Request, memory_id: IdPath, event_id: IdPath) -> Response:
    """Revert the change an event recorded (CSRF-checked; read-only keys get a 403),
    recorded as the session's key, then back to the memory."""
    ui = inspector(request)
    viewer, who, event = await _event(request, memory_id, event_id)
    await ui.form(request, viewer)
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; log in with a key created "
                                 "without --read-only to undo")
    actor = f"key:{who.key_id}" if who.key_id else "user"
    memory = ui.memory(who)
    await ui.run(lambda: memory.run(UndoRequest.of(event_id=event.id, actor=actor)))
    return ui.redirect(request, f"{ui.prefix}/memories/{memory_id}?undone={event.id}")
