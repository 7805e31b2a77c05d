"""The file backend protocol, and the base every backend shares.

A backend implements four primitives over :class:`~remem.files.types.FileRecord` values:
``_load`` one record, ``_scan`` the live records under a directory, ``_commit`` a planned
change atomically (the plan sees the current record and may refuse), and ``_events`` (the
history of one path). The operations (``ls``, ``read``, ``write``, ``edit``, ``glob``,
``grep``, ``delete``, ``history``, ``undo``) are written once here, over the pure rules of
:mod:`remem.files.core`, with every path checked by :mod:`remem.files.paths` first.

Two optional fast paths, with generic defaults: ``_scan`` gets the glob it serves as a
:class:`ScanHint` (a backend may skip records that cannot match, e.g. filter by name and
depth in SQL or not descend deeper on disk; the caller matches every record it gets anyway,
so a backend that ignores the hint answers the same), and ``_infos`` lists entries without
the content when a backend keeps their size and etag beside it (the default hashes each
record's content).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol, runtime_checkable

from remem.errors import InvalidInputError, UnsupportedError
from remem.files import core
from remem.files.paths import ROOT, is_under, normalize_dir, normalize_file
from remem.files.types import FileEvent, FileInfo, FileRead, FileRecord, GrepMatch

__all__ = ["FileBackend", "RecordBackend", "ScanHint", "literal_prefix"]

#: characters that make a glob segment a pattern rather than a name
_WILDCARDS: Final = frozenset("*?[")


def _literal(segment: str) -> bool:
    return not _WILDCARDS.intersection(segment)


@lru_cache(maxsize=8192)
def _matches(pattern: tuple[str, ...], path: str) -> bool:
    # remembered: listings repeat (skills, blocks, approvals glob the same tree each turn),
    # and a lookup costs a twentieth of matching segment by segment
    return core.glob_matches(pattern, path)


@dataclass(frozen=True, slots=True)
class ScanHint:
    """The compiled glob (:func:`remem.files.core.compile_glob`) a scan serves, with what it
    fixes about every path it matches: ``name``, the last segment when it holds no wildcard,
    and ``depth``, the number of segments when there is no ``**``. A backend may leave out
    records these rule out; it must not leave out a record that :meth:`admits`."""

    pattern: tuple[str, ...]
    name: str | None = None
    depth: int | None = None

    @classmethod
    def of(cls, pattern: tuple[str, ...]) -> ScanHint:
        """The hint of a compiled glob."""
        last = pattern[-1] if pattern else None
        return cls(pattern, last if last is not None and _literal(last) else None,
                   None if "**" in pattern else len(pattern))

    def admits(self, path: str) -> bool:
        """Whether normalised file ``path`` matches the glob."""
        return _matches(self.pattern, path)


def literal_prefix(pattern: tuple[str, ...], parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """The rest of compiled glob ``pattern`` after the directory segments ``parts``, when it
    starts with them as plain names (no wildcard), else ``None``: what the backend mounted at
    ``parts`` can be asked for instead of the whole pattern."""
    if len(pattern) <= len(parts) or pattern[:len(parts)] != parts:
        return None
    return pattern[len(parts):] if all(_literal(p) for p in parts) else None


@runtime_checkable
class FileBackend(Protocol):
    """What every file backend does. Paths are virtual (``/notes/a.md``) and checked by
    :mod:`remem.files.paths`; ``etag=`` makes a change conditional (``ABSENT``: the file must
    not exist) and a mismatch raises :class:`~remem.errors.FileConflictError`.

    ``keeps_history``: whether ``history`` and ``undo`` work (else they raise
    :class:`~remem.errors.UnsupportedError`).
    """

    keeps_history: bool

    def ls(self, path: str = ROOT) -> list[FileInfo]:
        """The files and subdirectories directly in directory ``path``, sorted."""
        ...

    def stat(self, path: str) -> FileInfo | None:
        """The file at ``path``, or ``None``."""
        ...

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileRead:
        """Lines ``offset`` .. ``offset + limit`` of the file (all lines by default)."""
        ...

    def write(self, path: str, content: str, *, etag: str | None = None,
              actor: str = "user") -> FileInfo:
        """Create or replace a file."""
        ...

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             etag: str | None = None, actor: str = "user") -> FileInfo:
        """Replace the exact text ``old`` with ``new`` (unique unless ``replace_all``)."""
        ...

    def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """Files matching ``pattern`` under ``path``, sorted."""
        ...

    def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
             limit: int = core.MAX_GREP_MATCHES) -> list[GrepMatch]:
        """Lines holding ``text`` (literally) in files under ``path``."""
        ...

    def delete(self, path: str, *, etag: str | None = None, actor: str = "user") -> None:
        """Delete a file."""
        ...

    def history(self, path: str) -> list[FileEvent]:
        """Every recorded change of ``path``, oldest first."""
        ...

    def undo(self, path: str, *, etag: str | None = None,
             actor: str = "user") -> FileInfo | None:
        """Revert the latest change of ``path``; the file as it is now (``None``: absent)."""
        ...


class RecordBackend(ABC):
    """The operations of :class:`FileBackend` over four primitives (see the module
    docstring)."""

    keeps_history: bool = True

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    # -- the seam ---------------------------------------------------------------------------

    @abstractmethod
    def _load(self, path: str) -> FileRecord | None:
        """The record of normalised ``path`` (a tombstone too), or ``None``."""

    @abstractmethod
    def _scan(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileRecord]:
        """Every live record under normalised ``directory`` (those ``hint`` rules out may be
        left out)."""

    def _infos(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileInfo]:
        """The entries of :meth:`_scan`; a backend that keeps size and etag beside the
        content overrides this to skip hashing it."""
        return (record.info() for record in self._scan(directory, hint))

    @abstractmethod
    def _commit(self, path: str, plan: core.Plan) -> core.FileChange:
        """Run ``plan`` on the current record and save its change, atomically."""

    @abstractmethod
    def _events(self, path: str) -> list[FileEvent]:
        """The history of ``path``, oldest first."""

    # -- operations -------------------------------------------------------------------------

    def ls(self, path: str = ROOT) -> list[FileInfo]:
        """The files and subdirectories directly in directory ``path``, sorted."""
        directory = normalize_dir(path)
        return core.list_children(directory, self._infos(directory))

    def stat(self, path: str) -> FileInfo | None:
        """The file at ``path``, or ``None``."""
        record = self._load(normalize_file(path))
        return record.info() if record is not None and record.content is not None else None

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileRead:
        """Lines ``offset`` .. ``offset + limit`` of the file (all lines by default)."""
        name = normalize_file(path)
        record = self._load(name)
        if record is None or record.content is None:
            raise core.missing(name)
        return core.slice_lines(name, record.content, etag_or_empty(record), offset, limit)

    def write(self, path: str, content: str, *, etag: str | None = None,
              actor: str = "user") -> FileInfo:
        """Create or replace a file."""
        name = normalize_file(path)
        return self._commit(name, core.plan_write(name, content, etag, self.clock(),
                                                  actor)).record.info()

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             etag: str | None = None, actor: str = "user") -> FileInfo:
        """Replace the exact text ``old`` with ``new`` (unique unless ``replace_all``)."""
        name = normalize_file(path)
        plan = core.plan_edit(name, old, new, replace_all, etag, self.clock(), actor)
        return self._commit(name, plan).record.info()

    def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """Files matching ``pattern`` (relative to ``path`` unless it starts with ``/``)."""
        directory = normalize_dir(path)
        hint = ScanHint.of(core.compile_glob(pattern, directory))  # a bad one fails at once
        found = [info for info in self._infos(directory, hint) if hint.admits(info.path)]
        return sorted(found, key=lambda info: info.path)

    def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
             limit: int = core.MAX_GREP_MATCHES) -> list[GrepMatch]:
        """Lines holding ``text`` (literally, not a regex) in files under ``path``, by path
        then line; at most ``limit``."""
        if not isinstance(text, str) or not text:
            raise InvalidInputError("text must be a non-empty string to look for")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be an integer >= 1, got {limit!r}")
        directory = normalize_dir(path)
        hint = ScanHint.of(core.compile_glob(glob, directory)) if glob is not None else None
        hits: list[GrepMatch] = []
        for record in sorted(self._scan(directory, hint), key=lambda r: r.path):
            if hint is not None and not hint.admits(record.path):
                continue
            assert record.content is not None
            hits.extend(core.grep_lines(record.path, record.content, text, limit - len(hits)))
            if len(hits) >= limit:
                break
        return hits

    def delete(self, path: str, *, etag: str | None = None, actor: str = "user") -> None:
        """Delete a file."""
        name = normalize_file(path)
        self._commit(name, core.plan_delete(name, etag, self.clock(), actor))

    def history(self, path: str) -> list[FileEvent]:
        """Every recorded change of ``path``, oldest first."""
        self._need_history("history")
        return self._events(normalize_file(path))

    def undo(self, path: str, *, etag: str | None = None,
             actor: str = "user") -> FileInfo | None:
        """Revert the latest change of ``path`` (recorded as an ``undo`` event, so undoing
        again redoes); the file as it is now (``None``: absent)."""
        self._need_history("undo")
        name = normalize_file(path)
        record = self._commit(name, core.plan_undo(name, etag, self.clock(), actor)).record
        return record.info() if record.content is not None else None

    def _need_history(self, operation: str) -> None:
        if not self.keeps_history:
            raise UnsupportedError(
                f"{type(self).__name__} keeps no history, so {operation} is not available; "
                "keep files that need history in a store-backed or in-memory backend")


def etag_or_empty(record: FileRecord) -> str:
    """The etag of a live record."""
    etag = record.etag
    assert etag is not None
    return etag


def under(records: Iterable[FileRecord], directory: str) -> list[FileRecord]:
    """The live ``records`` inside ``directory``."""
    return [r for r in records if r.content is not None and is_under(r.path, directory)]
