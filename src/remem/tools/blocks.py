"""Block tools for agents: ``core_memory_append``, ``core_memory_replace`` and
``memory_rethink`` on the blocks attached to one agent (:class:`~remem.blocks.Blocks`).

An edit past a block's limit, of a read-only block or with text that does not occur comes
back as a tool error the model can act on (it names the overflow and suggests
``memory_rethink``). The answer shows the block's new size against its limit.
"""

from __future__ import annotations

from typing import Any

from remem.blocks.requests import BlockAppendRequest, ReplaceRequest, RethinkRequest
from remem.blocks.store import Blocks
from remem.requests import Request
from remem.tokens import DEFAULT_COUNTER, TokenCounter
from remem.tools.files import RequestTools

__all__ = ["BLOCK_TOOLS", "BlockTools"]

BLOCK_TOOLS: dict[str, tuple[type[Request], str]] = {
    "core_memory_append": (BlockAppendRequest, "Add a line to one of your core memory blocks "
                                          "(always in your context)."),
    "core_memory_replace": (ReplaceRequest, "Replace exact text in one of your core memory "
                                            "blocks."),
    "memory_rethink": (RethinkRequest, "Rewrite one of your core memory blocks as a whole, "
                                       "e.g. to condense it when it is nearly full."),
}


class BlockTools(RequestTools):
    """The block tools of ``agent_id`` over ``blocks``; ``actor`` is recorded in history."""

    def __init__(self, blocks: Blocks, agent_id: str, *, budget: int = 500,
                 counter: TokenCounter = DEFAULT_COUNTER, actor: str = "agent",
                 prefix: str = "") -> None:
        super().__init__(BLOCK_TOOLS, budget=budget, counter=counter, prefix=prefix)
        self.blocks = blocks
        self.agent_id = agent_id
        self.actor = actor

    def answer(self, name: str, request: Request) -> dict[str, Any]:
        """The answer of tool ``name`` (without prefix) to the validated ``request``, within
        the budget; a refused edit or search raises the error :meth:`execute` would show
        (the MCP server serves the tools through this)."""
        return self._answer(name, request)

    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        if isinstance(request, BlockAppendRequest):
            block = self.blocks.append(self.agent_id, request.label, request.content,
                                       actor=self.actor)
        elif isinstance(request, ReplaceRequest):
            block = self.blocks.replace(self.agent_id, request.label, request.old_content,
                                        request.new_content, actor=self.actor)
        else:
            assert isinstance(request, RethinkRequest)
            block = self.blocks.rethink(self.agent_id, request.label, request.new_memory,
                                        actor=self.actor)
        return {"status": "updated", "label": block.label,
                "chars": f"{len(block.value)}/{block.spec.limit}"}
