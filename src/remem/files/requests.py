"""File operations as request values: one model per tool, run by :func:`run_file_request`.

The agent tools (:mod:`remem.tools.files`) take their JSON schemas from these models, so a
parameter, its bounds and its description are declared once.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeAlias

from pydantic import Field

from remem.files.base import FileBackend
from remem.files.core import MAX_FILE_CHARS, MAX_GREP_MATCHES
from remem.requests import Request

__all__ = [
    "EditFileRequest",
    "FileRequest",
    "GlobRequest",
    "GrepRequest",
    "LsRequest",
    "ReadFileRequest",
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


class ReadFileRequest(Request):
    """Read lines of a file."""

    operation: ClassVar[str] = "read_file"
    path: Path
    offset: Annotated[int, Field(ge=0, le=10_000_000, description=(
        "The first line to read, counted from 0."))] = 0
    limit: Annotated[int | None, Field(ge=1, le=100_000, description=(
        "How many lines to read (default: as many as fit)."))] = None


class WriteFileRequest(Request):
    """Create or replace a file."""

    operation: ClassVar[str] = "write_file"
    path: Path
    content: Annotated[Content, Field(description="The whole new content of the file.")]
    etag: Etag = None


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


class GlobRequest(Request):
    """Find files by name pattern."""

    operation: ClassVar[str] = "glob"
    pattern: Annotated[str, Field(min_length=1, max_length=1024, description=(
        "A glob: '*' and '?' within a name, '**' across directories, e.g. '**/*.md'."))]
    path: Dir = "/"


class GrepRequest(Request):
    """Find lines holding a text."""

    operation: ClassVar[str] = "grep"
    pattern: Annotated[str, Field(min_length=1, max_length=1000, description=(
        "The text to look for, literally (not a regular expression)."))]
    path: Dir = "/"
    glob: Annotated[str | None, Field(max_length=1024, description=(
        "Only files matching this glob, e.g. '*.py'."))] = None


FileRequest: TypeAlias = (LsRequest | ReadFileRequest | WriteFileRequest | EditFileRequest
                          | GlobRequest | GrepRequest)


def run_file_request(files: FileBackend, request: FileRequest, *,
                     actor: str = "user") -> Any:
    """Run ``request`` on ``files``; the backend's result value."""
    if isinstance(request, LsRequest):
        return files.ls(request.path)
    if isinstance(request, ReadFileRequest):
        return files.read(request.path, offset=request.offset, limit=request.limit)
    if isinstance(request, WriteFileRequest):
        return files.write(request.path, request.content, etag=request.etag, actor=actor)
    if isinstance(request, EditFileRequest):
        return files.edit(request.path, request.old_string, request.new_string,
                          replace_all=request.replace_all, etag=request.etag, actor=actor)
    if isinstance(request, GlobRequest):
        return files.glob(request.pattern, request.path)
    return files.grep(request.pattern, request.path, glob=request.glob,
                      limit=MAX_GREP_MATCHES)
