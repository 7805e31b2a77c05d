"""Async file backends: :class:`AsyncFileBackend` is :class:`~remem.files.FileBackend` with
coroutine methods of the same names and arguments, and :class:`AsyncFiles` is the thin
async shell over any sync backend.

The backends' rules live once, in the sync core (paths, plans, etags, history); the shell
runs each call in a worker thread (``asyncio.to_thread``), so an event loop is never
blocked by SQLite, PostgreSQL or the disk, and the answers and errors are the sync
backend's exactly (the conformance suite runs through this shell). Calls are independent,
so many may run at once; each store-backed change still takes its path's lock.

>>> import asyncio
>>> from remem.files import InMemoryFileBackend
>>> from remem.files.aio import AsyncFiles
>>> files = AsyncFiles(InMemoryFileBackend())
>>> async def main() -> str:
...     await files.write("/notes/a.md", "hello")
...     return (await files.read("/notes/a.md")).content
>>> asyncio.run(main())
'hello'
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from remem.files import core
from remem.files.base import FileBackend
from remem.files.paths import ROOT
from remem.files.types import FileEvent, FileInfo, FileRead, GrepMatch

__all__ = ["AsyncFileBackend", "AsyncFiles"]


@runtime_checkable
class AsyncFileBackend(Protocol):
    """:class:`~remem.files.FileBackend` with coroutine methods (same names, arguments,
    results and errors)."""

    keeps_history: bool

    async def ls(self, path: str = ROOT) -> list[FileInfo]:
        """The files and subdirectories directly in directory ``path``, sorted."""
        ...

    async def stat(self, path: str) -> FileInfo | None:
        """The file at ``path``, or ``None``."""
        ...

    async def read(self, path: str, *, offset: int = 0,
                   limit: int | None = None) -> FileRead:
        """Lines ``offset`` .. ``offset + limit`` of the file (all lines by default)."""
        ...

    async def write(self, path: str, content: str, *, etag: str | None = None,
                    actor: str = "user") -> FileInfo:
        """Create or replace a file."""
        ...

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
                   etag: str | None = None, actor: str = "user") -> FileInfo:
        """Replace the exact text ``old`` with ``new`` (unique unless ``replace_all``)."""
        ...

    async def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """Files matching ``pattern`` under ``path``, sorted."""
        ...

    async def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
                   limit: int = core.MAX_GREP_MATCHES) -> list[GrepMatch]:
        """Lines holding ``text`` (literally) in files under ``path``."""
        ...

    async def delete(self, path: str, *, etag: str | None = None,
                     actor: str = "user") -> None:
        """Delete a file."""
        ...

    async def history(self, path: str) -> list[FileEvent]:
        """Every recorded change of ``path``, oldest first."""
        ...

    async def undo(self, path: str, *, etag: str | None = None,
                   actor: str = "user") -> FileInfo | None:
        """Revert the latest change of ``path``; the file as it is now (``None``: absent)."""
        ...


class AsyncFiles:
    """The async shell over the sync backend ``files`` (see the module docstring)."""

    def __init__(self, files: FileBackend) -> None:
        self.files = files
        self.keeps_history = files.keeps_history

    async def ls(self, path: str = ROOT) -> list[FileInfo]:
        """:meth:`FileBackend.ls <remem.files.FileBackend.ls>` in a worker thread."""
        return await asyncio.to_thread(self.files.ls, path)

    async def stat(self, path: str) -> FileInfo | None:
        """``stat`` in a worker thread."""
        return await asyncio.to_thread(self.files.stat, path)

    async def read(self, path: str, *, offset: int = 0,
                   limit: int | None = None) -> FileRead:
        """``read`` in a worker thread."""
        return await asyncio.to_thread(self.files.read, path, offset=offset, limit=limit)

    async def write(self, path: str, content: str, *, etag: str | None = None,
                    actor: str = "user") -> FileInfo:
        """``write`` in a worker thread."""
        return await asyncio.to_thread(self.files.write, path, content, etag=etag,
                                       actor=actor)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
                   etag: str | None = None, actor: str = "user") -> FileInfo:
        """``edit`` in a worker thread."""
        return await asyncio.to_thread(self.files.edit, path, old, new,
                                       replace_all=replace_all, etag=etag, actor=actor)

    async def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """``glob`` in a worker thread."""
        return await asyncio.to_thread(self.files.glob, pattern, path)

    async def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
                   limit: int = core.MAX_GREP_MATCHES) -> list[GrepMatch]:
        """``grep`` in a worker thread."""
        return await asyncio.to_thread(self.files.grep, text, path, glob=glob, limit=limit)

    async def delete(self, path: str, *, etag: str | None = None,
                     actor: str = "user") -> None:
        """``delete`` in a worker thread."""
        await asyncio.to_thread(self.files.delete, path, etag=etag, actor=actor)

    async def history(self, path: str) -> list[FileEvent]:
        """``history`` in a worker thread."""
        return await asyncio.to_thread(self.files.history, path)

    async def undo(self, path: str, *, etag: str | None = None,
                   actor: str = "user") -> FileInfo | None:
        """``undo`` in a worker thread."""
        return await asyncio.to_thread(self.files.undo, path, etag=etag, actor=actor)
