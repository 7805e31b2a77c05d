"""The JSON shape of every file and approval result, declared once: each ``/v1/files`` and
``/v1/approvals`` route's ``response_model``
(:data:`~remem.files.operation_table.FILE_OPERATIONS`, ``APPROVAL_OPERATIONS``), what the MCP
file tools answer (``of`` from the Python result) and what a client reads back
(``value()``). The shapes are the values' own ``to_dict()`` / ``to_value()``."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import RootModel

from remem.files.approvals import Approval
from remem.files.types import FileEvent, FileEventOp, FileInfo, FileRead, GrepMatch
from remem.wire_models import Dumped, Envelope, Rows, Wire

__all__ = ["ApprovalOut", "ApprovalsOut", "FileEventOut", "FileHistoryOut", "FileInfoOut",
           "FileListOut", "FileReadOut", "GrepMatchOut", "GrepMatchesOut", "UndoneOut"]


class FileInfoOut(Dumped[FileInfo]):
    """A file (its size in UTF-8 bytes and etag) or a directory (``is_dir``)."""

    path: str
    is_dir: bool = False
    size: int = 0
    etag: str | None = None
    modified_at: float | None = None


class FileListOut(Rows[FileInfoOut]):
    """A listing or a glob's files."""


class UndoneOut(RootModel[FileInfoOut | None]):
    """The file as an undo left it (null: absent)."""

    @classmethod
    def of(cls, result: FileInfo | None) -> UndoneOut:
        """The shape of ``result``."""
        return cls(None if result is None else FileInfoOut.of(result))

    def value(self) -> FileInfo | None:
        """The file, or ``None``."""
        return None if self.root is None else self.root.value()


class FileReadOut(Dumped[FileRead]):
    """Lines ``offset`` .. ``offset + lines`` of ``total_lines``, the file's etag, and how
    many lines ``remaining``."""

    path: str
    content: str
    etag: str
    offset: int
    lines: int
    total_lines: int
    remaining: int


class GrepMatchOut(Dumped[GrepMatch]):
    """A line holding the text: its file, 1-based line number and the line."""

    path: str
    line: int
    text: str


class GrepMatchesOut(Rows[GrepMatchOut]):
    """A grep's lines."""


class FileEventOut(Wire[FileEvent]):
    """One change of a file (``before`` / ``after``: its content, null when absent)."""

    type: Literal["file_event"] = "file_event"
    path: str
    version: int
    op: FileEventOp
    before: str | None
    after: str | None
    at: float
    actor: str = "user"

    @classmethod
    def of(cls, result: FileEvent) -> Self:
        return cls.model_validate(result.to_value())

    def value(self) -> FileEvent:
        return FileEvent.from_value(self.model_dump())


class FileHistoryOut(Rows[FileEventOut]):
    """A file's changes, oldest first."""


class ApprovalOut(Wire[Approval]):
    """An approval (``Approval.to_value()``): the parked operation, its status and outcome."""

    id: str
    operation: str
    path: str
    arguments: dict[str, Any]
    scope: str | None
    status: str
    created_at: float
    reason: str = ""
    result: dict[str, Any] | None = None
    actor: str | None = None
    base_etag: str | None = None
    claimed_at: float | None = None
    requested_by: str | None = None

    @classmethod
    def of(cls, result: Approval) -> Self:
        return cls.model_validate(result.to_value())

    def value(self) -> Approval:
        return Approval.from_value(self.model_dump())


class ApprovalsOut(Envelope[list[Approval]]):
    """Approvals, oldest first."""

    approvals: list[ApprovalOut]
