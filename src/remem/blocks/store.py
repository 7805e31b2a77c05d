"""Blocks kept as files of a :class:`~remem.files.FileBackend`, so they share its etags,
history and undo, on every backend (store-backed for durability).

Layout under ``root`` (default ``/blocks``): ``<root>/<block id>.json`` holds a block, and
``<root>/_agents/<agent id>.json`` lists the ids of the blocks attached to an agent, in
order. A block attached to several agents is one file: an edit by one agent is what the
others see next. Agent edits re-read and retry once on a conflict (two agents appending to a
shared block both land); a caller's ``etag=`` is never retried.

A block file or an agent's list that does not parse (:mod:`remem.store.bad_records`) is left
out of listings and renderings (an agent's bad list reads as no blocks); reading or changing
that block, or attaching to that agent, raises :class:`~remem.errors.BadRecordError` until
``remem doctor --repair`` moves it aside. What is written is checked to read back first.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from remem.blocks.core import (
    Block,
    BlockSpec,
    append_value,
    check_name,
    render_blocks,
    replace_value,
    rethink_value,
)
from remem.errors import (
    BadRecordError,
    FileConflictError,
    Fix,
    Hint,
    InvalidInputError,
    NotFoundError,
)
from remem.files.base import FileBackend
from remem.files.paths import join, normalize_dir
from remem.files.render import Rendered
from remem.files.types import ABSENT, FileEvent, FileRead
from remem.store.bad_records import (
    check_record,
    kind_of,
    parse_each,
    parse_or_none,
    parse_or_raise,
)
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["Blocks"]

_AGENTS = "_agents"


def agent_block_ids(text: str) -> list[str]:
    """The block ids of an agent's list (``{"blocks": [...]}``); other text raises
    ``ValueError`` or ``TypeError``."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TypeError(f"an agent's list must be a JSON object, got {kind_of(data)}")
    ids = data["blocks"]
    if not isinstance(ids, list):
        raise TypeError(f"blocks must be a list of block ids, got {kind_of(ids)}")
    return [check_name(b, "blocks[]") for b in ids]


def block_of(path: str, read: FileRead) -> Block:
    """The block a file at ``path`` (``<root>/<id>.json``) holds."""
    block_id = check_name(path.rsplit("/", 1)[1].removesuffix(".json"), "block id")
    return Block(block_id, BlockSpec.from_json(read.content), read.etag)


def _at(path: str) -> tuple[tuple[str, ...], str]:
    """A file's directory and name: where a bad block or list is reported."""
    directory, _, name = path.rpartition("/")
    return (directory or "/",), name


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
        info = self.files.write(self._path(block_id), self._text(block_id, spec), etag=ABSENT,
                                actor=actor)
        assert info.etag is not None
        return Block(block_id, spec, info.etag)

    def _text(self, block_id: str, spec: BlockSpec) -> str:
        """The stored text of ``spec``, checked to read back."""
        text = spec.to_json()
        namespace, key = _at(self._path(block_id))
        check_record(BlockSpec.from_json, text, family="blocks", namespace=namespace, key=key)
        return text

    def get(self, block_id: str) -> Block:
        """The block with ``block_id``."""
        path = self._path(block_id)
        try:
            read = self.files.read(path)
        except NotFoundError:
            raise NotFoundError(f"no block with id {block_id!r}", hint=Hint(
                Fix.LIST_BLOCKS, "list them with Blocks.list_blocks()")) from None
        namespace, key = _at(path)
        return parse_or_raise(lambda r: block_of(path, r), read, family="blocks",
                              namespace=namespace, key=key, what=f"block {block_id!r}")

    def list_blocks(self) -> list[Block]:
        """Every block, by id (one that does not parse is left out and reported)."""
        reads = []
        for info in self.files.glob("*.json", self.root):
            try:
                reads.append(self.files.read(info.path))
            except NotFoundError:
                continue  # deleted meanwhile
        out = parse_each(reads, lambda r: block_of(r.path, r), family="blocks",
                         where=lambda r: _at(r.path))
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
        info = self.files.write(self._path(block_id), self._text(block_id, spec),
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
        """The ids of the blocks attached to ``agent_id``, in order (none when its list
        does not parse: reported, see the module docstring)."""
        path = self._agent_path(agent_id)
        try:
            read = self.files.read(path)
        except NotFoundError:
            return []
        namespace, key = _at(path)
        ids = parse_or_none(agent_block_ids, read.content, family="block_agents",
                            namespace=namespace, key=key)
        return ids or []

    def _set_attached(self, agent_id: str, change: Callable[[list[str]], list[str]]) -> None:
        path = self._agent_path(agent_id)
        namespace, key = _at(path)
        for attempt in range(5):  # attachments change rarely: a short retry on a race
            try:
                read = self.files.read(path)
                ids = parse_or_raise(agent_block_ids, read.content, family="block_agents",
                                     namespace=namespace, key=key,
                                     what=f"the block list of agent {agent_id!r}")
                etag = read.etag
            except NotFoundError as exc:
                if isinstance(exc, BadRecordError):
                    raise
                ids, etag = [], ABSENT
            text = json.dumps({"blocks": change(list(ids))})
            check_record(agent_block_ids, text, family="block_agents", namespace=namespace,
                         key=key)
            try:
                self.files.write(path, text, etag=etag)
                return
            except FileConflictError:
                if attempt == 4:
                    raise

    def attach(self, agent_id: str, block_id: str) -> None:
        """Show the block to ``agent_id`` (after its other blocks); labels must stay unique
        per agent, since tools name blocks by label."""
        block = self.get(block_id)
        taken = {b.label: b.id for b in self.blocks_of(agent_id) if b.id != block_id}
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
                info = self.files.write(self._path(block.id), self._text(block.id, spec),
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
