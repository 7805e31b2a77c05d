"""``/v1/memories``: the :class:`~remem.api.Memory` facade of the caller's tenant.

Each tenant gets its own ``Memory`` over its scoped store, so ids, history, undo and locks
are confined to the tenant like everything else. Every route takes a request value of
:mod:`remem.memory.requests` (the body; a path's id and delete's query parameters fill the
same value), runs it with ``Memory.run``, and answers with the result's model from
:mod:`remem.memory.wire`. The server records the caller's key as the ``actor`` of changes
(``key:<id>``), whatever the body says.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi import Request as HttpRequest

from remem.context.assemble import ContextRequest, assemble
from remem.context.wire import ContextOut
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    MemoryId,
    MemoryRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.wire import (
    AddResultOut,
    ChangeResultOut,
    ExportOut,
    HistoryOut,
    ImportOut,
    MemoryOut,
    MemoryPageOut,
    SearchResultOut,
)
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.schemas import DeleteMemoryQuery, UpdateMemoryBody
from remem.server.state import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)

IdPath = Annotated[MemoryId, Path(description="a memory id")]


def _actor(who: Principal) -> str:
    return f"key:{who.key_id}" if who.key_id else "user"


async def _run(http: HttpRequest, who: Principal, request: MemoryRequest[Any], *,
               waits_on_llm: bool = False) -> Any:
    """Run ``request`` on the caller's tenant, changes recorded as the caller's."""
    state = server_state(http)
    if "actor" in type(request).model_fields:
        request = request.model_copy(update={"actor": _actor(who)})
    memory = state.memory_for(who)
    return await state.run(lambda: memory.run(request), waits_on_llm=waits_on_llm)


@router.post("/memories", response_model=AddResultOut, summary="Add memories",
             responses=MODEL_RESPONSES)
async def add_memories(body: AddRequest, who: Writer, http: HttpRequest) -> AddResultOut:
    """Remember what ``messages`` say: extracted by the server's LLM (``infer: true``, or
    ``infer`` left out on a server with one), or stored as is (``infer: false``, or left out
    on a server without one; the answer's ``inferred`` says which). ``infer: true`` on a
    server without an LLM is a 400."""
    body = body.with_model(server_state(http).config.llm is not None)
    return AddResultOut.of(await _run(http, who, body, waits_on_llm=bool(body.infer)))


@router.post("/memories/search", response_model=SearchResultOut, summary="Search memories")
async def search_memories(body: SearchRequest, who: Reader,
                          http: HttpRequest) -> SearchResultOut:
    """Current memories of the scope, best first for ``query`` (newest first without), a
    page at a time (``limit``, ``offset``); ``min_score`` (0-1) drops hits whose
    ``relevance`` is below it; recency and ``mmr`` tune the ranking."""
    return SearchResultOut.of(await _run(http, who, body))


@router.post("/memories/list", response_model=MemoryPageOut, summary="List memories")
async def list_memories(body: GetAllRequest, who: Reader, http: HttpRequest) -> MemoryPageOut:
    """Every memory of a scope (required), newest first, a page at a time; send
    ``next_offset`` as ``offset`` for the next page."""
    return MemoryPageOut.of(await _run(http, who, body))


@router.post("/memories/delete", response_model=ChangeResultOut,
             summary="Delete every memory of a scope")
async def delete_all_memories(body: DeleteAllRequest, who: Writer,
                              http: HttpRequest) -> ChangeResultOut:
    """Forget a scope (required) in one call: invalidate each current memory (``hard``:
    remove every memory). Undoing any event of the answer undoes the whole call."""
    return ChangeResultOut.of(await _run(http, who, body))


@router.post("/memories/export", response_model=ExportOut, summary="Export memories")
async def export_memories(body: ExportRequest, who: Reader, http: HttpRequest) -> ExportOut:
    """Memories and history of a scope (every scope of the tenant when none is given) as
    JSONL lines, in one JSON answer."""
    return ExportOut.of(await _run(http, who, body))


@router.post("/memories/import", response_model=ImportOut, summary="Import memories")
async def import_memories(body: ImportRequest, who: Writer, http: HttpRequest) -> ImportOut:
    """Write lines made by export (ids, versions and history kept; idempotent). Send large
    exports in several requests under the body limit (``remem.Client.import_`` does)."""
    return ImportOut.of(await _run(http, who, body))


@router.get("/memories/{memory_id}", response_model=MemoryOut, summary="Read a memory")
async def get_memory(memory_id: IdPath, who: Reader, http: HttpRequest) -> MemoryOut:
    """The memory with this id (404 if none)."""
    return MemoryOut.of(await _run(http, who, GetRequest.of(memory_id=memory_id)))


@router.patch("/memories/{memory_id}", response_model=ChangeResultOut,
              summary="Correct a memory")
async def update_memory(memory_id: IdPath, body: UpdateMemoryBody, who: Writer,
                        http: HttpRequest) -> ChangeResultOut:
    """Correct a memory in place (same id, version + 1); ``version`` guards against a
    concurrent change (409)."""
    request = UpdateRequest.of(**dict(body), memory_id=memory_id)
    return ChangeResultOut.of(await _run(http, who, request))


@router.delete("/memories/{memory_id}", response_model=ChangeResultOut,
               summary="Delete a memory")
async def delete_memory(memory_id: IdPath, query: Annotated[DeleteMemoryQuery, Query()],
                        who: Writer, http: HttpRequest) -> ChangeResultOut:
    """Invalidate a memory (kept for history and ``as_of``); ``hard=true`` removes it."""
    request = DeleteRequest.of(**dict(query), memory_id=memory_id)
    return ChangeResultOut.of(await _run(http, who, request))


@router.get("/memories/{memory_id}/history", response_model=HistoryOut,
            summary="History of a memory")
async def memory_history(memory_id: IdPath, who: Reader, http: HttpRequest) -> HistoryOut:
    """Every change of the memory, oldest first."""
    return HistoryOut.of(await _run(http, who, HistoryRequest.of(memory_id=memory_id)))


@router.post("/events/{event_id}/undo", response_model=ChangeResultOut,
             summary="Undo a change")
async def undo_event(event_id: Annotated[MemoryId, Path(description="a history event id")],
                     who: Writer, http: HttpRequest) -> ChangeResultOut:
    """Revert the change a history event recorded (every memory of a delete_all)."""
    return ChangeResultOut.of(await _run(http, who, UndoRequest.of(event_id=event_id)))


@router.post("/memories/context", response_model=ContextOut, summary="Assemble context")
async def memory_context(body: ContextRequest, who: Reader, http: HttpRequest) -> ContextOut:
    """The context for a model call within ``budget_tokens``: the profile, memories relevant
    to ``query`` and the running summary and recent messages of the tenant's thread
    ``thread_id`` (see ``docs/context.md``)."""
    state = server_state(http)
    memory, threads = state.memory_for(who), state.threads_for(who)
    return ContextOut.of(await state.run(lambda: assemble(memory, body, threads)))
