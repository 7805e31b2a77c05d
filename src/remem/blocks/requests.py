"""The agent's block edits as request values (the block tools take their schemas from
these)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field

from remem.blocks.core import DEFAULT_LIMIT, MAX_LIMIT
from remem.requests import Request

if TYPE_CHECKING:
    from remem.blocks.store import Blocks

__all__ = ["AppendRequest", "AttachBlockRequest", "BlockRequest", "ChangeBlockRequest",
           "CreateBlockRequest", "DeleteBlockRequest", "DetachBlockRequest", "GetBlockRequest",
           "ListBlocksRequest", "ReplaceRequest", "RethinkRequest", "UpdateBlockRequest",
           "run_block_admin"]

Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$",
                             description="The block's label, as shown in your core memory.")]
Text = Annotated[str, Field(max_length=MAX_LIMIT)]


class AppendRequest(Request):
    """Append to a block."""

    operation: ClassVar[str] = "core_memory_append"
    label: Label
    content: Annotated[Text, Field(min_length=1, description=(
        "The text to add on a new line at the end of the block."))]


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


BlockRequest = AppendRequest | ReplaceRequest | RethinkRequest


class CreateBlockRequest(Request):
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


class ListBlocksRequest(Request):
    """List blocks: every one, or those an agent sees (``list_blocks``)."""

    operation: ClassVar[str] = "list_blocks"
    agent_id: AgentId | None = None


class GetBlockRequest(Request):
    """Read one block (``get_block``)."""

    operation: ClassVar[str] = "get_block"
    id: BlockId


class DeleteBlockRequest(Request):
    """Delete one block (``delete_block``)."""

    operation: ClassVar[str] = "delete_block"
    id: BlockId


class ChangeBlockRequest(UpdateBlockRequest):
    """Change a block's fields, named by id (``update_block``)."""

    operation: ClassVar[str] = "update_block"
    id: BlockId


class AttachBlockRequest(Request):
    """Show a block to an agent (``attach_block``): shared if others have it."""

    operation: ClassVar[str] = "attach_block"
    agent_id: AgentId
    block_id: BlockId


class DetachBlockRequest(Request):
    """Stop showing a block to an agent (``detach_block``)."""

    operation: ClassVar[str] = "detach_block"
    agent_id: AgentId
    block_id: BlockId


BlockAdminRequest = (CreateBlockRequest | ListBlocksRequest | GetBlockRequest
                     | ChangeBlockRequest | DeleteBlockRequest | AttachBlockRequest
                     | DetachBlockRequest)


def run_block_admin(blocks: Blocks, request: BlockAdminRequest, *,
                    actor: str = "user") -> dict[str, Any]:
    """Run an application-side block request on ``blocks``; a JSON-ready answer (what the
    MCP block admin tools return, the same values the HTTP routes answer)."""
    if isinstance(request, CreateBlockRequest):
        return blocks.create(request.id, label=request.label, value=request.value,
                             limit=request.limit, description=request.description,
                             read_only=request.read_only, actor=actor).to_dict()
    if isinstance(request, ListBlocksRequest):
        found = (blocks.list_blocks() if request.agent_id is None
                 else blocks.blocks_of(request.agent_id))
        return {"blocks": [b.to_dict() for b in found]}
    if isinstance(request, GetBlockRequest):
        return blocks.get(request.id).to_dict()
    if isinstance(request, ChangeBlockRequest):
        return blocks.update(request.id, value=request.value, limit=request.limit,
                             description=request.description, read_only=request.read_only,
                             etag=request.etag, actor=actor).to_dict()
    if isinstance(request, DeleteBlockRequest):
        blocks.get(request.id)  # names the block when it is missing
        blocks.delete(request.id)
        return {"deleted": request.id}
    if isinstance(request, AttachBlockRequest):
        blocks.attach(request.agent_id, request.block_id)
    else:
        blocks.detach(request.agent_id, request.block_id)
    return {"agent_id": request.agent_id, "blocks": blocks.attached(request.agent_id)}
