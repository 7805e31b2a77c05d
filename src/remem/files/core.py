"""The pure core of every file backend: checking content, slicing reads, string edits, grep,
glob matching and planning a change (the new record and its history event) from the current
record. Backends only load and save; the rules live here once.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from remem.errors import (
    EditError,
    FileConflictError,
    Fix,
    Hint,
    InvalidInputError,
    NotFoundError,
)
from remem.files.paths import ROOT, is_under, segments
from remem.files.types import (
    ABSENT,
    FileEvent,
    FileEventOp,
    FileInfo,
    FileRead,
    FileRecord,
    GrepMatch,
)

__all__ = [
    "MAX_FILE_CHARS",
    "MAX_GREP_MATCHES",
    "FileChange",
    "apply_edit",
    "check_content",
    "check_etag",
    "compile_glob",
    "glob_matches",
    "grep_lines",
    "list_children",
    "match_glob",
    "missing",
    "plan_delete",
    "plan_edit",
    "plan_undo",
    "plan_write",
    "slice_lines",
]

#: largest file content in characters (files are text kept in one store value)
MAX_FILE_CHARS: Final = 2_000_000
#: most grep hits returned by one call
MAX_GREP_MATCHES: Final = 1000
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_content(content: object, what: str = "content") -> str:
    """``content`` if it is storable text, else :class:`InvalidInputError` naming the rule."""
    if not isinstance(content, str):
        raise InvalidInputError(f"{what} must be a string, got {type(content).__name__}")
    if len(content) > MAX_FILE_CHARS:
        raise InvalidInputError(f"{what} has {len(content)} characters; a file holds at most "
                                f"{MAX_FILE_CHARS}: split it into several files")
    if "\x00" in content:
        raise InvalidInputError(f"{what} contains a NUL character; files hold text only "
                                "(encode binary data, e.g. as base64)")
    if _SURROGATE.search(content):
        raise InvalidInputError(f"{what} contains a lone surrogate, which is not valid "
                                "Unicode text; decode it properly before writing")
    return content


def missing(path: str) -> NotFoundError:
    """The error for a file that does not exist, with the fix."""
    return NotFoundError(f"no file at {path!r}", hint=Hint(
        Fix.LIST_FILES, "call ls or glob to see which files exist", path))


def check_etag(path: str, expected: str | None, record: FileRecord | None) -> None:
    """Raise :class:`FileConflictError` unless ``expected`` (``None``: anything goes,
    :data:`ABSENT`: no file) matches the current record."""
    if expected is None:
        return
    actual = record.etag if record is not None else None
    if expected == ABSENT:
        if actual is not None:
            raise FileConflictError(
                f"{path!r} already exists (etag {actual}); read it and pass its etag to "
                "replace it", path=path, expected=expected, actual=actual)
        return
    if actual != expected:
        now = "it no longer exists" if actual is None else f"its etag is now {actual}"
        raise FileConflictError(
            f"{path!r} changed since etag {expected} was read ({now}); read it again and "
            "redo the change", path=path, expected=expected, actual=actual)


def slice_lines(path: str, content: str, etag: str, offset: int,
                limit: int | None) -> FileRead:
    """Lines ``offset`` .. ``offset + limit`` of ``content`` (line ends kept)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"offset must be an integer >= 0 (a line number counted from "
                                f"0), got {offset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise InvalidInputError(f"limit must be an integer >= 1 (lines) or None, got "
                                f"{limit!r}")
    lines = content.splitlines(keepends=True)
    if offset > len(lines):
        raise InvalidInputError(f"offset {offset} is past the end of {path!r}, which has "
                                f"{len(lines)} lines; read from offset 0")
    part = lines[offset:] if limit is None else lines[offset:offset + limit]
    return FileRead(path, "".join(part), etag, offset, len(part), len(lines))


def apply_edit(path: str, content: str, old: str, new: str, replace_all: bool) -> str:
    """``content`` with ``old`` replaced by ``new``: the one occurrence, or every one with
    ``replace_all``; :class:`EditError` when it is absent or not unique."""
    if not isinstance(old, str) or not old:
        raise EditError("old_string must be a non-empty string: the exact text to replace")
    check_content(new, "new_string")
    if old == new:
        raise EditError("old_string and new_string are the same; nothing would change")
    count = content.count(old)
    if count == 0:
        raise EditError(f"old_string does not occur in {path!r}; read the file and copy the "
                        "text exactly (whitespace and line breaks included)")
    if count > 1 and not replace_all:
        raise EditError(f"old_string occurs {count} times in {path!r}; include more "
                        "surrounding text to make it unique, or pass replace_all=true")
    return content.replace(old, new) if replace_all else content.replace(old, new, 1)


def grep_lines(path: str, content: str, text: str, limit: int) -> list[GrepMatch]:
    """The lines of ``content`` holding ``text`` literally (at most ``limit``)."""
    hits: list[GrepMatch] = []
    if text not in content:
        return hits
    for number, line in enumerate(content.splitlines(), start=1):
        if text in line:
            hits.append(GrepMatch(path, number, line))
            if len(hits) >= limit:
                break
    return hits


