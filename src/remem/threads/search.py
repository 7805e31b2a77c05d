"""Thread search (episodic recall): find past conversations by keywords and meaning.

Messages are indexed as items of the long-term store, one item per message with text, under
``(*namespace, owner)`` where the owner is the thread's ``metadata[owner_key]`` (``"_"`` when
absent). Search then is the store's hybrid search (BM25 over Chinese and English terms, plus
vectors when the store has an embedder), and hits are grouped by thread.

The index is the store's, not a second database: the store can be the same SQLite file as the
threads. Indexing happens right after an append commits; a crash in between leaves those
messages unindexed until :meth:`ThreadIndex.index_thread` is run for the thread (the CLI's
``remem threads reindex``).

What leaves a thread's current history leaves the index: a delete drops the thread's items, a
rewind drops the positions the rewind took back (and indexes the ones it brought back). The
index is another store with its own transactions, so these run right after the thread's change
commits; :meth:`~remem.threads.store.ThreadStore.search` therefore also checks every hit
against the thread's current history in one read transaction before answering, so a search
never returns a message its thread no longer holds, even when a crash came in between.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Self

from remem.errors import InvalidInputError
from remem.messages.types import Message
from remem.store.bad_records import (
    check_record,
    int_field,
    parse_items,
    text_field,
    time_field,
)
from remem.store.base import BaseStore
from remem.store.reserved import THREADS
from remem.store.types import (
    DeleteOp,
    Namespace,
    PutOp,
    SearchItem,
    SearchMode,
    validate_namespace,
)
from remem.threads.shapes import Wire, json_of

if TYPE_CHECKING:
    from remem.threads.store import ThreadStore

__all__ = ["MessageMatch", "MessageMatchOut", "ThreadHit", "ThreadHitOut", "ThreadIndex",
           "index_entry_of"]

NO_OWNER = "_"


@dataclass(frozen=True, slots=True)
class MessageMatch:
    """A message that matched a thread search."""

    message_id: str
    position: int
    role: str
    text: str
    score: float
    #: seconds since the epoch
    created_at: float


#: given the matches found per thread id (best first), the ones still to answer with
Keep = Callable[[Mapping[str, Sequence[MessageMatch]]], Mapping[str, Sequence[MessageMatch]]]


@dataclass(frozen=True, slots=True)
class ThreadHit:
    """A thread that matched, its best score and its matching messages (best first)."""

    thread_id: str
    owner: str
    score: float
    matches: tuple[MessageMatch, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (CLI ``--json`` output, HTTP answers), as
        :class:`ThreadHitOut` declares it."""
        return json_of(ThreadHitOut.of(self))


# -- their JSON shapes (gathered with the others in remem.threads.wire) -----------------------


class MessageMatchOut(Wire[MessageMatch]):
    """A message that matched a thread search: where it is in its thread and its score."""

    message_id: str
    position: int
    role: str
    text: str
    score: float
    created_at: float

    @classmethod
    def of(cls, result: MessageMatch) -> Self:
        """The model of ``result``."""
        return cls.model_construct(
            message_id=result.message_id, position=result.position, role=result.role,
            text=result.text, score=result.score, created_at=result.created_at)

    def value(self) -> MessageMatch:
        """The match."""
        return MessageMatch(self.message_id, self.position, self.role, self.text, self.score,
                            self.created_at)


class ThreadHitOut(Wire[ThreadHit]):
    """A thread that matched: its owner, best score and matching messages (best first)."""

    thread_id: str
    owner: str
    score: float
    matches: list[MessageMatchOut]

    @classmethod
    def of(cls, result: ThreadHit) -> Self:
        """The model of ``result``."""
        return cls.model_construct(thread_id=result.thread_id, owner=result.owner,
                                   score=result.score,
                                   matches=[MessageMatchOut.of(m) for m in result.matches])

    def value(self) -> ThreadHit:
        """The hit."""
        return ThreadHit(self.thread_id, self.owner, self.score,
                         tuple(m.value() for m in self.matches))


def index_entry_of(value: Mapping[str, Any]) -> tuple[str, MessageMatch]:
    """The thread id and message an index entry's value holds."""
    thread_id = text_field(value["thread_id"], "thread_id")
    if not thread_id:
        raise ValueError("thread_id is empty")
    created = time_field(value.get("created_at"), "created_at")
    return thread_id, MessageMatch(
        text_field(value["message_id"], "message_id"),
        int_field(value["position"], "position", minimum=0),
        text_field(value["role"], "role"), text_field(value["text"], "text"), 0.0,
        created or 0.0)


def _entry(item: SearchItem) -> tuple[str, str, MessageMatch]:
    """``(thread id, owner, match)`` of a search hit on the index."""
    thread_id, match = index_entry_of(item.value)
    return thread_id, item.namespace[-1], replace(match, score=float(item.score or 0.0))


