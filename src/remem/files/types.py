"""Values of the file layer: what a listing, a read, a grep hit and a history event are."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from remem.store.bad_records import int_field, kind_of, optional_text, text_field, time_field

__all__ = [
    "ABSENT",
    "FileEvent",
    "FileEventOp",
    "FileInfo",
    "FileRead",
    "FileRecord",
    "GrepMatch",
    "etag_of",
    "file_op",
]

#: pass as ``etag=`` to write only if the file does not exist yet
ABSENT: Final = "absent"

#: ``write``: created or replaced; ``edit``: string replacement; ``delete``: removed;
#: ``undo``: a change reverted
FileEventOp: TypeAlias = Literal["write", "edit", "delete", "undo"]
_FILE_OPS: Final[tuple[FileEventOp, ...]] = ("write", "edit", "delete", "undo")


def file_op(value: Any) -> FileEventOp:
    """``value`` if it names a file event's operation, else ``ValueError``."""
    for op in _FILE_OPS:
        if value == op:
            return op
    raise ValueError(f"op must be one of {', '.join(_FILE_OPS)}, got {kind_of(value)}")


def etag_of(content: str) -> str:
    """The etag of a file's content: it changes whenever the content does (a strong etag)."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One entry of a listing: a file (with its size in UTF-8 bytes and etag) or a
    directory (``is_dir``; no size or etag)."""

    path: str
    is_dir: bool = False
    size: int = 0
    etag: str | None = None
    modified_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "is_dir": self.is_dir, "size": self.size,
                "etag": self.etag, "modified_at": self.modified_at}


@dataclass(frozen=True, slots=True)
class FileRead:
    """Part of a file: ``content`` holds lines ``offset`` (0-based) up to ``offset + lines``
    of ``total_lines``; ``etag`` is the whole file's, for a later conditional write."""

    path: str
    content: str
    etag: str
    offset: int
    lines: int
    total_lines: int

    @property
    def remaining(self) -> int:
        """Lines after this part (read again with ``offset=offset + lines``)."""
        return max(0, self.total_lines - self.offset - self.lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "content": self.content, "etag": self.etag,
                "offset": self.offset, "lines": self.lines, "total_lines": self.total_lines,
                "remaining": self.remaining}


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """A line holding the searched text: its file, 1-based line number and the line."""

    path: str
    line: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One change to one file: the content ``before`` and ``after`` (``None``: absent)."""

    path: str
    version: int
    op: FileEventOp
    before: str | None
    after: str | None
    at: float
    actor: str = "user"

    def to_value(self) -> dict[str, Any]:
        """The stored (and JSON) form."""
        return {"type": "file_event", "path": self.path, "version": self.version,
                "op": self.op, "before": self.before, "after": self.after, "at": self.at,
                "actor": self.actor}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> FileEvent:
        """Read a value written by :meth:`to_value`; another shape raises ``ValueError`` or
        ``TypeError`` naming the field."""
        at = time_field(value["at"], "at")
        if at is None:
            raise TypeError("at must be a number of seconds since the epoch, got null")
        return cls(path=text_field(value["path"], "path"),
                   version=int_field(value["version"], "version", minimum=1),
                   op=file_op(value["op"]), before=optional_text(value.get("before"), "before"),
                   after=optional_text(value.get("after"), "after"), at=at,
                   actor=text_field(value.get("actor", "user"), "actor"))


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A file as a versioned backend keeps it. ``content`` is ``None`` once deleted (the
    record stays as a tombstone, so versions keep counting up and the delete can be undone);
    ``previous`` is the content before the latest change, what :meth:`undo` puts back."""

    path: str
    content: str | None
    version: int
    modified_at: float
    previous: str | None = None
    last_op: FileEventOp = "write"

    @property
    def etag(self) -> str | None:
        """The content's etag (``None`` for a tombstone)."""
        return None if self.content is None else etag_of(self.content)

    def info(self) -> FileInfo:
        """The listing entry of a live record."""
        assert self.content is not None
        return FileInfo(self.path, size=len(self.content.encode("utf-8")),
                        etag=etag_of(self.content), modified_at=self.modified_at)
