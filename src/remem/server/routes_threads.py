"""``/v1/threads``: the caller's tenant's conversations (messages and checkpoints).

Threads live in a :class:`~remem.threads.ThreadStore` on the server's database. Tenancy is
the same promise as for the store, kept in two ways because thread ids are not namespaced:
a thread's stored id is ``<tenant>/<id>`` (tenant names cannot contain ``/``), so a request
can only name its own tenant's threads; and each thread's metadata carries the tenant under
:data:`TENANT_KEY`, which every listing filters on and no answer shows.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from remem.errors import InvalidInputError, RememError
from remem.messages import from_openai, to_openai
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.state import Principal
from remem.threads.types import Checkpoint, ThreadInfo

__all__ = ["TENANT_KEY", "router"]

TENANT_KEY = "_remem_tenant"

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERROR_RESPONSES)

ThreadId = Annotated[str, StringConstraints(min_length=1, max_length=180,
                                            pattern=r"^[^\x00-\x1f\x7f]+$")]
IdPath = Annotated[ThreadId, Path(description="a thread id")]
CheckpointId = Annotated[str, StringConstraints(min_length=1, max_length=256,
                                                pattern=r"^[^\x00-\x1f\x7f]+$")]


class _Body(BaseModel):
    # strict: JSON false is not the number 0, "1" is not 1 (interim: thread requests follow)
    model_config = ConfigDict(extra="forbid", strict=True)


class ChatMessageIn(BaseModel):
    """An OpenAI-style chat message."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: Annotated[str, StringConstraints(max_length=200_000)] | list[dict[str, Any]] | None \
        = None


Messages = Annotated[list[ChatMessageIn], Field(min_length=1, max_length=500)]


class CreateThreadBody(_Body):
    """A new thread: its id (generated when left out), metadata and first messages."""

    thread_id: ThreadId | None = None
    metadata: dict[str, Any] | None = None
    messages: Annotated[list[ChatMessageIn], Field(max_length=500)] = Field(default_factory=list)


class AppendBody(_Body):
    """Messages to append as one new checkpoint."""

    messages: Messages
    expected_head: CheckpointId | None = None


class ListThreadsBody(_Body):
    """Threads whose metadata matches ``filter``, most recently changed first."""

    filter: dict[str, Any] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 20
    offset: Annotated[int, Field(ge=0, le=100_000)] = 0


class ForkBody(_Body):
    """A new thread from a checkpoint (the head when left out)."""

    checkpoint_id: CheckpointId | None = None
    new_thread_id: ThreadId | None = None
    metadata: dict[str, Any] | None = None


class RewindBody(_Body):
    """Make an earlier checkpoint the head again."""

    checkpoint_id: CheckpointId


def _stored(who: Principal, thread_id: str) -> str:
    return f"{who.tenant}/{thread_id}"


@contextlib.contextmanager
def _as_seen_by(who: Principal) -> Iterator[None]:
    """Re-raise remem errors with the tenant part of thread ids taken out of the message."""
    try:
        yield
    except RememError as exc:
        message = str(exc).replace(f"'{who.tenant}/", "'").replace(f'"{who.tenant}/', '"')
        if message == str(exc):
            raise
        raise type(exc)(message) from None


def _public(thread_id: str) -> str:
    return thread_id.split("/", 1)[1]


def _metadata(who: Principal, metadata: dict[str, Any] | None) -> dict[str, Any]:
    for key in metadata or {}:
        if key.startswith("_remem"):
            raise InvalidInputError(f"metadata key {key!r}: keys starting with '_remem' are "
                                    "reserved by the server; rename it")
    return {**(metadata or {}), TENANT_KEY: who.tenant}


def _checkpoint(cp: Checkpoint) -> dict[str, Any]:
    data = cp.to_dict()
    data["thread_id"] = _public(cp.thread_id)
    meta = dict(data["metadata"])
    if isinstance(meta.get("from_thread"), str) and "/" in meta["from_thread"]:
        meta["from_thread"] = _public(meta["from_thread"])
    data["metadata"] = meta
    return data


def _info(info: ThreadInfo) -> dict[str, Any]:
    return {"thread_id": _public(info.thread_id),
            "metadata": {k: v for k, v in info.metadata.items() if k != TENANT_KEY},
            "head": _checkpoint(info.head), "created_at": info.created_at,
            "updated_at": info.updated_at, "source": info.source, "ttl": info.ttl,
            "expires_at": info.expires_at}


def _messages(messages: list[ChatMessageIn]) -> Any:
    return from_openai([m.model_dump(exclude_none=True) for m in messages])


