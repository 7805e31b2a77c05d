"""The values of the temporal graph: episodes, entities, facts, and what reads return.

Times are epoch seconds (UTC). A fact carries two time lines:

* **validity** (when it was true in the world): ``valid_at`` .. ``invalid_at``
  (``None``: unknown start / still true);
* **knowledge** (when remem held it): ``recorded_at`` (written) .. ``expired_at`` (the moment
  remem learned that it stopped holding, i.e. when ``invalid_at`` was set; for a fact stated
  with its end date, its ``recorded_at``).

So "what was true at T" reads validity and "what did we know at K" reads knowledge; both
together answer "what did we believe at K about time T" (:func:`holds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from remem.errors import InvalidInputError

__all__ = ["Entity", "EntityPage", "Episode", "Fact", "FactHit", "IngestResult", "holds",
           "timestamp"]


def timestamp(value: datetime | float | int | None, name: str) -> float | None:
    """``value`` as epoch seconds; an aware datetime or a finite number (``None`` passes)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidInputError(f"{name} must be timezone-aware (datetime(..., tzinfo=UTC)), "
                                    f"got {value!r}")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be an aware datetime or epoch seconds, "
                                f"got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Episode:
    """A source the graph learned from: text (or a rendered conversation) at an event time."""

    id: int
    content: str
    #: when it happened (what relative dates in it are resolved against)
    event_at: float
    recorded_at: float
    #: where it came from (message ids, a document id, ...)
    source_ids: tuple[str, ...] = ()
    source: str = "text"


@dataclass(frozen=True, slots=True)
class Entity:
    """A person, place, organisation, thing: one node, whatever names it goes by."""

    id: int
    name: str
    type: str
    aliases: tuple[str, ...]
    summary: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class Fact:
    """One edge: ``subject --predicate--> object`` (or a literal ``value``), with its text
    and both time lines (module docstring)."""

    id: int
    subject_id: int
    predicate: str
    object_id: int | None
    value: str | None
    fact: str
    valid_at: float | None
    invalid_at: float | None
    recorded_at: float
    expired_at: float | None
    #: ids of the episodes that stated it
    episodes: tuple[int, ...]

    def holds(self, *, as_of: float | None = None, known_at: float | None = None) -> bool:
        """Whether this fact is in the answer to "true at ``as_of``, as known at
        ``known_at``" (``None``: any time / now)."""
        return holds(self.valid_at, self.invalid_at, self.recorded_at, self.expired_at,
                     as_of=as_of, known_at=known_at)

    def to_dict(self) -> dict[str, Any]:
        """The fact as JSON-ready values."""
        return {"id": self.id, "subject_id": self.subject_id, "predicate": self.predicate,
                "object_id": self.object_id, "value": self.value, "fact": self.fact,
                "valid_at": self.valid_at, "invalid_at": self.invalid_at,
                "recorded_at": self.recorded_at, "expired_at": self.expired_at,
                "episodes": list(self.episodes)}


def holds(valid_at: float | None, invalid_at: float | None, recorded_at: float,
          expired_at: float | None, *, as_of: float | None, known_at: float | None) -> bool:
    """The bi-temporal rule, written once in Python (:mod:`remem.graph.schema` has it in SQL).

    Known at ``K``: recorded by ``K``; its end (``invalid_at``) counts only if remem had
    learned it by ``K`` (``expired_at <= K``). True at ``T``: started by ``T`` and not ended
    by ``T``."""
    if known_at is not None and recorded_at > known_at:
        return False
    if as_of is None:
        return True
    if valid_at is not None and valid_at > as_of:
        return False
    ended = invalid_at is not None and invalid_at <= as_of
    if ended and known_at is not None and expired_at is not None and expired_at > known_at:
        ended = False
    return not ended


@dataclass(frozen=True, slots=True)
class FactHit:
    """A search result: the fact, its score, why it came back, and how it is connected."""

    fact: Fact
    score: float
    #: (rank, score) per signal that found it (``keyword``, ``vector``, ``graph``)
    signals: dict[str, tuple[int, float]]
    #: hops from the nearest entity the query mentions (or the focal entity); None: not reached
    distance: int | None
    #: entity names from that entity to the fact's nearer end, then the fact's predicate
    path: tuple[str, ...]
    subject: str
    object: str | None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """``(valid_at, invalid_at)``."""
        return self.fact.valid_at, self.fact.invalid_at

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON-ready values."""
        return {"fact": self.fact.to_dict(), "score": self.score,
                "signals": {k: list(v) for k, v in self.signals.items()},
                "distance": self.distance, "path": list(self.path), "subject": self.subject,
                "object": self.object}


@dataclass(frozen=True, slots=True)
class EntityPage:
    """What the graph holds about one entity: its current facts and their whole history."""

    entity: Entity
    #: facts true now (or at the page's ``as_of``), as known now
    current: tuple[Fact, ...]
    #: every fact about it, by start of validity (facts without a start by recording time)
    timeline: tuple[Fact, ...]
    #: entity id -> name of every entity these facts touch
    names: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one episode changed, and what it cost."""

    episode: Episode
    #: entities created / matched to existing ones (id of each extracted entity, in order)
    entity_ids: tuple[int, ...]
    created_entities: tuple[int, ...]
    #: facts written new
    added: tuple[int, ...]
    #: existing facts this episode restated (they gained the episode as a source)
    confirmed: tuple[int, ...]
    #: existing facts whose invalid_at this episode set
    invalidated: tuple[int, ...]
    #: model calls (validation retries included), 1 or 2 per episode
    llm_calls: int
    input_tokens: int
    output_tokens: int
    #: how each extracted entity was resolved: model, exact, lexical, semantic, asked, new
    resolutions: tuple[str, ...] = ()
    #: profile slots this episode changed, as ``(op, "/topic/sub_topic", new value)``
    profile_changes: tuple[tuple[str, str, str | None], ...] = ()
    #: ids of the timeline events this episode stated
    events: tuple[int, ...] = ()
