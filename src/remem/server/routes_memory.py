"""``/v1/memories``: the :class:`~remem.api.Memory` facade of the caller's tenant.

Each tenant gets its own ``Memory`` over its scoped store, so ids, history, undo and locks
are confined to the tenant like everything else.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from remem.errors import UnsupportedError
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.schemas import (
    AddMemoryBody,
    ChangeResultOut,
    MemoryId,
    SearchMemoryBody,
    UpdateMemoryBody,
)
from remem.server.state import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)

IdPath = Annotated[MemoryId, Path(description="a memory id")]


def _actor(who: Principal) -> str:
    return f"key:{who.key_id}" if who.key_id else "user"


@router.post("/memories", summary="Add memories")
async def add_memories(body: AddMemoryBody, who: Writer, request: Request) -> JSONResponse:
    """Remember what ``messages`` say: extracted by the server's LLM (``infer``), or stored
    as is (``infer: false``)."""
    state = server_state(request)
    if body.infer and state.config.llm is None:
        raise UnsupportedError(
            "infer=true needs an LLM and this server has none configured: send "
            "\"infer\": false to store the text as is, or start the server with REMEM_LLM_* set")
    messages: Any = body.messages if isinstance(body.messages, str) else [
        m.model_dump(exclude_none=True) for m in body.messages]
    result = await state.run(lambda: state.memory_for(who).add(
        messages, user_id=body.user_id, agent_id=body.agent_id, thread_id=body.thread_id,
        namespace=tuple(body.namespace) if body.namespace else None, infer=body.infer,
        metadata=body.metadata, kind=body.kind, actor=_actor(who)), waits_on_llm=body.infer)
    return JSONResponse(result.to_dict())


@router.post("/memories/search", summary="Search memories")
async def search_memories(body: SearchMemoryBody, who: Reader,
                          request: Request) -> JSONResponse:
    """Current memories of the scope, best first for ``query`` (newest first without)."""
    state = server_state(request)
    result = await state.run(lambda: state.memory_for(who).search(
        body.query, user_id=body.user_id, agent_id=body.agent_id, thread_id=body.thread_id,
        namespace=tuple(body.namespace) if body.namespace else None, filters=body.filters,
        limit=body.limit, as_of=body.as_of, include_invalid=body.include_invalid,
        mode=body.mode))
    return JSONResponse(result.to_dict())


@router.get("/memories/{memory_id}", summary="Read a memory")
async def get_memory(memory_id: IdPath, who: Reader, request: Request) -> JSONResponse:
    """The memory with this id (404 if none)."""
    state = server_state(request)
    return JSONResponse(await state.run(lambda: state.memory_for(who).get(memory_id).to_dict()))


@router.patch("/memories/{memory_id}", response_model=ChangeResultOut,
              summary="Correct a memory")
async def update_memory(memory_id: IdPath, body: UpdateMemoryBody, who: Writer,
                        request: Request) -> dict[str, Any]:
    """Correct a memory in place (same id, version + 1); ``version`` guards against a
    concurrent change (409)."""
    state = server_state(request)
    result = await state.run(lambda: state.memory_for(who).update(
        memory_id, body.content, kind=body.kind, metadata=body.metadata, version=body.version,
        actor=_actor(who), reason=body.reason))
    data: dict[str, Any] = result.to_dict()
    return data


@router.delete("/memories/{memory_id}", response_model=ChangeResultOut,
               summary="Delete a memory")
async def delete_memory(memory_id: IdPath, who: Writer, request: Request,
                        hard: Annotated[bool, Query()] = False,
                        version: Annotated[int | None, Query(ge=1, le=2**53)] = None
                        ) -> dict[str, Any]:
    """Invalidate a memory (kept for history and ``as_of``); ``hard=true`` removes it."""
    state = server_state(request)
    result = await state.run(lambda: state.memory_for(who).delete(
        memory_id, hard=hard, version=version, actor=_actor(who)))
    data: dict[str, Any] = result.to_dict()
    return data


@router.get("/memories/{memory_id}/history", summary="History of a memory")
async def memory_history(memory_id: IdPath, who: Reader, request: Request) -> JSONResponse:
    """Every change of the memory, oldest first."""
    state = server_state(request)
    events = await state.run(lambda: state.memory_for(who).history(memory_id))
    return JSONResponse({"events": [event.to_dict() for event in events]})


@router.post("/events/{event_id}/undo", response_model=ChangeResultOut,
             summary="Undo a change")
async def undo_event(event_id: Annotated[MemoryId, Path(description="a history event id")],
                     who: Writer, request: Request) -> dict[str, Any]:
    """Revert the change a history event recorded."""
    state = server_state(request)
    result = await state.run(lambda: state.memory_for(who).undo(event_id, actor=_actor(who)))
    data: dict[str, Any] = result.to_dict()
    return data
