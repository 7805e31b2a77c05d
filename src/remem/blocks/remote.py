"""``client.blocks``: the core memory blocks of a ``remem serve`` tenant, over ``/v1/blocks``
and ``/v1/agents/{agent_id}/blocks``.

:class:`RemoteBlocks` has :class:`~remem.blocks.Blocks`' methods (``create``, ``get``,
``list_blocks``, ``update``, ``delete``, ``history``, ``attach``, ``detach``, ``attached``,
``blocks_of``, ``append``, ``replace``, ``rethink``, ``render``) with the same arguments
less ``actor`` (the server records the caller's tenant), answering the same values. An
agent edit of a read-only block raises :class:`~remem.errors.ReadOnlyError`, a stale etag
:class:`~remem.errors.ConflictError`, as in process. Each method builds one call with a pure
function of this module; the client's shell sends it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from remem.blocks.core import DEFAULT_LIMIT, Block, BlockSpec
from remem.blocks.requests import (
    AppendRequest,
    CreateBlockRequest,
    ReplaceRequest,
    RethinkRequest,
    UpdateBlockRequest,
)
from remem.files.render import Overflow, Rendered
from remem.files.types import FileEvent

if TYPE_CHECKING:
    from remem.client import Client, _Call

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
          params: dict[str, Any] | None = None) -> _Call[T]:
    from remem.client import _Call

    return _Call(method, path, parse, body, params or {})


def _path(*parts: str) -> str:
    from remem.client import _id

    return "/".join(_id(p) if i else p for i, p in enumerate(parts))


class RemoteBlocks:
    """The tenant's blocks on the server ``client`` talks to (``client.blocks``)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def _send(self, call: _Call[T]) -> T:
        return self.client._send(call)

    # -- blocks -----------------------------------------------------------------------------

    def create(self, block_id: str, *, label: str, value: str = "",
               limit: int = DEFAULT_LIMIT, description: str = "",
               read_only: bool = False) -> Block:
        """A new block (:class:`~remem.errors.ConflictError` if the id is taken)."""
        body = CreateBlockRequest.of(id=block_id, label=label, value=value, limit=limit,
                                     description=description, read_only=read_only)
        return self._send(_call("POST", "/v1/blocks", block_of, body.model_dump(mode="json")))

    def get(self, block_id: str) -> Block:
        """The block with ``block_id``."""
        return self._send(_call("GET", _path("/v1/blocks", block_id), block_of))

    def list_blocks(self) -> builtins.list[Block]:
        """Every block, by id."""
        return self._send(_call("GET", "/v1/blocks",
                                lambda d: [block_of(b) for b in d["blocks"]]))

    def update(self, block_id: str, *, value: str | None = None, limit: int | None = None,
               description: str | None = None, read_only: bool | None = None,
               etag: str | None = None) -> Block:
        """Change a block's fields (read-only blocks too)."""
        body = UpdateBlockRequest.of(value=value, limit=limit, description=description,
                                     read_only=read_only, etag=etag)
        return self._send(_call("PATCH", _path("/v1/blocks", block_id), block_of,
                                body.model_dump(mode="json", exclude_none=True)))

    def delete(self, block_id: str) -> None:
        """Delete a block (agents it was attached to no longer see it)."""
        self._send(_call("DELETE", _path("/v1/blocks", block_id), lambda d: None))

    def history(self, block_id: str) -> builtins.list[FileEvent]:
        """Every change of the block, oldest first."""
        return self._send(_call("GET", _path("/v1/blocks", block_id) + "/history",
                                lambda d: [FileEvent.from_value(e) for e in d]))

    # -- agents -----------------------------------------------------------------------------

    def attach(self, agent_id: str, block_id: str) -> None:
        """Show the block to ``agent_id`` (sharing it with the agents that have it)."""
        self._send(_call("PUT", _path("/v1/agents", agent_id, "blocks", block_id),
                         lambda d: None))

    def detach(self, agent_id: str, block_id: str) -> None:
        """Stop showing the block to ``agent_id``."""
        self._send(_call("DELETE", _path("/v1/agents", agent_id, "blocks", block_id),
                         lambda d: None))

    def blocks_of(self, agent_id: str) -> builtins.list[Block]:
        """The blocks ``agent_id`` sees, in order."""
        return self._send(_call("GET", _path("/v1/agents", agent_id, "blocks"),
                                lambda d: [block_of(b) for b in d["blocks"]]))

    def attached(self, agent_id: str) -> builtins.list[str]:
        """The ids of the blocks attached to ``agent_id``, in order."""
        return [b.id for b in self.blocks_of(agent_id)]

    # -- the agent's edits ------------------------------------------------------------------

    def _edit(self, route: str, agent_id: str, body: Any) -> Block:
        return self._send(_call("POST", f"/v1/blocks/{route}", block_of,
                                body.model_dump(mode="json"), {"agent_id": agent_id}))

    def append(self, agent_id: str, label: str, content: str) -> Block:
        """``core_memory_append`` on the agent's block ``label``."""
        return self._edit("append", agent_id, AppendRequest.of(label=label, content=content))

    def replace(self, agent_id: str, label: str, old: str, new: str) -> Block:
        """``core_memory_replace`` on the agent's block ``label``."""
        return self._edit("replace", agent_id, ReplaceRequest.of(
            label=label, old_content=old, new_content=new))

    def rethink(self, agent_id: str, label: str, new_value: str) -> Block:
        """``memory_rethink`` on the agent's block ``label``."""
        return self._edit("rethink", agent_id, RethinkRequest.of(label=label,
                                                                 new_memory=new_value))

    def render(self, agent_id: str, *, budget: int | None = None) -> Rendered:
        """The agent's blocks as its system prompt shows them."""
        params: dict[str, Any] = {"agent_id": agent_id}
        if budget is not None:
            params["budget"] = budget
        return self._send(_call("GET", "/v1/blocks/render", rendered_of, params=params))
