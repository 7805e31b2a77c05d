"""Memory records as store items: the record value, its hash, and the reserved namespaces.

A memory lives in the store at ``(namespace, memory_id)``. Its value is a JSON object with
``type = "memory"`` and the fields of :class:`MemoryRecord`. Besides the records, remem keeps
three kinds of bookkeeping items under the reserved top label ``"_remem"``:

* ``("_remem", "ids")`` / ``<id>``: maps a memory or history event id to its namespace, so
  ``get(memory_id)`` and ``undo(event_id)`` need only the id;
* ``("_remem", "history", *namespace)`` / ``<event id>``: history events (see
  :mod:`remem.memory.history`), written in the same batch as the change they record;
* ``("_remem", "locks", *namespace)`` / ``<ticket>``: short-lived write tickets
  (:mod:`remem.memory.locking`);
* ``("_remem", "heads")`` / ``<namespace as JSON>``: a counter of the commits that changed a
  namespace, so a writer can tell cheaply whether anything changed since it read.

Invalidated memories stay (``invalid_at`` set); default searches hide them with
:func:`current_filter`, ``as_of`` searches use :func:`as_of_filter`.

Times of a record (epoch seconds), two clocks kept apart:

* ``valid_at`` / ``valid_until``: when the fact holds in the world, as the conversation
  stated it ("since March", "until next week"); ``valid_at`` is the time it was recorded when
  nothing was stated, ``valid_until`` is ``None`` (open);
* ``recorded_at``: when remem recorded what the record says; ``invalid_at``: when remem
  stopped holding it current (superseded or deleted).

Records written before ``recorded_at`` / ``valid_until`` existed read as recorded at their
``valid_at`` (then always the write time) with no stated end: no migration is needed.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from pydantic import Field

from remem.memory.chunks import CHUNK_CHARS, CHUNKS_FIELD, chunk_text
from remem.memory.shapes import Content, IsoTime, MemoryWire, epoch, iso_time, json_of
from remem.messages.types import new_id
from remem.store.bad_records import (
    int_field,
    kind_of,
    object_field,
    optional_text,
    parse_items,
    parse_or_none,
    parse_or_raise,
    text_field,
    text_list,
    time_field,
)
from remem.store.reserved import BOOKKEEPING
from remem.store.types import Item, Namespace

__all__ = [
    "GATES_NAMESPACE",
    "HEADS_NAMESPACE",
    "HISTORY_LABEL",
    "IDS_NAMESPACE",
    "KEYWORD_FIELDS",
    "LOCKS_LABEL",
    "RESERVED_LABEL",
    "MemoryOut",
    "MemoryRecord",
    "MemoryStatus",
    "Source",
    "SourceOut",
    "as_of_filter",
    "content_hash",
    "content_text",
    "current_filter",
    "history_namespace",
    "locks_namespace",
    "memory_or_none",
    "memory_records",
    "new_memory_id",
    "normalize_text",
    "read_memory",
    "version_key",
]

RESERVED_LABEL: Final = BOOKKEEPING
IDS_NAMESPACE: Final = (RESERVED_LABEL, "ids")
HEADS_NAMESPACE: Final = (RESERVED_LABEL, "heads")
GATES_NAMESPACE: Final = (RESERVED_LABEL, "gates")
HISTORY_LABEL: Final = "history"
LOCKS_LABEL: Final = "locks"

#: ``current``: valid now; ``invalid``: superseded or soft-deleted (kept for history/as_of)
MemoryStatus = Literal["current", "invalid"]

#: what keyword search reads of a memory: its text and, for one stored per message, the
#: words around it (:attr:`Source.context`); vectors embed the text alone
KEYWORD_FIELDS = ("text", "source.context")


def new_memory_id() -> str:
    """A new time-ordered memory id (``mem_...``)."""
    return new_id("mem")


def version_key(memory_id: str, version: int) -> str:
    """The key of an archived version of a memory edited in place."""
    return f"{memory_id}@v{version}"


def history_namespace(namespace: Namespace) -> Namespace:
    """Where the history events of memories under ``namespace`` are kept."""
    return (RESERVED_LABEL, HISTORY_LABEL, *namespace)


def locks_namespace(namespace: Namespace) -> Namespace:
    """Where write tickets for ``namespace`` are kept."""
    return (RESERVED_LABEL, LOCKS_LABEL, *namespace)


_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)


def normalize_text(text: str) -> str:
    """Text reduced for exact-duplicate checks: NFKC, case-folded, whitespace collapsed,
    punctuation at both ends removed ("Alice lives in Berlin." == "alice lives in berlin")."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _EDGE_PUNCT.sub("", _SPACE.sub(" ", folded).strip())


