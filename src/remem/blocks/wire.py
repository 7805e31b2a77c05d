"""The JSON shape of every block result, declared once: each ``/v1/blocks`` route's
``response_model`` (:data:`~remem.blocks.operation_table.BLOCK_OPERATIONS`), what the MCP
block admin tools and :func:`~remem.blocks.requests.run_block_admin` answer (``of`` from the
Python result), and what ``client.blocks`` returns (``value()``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from remem.blocks.core import Block, BlockSpec
from remem.files.render import Overflow, Rendered
from remem.files.wire import FileEventOut
from remem.wire_models import Dumped, Envelope, Rows

__all__ = ["AttachedOut", "BlockDeletedOut", "BlockEventOut", "BlockHistoryOut", "BlockListOut",
           "BlockOverflowOut", "MemoryBlockOut", "RenderedBlocksOut"]


class MemoryBlockOut(Dumped[Block]):
    """A block (``Block.to_dict()``): its fields, ``chars`` (its length) and ``etag``."""

    id: str
    label: str
    # `value` is the method every shape has, so the field is spelt `text` in Python
    text: str = Field(alias="value")
    limit: int
    chars: int
    description: str = ""
    read_only: bool = False
    etag: str

    def value(self) -> Block:
        return Block(self.id, BlockSpec(self.label, self.text, self.limit, self.description,
                                        self.read_only), self.etag)


class BlockListOut(Envelope[list[Block]]):
    """Blocks, in order (by id, or as an agent's prompt shows them)."""

    blocks: list[MemoryBlockOut]


class BlockDeletedOut(BaseModel):
    """The id of the block deleted (the Python API returns nothing)."""

    deleted: str

    @classmethod
    def of(cls, result: str) -> BlockDeletedOut:
        """The answer of deleting block ``result``."""
        return cls(deleted=result)

    def value(self) -> None:
        """Nothing, as ``Blocks.delete``."""


class AttachedOut(BaseModel):
    """The ids of an agent's blocks after an attach or detach."""

    agent_id: str
    blocks: list[str]

    @classmethod
    def of(cls, result: tuple[str, list[str]]) -> AttachedOut:
        """The answer for ``(agent id, its block ids)``."""
        return cls(agent_id=result[0], blocks=result[1])

    def value(self) -> None:
        """Nothing, as ``Blocks.attach`` and ``Blocks.detach``."""


class BlockEventOut(FileEventOut):
    """One change of a block's file (``before`` / ``after``: its stored JSON)."""


class BlockHistoryOut(Rows[BlockEventOut]):
    """A block's changes, oldest first."""


class BlockOverflowOut(Dumped[Overflow]):
    """A block left out of the rendered prompt (``included_tokens`` is 0)."""

    source: str
    tokens: int
    included_tokens: int = 0


class RenderedBlocksOut(Dumped[Rendered]):
    """An agent's blocks as its system prompt shows them, their tokens and what did not fit
    ``budget``."""

    text: str
    tokens: int
    budget: int
    counter: str
    overflow: list[BlockOverflowOut] = Field(default_factory=list)