class ThreadIndex:
    """Indexes thread messages in ``store`` and searches them.

    ``owner_key``: the thread metadata field naming whose conversation it is (default
    ``"user_id"``); searches are usually scoped to one owner. ``roles``: which messages are
    indexed (tool output and system prompts are left out by default).
    """

    def __init__(self, store: BaseStore, *, owner_key: str = "user_id",
                 namespace: Sequence[str] = (THREADS,),
                 roles: Sequence[str] = ("user", "assistant")) -> None:
        self.store = store
        self.owner_key = owner_key
        self.namespace = validate_namespace(list(namespace), what="ThreadIndex namespace")
        self.roles = frozenset(roles)

    def owner_of(self, metadata: Mapping[str, Any]) -> str:
        """The owner label for a thread's metadata."""
        owner = metadata.get(self.owner_key)
        return str(owner) if owner not in (None, "") else NO_OWNER

    def namespace_for(self, owner: str | None) -> Namespace:
        """Where an owner's messages are indexed (``None``: every owner's, for searching)."""
        return self.namespace if owner is None else (*self.namespace, owner)

    def index_messages(self, thread_id: str, metadata: Mapping[str, Any],
                       messages: Sequence[Message], start: int) -> int:
        """Index ``messages`` found at positions ``start, start + 1, ...``; return how many
        were indexed (messages without text or of other roles are skipped)."""
        namespace = self.namespace_for(self.owner_of(metadata))
        ops = [
            PutOp(namespace, f"{thread_id}/{message.id}",
                  {"text": message.text, "role": message.role, "thread_id": thread_id,
                   "message_id": message.id, "position": start + offset,
                   "created_at": message.created_at},
                  index=("text",), event_at=message.created_at)
            for offset, message in enumerate(messages)
            if message.role in self.roles and message.text.strip()
        ]
        for op in ops:  # what is written must read back (remem.store.bad_records)
            check_record(index_entry_of, op.value, family="thread_index", namespace=op.namespace,
                         key=op.key)
        if ops:
            self.store.batch(ops)
        return len(ops)

    def index_thread(self, threads: ThreadStore, thread_id: str) -> int:
        """(Re)index every message of a thread at its head; return how many were indexed."""
        info = threads.get(thread_id)
        self.remove_thread(thread_id)
        total, page = 0, 500
        for begin in range(0, info.length, page):
            chunk = threads.messages(thread_id, checkpoint_id=info.head.id, start=begin,
                                     stop=begin + page)
            total += self.index_messages(thread_id, info.metadata, chunk, begin)
        return total

    def remove_thread(self, thread_id: str) -> int:
        """Drop a thread's messages from the index; return how many items went."""
        removed = 0
        while True:
            found = self.store.search(self.namespace, filter={"thread_id": thread_id},
                                      limit=500)
            if not found:
                return removed
            self.store.batch([DeleteOp(item.namespace, item.key) for item in found])
            removed += len(found)

    def remove_from(self, thread_id: str, position: int) -> int:
        """Drop a thread's messages at ``position`` and after (what a rewind took back);
        return how many items went."""
        removed = 0
        while True:
            found = self.store.search(
                self.namespace, filter={"thread_id": thread_id, "position": {"$gte": position}},
                limit=500)
            if not found:
                return removed
            self.store.batch([DeleteOp(item.namespace, item.key) for item in found])
            removed += len(found)

    def search(self, query: str, *, owner: str | None = None, limit: int = 5,
               per_thread: int = 3, mode: SearchMode = "auto",
               exclude: Sequence[str] = (), keep: Keep | None = None) -> list[ThreadHit]:
        """Threads whose messages match ``query`` (keywords and meaning), best first.

        ``owner``: only this owner's threads (``None``: everyone's). ``per_thread``: how many
        matching messages to return per thread. ``exclude``: thread ids to leave out (e.g.
        the current conversation). ``keep``: given the matches found per thread, the ones to
        answer with (the thread store passes a check against each thread's current history).
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"query must be a non-empty string, got {query!r}")
        if limit < 1 or per_thread < 1:
            raise InvalidInputError(
                f"limit and per_thread must be >= 1, got limit={limit}, per_thread={per_thread}")
        skip = set(exclude)
        found = self.store.search(self.namespace_for(owner), query=query,
                                  limit=min(100, limit * per_thread * 4), mode=mode)
        grouped: dict[str, tuple[str, list[MessageMatch]]] = {}
        # an index entry that does not parse is left out (and reported), never fatal
        for tid, owner, match in parse_items(found, _entry, family="thread_index"):
            if tid in skip:
                continue
            grouped.setdefault(tid, (owner, []))[1].append(match)
        kept = keep({tid: matches for tid, (_, matches) in grouped.items()}) if keep \
            else {tid: matches for tid, (_, matches) in grouped.items()}
        hits = [ThreadHit(tid, grouped[tid][0], matches[0].score,
                          tuple(matches[:per_thread]))
                for tid, matches in kept.items() if matches and tid in grouped]
        hits.sort(key=lambda hit: -hit.score)
        return hits[:limit]
