"""Blocks kept as files of a :class:`~remem.files.FileBackend`, so they share its etags,
history and undo, on every backend (store-backed for durability).

Layout under ``root`` (default ``/blocks``): ``<root>/<block id>.json`` holds a block, and
``<root>/_agents/<agent id>.json`` lists the ids of the blocks attached to an agent, in
order. A block attached to several agents is one file: an edit by one agent is what the
others see next. Agent edits re-read and retry once on a conflict (two agents appending to a
shared block both land); a caller's ``etag=`` is never retried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from remem.blocks.core import (
    Block,
    BlockSpec,
    append_value,
    check_name,
    render_blocks,
    replace_value,
    rethink_value,
)
from remem.errors import FileConflictError, InvalidInputError, NotFoundError
from remem.files.base import FileBackend
from remem.files.paths import join, normalize_dir
from remem.files.render import Rendered
from remem.files.types import ABSENT, FileEvent
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["Blocks"]

_AGENTS = "_agents"


class Blocks:
    """Memory blocks in ``files`` under ``root`` (see the module docstring)."""

    def __init__(self, files: FileBackend, root: str = "/blocks") -> None:
        self.files = files
        self.root = normalize_dir(root)

    def _path(self, block_id: str) -> str:
        return join(self.root, f"{check_name(block_id, 'block id')}.json")

    def _agent_path(self, agent_id: str) -> str:
        return join(join(self.root, _AGENTS), f"{check_name(agent_id, 'agent id')}.json")

    # -- blocks -----------------------------------------------------------------------------

    def create(self, block_id: str, *, label: str, value: str = "", limit: int = 2000,
               description: str = "", read_only: bool = False, actor: str = "user") -> Block:
        """A new block; :class:`~remem.errors.FileConflictError` if the id is taken."""
        spec = BlockSpec(label, value, limit, description, read_only)
        info = self.files.write(self._path(block_id), spec.to_json(), etag=ABSENT, actor=actor)
        assert info.etag is not None
        return Block(block_id, spec, info.etag)

    def get(self, block_id: str) -> Block:
        """The block with ``block_id``."""
        try:
            read = self.files.read(self._path(block_id))
        except NotFoundError:
            raise NotFoundError(f"no block with id {block_id!r}; list them with "
                                "Blocks.list_blocks()") from None
        return Block(block_id, BlockSpec.from_json(read.content), read.etag)

    def list_blocks(self) -> list[Block]:
        """Every block, by id."""
        out = []
        for info in self.files.glob("*.json", self.root):
            block_id = info.path.rsplit("/", 1)[1].removesuffix(".json")
            try:
                out.append(self.get(block_id))
            except (NotFoundError, InvalidInputError):
                continue
        return sorted(out, key=lambda b: b.id)

    def update(self, block_id: str, *, value: str | None = None, limit: int | None = None,
               description: str | None = None, read_only: bool | None = None,
               etag: str | None = None, actor: str = "user") -> Block:
        """Change a block's fields (read-only blocks too: this is the application's API, not
        the agent's tools)."""
        current = self.get(block_id)
        spec = current.spec
        spec = BlockSpec(spec.label, spec.value if value is None else value,
                         spec.limit if limit is None else limit,
                         spec.description if description is None else description,
                         spec.read_only if read_only is None else read_only)
        info = self.files.write(self._path(block_id), spec.to_json(),
                                etag=current.etag if etag is None else etag, actor=actor)
        assert info.etag is not None
        return Block(block_id, spec, info.etag)

    def delete(self, block_id: str, *, etag: str | None = None) -> None:
        """Delete a block (agents it was attached to no longer see it)."""
        self.files.delete(self._path(block_id), etag=etag)

    def history(self, block_id: str) -> list[FileEvent]:
        """Every change of the block, oldest first (``before``/``after`` are its JSON)."""
        return self.files.history(self._path(block_id))

    def undo(self, block_id: str, *, actor: str = "user") -> Block | None:
        """Revert the block's latest change."""
        info = self.files.undo(self._path(block_id), actor=actor)
        return self.get(block_id) if info is not None else None

    # -- agents -----------------------------------------------------------------------------

    def attached(self, agent_id: str) -> list[str]:
        """The ids of the blocks attached to ``agent_id``, in order."""
        try:
            data: dict[str, Any] = json.loads(self.files.read(self._agent_path(agent_id))
                                              .content)
        except NotFoundError:
            return []
        return [str(b) for b in data.get("blocks", [])]

    def _set_attached(self, agent_id: str, change: Callable[[list[str]], list[str]]) -> None:
        path = self._agent_path(agent_id)
        for attempt in range(5):  # attachments change rarely: a short retry on a race
            try:
                read = self.files.read(path)
                ids, etag = json.loads(read.content)["blocks"], read.etag
            except NotFoundError:
                ids, etag = [], ABSENT
            try:
                self.files.write(path, json.dumps({"blocks": change(list(ids))}), etag=etag)
                return
            except FileConflictError:
                if attempt == 4:
                    raise

    def attach(self, agent_id: str, block_id: str) -> None:
        """Show the block to ``agent_id`` (after its other blocks); labels must stay unique
        per agent, since tools name blocks by label."""
        block = self.get(block_id)
        taken = {self.get(b).label: b for b in self.attached(agent_id) if b != block_id}
        if block.label in taken:
            raise InvalidInputError(
                f"agent {agent_id!r} already has a block labelled {block.label!r} "
                f"({taken[block.label]!r}); detach it first or use another label")
        self._set_attached(agent_id, lambda ids: ids if block_id in ids else [*ids, block_id])

    def detach(self, agent_id: str, block_id: str) -> None:
        """Stop showing the block to ``agent_id``."""
        self._set_attached(agent_id, lambda ids: [b for b in ids if b != block_id])

    def blocks_of(self, agent_id: str) -> list[Block]:
        """The blocks ``agent_id`` sees, in order (deleted ones are skipped)."""
        out = []
        for block_id in self.attached(agent_id):
            try:
                out.append(self.get(block_id))
            except NotFoundError:
                continue
        return out

    def by_label(self, agent_id: str, label: str) -> Block:
        """The block ``agent_id`` calls ``label``; the error lists the labels it has."""
        blocks = self.blocks_of(agent_id)
        for block in blocks:
            if block.label == label:
                return block
        labels = ", ".join(b.label for b in blocks) or "(none)"
        raise NotFoundError(f"no memory block labelled {label!r}; the blocks are: {labels}")

    # -- the agent's edits -----------------------------------------------------------------

    def _edit(self, agent_id: str, label: str, change: Callable[[BlockSpec], BlockSpec],
              actor: str) -> Block:
        for attempt in range(2):  # a concurrent edit of a shared block: re-read, redo once
            block = self.by_label(agent_id, label)
            spec = change(block.spec)
            try:
                info = self.files.write(self._path(block.id), spec.to_json(),
                                        etag=block.etag, actor=actor)
            except FileConflictError:
                if attempt == 1:
                    raise
                continue
            assert info.etag is not None
            return Block(block.id, spec, info.etag)
        raise AssertionError("unreachable")

    def append(self, agent_id: str, label: str, content: str, *,
               actor: str = "agent") -> Block:
        """``core_memory_append``: add ``content`` on a new line of the block."""
        return self._edit(agent_id, label, lambda s: append_value(s, content), actor)

    def replace(self, agent_id: str, label: str, old: str, new: str, *,
                actor: str = "agent") -> Block:
        """``core_memory_replace``: replace the exact text ``old`` with ``new``."""
        return self._edit(agent_id, label, lambda s: replace_value(s, old, new), actor)

    def rethink(self, agent_id: str, label: str, new_value: str, *,
                actor: str = "agent") -> Block:
        """``memory_rethink``: rewrite the whole block."""
        return self._edit(agent_id, label, lambda s: rethink_value(s, new_value), actor)

    def render(self, agent_id: str, *, budget: int | None = None,
               counter: TokenCounter = DEFAULT_COUNTER) -> Rendered:
        """The agent's blocks for its system prompt (see
        :func:`~remem.blocks.core.render_blocks`)."""
        return render_blocks(self.blocks_of(agent_id), budget=budget, counter=counter)
