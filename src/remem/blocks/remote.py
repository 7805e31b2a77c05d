"""``client.blocks``: the core memory blocks of a ``remem serve`` tenant, over ``/v1/blocks``
and ``/v1/agents/{agent_id}/blocks``.

:class:`RemoteBlocks` has :class:`~remem.blocks.Blocks`' methods (``create``, ``get``,
``list_blocks``, ``update``, ``delete``, ``history``, ``attach``, ``detach``, ``attached``,
``blocks_of``, ``append``, ``replace``, ``rethink``, ``render``) with the same arguments
less ``actor`` (the server records the caller's tenant), answering the same values, and an
async twin of each (``acreate``, ``aget``, ...) as on :class:`~remem.client.Client`. An
agent edit of a read-only block raises :class:`~remem.errors.ReadOnlyError`, a stale etag
:class:`~remem.errors.ConflictError`, as in process. Each method builds its request
(:mod:`remem.blocks.requests`) and sends it as the request's row of
:data:`~remem.blocks.operation_table.BLOCK_OPERATIONS` says (``Operation.call``, the answer
read with the row's result model); the sync and async methods differ only in the client's
shell that sends it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from remem.blocks.core import DEFAULT_LIMIT, Block
from remem.blocks.operation_table import BLOCK_OPERATIONS
from remem.blocks.requests import (
    AgentAppendRequest,
    AgentBlocksRequest,
    AgentReplaceRequest,
    AgentRethinkRequest,
    AttachBlockRequest,
    BlockHistoryRequest,
    ChangeBlockRequest,
    CreateBlockRequest,
    DeleteBlockRequest,
    DetachBlockRequest,
    GetBlockRequest,
    ListBlocksRequest,
    RenderBlocksRequest,
    Returns,
)
from remem.files.render import Rendered
from remem.files.types import FileEvent
from remem.operations import Operation
from remem.transport import Call, Sender

__all__ = ["RemoteBlocks", "call_of"]

R = TypeVar("R")

_ROWS: Mapping[type[Any], Operation] = {row.request: row for row in BLOCK_OPERATIONS}


def call_of(request: Returns[R]) -> Call[R]:
    """The HTTP call that runs ``request``: its row's (``Operation.call``)."""
    return cast(Call[R], _ROWS[type(request)].call(request))  # type: ignore[arg-type]


