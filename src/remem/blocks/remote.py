"""``client.blocks``: the core memory blocks of a ``remem serve`` tenant, over ``/v1/blocks``
and ``/v1/agents/{agent_id}/blocks``.

:class:`RemoteBlocks` has :class:`~remem.blocks.Blocks`' methods (``create``, ``get``,
``list_blocks``, ``update``, ``delete``, ``history``, ``attach``, ``detach``, ``attached``,
``blocks_of``, ``append``, ``replace``, ``rethink``, ``render``) with the same arguments
less ``actor`` (the server records the caller's tenant), answering the same values, and an
async twin of each (``acreate``, ``aget``, ...) as on :class:`~remem.client.Client`. An
agent edit of a read-only block raises :class:`~remem.errors.ReadOnlyError`, a stale etag
:class:`~remem.errors.ConflictError`, as in process. Each operation is one call built by a
pure function of this module (the ``_*_call`` functions); the sync and async methods only
send it with the client's shell.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, TypeVar

from remem.blocks.core import DEFAULT_LIMIT, Block, BlockSpec
from remem.blocks.requests import (
    AppendRequest,
    BlockRequest,
    CreateBlockRequest,
    ReplaceRequest,
    RethinkRequest,
    UpdateBlockRequest,
)
from remem.files.render import Overflow, Rendered
from remem.files.types import FileEvent
from remem.transport import Call, Sender, path_segment

__all__ = ["RemoteBlocks", "block_of", "rendered_of"]

T = TypeVar("T")


def block_of(data: dict[str, Any]) -> Block:
    """A :class:`~remem.blocks.Block` from the JSON the routes answer."""
    return Block(data["id"], BlockSpec(data["label"], data["value"], int(data["limit"]),
                                       data.get("description", ""),
                                       bool(data.get("read_only", False))), data["etag"])


def rendered_of(data: dict[str, Any]) -> Rendered:
    """A :class:`~remem.files.render.Rendered` from its JSON."""
    return Rendered(data["text"], int(data["tokens"]), int(data["budget"]), data["counter"],
                    [Overflow(o["source"], int(o["tokens"]), int(o.get("included_tokens", 0)))
                     for o in data.get("overflow", [])])


def _call(method: str, path: str, parse: Callable[[Any], T], body: Any = None,
          params: dict[str, Any] | None = None) -> Call[T]:
    return Call(method, path, parse, body, params or {})


def _path(*parts: str) -> str:
    return "/".join(path_segment(p) if i else p for i, p in enumerate(parts))


def _none(data: Any) -> None:
    return None


def _blocks(data: dict[str, Any]) -> builtins.list[Block]:
    return [block_of(b) for b in data["blocks"]]


def _events(data: builtins.list[Any]) -> builtins.list[FileEvent]:
    return [FileEvent.from_value(e) for e in data]


# -- the pure core: one operation -> one HTTP call ------------------------------------------

def _create_call(body: CreateBlockRequest) -> Call[Block]:
    """``POST /v1/blocks``."""
    return _call("POST", "/v1/blocks", block_of, body.model_dump(mode="json"))


def _get_call(block_id: str) -> Call[Block]:
    """``GET /v1/blocks/{id}``."""
    return _call("GET", _path("/v1/blocks", block_id), block_of)


def _list_call() -> Call[builtins.list[Block]]:
    """``GET /v1/blocks``."""
    return _call("GET", "/v1/blocks", _blocks)


def _update_call(block_id: str, body: UpdateBlockRequest) -> Call[Block]:
    """``PATCH /v1/blocks/{id}`` with the fields given (omitted ones stay)."""
    return _call("PATCH", _path("/v1/blocks", block_id), block_of,
                 body.model_dump(mode="json", exclude_none=True))


def _delete_call(block_id: str) -> Call[None]:
    """``DELETE /v1/blocks/{id}``."""
    return _call("DELETE", _path("/v1/blocks", block_id), _none)


def _history_call(block_id: str) -> Call[builtins.list[FileEvent]]:
    """``GET /v1/blocks/{id}/history``."""
    return _call("GET", _path("/v1/blocks", block_id) + "/history", _events)


def _attach_call(agent_id: str, block_id: str, *, attach: bool = True) -> Call[None]:
    """``PUT`` (attach) or ``DELETE`` (detach) ``/v1/agents/{agent}/blocks/{id}``."""
    return _call("PUT" if attach else "DELETE",
                 _path("/v1/agents", agent_id, "blocks", block_id), _none)


def _blocks_of_call(agent_id: str) -> Call[builtins.list[Block]]:
    """``GET /v1/agents/{agent}/blocks``."""
    return _call("GET", _path("/v1/agents", agent_id, "blocks"), _blocks)


_EDIT_ROUTES: dict[type[Any], str] = {AppendRequest: "append", ReplaceRequest: "replace",
                                      RethinkRequest: "rethink"}


def _edit_call(agent_id: str, body: BlockRequest) -> Call[Block]:
    """``POST /v1/blocks/{append|replace|rethink}?agent_id=``: the agent's edit."""
    return _call("POST", f"/v1/blocks/{_EDIT_ROUTES[type(body)]}", block_of,
                 body.model_dump(mode="json"), {"agent_id": agent_id})


