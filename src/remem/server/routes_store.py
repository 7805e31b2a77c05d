"""``/v1/store``: the raw long-term store of the caller's tenant (items, search, counts,
namespaces).

Every route takes its store from :meth:`ServerState.raw_store_for`, a
:class:`~remem.store.guarded.GuardedStore`: a write under a family's root (memories, files,
approvals, blocks, prompts, episodes, graph, threads, remem's ``_remem`` bookkeeping) is a
403 ``reserved_namespace`` naming the family's API, and so is a read of files or approvals
unless the key is an admin key; a search, count or listing over every root leaves those out
(see :mod:`remem.store.reserved` for the table)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from remem.errors import NotFoundError
from remem.requests import NamespacePrefix, Timestamp
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.schemas import (
    MAX_NAMESPACE_DEPTH,
    ItemOut,
    Key,
    Label,
    NamespaceList,
    OkOut,
    PutItemBody,
    SearchResultsOut,
    StoreSearchBody,
)
from remem.store.types import NOT_PROVIDED, SearchItem

__all__ = ["router"]

router = APIRouter(prefix="/v1/store", tags=["store"], responses=ERROR_RESPONSES)

NamespaceQuery = Annotated[list[Label], Query(min_length=1, max_length=MAX_NAMESPACE_DEPTH,
                                              description="the namespace, one label per "
                                                          "repetition")]


class StoreCountBody(BaseModel):
    """Count items under a namespace prefix (see the store's ``count``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    namespace_prefix: NamespacePrefix = Field(default_factory=list)
    filter: dict[str, Any] | None = None
    event_after: Timestamp | None = None
    event_before: Timestamp | None = None


class CountOut(BaseModel):
    """How many items match."""

    count: int


def _item(item: Any) -> dict[str, Any]:
    data: dict[str, Any] = item.to_dict()
    return data


@router.put("/items", response_model=OkOut, summary="Insert or replace an item")
async def put_item(body: PutItemBody, who: Writer, request: Request) -> dict[str, Any]:
    """Store ``value`` at ``namespace`` / ``key`` (replacing what is there)."""
    state = server_state(request)
    store = state.raw_store_for(who)
    await state.run(lambda: store.put(
        tuple(body.namespace), body.key, body.value,
        ttl=body.ttl if body.ttl is not None else NOT_PROVIDED, index=body.index,
        event_at=body.event_at))
    return {"ok": True}


@router.get("/items", response_model=ItemOut, summary="Read an item")
async def get_item(namespace: NamespaceQuery, key: Annotated[Key, Query()], who: Reader,
                   request: Request) -> dict[str, Any]:
    """The item at ``namespace`` / ``key`` (404 if absent or expired)."""
    state = server_state(request)
    item = await state.run(lambda: state.raw_store_for(who).get(tuple(namespace), key))
    if item is None:
        raise NotFoundError(f"no item with key {key!r} in namespace {list(namespace)!r}")
    return _item(item)


@router.delete("/items", response_model=OkOut, summary="Delete an item")
async def delete_item(namespace: NamespaceQuery, key: Annotated[Key, Query()], who: Writer,
                      request: Request) -> dict[str, Any]:
    """Delete the item (deleting a missing item is not an error)."""
    state = server_state(request)
    await state.run(lambda: state.raw_store_for(who).delete(tuple(namespace), key))
    return {"ok": True}


@router.post("/search", response_model=SearchResultsOut, summary="Search items")
async def search_items(body: StoreSearchBody, who: Reader, request: Request) -> dict[str, Any]:
    """Items under ``namespace_prefix`` matching ``filter``, ranked by ``query`` when given."""
    state = server_state(request)
    found: list[SearchItem] = await state.run(lambda: state.raw_store_for(who).search(
        tuple(body.namespace_prefix), query=body.query, filter=body.filter, limit=body.limit,
        offset=body.offset, mode=body.mode, event_after=body.event_after,
        event_before=body.event_before))
    return {"items": [_item(item) for item in found]}


@router.post("/count", response_model=CountOut, summary="Count items")
async def count_items(body: StoreCountBody, who: Reader, request: Request) -> dict[str, Any]:
    """How many live items under ``namespace_prefix`` match ``filter`` and the event-time
    range: what a search without a query lists over all its pages."""
    state = server_state(request)
    found = await state.run(lambda: state.raw_store_for(who).count(
        tuple(body.namespace_prefix), filter=body.filter, event_after=body.event_after,
        event_before=body.event_before))
    return {"count": found}


@router.get("/namespaces", response_model=NamespaceList, summary="List namespaces")
async def list_namespaces(
    who: Reader, request: Request,
    prefix: Annotated[list[Label] | None, Query(max_length=MAX_NAMESPACE_DEPTH)] = None,
    suffix: Annotated[list[Label] | None, Query(max_length=MAX_NAMESPACE_DEPTH)] = None,
    max_depth: Annotated[int | None, Query(ge=1, le=MAX_NAMESPACE_DEPTH)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=100_000)] = 0,
) -> dict[str, Any]:
    """Distinct namespaces (``*`` in ``prefix``/``suffix`` matches any one label)."""
    state = server_state(request)
    found = await state.run(lambda: state.raw_store_for(who).list_namespaces(
        prefix=tuple(prefix) if prefix else None, suffix=tuple(suffix) if suffix else None,
        max_depth=max_depth, limit=limit, offset=offset))
    return {"namespaces": [list(ns) for ns in found]}