@router.post("", summary="Create a thread")
async def create_thread(body: CreateThreadBody, who: Writer, request: Request) -> JSONResponse:
    """A new thread (409 if the id is taken in your tenant)."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            threads = server_state(request).threads()
            thread_id = body.thread_id or f"thr_{uuid.uuid4().hex}"
            thread = threads.create(_stored(who, thread_id), metadata=_metadata(who, body.metadata),
                                    messages=_messages(body.messages))
            return JSONResponse(_info(thread.info()), status_code=200)

    return await server_state(request).run(work)


@router.post("/list", summary="List threads")
async def list_threads(body: ListThreadsBody, who: Reader, request: Request) -> JSONResponse:
    """Your tenant's threads matching ``filter`` (over metadata), newest change first."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            mine: dict[str, Any] = {TENANT_KEY: who.tenant}
            where = mine if not body.filter else {"$and": [mine, body.filter]}
            found = server_state(request).threads().list_threads(where, limit=body.limit,
                                                                 offset=body.offset)
            return JSONResponse({"threads": [_info(info) for info in found]})

    return await server_state(request).run(work)


@router.get("/{thread_id}", summary="Read a thread")
async def get_thread(thread_id: IdPath, who: Reader, request: Request) -> JSONResponse:
    """The thread's metadata and head checkpoint (404 if none)."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            return JSONResponse(_info(server_state(request).threads().get(_stored(who, thread_id))))

    return await server_state(request).run(work)


@router.delete("/{thread_id}", summary="Delete a thread")
async def delete_thread(thread_id: IdPath, who: Writer, request: Request) -> JSONResponse:
    """Delete the thread and its checkpoints; ``deleted`` says whether it existed."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            gone = server_state(request).threads().delete(_stored(who, thread_id))
            return JSONResponse({"deleted": gone})

    return await server_state(request).run(work)


@router.post("/{thread_id}/messages", summary="Append messages")
async def append_messages(thread_id: IdPath, body: AppendBody, who: Writer,
                          request: Request) -> JSONResponse:
    """Append messages as one checkpoint; ``expected_head`` guards against a concurrent
    append (409)."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            cp = server_state(request).threads().append(
                _stored(who, thread_id), _messages(body.messages), expected_head=body.expected_head)
            return JSONResponse(_checkpoint(cp))

    return await server_state(request).run(work)


@router.get("/{thread_id}/messages", summary="Read messages")
async def read_messages(thread_id: IdPath, who: Reader, request: Request,
                        checkpoint_id: Annotated[CheckpointId | None, Query()] = None,
                        start: Annotated[int, Query(ge=0, le=10**9)] = 0,
                        last: Annotated[int | None, Query(ge=1, le=100_000)] = None
                        ) -> JSONResponse:
    """The messages at the head (or at ``checkpoint_id``), as OpenAI-style dicts."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            found = server_state(request).threads().messages(
                _stored(who, thread_id), checkpoint_id=checkpoint_id, start=start, last=last)
            return JSONResponse({"messages": to_openai(found)})

    return await server_state(request).run(work)


@router.get("/{thread_id}/checkpoints", summary="List checkpoints")
async def list_checkpoints(thread_id: IdPath, who: Reader, request: Request,
                           limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                           offset: Annotated[int, Query(ge=0, le=100_000)] = 0) -> JSONResponse:
    """The thread's checkpoints, newest first."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            found = server_state(request).threads().checkpoints(
                _stored(who, thread_id), limit=limit, offset=offset)
            return JSONResponse({"checkpoints": [_checkpoint(cp) for cp in found]})

    return await server_state(request).run(work)


@router.post("/{thread_id}/rewind", summary="Rewind a thread")
async def rewind_thread(thread_id: IdPath, body: RewindBody, who: Writer,
                        request: Request) -> JSONResponse:
    """Time travel in place: a new head with the messages of ``checkpoint_id``."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            cp = server_state(request).threads().rewind(_stored(who, thread_id), body.checkpoint_id)
            return JSONResponse(_checkpoint(cp))

    return await server_state(request).run(work)


@router.post("/{thread_id}/fork", summary="Fork a thread")
async def fork_thread(thread_id: IdPath, body: ForkBody, who: Writer,
                      request: Request) -> JSONResponse:
    """A new thread sharing the messages up to ``checkpoint_id`` (default: the head)."""
    def work() -> JSONResponse:
        with _as_seen_by(who):
            threads = server_state(request).threads()
            new_id = body.new_thread_id or f"thr_{uuid.uuid4().hex}"
            thread = threads.fork(_stored(who, thread_id), body.checkpoint_id,
                                  new_thread_id=_stored(who, new_id),
                                  metadata=_metadata(who, body.metadata))
            return JSONResponse(_info(thread.info()))

    return await server_state(request).run(work)
