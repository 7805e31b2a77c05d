"""Context sections for what the agent sees: its core memory blocks (:mod:`remem.blocks`) and
its memory files (``AGENTS.md`` per scope, :mod:`remem.files.instructions`).

Both are :class:`~remem.context.types.ContextSection` values: pass them in ``sections=`` or
register them (:func:`~remem.context.register_section`). Each block and each file is one
item, kept whole or left out whole by the packer like every other item; a scope without an
agent (blocks) or without any memory file offers nothing and the section is absent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from remem.blocks.core import block_text
from remem.blocks.store import Blocks
from remem.context.types import ContextItem, ContextScope
from remem.errors import NotFoundError
from remem.files.base import FileBackend
from remem.files.instructions import scope_files

__all__ = ["BlocksSection", "MemoryFilesSection"]


@dataclass(frozen=True, slots=True)
class BlocksSection:
    """The core memory blocks attached to the scope's ``agent_id``, one item per block, in
    their attached order. Highest priority by default (``order`` 5: rendered first)."""

    blocks: Blocks
    name: str = "blocks"
    title: str = "Core memory"
    order: int = 5
    contiguous: bool = False

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Each attached block as ``<label chars="n/limit">value</label>``."""
        if not scope.agent_id:
            return []
        return [ContextItem(block.id, block_text(block), order=position)
                for position, block in enumerate(self.blocks.blocks_of(scope.agent_id))]

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather` (the file backends are synchronous: run in a thread)."""
        return await asyncio.to_thread(self.gather, scope)


@dataclass(frozen=True, slots=True)
class MemoryFilesSection:
    """The memory files of the scope (``<root>/org/<org_id>/AGENTS.md``, then the user's, then
    the agent's: :func:`~remem.files.instructions.scope_files`), one item per file that
    exists and is not empty, general to specific."""

    files: FileBackend
    root: str = "/memories"
    org_id: str | None = None
    file_name: str = "AGENTS.md"
    name: str = "memory_files"
    title: str = "Memory files"
    order: int = 7
    contiguous: bool = False

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Each file as ``## <scope> (<path>)`` and its content."""
        items: list[ContextItem] = []
        sources = scope_files(self.root, org_id=self.org_id, user_id=scope.user_id,
                              agent_id=scope.agent_id, name=self.file_name)
        for position, source in enumerate(sources):
            try:
                content = self.files.read(source.path).content.strip()
            except NotFoundError:
                continue
            if content:
                items.append(ContextItem(source.path, f"## {source.scope} ({source.path})\n"
                                         f"{content}", order=position))
        return items

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather` (the file backends are synchronous: run in a thread)."""
        return await asyncio.to_thread(self.gather, scope)
