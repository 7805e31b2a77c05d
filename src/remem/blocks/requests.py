"""The block operations as request values: the agent's edits (the block tools take their
schemas from these), the application's requests (the rows of
:data:`~remem.blocks.operation_table.BLOCK_OPERATIONS`), and :func:`run_block_request`, which
runs any of them on a :class:`~remem.blocks.Blocks`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field

from remem.blocks.core import DEFAULT_LIMIT, MAX_LIMIT, Block
from remem.blocks.wire import (
    AttachedOut,
    BlockDeletedOut,
    BlockHistoryOut,
    BlockListOut,
    MemoryBlockOut,
    RenderedBlocksOut,
)
from remem.files.render import Rendered
from remem.files.types import FileEvent
from remem.requests import Request

if TYPE_CHECKING:
    from remem.blocks.store import Blocks

__all__ = [
    "RESULT_MODELS",
    "AgentAppendRequest",
    "AgentBlocksRequest",
    "AgentReplaceRequest",
    "AgentRethinkRequest",
    "AppendRequest",
    "AttachBlockRequest",
    "BlockAppendRequest",
    "BlockHistoryRequest",
    "BlockRequest",
    "ChangeBlockRequest",
    "CreateBlockRequest",
    "DeleteBlockRequest",
    "DetachBlockRequest",
    "GetBlockRequest",
    "ListBlocksRequest",
    "RenderBlocksRequest",
    "ReplaceRequest",
    "RethinkRequest",
    "Returns",
    "UpdateBlockRequest",
    "run_block_admin",
    "run_block_request",
]

Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
                             description="The block's label, as shown in your core memory.")]
Text = Annotated[str, Field(max_length=MAX_LIMIT)]
R = TypeVar("R")


class Returns(Generic[R]):
    """Marks an application request with its Python result's type (what ``client.blocks``
    returns for it): a type checker's note, nothing at run time."""


class BlockAppendRequest(Request):
    """Append to a block."""

    operation: ClassVar[str] = "core_memory_append"
    label: Label
    content: Annotated[Text, Field(min_length=1, description=(
        "The text to add on a new line at the end of the block."))]


#: the old name (issue 34: one name per concept), kept so user code keeps working
AppendRequest = BlockAppendRequest


class ReplaceRequest(Request):
    """Replace text in a block."""

    operation: ClassVar[str] = "core_memory_replace"
    label: Label
    old_content: Annotated[Text, Field(min_length=1, description=(
        "The exact text to replace, copied from the block (it must occur once)."))]
    new_content: Annotated[Text, Field(description=(
        "The text to put in its place ('' removes the old text)."))]


class RethinkRequest(Request):
    """Rewrite a block."""

    operation: ClassVar[str] = "memory_rethink"
    label: Label
    new_memory: Annotated[Text, Field(description=(
        "The block's whole new text: reorganised, condensed or corrected."))]


BlockRequest = BlockAppendRequest | ReplaceRequest | RethinkRequest


class CreateBlockRequest(Request, Returns[Block]):
    """Create a block (``POST /v1/blocks``)."""

    operation: ClassVar[str] = "create_block"
    id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
                             description="The block's id (unique in the tenant).")]
    label: Label
    value: Annotated[Text, Field(description="The block's initial text.")] = ""
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=(
        "The most characters the block may hold."))] = DEFAULT_LIMIT
    description: Annotated[str, Field(max_length=2000, description=(
        "What belongs in the block (shown to the model)."))] = ""
    read_only: Annotated[bool, Field(description=(
        "Agents may read the block but not edit it through their tools."))] = False


class UpdateBlockRequest(Request):
    """Change a block's fields (``PATCH /v1/blocks/{id}``): the application's edit, allowed on
    read-only blocks too; omitted fields stay."""

    operation: ClassVar[str] = "update_block"
    value: Annotated[Text | None, Field(description="The new text.")] = None
    limit: Annotated[int | None, Field(ge=1, le=MAX_LIMIT, description=(
        "The new character limit."))] = None
    description: Annotated[str | None, Field(max_length=2000)] = None
    read_only: bool | None = None
    etag: Annotated[str | None, Field(max_length=64, description=(
        "Change only if the block still has this etag (409 otherwise)."))] = None


BlockId = Annotated[str, Field(min_length=1, max_length=64,
                               pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
                               description="A block's id.")]
AgentId = Annotated[str, Field(min_length=1, max_length=64,
                               pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
                               description="An agent's id.")]


class ListBlocksRequest(Request, Returns[list[Block]]):
    """List blocks: every one, or those an agent sees (``list_blocks``)."""

    operation: ClassVar[str] = "list_blocks"
    agent_id: Annotated[AgentId | None, Field(description=(
        "Only the blocks this agent sees, in prompt order."))] = None


class AgentBlocksRequest(Request, Returns[list[Block]]):
    """The blocks an agent sees, in prompt order (``blocks_of``)."""

    operation: ClassVar[str] = "blocks_of"
    agent_id: AgentId


class GetBlockRequest(Request, Returns[Block]):
    """Read one block (``get_block``)."""

    operation: ClassVar[str] = "get_block"
    id: BlockId


class DeleteBlockRequest(Request, Returns[None]):
    """Delete one block (``delete_block``)."""

    operation: ClassVar[str] = "delete_block"
    id: BlockId


class BlockHistoryRequest(Request, Returns[list[FileEvent]]):
    """A block's changes, oldest first (``history``)."""

    operation: ClassVar[str] = "history"
    id: BlockId