class RemoteBlocks:
    """The tenant's blocks on the server ``client`` talks to (``client.blocks``)."""

    def __init__(self, client: Sender) -> None:
        self.client = client

    def run(self, request: Returns[R]) -> R:
        """Run one block request (a row's) on the server; its result."""
        return self.client._send(call_of(request))

    async def arun(self, request: Returns[R]) -> R:
        """Async :meth:`run`."""
        return await self.client._asend(call_of(request))

    # -- blocks -----------------------------------------------------------------------------

    def create(self, block_id: str, *, label: str, value: str = "",
               limit: int = DEFAULT_LIMIT, description: str = "",
               read_only: bool = False) -> Block:
        """A new block (:class:`~remem.errors.ConflictError` if the id is taken)."""
        return self.run(CreateBlockRequest.of(id=block_id, label=label, value=value, limit=limit,
                                              description=description, read_only=read_only))

    def get(self, block_id: str) -> Block:
        """The block with ``block_id``."""
        return self.run(GetBlockRequest.of(id=block_id))

    def list_blocks(self) -> builtins.list[Block]:
        """Every block, by id."""
        return self.run(ListBlocksRequest.of())

    def update(self, block_id: str, *, value: str | None = None, limit: int | None = None,
               description: str | None = None, read_only: bool | None = None,
               etag: str | None = None) -> Block:
        """Change a block's fields (read-only blocks too)."""
        return self.run(ChangeBlockRequest.of(id=block_id, value=value, limit=limit,
                                              description=description, read_only=read_only,
                                              etag=etag))

    def delete(self, block_id: str) -> None:
        """Delete a block (agents it was attached to no longer see it)."""
        self.run(DeleteBlockRequest.of(id=block_id))

    def history(self, block_id: str) -> builtins.list[FileEvent]:
        """Every change of the block, oldest first."""
        return self.run(BlockHistoryRequest.of(id=block_id))

    # -- agents -----------------------------------------------------------------------------

    def attach(self, agent_id: str, block_id: str) -> None:
        """Show the block to ``agent_id`` (sharing it with the agents that have it)."""
        self.run(AttachBlockRequest.of(agent_id=agent_id, block_id=block_id))

    def detach(self, agent_id: str, block_id: str) -> None:
        """Stop showing the block to ``agent_id``."""
        self.run(DetachBlockRequest.of(agent_id=agent_id, block_id=block_id))

    def blocks_of(self, agent_id: str) -> builtins.list[Block]:
        """The blocks ``agent_id`` sees, in order."""
        return self.run(AgentBlocksRequest.of(agent_id=agent_id))

    def attached(self, agent_id: str) -> builtins.list[str]:
        """The ids of the blocks attached to ``agent_id``, in order."""
        return [b.id for b in self.blocks_of(agent_id)]

    # -- the agent's edits ------------------------------------------------------------------

    def append(self, agent_id: str, label: str, content: str) -> Block:
        """``core_memory_append`` on the agent's block ``label``."""
        return self.run(AgentAppendRequest.of(agent_id=agent_id, label=label, content=content))

    def replace(self, agent_id: str, label: str, old: str, new: str) -> Block:
        """``core_memory_replace`` on the agent's block ``label``."""
        return self.run(AgentReplaceRequest.of(agent_id=agent_id, label=label,
                                               old_content=old, new_content=new))

    def rethink(self, agent_id: str, label: str, new_value: str) -> Block:
        """``memory_rethink`` on the agent's block ``label``."""
        return self.run(AgentRethinkRequest.of(agent_id=agent_id, label=label,
                                               new_memory=new_value))

    def render(self, agent_id: str, *, budget: int | None = None) -> Rendered:
        """The agent's blocks as its system prompt shows them."""
        return self.run(RenderBlocksRequest.of(agent_id=agent_id, budget=budget))

    # -- async twins: the same requests, sent by the client's async shell -------------------

    async def acreate(self, block_id: str, *, label: str, value: str = "",
                      limit: int = DEFAULT_LIMIT, description: str = "",
                      read_only: bool = False) -> Block:
        """Async :meth:`create`."""
        return await self.arun(CreateBlockRequest.of(
            id=block_id, label=label, value=value, limit=limit, description=description,
            read_only=read_only))

    async def aget(self, block_id: str) -> Block:
        """Async :meth:`get`."""
        return await self.arun(GetBlockRequest.of(id=block_id))

    async def alist_blocks(self) -> builtins.list[Block]:
        """Async :meth:`list_blocks`."""
        return await self.arun(ListBlocksRequest.of())

    async def aupdate(self, block_id: str, *, value: str | None = None,
                      limit: int | None = None, description: str | None = None,
                      read_only: bool | None = None, etag: str | None = None) -> Block:
        """Async :meth:`update`."""
        return await self.arun(ChangeBlockRequest.of(
            id=block_id, value=value, limit=limit, description=description,
            read_only=read_only, etag=etag))

    async def adelete(self, block_id: str) -> None:
        """Async :meth:`delete`."""
        await self.arun(DeleteBlockRequest.of(id=block_id))

    async def ahistory(self, block_id: str) -> builtins.list[FileEvent]:
        """Async :meth:`history`."""
        return await self.arun(BlockHistoryRequest.of(id=block_id))

    async def aattach(self, agent_id: str, block_id: str) -> None:
        """Async :meth:`attach`."""
        await self.arun(AttachBlockRequest.of(agent_id=agent_id, block_id=block_id))

    async def adetach(self, agent_id: str, block_id: str) -> None:
        """Async :meth:`detach`."""
        await self.arun(DetachBlockRequest.of(agent_id=agent_id, block_id=block_id))

    async def ablocks_of(self, agent_id: str) -> builtins.list[Block]:
        """Async :meth:`blocks_of`."""
        return await self.arun(AgentBlocksRequest.of(agent_id=agent_id))

    async def aattached(self, agent_id: str) -> builtins.list[str]:
        """Async :meth:`attached`."""
        return [b.id for b in await self.ablocks_of(agent_id)]

    async def aappend(self, agent_id: str, label: str, content: str) -> Block:
        """Async :meth:`append`."""
        return await self.arun(AgentAppendRequest.of(agent_id=agent_id, label=label,
                                                     content=content))

    async def areplace(self, agent_id: str, label: str, old: str, new: str) -> Block:
        """Async :meth:`replace`."""
        return await self.arun(AgentReplaceRequest.of(agent_id=agent_id, label=label,
                                                      old_content=old, new_content=new))

    async def arethink(self, agent_id: str, label: str, new_value: str) -> Block:
        """Async :meth:`rethink`."""
        return await self.arun(AgentRethinkRequest.of(agent_id=agent_id, label=label,
                                                      new_memory=new_value))

    async def arender(self, agent_id: str, *, budget: int | None = None) -> Rendered:
        """Async :meth:`render`."""
        return await self.arun(RenderBlocksRequest.of(agent_id=agent_id, budget=budget))
