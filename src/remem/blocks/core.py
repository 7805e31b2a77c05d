"""The pure part of memory blocks: the block value, its rules, the three edits an agent makes
(append, replace, rethink) and rendering into the system prompt."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final
from xml.sax.saxutils import escape, quoteattr

from remem.errors import BlockLimitError, EditError, InvalidInputError, ReadOnlyError
from remem.files.core import check_content
from remem.files.render import Overflow, Rendered, check_budget
from remem.store.bad_records import int_field, kind_of, text_field
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Block",
    "BlockSpec",
    "append_value",
    "block_text",
    "check_name",
    "render_blocks",
    "replace_value",
    "rethink_value",
]

DEFAULT_LIMIT: Final = 2000
MAX_LIMIT: Final = 100_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_name(value: object, what: str) -> str:
    """``value`` if it is a block id, label or agent id: 1-64 letters, digits, ``_`` or ``-``
    (starting with a letter or digit)."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidInputError(f"{what} must be 1-64 letters, digits, '_' or '-' starting "
                                f"with a letter or digit, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class BlockSpec:
    """What a block is made of: ``label`` (how the agent names it), ``value``, ``limit`` in
    characters, ``description`` (tells the model what belongs there), ``read_only`` (agents
    may read, never edit it through tools)."""

    label: str
    value: str = ""
    limit: int = DEFAULT_LIMIT
    description: str = ""
    read_only: bool = False

    def __post_init__(self) -> None:
        check_name(self.label, "label")
        check_content(self.value, "value")
        check_content(self.description, "description")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or not (
                1 <= self.limit <= MAX_LIMIT):
            raise InvalidInputError(f"limit must be an integer of characters from 1 to "
                                    f"{MAX_LIMIT}, got {self.limit!r}")
        if not isinstance(self.read_only, bool):
            raise InvalidInputError(f"read_only must be true or false, got {self.read_only!r}")
        if len(self.value) > self.limit:
            raise BlockLimitError(f"value has {len(self.value)} characters but the limit is "
                                  f"{self.limit}; shorten it or raise the limit")

    def to_json(self) -> str:
        """The stored text of the block."""
        return json.dumps({"label": self.label, "value": self.value, "limit": self.limit,
                           "description": self.description, "read_only": self.read_only},
                          ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> BlockSpec:
        """Read :meth:`to_json` text; other text raises ``ValueError`` or ``TypeError``
        naming the field (what readers skip and report: :mod:`remem.store.bad_records`)."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError(f"a block must be a JSON object, got {kind_of(data)}")
        return cls(data["label"], text_field(data.get("value", ""), "value"),
                   int_field(data.get("limit", DEFAULT_LIMIT), "limit"),
                   text_field(data.get("description", ""), "description"),
                   data.get("read_only", False))


@dataclass(frozen=True, slots=True)
class Block:
    """A stored block: its id, spec and etag (for a conditional update)."""

    id: str
    spec: BlockSpec
    etag: str

    @property
    def label(self) -> str:
        """How agents name the block."""
        return self.spec.label

    @property
    def value(self) -> str:
        """The block's text."""
        return self.spec.value

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "label": self.label, "value": self.value,
                "limit": self.spec.limit, "chars": len(self.value),
                "description": self.spec.description, "read_only": self.spec.read_only,
                "etag": self.etag}


def _editable(spec: BlockSpec) -> None:
    if spec.read_only:
        raise ReadOnlyError(f"block '{spec.label}' is read-only: it can be read but not "
                            "changed; keep the information elsewhere (e.g. archival memory)")


def _within_limit(spec: BlockSpec, value: str, how: str) -> BlockSpec:
    if len(value) > spec.limit:
        over = len(value) - spec.limit
        raise BlockLimitError(
            f"{how} would make block '{spec.label}' {len(value)} characters long, {over} over "
            f"its limit of {spec.limit} (it has {len(spec.value)} now); shorten the text by "
            f"at least {over} characters, or call memory_rethink to rewrite the block more "
            "compactly")
    return replace(spec, value=value)


def append_value(spec: BlockSpec, content: str) -> BlockSpec:
    """``spec`` with ``content`` appended on a new line (refused past the limit)."""
    _editable(spec)
    check_content(content, "content")
    if not content.strip():
        raise InvalidInputError("content is empty; pass the text to append")
    value = f"{spec.value}\n{content}" if spec.value else content
    return _within_limit(spec, value, "appending this")


def replace_value(spec: BlockSpec, old: str, new: str) -> BlockSpec:
    """``spec`` with the one occurrence of ``old`` replaced by ``new`` (``""`` deletes it)."""
    _editable(spec)
    check_content(new, "new_content")
    if not isinstance(old, str) or not old:
        raise EditError("old_content must be the exact text to replace, copied from the "
                        "block")
    count = spec.value.count(old)
    if count == 0:
        raise EditError(f"old_content does not occur in block '{spec.label}'; copy it "
                        "exactly from the block as shown in your core memory")
    if count > 1:
        raise EditError(f"old_content occurs {count} times in block '{spec.label}'; include "
                        "more of the surrounding text so it is unique")
    return _within_limit(spec, spec.value.replace(old, new, 1), "this replacement")


def rethink_value(spec: BlockSpec, new_value: str) -> BlockSpec:
    """``spec`` rewritten to ``new_value`` as a whole."""
    _editable(spec)
    check_content(new_value, "new_memory")
    return _within_limit(spec, new_value, "this rewrite")


def block_text(block: Block) -> str:
    """One block as a tagged section, with its size and limit so the model knows how much
    room is left."""
    spec = block.spec
    attrs = f'chars="{len(spec.value)}/{spec.limit}"'
    if spec.description:
        attrs += f" description={quoteattr(spec.description)}"
    if spec.read_only:
        attrs += ' read_only="true"'
    return f"<{spec.label} {attrs}>\n{escape(spec.value)}\n</{spec.label}>"


def render_blocks(blocks: Sequence[Block], *, budget: int | None = None,
                  counter: TokenCounter = DEFAULT_COUNTER,
                  heading: str = "# Core memory") -> Rendered:
    """The blocks as tagged sections for the system prompt, each with its size and limit so
    the model knows how much room is left. Blocks past ``budget`` tokens (if given) are left
    out whole and reported in ``overflow``."""
    limit = check_budget(budget) if budget is not None else None
    parts = [heading]
    overflow: list[Overflow] = []
    for block in blocks:
        section = block_text(block)
        if limit is not None and (overflow or counter.count(
                "\n".join([*parts, section])) > limit):
            overflow.append(Overflow(block.id, counter.count(section)))
            continue
        parts.append(section)
    text = "\n".join(parts)
    if limit is not None and counter.count(text) > limit:
        text = ""
    return Rendered(text, counter.count(text), limit or counter.count(text), counter.name,
                    overflow)
