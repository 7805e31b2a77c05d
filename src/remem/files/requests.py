"""File operations as request values: one model per operation, each run by its ``on``.

The agent tools (:mod:`remem.tools.files`), the ``/v1/files`` routes and the MCP file tools
(:data:`remem.files.operation_table.FILE_OPERATIONS`) take their JSON schemas from these
models, so a parameter, its bounds and its description are declared once. ``on(files)``
runs a request on a :class:`~remem.files.base.FileBackend` or a
:class:`~remem.files.permissions.GuardedFiles` (the same method names), so no surface
dispatches on the request's type.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeAlias

from pydantic import Field

from remem.files.base import FileBackend
from remem.files.core import MAX_FILE_CHARS, MAX_GREP_MATCHES
from remem.requests import Request

__all__ = [
    "AnyFileRequest",
    "EditFileRequest",
    "FileHistoryRequest",
    "FileRequest",
    "GlobRequest",
    "GrepRequest",
    "LsRequest",
    "ReadFileRequest",
    "UndoFileRequest",
    "WriteFileRequest",
    "run_file_request",
]

Path = Annotated[str, Field(min_length=1, max_length=1024,
                            description="A path from the root, e.g. '/notes/today.md'.")]
Dir = Annotated[str, Field(min_length=1, max_length=1024,
                           description="A directory from the root, e.g. '/' or '/notes'.")]
Etag = Annotated[str | None, Field(
    max_length=64, description="The etag from your last read: the change fails if the file "
                               "changed since ('absent': only if the file does not exist).")]
Content = Annotated[str, Field(max_length=MAX_FILE_CHARS)]


class LsRequest(Request):
    """List a directory."""

    operation: ClassVar[str] = "ls"
    path: Dir = "/"

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (a backend, or its guard; ``actor``: who a change is recorded
        as, for the changes of a backend)."""
        return files.ls(self.path)


class ReadFileRequest(Request):
    """Read lines of a file."""

    operation: ClassVar[str] = "read_file"
    path: Path
    offset: Annotated[int, Field(ge=0, le=10_000_000, description=(
        "The first line to read, counted from 0."))] = 0
    limit: Annotated[int | None, Field(ge=1, le=100_000, description=(
        "How many lines to read (default: as many as fit)."))] = None

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.read(self.path, offset=self.offset, limit=self.limit)


class WriteFileRequest(Request):
    """Create or replace a file."""

    operation: ClassVar[str] = "write_file"
    path: Path
    content: Annotated[Content, Field(description="The whole new content of the file.")]
    etag: Etag = None

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.write(self.path, self.content, etag=self.etag, **actor)


class EditFileRequest(Request):
    """Replace exact text in a file."""

    operation: ClassVar[str] = "edit_file"
    path: Path
    old_string: Annotated[Content, Field(min_length=1, description=(
        "The exact text to replace, copied from the file (whitespace included)."))]
    new_string: Annotated[Content, Field(description="The text to put in its place.")]
    replace_all: Annotated[bool, Field(description=(
        "Replace every occurrence (otherwise old_string must occur exactly once)."))] = False
    etag: Etag = None

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.edit(self.path, self.old_string, self.new_string,
                          replace_all=self.replace_all, etag=self.etag, **actor)


class GlobRequest(Request):
    """Find files by name pattern."""

    operation: ClassVar[str] = "glob"
    pattern: Annotated[str, Field(min_length=1, max_length=1024, description=(
        "A glob: '*' and '?' within a name, '**' across directories, e.g. '**/*.md'."))]
    path: Dir = "/"

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.glob(self.pattern, self.path)


class GrepRequest(Request):
    """Find lines holding a text."""

    operation: ClassVar[str] = "grep"
    pattern: Annotated[str, Field(min_length=1, max_length=1000, description=(
        "The text to look for, literally (not a regular expression)."))]
    path: Dir = "/"
    glob: Annotated[str | None, Field(max_length=1024, description=(
        "Only files matching this glob, e.g. '*.py'."))] = None

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`): at most ``MAX_GREP_MATCHES`` lines."""
        return files.grep(self.pattern, self.path, glob=self.glob, limit=MAX_GREP_MATCHES)


class FileHistoryRequest(Request):
    """A file's history: every change, oldest first."""

    operation: ClassVar[str] = "file_history"
    path: Annotated[str, Field(max_length=1024)]  # the query parameter it was, undescribed

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.history(self.path)


class UndoFileRequest(LsRequest):
    """Revert a file's latest change (its body is an :class:`LsRequest`'s, as it always
    was: ``path`` names the file)."""

    operation: ClassVar[str] = "undo_file"

    def on(self, files: Any, **actor: str) -> Any:
        """Run on ``files`` (see :meth:`LsRequest.on`)."""
        return files.undo(self.path, **actor)


FileRequest: TypeAlias = (LsRequest | ReadFileRequest | WriteFileRequest | EditFileRequest
                          | GlobRequest | GrepRequest)
"""The requests of the agents' file tools."""
AnyFileRequest: TypeAlias = FileRequest | FileHistoryRequest | UndoFileRequest
"""Every file request (the rows of ``/v1/files``)."""


def run_file_request(files: FileBackend, request: AnyFileRequest, *,
                     actor: str = "user") -> Any:
    """Run ``request`` on ``files``; the backend's result value."""
    return request.on(files, actor=actor)