class ChangeBlockRequest(UpdateBlockRequest, Returns[Block]):
    """Change a block's fields, named by id (``update_block``)."""

    operation: ClassVar[str] = "update_block"
    id: BlockId


class AttachBlockRequest(Request, Returns[None]):
    """Show a block to an agent (``attach_block``): shared if others have it."""

    operation: ClassVar[str] = "attach_block"
    agent_id: AgentId
    block_id: BlockId


class DetachBlockRequest(Request, Returns[None]):
    """Stop showing a block to an agent (``detach_block``)."""

    operation: ClassVar[str] = "detach_block"
    agent_id: AgentId
    block_id: BlockId


class RenderBlocksRequest(Request, Returns[Rendered]):
    """An agent's blocks as its system prompt shows them (``render``)."""

    operation: ClassVar[str] = "render"
    agent_id: Annotated[AgentId, Field(description="The agent whose blocks are rendered.")]
    budget: Annotated[int | None, Field(ge=1, le=1_000_000, description=(
        "The most tokens; blocks past it are left out whole."))] = None


EditingAgent = Annotated[AgentId, Field(description="The agent whose blocks are edited.")]


class AgentAppendRequest(BlockAppendRequest, Returns[Block]):
    """``core_memory_append`` for the agent named (``POST /v1/blocks/append``)."""

    agent_id: EditingAgent


class AgentReplaceRequest(ReplaceRequest, Returns[Block]):
    """``core_memory_replace`` for the agent named (``POST /v1/blocks/replace``)."""

    agent_id: EditingAgent


class AgentRethinkRequest(RethinkRequest, Returns[Block]):
    """``memory_rethink`` for the agent named (``POST /v1/blocks/rethink``)."""

    agent_id: EditingAgent


BlockAdminRequest = (CreateBlockRequest | ListBlocksRequest | GetBlockRequest
                     | ChangeBlockRequest | DeleteBlockRequest | AttachBlockRequest
                     | DetachBlockRequest)
AnyBlockRequest = (BlockAdminRequest | AgentBlocksRequest | BlockHistoryRequest
                   | RenderBlocksRequest | AgentAppendRequest | AgentReplaceRequest
                   | AgentRethinkRequest)

RESULT_MODELS: dict[type[Request], type[BaseModel]] = {
    **dict.fromkeys([CreateBlockRequest, GetBlockRequest, ChangeBlockRequest, AgentAppendRequest,
                     AgentReplaceRequest, AgentRethinkRequest], MemoryBlockOut),
    ListBlocksRequest: BlockListOut, AgentBlocksRequest: BlockListOut,
    DeleteBlockRequest: BlockDeletedOut, AttachBlockRequest: AttachedOut,
    DetachBlockRequest: AttachedOut, BlockHistoryRequest: BlockHistoryOut,
    RenderBlocksRequest: RenderedBlocksOut,
}
"""The model of each application request's answer (:mod:`remem.blocks.wire`)."""


def run_block_request(blocks: Blocks, request: AnyBlockRequest, *, actor: str) -> Any:
    """Run an application-side block request on ``blocks`` for ``actor``: the Python result
    its :data:`RESULT_MODELS` model reads (a deleted block's id; an attach or detach, the
    agent's id and its block ids)."""
    if isinstance(request, CreateBlockRequest):
        return blocks.create(request.id, label=request.label, value=request.value,
                             limit=request.limit, description=request.description,
                             read_only=request.read_only, actor=actor)
    if isinstance(request, ListBlocksRequest | AgentBlocksRequest):
        return (blocks.list_blocks() if request.agent_id is None
                else blocks.blocks_of(request.agent_id))
    if isinstance(request, RenderBlocksRequest):
        return blocks.render(request.agent_id, budget=request.budget)
    if isinstance(request, ChangeBlockRequest):
        return blocks.update(request.id, value=request.value, limit=request.limit,
                             description=request.description, read_only=request.read_only,
                             etag=request.etag, actor=actor)
    if isinstance(request, AttachBlockRequest | DetachBlockRequest):
        change = blocks.attach if isinstance(request, AttachBlockRequest) else blocks.detach
        change(request.agent_id, request.block_id)
        return request.agent_id, blocks.attached(request.agent_id)
    if isinstance(request, AgentAppendRequest):
        return blocks.append(request.agent_id, request.label, request.content, actor=actor)
    if isinstance(request, AgentReplaceRequest):
        return blocks.replace(request.agent_id, request.label, request.old_content,
                              request.new_content, actor=actor)
    if isinstance(request, AgentRethinkRequest):
        return blocks.rethink(request.agent_id, request.label, request.new_memory,
                              actor=actor)
    found = blocks.get(request.id)  # names a missing block, not a file path
    if isinstance(request, GetBlockRequest):
        return found
    if isinstance(request, BlockHistoryRequest):
        return blocks.history(request.id)
    blocks.delete(request.id)
    return request.id


def run_block_admin(blocks: Blocks, request: BlockAdminRequest, *,
                    actor: str = "user") -> dict[str, Any]:
    """Run an application-side block request on ``blocks``; a JSON-ready answer (what the
    MCP block admin tools return, the same values the HTTP routes answer)."""
    answer: dict[str, Any] = RESULT_MODELS[type(request)].of(  # type: ignore[attr-defined]
        run_block_request(blocks, request, actor=actor)).model_dump(mode="json", by_alias=True)
    return answer
