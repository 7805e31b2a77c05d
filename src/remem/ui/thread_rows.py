"""The rows of the threads list: whose thread it is, a title a person recognises, how many
messages, when it last changed, and, for a fork or copy, the thread and checkpoint it
started from (so the list links there).

:func:`thread_title` and :func:`relative_time` are pure; :func:`thread_rows` reads, for each
listed thread, its first few messages and (forks only) its oldest checkpoints, through the
tenant's thread view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from remem.threads import ThreadStore
from remem.threads.types import Checkpoint, ThreadInfo

__all__ = ["TITLE_CHARS", "ThreadRow", "relative_time", "source_thread_of", "thread_rows",
           "thread_title"]

#: how long a title made from the first user message may be
TITLE_CHARS = 60
#: messages read from a thread's start to find its first user message
FIRST_MESSAGES = 8
#: checkpoints of a fork read to find the one it started from
FORK_CHECKPOINTS = 100


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """A thread as the list shows it. ``title_from``: ``"metadata"`` (its ``title``),
    ``"message"`` (the first user message, cut to :data:`TITLE_CHARS`) or ``""`` (none);
    ``source_thread``: the thread whose checkpoint ``source`` a fork started from (``None``
    when not a fork, or when it could not be found)."""

    thread_id: str
    user: str
    title: str
    title_from: str
    messages: int
    created_at: float
    updated_at: float
    source: str | None
    source_thread: str | None


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit - 1]
    space = cut.rfind(" ")
    # cut at a word boundary when one is near; Chinese has none, so cut there
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"


def thread_title(metadata: Mapping[str, Any], first_user_text: str | None,
                 limit: int = TITLE_CHARS) -> tuple[str, str]:
    """A thread's title and where it came from: metadata ``title`` when it is a non-empty
    string, else the first user message cut to ``limit`` characters (at a word boundary
    when there is one, ending in ``…``), else ``("", "")``."""
    title = metadata.get("title")
    if isinstance(title, str) and title.strip():
        return _cut(title, limit * 2), "metadata"
    if first_user_text and first_user_text.strip():
        return _cut(first_user_text, limit), "message"
    return "", ""


def relative_time(ts: float, now: float) -> str:
    """``ts`` relative to ``now`` in the largest whole unit: ``just now``, ``5 min ago``,
    ``3 h ago``, ``2 days ago``; ``in the future`` when a clock ran ahead."""
    delta = now - ts
    if delta < -60:
        return "in the future"
    if delta < 60:
        return "just now"
    for size, unit in ((86_400, "day"), (3_600, "h"), (60, "min")):
        if delta >= size:
            n = int(delta // size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''} ago"
    return "just now"  # pragma: no cover (delta >= 60 is caught above)


def _user(metadata: Mapping[str, Any]) -> str:
    user = metadata.get("user_id")
    return str(user) if isinstance(user, str | int) and str(user) else ""


def _first_user_text(view: ThreadStore, info: ThreadInfo) -> str | None:
    if info.length == 0:
        return None
    for message in view.messages(info.thread_id, start=0, stop=FIRST_MESSAGES):
        if message.role == "user" and message.text.strip():
            return message.text
    return None


def _source_thread(view: ThreadStore, info: ThreadInfo) -> str | None:
    """The thread a fork (or copy) started from: its first checkpoint records it
    (``from_thread``), and its parent is the source checkpoint."""
    if info.source is None:
        return None
    return source_thread_of(view.checkpoints(info.thread_id, limit=FORK_CHECKPOINTS),
                            info.source)


def thread_rows(view: ThreadStore, infos: Iterable[ThreadInfo]) -> list[ThreadRow]:
    """The list's rows for ``infos`` (blocking: call it in the store threads)."""
    rows = []
    for info in infos:
        title, title_from = thread_title(info.metadata, _first_user_text(view, info))
        rows.append(ThreadRow(info.thread_id, _user(info.metadata), title, title_from,
                              info.length, info.created_at, info.updated_at, info.source,
                              _source_thread(view, info)))
    return rows


def source_thread_of(checkpoints: Sequence[Checkpoint], source: str | None) -> str | None:
    """Among a fork's ``checkpoints``, the thread its ``source`` checkpoint belongs to."""
    if source is None:
        return None
    for checkpoint in checkpoints:
        origin = checkpoint.metadata.get("from_thread")
        if checkpoint.parent_id == source and isinstance(origin, str) and origin:
            return origin
    return None
