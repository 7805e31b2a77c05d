"""``/v1/threads``: the caller's tenant's conversations (messages and checkpoints).

Each route takes one thread request (:mod:`remem.threads.requests`): its path parameters
from the path, the rest from the body (or the query string of a ``GET``), as
:mod:`remem.threads.http` declares for the client too. The request runs on the tenant's
:class:`~remem.threads.scoped.ScopedThreads` view (``ServerState.threads_for``), which keeps
the tenancy: ids, listings, metadata and error messages are the tenant's own there, and
nothing here rewrites them. Answers are the result's JSON (:mod:`remem.threads.wire`), which
each route declares as its ``response_model``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse

from remem.errors import UnsupportedError
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.state import Principal
from remem.threads.http import ROUTES, part_model
from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    ContextRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadId,
    ThreadRequest,
    UpdateStateRequest,
)
from remem.threads.thread import Thread
from remem.threads.wire import RESULT_MODELS, dump

__all__ = ["router"]

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERROR_RESPONSES)

Q = TypeVar("Q", bound=ThreadRequest[Any])
_PATH = {"thread_id": Annotated[ThreadId, Path(description="a thread id")]}


def _from_http(request: type[Q]) -> Callable[..., Coroutine[Any, Any, Q]]:
    """A FastAPI dependency that builds ``request`` from the path and the body or query.

    Its signature is made from the route table, so FastAPI documents the derived body (or
    query) model; fields the caller left out stay unset in the request (``ttl``)."""
    route = ROUTES[request]
    part = part_model(request)

    async def build(**values: Any) -> Q:
        given = values.pop("part", None)
        fields = {name: getattr(given, name) for name in given.model_fields_set} if given else {}
        return request.of(**values, **fields)

    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=_PATH[name])
              for name in route.path_params]
    if part is not None:
        annotation = Annotated[part, Query()] if route.in_query else part
        params.append(inspect.Parameter("part", inspect.Parameter.KEYWORD_ONLY,
                                        annotation=annotation))
    build.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return build


def _route(request: type[ThreadRequest[Any]]) -> Callable[[Callable[..., Any]], Any]:
    """The route decorator of ``request``: method, path, summary, response model, and the
    502 of a route that calls the server's model (compaction)."""
    route = ROUTES[request]
    return router.api_route(route.path, methods=[route.method], summary=route.summary,
                            response_model=RESULT_MODELS[request],
                            responses=MODEL_RESPONSES if request is CompactRequest else None)


async def _answer(http: Request, who: Principal, request: ThreadRequest[Any], *,
                  waits_on_llm: bool = False) -> JSONResponse:
    """Run ``request`` on the tenant's threads in a worker thread; its result as JSON."""
    state = server_state(http)

    def work() -> dict[str, Any]:
        result = state.threads_for(who).run(request)
        if isinstance(result, Thread):  # a new thread answers with its record
            result = result.info()
        return dump(type(request), result)

    return JSONResponse(await state.run(work, waits_on_llm=waits_on_llm))


# each route's request, built by _from_http; routes declare the key (`who`) before it, so a
# request without a valid key is a 401 before its body is looked at
CreateThreadIn = Annotated[CreateThreadRequest, Depends(_from_http(CreateThreadRequest))]
ListThreadsIn = Annotated[ListThreadsRequest, Depends(_from_http(ListThreadsRequest))]
SearchThreadsIn = Annotated[SearchThreadsRequest, Depends(_from_http(SearchThreadsRequest))]
GetThreadIn = Annotated[GetThreadRequest, Depends(_from_http(GetThreadRequest))]
SetMetadataIn = Annotated[SetMetadataRequest, Depends(_from_http(SetMetadataRequest))]
DeleteThreadIn = Annotated[DeleteThreadRequest, Depends(_from_http(DeleteThreadRequest))]
AppendIn = Annotated[AppendRequest, Depends(_from_http(AppendRequest))]
MessagesIn = Annotated[MessagesRequest, Depends(_from_http(MessagesRequest))]
CheckpointsIn = Annotated[CheckpointsRequest, Depends(_from_http(CheckpointsRequest))]
CheckpointIn = Annotated[CheckpointRequest, Depends(_from_http(CheckpointRequest))]
UpdateStateIn = Annotated[UpdateStateRequest, Depends(_from_http(UpdateStateRequest))]
RewindIn = Annotated[RewindRequest, Depends(_from_http(RewindRequest))]
ForkIn = Annotated[ForkRequest, Depends(_from_http(ForkRequest))]
CopyIn = Annotated[CopyRequest, Depends(_from_http(CopyRequest))]
CompactIn = Annotated[CompactRequest, Depends(_from_http(CompactRequest))]
ContextIn = Annotated[ContextRequest, Depends(_from_http(ContextRequest))]


