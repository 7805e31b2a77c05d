"""The agent's block edits as request values (the block tools take their schemas from
these)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from remem.blocks.core import MAX_LIMIT
from remem.requests import Request

__all__ = ["AppendRequest", "BlockRequest", "ReplaceRequest", "RethinkRequest"]

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