def content_text(content: str | Mapping[str, Any]) -> str:
    """The searchable text of a memory's content (a string as is, an object as JSON)."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def content_hash(schema: str, content: str | Mapping[str, Any]) -> str:
    """Hash of a memory's schema name and normalised content (sha256 hex, 32 characters).

    Two memories with the same hash say the same thing, whatever kind the model gave them:
    the second one is a no-op.
    """
    if isinstance(content, str):
        text = normalize_text(content)
    else:
        text = json.dumps(_normalized_json(content), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(f"{schema}\x00{text}".encode()).hexdigest()[:32]


def _normalized_json(node: Any) -> Any:
    if isinstance(node, str):
        return normalize_text(node)
    if isinstance(node, Mapping):
        return {k: _normalized_json(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_normalized_json(v) for v in node]
    return node


def current_filter() -> dict[str, Any]:
    """Store filter selecting memories valid now."""
    return {"type": "memory", "status": "current"}


def as_of_filter(ts: float) -> dict[str, Any]:
    """Store filter selecting memories that were valid at epoch time ``ts`` (including the
    archived versions of memories edited in place since): valid from ``valid_at`` (stated,
    or when recorded), not past a stated ``valid_until``, and not invalidated by then."""
    return {
        "type": {"$in": ["memory", "memory_version"]},
        "valid_at": {"$lte": ts},
        "$and": [
            {"$or": [{"invalid_at": None}, {"invalid_at": {"$gt": ts}}]},
            # records older than valid_until have no such field
            {"$or": [{"valid_until": {"$exists": False}}, {"valid_until": None},
                     {"valid_until": {"$gt": ts}}]},
        ],
    }


@dataclass(frozen=True, slots=True)
class Source:
    """Where a memory came from: a thread, the ids of its messages, and the hash of the input
    it was extracted from (an identical later input is a no-op while the memory is current).

    ``speaker``: who said it (the message's name, else its role), when one person said all
    of it; ``turn``: the position (1, 2, 3...) of its first message in the conversation it
    was added with, for a memory stored per message (``add(infer=False)``). The thread is
    the memory's session: search's conversation stages read ``source.thread_id``,
    ``source.speaker`` and ``source.turn`` (:mod:`remem.memory.stages`).

    ``context``: for a memory stored per message, words keyword search reads with its own
    text: the message before it in the add and the day it was said. A turn is often
    unintelligible alone ("Yes, last Saturday!"); what it answers is in the turn before
    (:func:`remem.retrieval.context.turn_contexts`). Never embedded, never the memory's
    text."""

    thread_id: str | None = None
    message_ids: tuple[str, ...] = ()
    input_hash: str | None = None
    speaker: str | None = None
    turn: int | None = None
    context: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``speaker``, ``turn`` and ``context`` only when known)."""
        out: dict[str, Any] = {"thread_id": self.thread_id,
                               "message_ids": list(self.message_ids),
                               "input_hash": self.input_hash}
        if self.speaker is not None:
            out["speaker"] = self.speaker
        if self.turn is not None:
            out["turn"] = self.turn
        if self.context:
            out["context"] = self.context
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Source:
        """Read :meth:`to_dict` output (``None`` is an empty source)."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise TypeError(f"source must be a JSON object, got {kind_of(data)}")
        turn = data.get("turn")
        return cls(optional_text(data.get("thread_id"), "source.thread_id"),
                   text_list(data.get("message_ids"), "source.message_ids"),
                   optional_text(data.get("input_hash"), "source.input_hash"),
                   optional_text(data.get("speaker"), "source.speaker"),
                   None if turn is None else int_field(turn, "source.turn", minimum=1),
                   optional_text(data.get("context"), "source.context"))


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory: what it says, since when it is valid, and where it came from.

    ``content`` is text (the default ``Fact`` schema stores its text here) or a JSON object
    validated by a user schema named ``schema``. ``kind`` is the fact's kind (``"fact"``,
    ``"preference"``...) or the schema name. Times are epoch seconds: ``valid_at`` /
    ``valid_until`` say when the fact holds as stated (``valid_at`` defaults to the time it
    was recorded; ``valid_until`` ``None``: open), ``recorded_at`` when remem recorded it
    (defaults to ``valid_at``), and a memory is current while ``invalid_at`` (when remem
    superseded or deleted it) is ``None``. ``version`` grows by one with every
    change to the record; ``supersedes`` / ``superseded_by`` link a fact to the one that
    replaced it.
    """

    id: str
    namespace: Namespace
    content: str | dict[str, Any]
    kind: str = "fact"
    schema: str = "Fact"
    valid_at: float = 0.0
    invalid_at: float | None = None
    event_time: float | None = None
    source: Source = field(default_factory=Source)
    content_hash: str = ""
    version: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    supersedes: str | None = None
    superseded_by: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    valid_until: float | None = None
    recorded_at: float = 0.0

    def __post_init__(self) -> None:
        if not self.content_hash:
            object.__setattr__(self, "content_hash", content_hash(self.schema, self.content))
        if not self.recorded_at:  # records from before recorded_at: valid_at was write time
            object.__setattr__(self, "recorded_at", self.valid_at)

    @property
    def text(self) -> str:
        """The searchable text of the content."""
        return content_text(self.content)

    @property
    def status(self) -> MemoryStatus:
        """``"current"`` while valid, else ``"invalid"``."""
        return "current" if self.invalid_at is None else "invalid"

    def is_valid_at(self, ts: float) -> bool:
        """Whether the memory was valid at epoch time ``ts`` (what :func:`as_of_filter`
        selects)."""
        return (self.valid_at <= ts and (self.invalid_at is None or self.invalid_at > ts)
                and (self.valid_until is None or self.valid_until > ts))

    def evolve(self, **changes: Any) -> MemoryRecord:
        """A copy with ``changes``; a new content gets a new hash."""
        if "content" in changes or "schema" in changes:
            changes.setdefault("content_hash", "")
        return replace(self, **changes)

    def to_value(self) -> dict[str, Any]:
        """The store value (what :meth:`from_item` reads back). A text longer than
        :data:`~remem.memory.chunks.CHUNK_CHARS` also goes in as its sentence chunks
        (``text_chunks``), embedded one vector each (:mod:`remem.memory.chunks`)."""
        value = {
            "type": "memory",
            "id": self.id,
            "kind": self.kind,
            "schema": self.schema,
            "content": self.content,
            "text": self.text,
            "status": self.status,
            "valid_at": self.valid_at,
            "valid_until": self.valid_until,
            "recorded_at": self.recorded_at,
            "invalid_at": self.invalid_at,
            "event_time": self.event_time,
            "source": self.source.to_dict(),
            "content_hash": self.content_hash,
            "version": self.version,
            "metadata": self.metadata,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
        }
        text = self.text
        if len(text) > CHUNK_CHARS:
            value[CHUNKS_FIELD] = {str(i): c for i, c in enumerate(chunk_text(text))}
        return value

    @classmethod
    def from_value(cls, namespace: Namespace, value: Mapping[str, Any], *,
                   created_at: float = 0.0, updated_at: float = 0.0) -> MemoryRecord:
        """Read a store value written by :meth:`to_value`; a value of another shape raises
        ``ValueError`` or ``TypeError`` naming the field (what readers skip and report:
        :mod:`remem.store.bad_records`)."""
        if not isinstance(value, Mapping):
            raise TypeError(f"a memory record must be a JSON object, got {kind_of(value)}")
        content = value["content"]
        if not isinstance(content, str | dict):
            raise TypeError(f"content must be text or a JSON object, got {kind_of(content)}")
        version = int_field(value.get("version", 1), "version", minimum=1)
        return cls(
            id=text_field(value["id"], "id"), namespace=tuple(namespace), content=content,
            kind=text_field(value.get("kind", "fact"), "kind"),
            schema=text_field(value.get("schema", "Fact"), "schema"),
            valid_at=time_field(value.get("valid_at"), "valid_at") or 0.0,
            invalid_at=time_field(value.get("invalid_at"), "invalid_at"),
            event_time=time_field(value.get("event_time"), "event_time"),
            source=Source.from_dict(value.get("source")),
            content_hash=text_field(value.get("content_hash") or "", "content_hash"),
            version=version, metadata=dict(object_field(value.get("metadata"), "metadata")),
            supersedes=optional_text(value.get("supersedes"), "supersedes"),
            superseded_by=optional_text(value.get("superseded_by"), "superseded_by"),
            created_at=created_at, updated_at=updated_at,
            valid_until=time_field(value.get("valid_until"), "valid_until"),
            recorded_at=time_field(value.get("recorded_at"), "recorded_at") or 0.0,
        )

    @classmethod
    def from_item(cls, item: Item) -> MemoryRecord:
        """The record held by a store item."""
        return cls.from_value(item.namespace, item.value, created_at=item.created_at.timestamp(),
                              updated_at=item.updated_at.timestamp())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict for results (ISO 8601 times; the shape :class:`MemoryOut`
        declares)."""
        return json_of(MemoryOut.of(self))


# -- the JSON shapes of a record (gathered with the others in remem.memory.wire) ------------


class SourceOut(MemoryWire[Source]):
    """Where a memory came from."""

    thread_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    input_hash: str | None = None
    speaker: str | None = Field(default=None,
                                description="who said it (message name, else role)")
    turn: int | None = Field(default=None,
                             description="its first message's position in the add")
    context: str | None = Field(default=None,
                                description="words keyword search reads with its text (the "
                                            "message before it, the day it was said)")

    @classmethod
    def of(cls, result: Source) -> SourceOut:
        """The model of ``result``."""
        return cls(thread_id=result.thread_id, message_ids=list(result.message_ids),
                   input_hash=result.input_hash, speaker=result.speaker, turn=result.turn,
                   context=result.context)

    def value(self) -> Source:
        """The source."""
        return Source(self.thread_id, tuple(self.message_ids), self.input_hash,
                      self.speaker, self.turn, self.context)


class MemoryOut(MemoryWire[MemoryRecord]):
    """One memory (see :class:`~remem.memory.records.MemoryRecord`)."""

    id: str
    namespace: list[str]
    content: Content
    text: str
    kind: str = "fact"
    schema_: str = Field("Fact", alias="schema")
    status: Literal["current", "invalid"] = "current"
    valid_at: IsoTime | None = None
    valid_until: IsoTime | None = None
    recorded_at: IsoTime | None = None
    invalid_at: IsoTime | None = None
    event_time: IsoTime | None = None
    source: SourceOut = Field(default_factory=SourceOut)
    content_hash: str = ""
    version: int = 1
    metadata: dict[str, Any] = Field(default_factory=dict)
    supersedes: str | None = None
    superseded_by: str | None = None
    created_at: IsoTime | None = None
    updated_at: IsoTime | None = None

    @classmethod
    def of(cls, result: MemoryRecord) -> MemoryOut:
        """The model of ``result``."""
        return cls(
            id=result.id, namespace=list(result.namespace), content=result.content,
            text=result.text, kind=result.kind, schema=result.schema, status=result.status,
            valid_at=iso_time(result.valid_at), valid_until=iso_time(result.valid_until),
            recorded_at=iso_time(result.recorded_at or None),
            invalid_at=iso_time(result.invalid_at),
            event_time=iso_time(result.event_time), source=SourceOut.of(result.source),
            content_hash=result.content_hash, version=result.version,
            metadata=result.metadata, supersedes=result.supersedes,
            superseded_by=result.superseded_by, created_at=iso_time(result.created_at or None),
            updated_at=iso_time(result.updated_at or None),
        )

    def value(self) -> MemoryRecord:
        """The record."""
        return MemoryRecord(
            id=self.id, namespace=tuple(self.namespace), content=self.content,
            kind=self.kind, schema=self.schema_, valid_at=epoch(self.valid_at) or 0.0,
            invalid_at=epoch(self.invalid_at), event_time=epoch(self.event_time),
            source=self.source.value(), content_hash=self.content_hash,
            version=self.version, metadata=dict(self.metadata), supersedes=self.supersedes,
            superseded_by=self.superseded_by, created_at=epoch(self.created_at) or 0.0,
            updated_at=epoch(self.updated_at) or 0.0, valid_until=epoch(self.valid_until),
            recorded_at=epoch(self.recorded_at) or 0.0,
        )


def memory_records(items: Iterable[Item]) -> list[MemoryRecord]:
    """The records of store items, in order; an item that does not parse is left out and
    reported (:mod:`remem.store.bad_records`)."""
    return parse_items(items, MemoryRecord.from_item, family="memories")


def memory_or_none(item: Item) -> MemoryRecord | None:
    """The record of one store item, or ``None`` (reported) when it does not parse."""
    return parse_or_none(MemoryRecord.from_item, item, family="memories",
                         namespace=item.namespace, key=item.key)


def read_memory(item: Item) -> MemoryRecord:
    """The record of one store item the caller needs (a get, an edit): one that does not
    parse raises :class:`~remem.errors.BadRecordError` naming it."""
    return parse_or_raise(MemoryRecord.from_item, item, family="memories",
                          namespace=item.namespace, key=item.key,
                          what=f"memory {item.key!r}")