@_route(CreateThreadRequest)
async def create_thread(who: Writer, body: CreateThreadIn, http: Request) -> JSONResponse:
    """A new thread (409 if the id is taken in your tenant)."""
    return await _answer(http, who, body)


@_route(ListThreadsRequest)
async def list_threads(who: Reader, body: ListThreadsIn, http: Request) -> JSONResponse:
    """Your tenant's threads matching ``filter`` (over metadata), newest change first."""
    return await _answer(http, who, body)


@_route(SearchThreadsRequest)
async def search_threads(who: Reader, body: SearchThreadsIn, http: Request) -> JSONResponse:
    """Your tenant's threads whose messages match ``query`` (keywords, and meaning when the
    server has an embedder), best first; ``owner`` is a thread's metadata ``user_id``."""
    return await _answer(http, who, body)


@_route(GetThreadRequest)
async def get_thread(who: Reader, body: GetThreadIn, http: Request) -> JSONResponse:
    """The thread's metadata and head checkpoint (404 if none)."""
    return await _answer(http, who, body)


@_route(SetMetadataRequest)
async def set_metadata(who: Writer, body: SetMetadataIn, http: Request) -> JSONResponse:
    """Merge ``metadata`` into the thread's (or replace it: ``merge: false``)."""
    return await _answer(http, who, body)


@_route(DeleteThreadRequest)
async def delete_thread(who: Writer, body: DeleteThreadIn, http: Request) -> JSONResponse:
    """Delete the thread and its checkpoints; ``deleted`` says whether it existed."""
    return await _answer(http, who, body)


@_route(AppendRequest)
async def append_messages(who: Writer, body: AppendIn, http: Request) -> JSONResponse:
    """Append messages as one checkpoint; ``expected_head`` guards against a concurrent
    append (409)."""
    return await _answer(http, who, body)


@_route(MessagesRequest)
async def read_messages(who: Reader, body: MessagesIn, http: Request) -> JSONResponse:
    """The messages at the head (or at ``checkpoint_id``): OpenAI-style, with their ids."""
    return await _answer(http, who, body)


@_route(CheckpointsRequest)
async def list_checkpoints(who: Reader, body: CheckpointsIn, http: Request) -> JSONResponse:
    """The thread's checkpoints, newest first."""
    return await _answer(http, who, body)


@_route(CheckpointRequest)
async def read_checkpoint(who: Reader, body: CheckpointIn, http: Request) -> JSONResponse:
    """One checkpoint (the head when ``checkpoint_id`` is left out)."""
    return await _answer(http, who, body)


@_route(UpdateStateRequest)
async def update_state(who: Writer, body: UpdateStateIn, http: Request) -> JSONResponse:
    """A new head checkpoint with the same messages and a new ``state``."""
    return await _answer(http, who, body)


@_route(RewindRequest)
async def rewind_thread(who: Writer, body: RewindIn, http: Request) -> JSONResponse:
    """Time travel in place: a new head with the messages of ``checkpoint_id``."""
    return await _answer(http, who, body)


@_route(ForkRequest)
async def fork_thread(who: Writer, body: ForkIn, http: Request) -> JSONResponse:
    """A new thread sharing the messages up to ``checkpoint_id`` (default: the head)."""
    return await _answer(http, who, body)


@_route(CopyRequest)
async def copy_thread(who: Writer, body: CopyIn, http: Request) -> JSONResponse:
    """A new thread with its own copy of the messages up to ``checkpoint_id``."""
    return await _answer(http, who, body)


@_route(CompactRequest)
async def compact_thread(who: Writer, body: CompactIn, http: Request) -> JSONResponse:
    """Fold older messages into the running summary with the server's LLM; the head after
    (its ``state`` holds the summary). 400 when the server has no LLM configured."""
    if server_state(http).config.llm is None:
        raise UnsupportedError(
            "compaction needs an LLM and this server has none configured: start the server "
            "with REMEM_LLM_* set")
    return await _answer(http, who, body, waits_on_llm=True)


@_route(ContextRequest)
async def thread_context(who: Reader, body: ContextIn, http: Request) -> JSONResponse:
    """The messages to send to a model: system prompt, running summary, the messages it does
    not cover, trimmed to ``max_tokens`` / ``max_messages``."""
    return await _answer(http, who, body)