@lru_cache(maxsize=256)
def _segment_pattern(segment: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(segment), re.DOTALL)


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, parts[skip:]) for skip in range(len(parts) + 1))
    if not parts or not _segment_pattern(head).match(parts[0]):
        return False
    # a '*' never matches a leading dot: hidden files are listed only when asked for
    if parts[0].startswith(".") and not head.startswith("."):
        return False
    return _match(rest, parts[1:])


def compile_glob(pattern: str, base: str = ROOT) -> tuple[str, ...]:
    """``pattern`` checked and split into segments, made absolute under directory ``base``
    unless it starts with ``/``."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidInputError("pattern must be a non-empty glob such as '**/*.md'")
    if "\x00" in pattern or ".." in pattern.split("/"):
        raise InvalidInputError(f"pattern {pattern!r} may not hold NUL or '..' segments")
    full = pattern if pattern.startswith("/") else f"{base.rstrip('/')}/{pattern}"
    return tuple(p for p in full.split("/") if p not in ("", "."))


def glob_matches(compiled: tuple[str, ...], path: str) -> bool:
    """Whether normalised ``path`` matches a :func:`compile_glob` pattern."""
    return _match(compiled, tuple(path[1:].split("/")) if path != ROOT else ())


def match_glob(pattern: str, path: str, base: str = ROOT) -> bool:
    """Whether normalised file ``path`` matches ``pattern`` (``*``, ``?``, ``[...]`` within a
    name, ``**`` across directories), relative to directory ``base`` unless it starts with
    ``/``."""
    return glob_matches(compile_glob(pattern, base), ROOT + "/".join(segments(path)))


def list_children(directory: str, files: Iterable[FileInfo]) -> list[FileInfo]:
    """The direct entries of ``directory`` given every file below it: its files, and one
    directory entry per subdirectory, sorted by path."""
    entries: dict[str, FileInfo] = {}
    depth = 0 if directory == ROOT else directory.count("/")
    for info in files:
        if not is_under(info.path, directory) or info.path == directory:
            continue
        parts = info.path.split("/")
        if len(parts) == depth + 2:
            entries[info.path] = info
        else:
            sub = "/".join(parts[:depth + 2])
            entries.setdefault(sub, FileInfo(sub, is_dir=True))
    return [entries[key] for key in sorted(entries)]


# -- planning a change -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileChange:
    """What a change writes: the file's new record and the history event."""

    record: FileRecord
    event: FileEvent


Plan = Callable[[FileRecord | None], FileChange]


def _live(record: FileRecord | None) -> FileRecord | None:
    return record if record is not None and record.content is not None else None


def _changed(path: str, current: FileRecord | None, content: str | None, op: FileEventOp,
             now: float, actor: str) -> FileChange:
    version = (current.version if current is not None else 0) + 1
    before = current.content if current is not None else None
    record = FileRecord(path, content, version, now, previous=before, last_op=op)
    return FileChange(record, FileEvent(path, version, op, before, content, now, actor))


def plan_write(path: str, content: str, etag: str | None, now: float,
               actor: str = "user") -> Plan:
    """The change that writes ``content`` to ``path`` (checked against ``etag``)."""
    check_content(content)

    def plan(current: FileRecord | None) -> FileChange:
        check_etag(path, etag, _live(current))
        return _changed(path, current, content, "write", now, actor)

    return plan


def plan_edit(path: str, old: str, new: str, replace_all: bool, etag: str | None, now: float,
              actor: str = "user") -> Plan:
    """The change that replaces ``old`` with ``new`` in ``path``."""

    def plan(current: FileRecord | None) -> FileChange:
        live = _live(current)
        if live is None:
            raise missing(path)
        check_etag(path, etag, live)
        assert live.content is not None
        edited = check_content(apply_edit(path, live.content, old, new, replace_all))
        return _changed(path, live, edited, "edit", now, actor)

    return plan


def plan_delete(path: str, etag: str | None, now: float, actor: str = "user") -> Plan:
    """The change that deletes ``path`` (leaving a tombstone record)."""

    def plan(current: FileRecord | None) -> FileChange:
        live = _live(current)
        if live is None:
            raise missing(path)
        check_etag(path, etag, live)
        return _changed(path, live, None, "delete", now, actor)

    return plan


def plan_undo(path: str, etag: str | None, now: float, actor: str = "user") -> Plan:
    """The change that puts back the content ``path`` had before its latest change (a
    delete is undone by bringing the file back; undoing twice redoes)."""

    def plan(current: FileRecord | None) -> FileChange:
        if current is None:
            raise NotFoundError(f"{path!r} has no history to undo")
        check_etag(path, etag, _live(current))
        return _changed(path, current, current.previous, "undo", now, actor)

    return plan