def _render_call(agent_id: str, budget: int | None) -> Call[Rendered]:
    """``GET /v1/blocks/render?agent_id=&budget=``."""
    params: dict[str, Any] = {"agent_id": agent_id}
    if budget is not None:
        params["budget"] = budget
    return _call("GET", "/v1/blocks/render", rendered_of, params=params)


def _create_body(block_id: str, label: str, value: str, limit: int, description: str,
                 read_only: bool) -> CreateBlockRequest:
    return CreateBlockRequest.of(id=block_id, label=label, value=value, limit=limit,
                                 description=description, read_only=read_only)


def _update_body(value: str | None, limit: int | None, description: str | None,
                 read_only: bool | None, etag: str | None) -> UpdateBlockRequest:
    return UpdateBlockRequest.of(value=value, limit=limit, description=description,
                                 read_only=read_only, etag=etag)


class RemoteBlocks:
    """The tenant's blocks on the server ``client`` talks to (``client.blocks``)."""

    def __init__(self, client: Sender) -> None:
        self.client = client

    def _send(self, call: Call[T]) -> T:
        return self.client._send(call)

    async def _asend(self, call: Call[T]) -> T:
        return await self.client._asend(call)

    # -- blocks -----------------------------------------------------------------------------

    def create(self, block_id: str, *, label: str, value: str = "",
               limit: int = DEFAULT_LIMIT, description: str = "",
               read_only: bool = False) -> Block:
        """A new block (:class:`~remem.errors.ConflictError` if the id is taken)."""
        return self._send(_create_call(_create_body(block_id, label, value, limit,
                                                   description, read_only)))

    def get(self, block_id: str) -> Block:
        """The block with ``block_id``."""
        return self._send(_get_call(block_id))

    def list_blocks(self) -> builtins.list[Block]:
        """Every block, by id."""
        return self._send(_list_call())

    def update(self, block_id: str, *, value: str | None = None, limit: int | None = None,
               description: str | None = None, read_only: bool | None = None,
               etag: str | None = None) -> Block:
        """Change a block's fields (read-only blocks too)."""
        return self._send(_update_call(block_id, _update_body(value, limit, description,
                                                             read_only, etag)))

    def delete(self, block_id: str) -> None:
        """Delete a block (agents it was attached to no longer see it)."""
        self._send(_delete_call(block_id))

    def history(self, block_id: str) -> builtins.list[FileEvent]:
        """Every change of the block, oldest first."""
        return self._send(_history_call(block_id))

    # -- agents -----------------------------------------------------------------------------

    def attach(self, agent_id: str, block_id: str) -> None:
        """Show the block to ``agent_id`` (sharing it with the agents that have it)."""
        self._send(_attach_call(agent_id, block_id))

    def detach(self, agent_id: str, block_id: str) -> None:
        """Stop showing the block to ``agent_id``."""
        self._send(_attach_call(agent_id, block_id, attach=False))

    def blocks_of(self, agent_id: str) -> builtins.list[Block]:
        """The blocks ``agent_id`` sees, in order."""
        return self._send(_blocks_of_call(agent_id))

    def attached(self, agent_id: str) -> builtins.list[str]:
        """The ids of the blocks attached to ``agent_id``, in order."""
        return [b.id for b in self.blocks_of(agent_id)]

    # -- the agent's edits ------------------------------------------------------------------

    def append(self, agent_id: str, label: str, content: str) -> Block:
        """``core_memory_append`` on the agent's block ``label``."""
        return self._send(_edit_call(agent_id, AppendRequest.of(label=label, content=content)))

    def replace(self, agent_id: str, label: str, old: str, new: str) -> Block:
        """``core_memory_replace`` on the agent's block ``label``."""
        return self._send(_edit_call(agent_id, ReplaceRequest.of(
            label=label, old_content=old, new_content=new)))

    def rethink(self, agent_id: str, label: str, new_value: str) -> Block:
        """``memory_rethink`` on the agent's block ``label``."""
        return self._send(_edit_call(agent_id, RethinkRequest.of(label=label,
                                                                new_memory=new_value)))

    def render(self, agent_id: str, *, budget: int | None = None) -> Rendered:
        """The agent's blocks as its system prompt shows them."""
        return self._send(_render_call(agent_id, budget))

    # -- async twins: the same calls, sent by the client's async shell -----------------------

    async def acreate(self, block_id: str, *, label: str, value: str = "",
                      limit: int = DEFAULT_LIMIT, description: str = "",
                      read_only: bool = False) -> Block:
        """Async :meth:`create`."""
        return await self._asend(_create_call(_create_body(block_id, label, value, limit,
                                                          description, read_only)))

    async def aget(self, block_id: str) -> Block:
        """Async :meth:`get`."""
        return await self._asend(_get_call(block_id))

    async def alist_blocks(self) -> builtins.list[Block]:
        """Async :meth:`list_blocks`."""
        return await self._asend(_list_call())

    async def aupdate(self, block_id: str, *, value: str | None = None,
                      limit: int | None = None, description: str | None = None,
                      read_only: bool | None = None, etag: str | None = None) -> Block:
        """Async :meth:`update`."""
        return await self._asend(_update_call(block_id, _update_body(
            value, limit, description, read_only, etag)))

    async def adelete(self, block_id: str) -> None:
        """Async :meth:`delete`."""
        await self._asend(_delete_call(block_id))

    async def ahistory(self, block_id: str) -> builtins.list[FileEvent]:
        """Async :meth:`history`."""
        return await self._asend(_history_call(block_id))

    async def aattach(self, agent_id: str, block_id: str) -> None:
        """Async :meth:`attach`."""
        await self._asend(_attach_call(agent_id, block_id))

    async def adetach(self, agent_id: str, block_id: str) -> None:
        """Async :meth:`detach`."""
        await self._asend(_attach_call(agent_id, block_id, attach=False))

    async def ablocks_of(self, agent_id: str) -> builtins.list[Block]:
        """Async :meth:`blocks_of`."""
        return await self._asend(_blocks_of_call(agent_id))

    async def aattached(self, agent_id: str) -> builtins.list[str]:
        """Async :meth:`attached`."""
        return [b.id for b in await self.ablocks_of(agent_id)]

    async def aappend(self, agent_id: str, label: str, content: str) -> Block:
        """Async :meth:`append`."""
        return await self._asend(_edit_call(agent_id, AppendRequest.of(label=label,
                                                                      content=content)))

    async def areplace(self, agent_id: str, label: str, old: str, new: str) -> Block:
        """Async :meth:`replace`."""
        return await self._asend(_edit_call(agent_id, ReplaceRequest.of(
            label=label, old_content=old, new_content=new)))

    async def arethink(self, agent_id: str, label: str, new_value: str) -> Block:
        """Async :meth:`rethink`."""
        return await self._asend(_edit_call(agent_id, RethinkRequest.of(
            label=label, new_memory=new_value)))

    async def arender(self, agent_id: str, *, budget: int | None = None) -> Rendered:
        """Async :meth:`render`."""
        return await self._asend(_render_call(agent_id, budget))
