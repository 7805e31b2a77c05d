"""What the framework adapters that keep a conversation in a remem thread share: make the
thread hold exactly a given list of messages, appending when the list extends what is stored
and rewinding to the longest shared prefix when it was rewritten (the messages it drops stay
readable in the thread's earlier checkpoints, as for any remem rewind).

Each adapter turns its framework's messages into remem :class:`~remem.messages.Message`
values that keep the framework's exact serialised form in their metadata, and compares those
forms to find what is already stored.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from remem.errors import NotFoundError
from remem.messages.types import Message
from remem.threads.api import ThreadAPI

__all__ = ["shared_prefix", "stored_messages", "write_messages"]

#: how many checkpoints are searched for the one to rewind to; past that, the thread is
#: deleted and written anew (its older checkpoints go with it)
CHECKPOINT_SCAN = 1000


def stored_messages(threads: ThreadAPI, thread_id: str) -> list[Message]:
    """The thread's messages, oldest first (none for a thread not yet created)."""
    try:
        return threads.messages(thread_id)
    except NotFoundError:
        return []


def shared_prefix(stored: Sequence[Message], wanted: Sequence[Message],
                  key: Callable[[Message], Hashable | Any]) -> int:
    """How many leading messages of ``stored`` and ``wanted`` are the same by ``key``."""
    count = 0
    for old, new in zip(stored, wanted, strict=False):
        if key(old) != key(new):
            break
        count += 1
    return count


def write_messages(threads: ThreadAPI, thread_id: str, stored: Sequence[Message],
                   wanted: Sequence[Message], keep: int, *,
                   metadata: Mapping[str, Any] | None = None) -> None:
    """Make thread ``thread_id`` (holding ``stored``) hold ``wanted``, whose first ``keep``
    messages are ``stored``'s: one append when nothing stored is dropped; else a rewind to
    the newest checkpoint at or before ``keep`` and an append of the rest (or, when no
    checkpoint of the thread is that short, the thread deleted and written anew).
    ``metadata`` is set on the thread when it is created."""
    created = bool(stored) or threads.exists(thread_id)
    if created and keep < len(stored):
        checkpoints = threads.checkpoints(thread_id, limit=CHECKPOINT_SCAN)
        base = next((c for c in checkpoints
                     if c.position <= keep and c.thread_id == thread_id), None)
        if base is None:
            threads.delete(thread_id)
            created, keep = False, 0
        else:
            threads.rewind(thread_id, base.id)
            keep = base.position
    rest = list(wanted[keep:])
    if not created:
        threads.create(thread_id, metadata=dict(metadata) if metadata else None)
    if rest:
        threads.append(thread_id, rest)
