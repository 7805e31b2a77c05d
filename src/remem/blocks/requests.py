"""The agent's block edits as request values (the block tools take their schemas from
these)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from remem.blocks.core import DEFAULT_LIMIT, MAX_LIMIT
from remem.requests import Request

__all__ = ["AppendRequest", "BlockRequest", "CreateBlockRequest", "ReplaceRequest",
           "RethinkRequest", "UpdateBlockRequest"]

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
