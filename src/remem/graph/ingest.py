"""Ingest in pure steps: resolve extracted entities, then turn extracted facts into writes.

:class:`~remem.graph.graph.Graph` drives an ingest in four steps, none holding a write
transaction across a model call:

1. read: candidate entities (names sharing terms with the episode, exact names) and their
   current facts, offered to the model as ``E``/``F`` numbers (:func:`candidates`);
2. the extraction call (:mod:`remem.graph.extract`);
3. read: :func:`resolve` every extracted entity (model's ``existing``, exact, lexical,
   semantic; :mod:`remem.graph.resolve`); names left with several candidates go to one
   disambiguation call;
4. write: :func:`resolve` again with the model's choices (a concurrent ingest may have added
   entities meanwhile), then :func:`apply_facts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from remem.graph.extract import Extraction, XFact
from remem.graph.resolve import name_key, variants
from remem.graph.rows import GraphRows
from remem.graph.types import Entity, Fact
from remem.messages.grounding import date_to_timestamp

__all__ = ["Offer", "Resolution", "apply_facts", "candidates", "resolve"]

How = Literal["model", "exact", "lexical", "semantic", "asked", "new"]


@dataclass(frozen=True, slots=True)
class Offer:
    """What the extraction prompt offered: ``E`` numbers and ``F`` numbers, in order."""

    entities: tuple[Entity, ...]
    facts: tuple[Fact, ...]
    #: entity id -> name, for every entity the offered facts touch
    names: dict[int, str] = field(default_factory=dict)


def candidates(rows: GraphRows, content: str, *, limit: int, facts_limit: int) -> Offer:
    """Existing entities the episode may mention, and their current facts."""
    terms = rows.tokenizer.tokenize(content)
    found = [entity_id for entity_id, _ in rows.by_terms(terms, limit)]
    entities = rows.entities(found)
    ordered = tuple(entities[i] for i in found if i in entities)
    facts = rows.facts_about([e.id for e in ordered], current=True)
    facts.sort(key=lambda f: -f.id)  # the newest first when there are too many
    kept = tuple(sorted(facts[:facts_limit], key=lambda f: f.id))
    touched = {f.subject_id for f in kept} | {f.object_id for f in kept if f.object_id}
    neighbours = rows.entities(touched)
    # entities next to a named one are offered too ("Bobby from Acme": Acme's people), so
    # the model can resolve a name the text gives in a form remem cannot match
    offered = {e.id for e in ordered}
    extra = sorted(i for i in neighbours if i not in offered)[:max(0, limit - len(ordered))]
    ordered = (*ordered, *(neighbours[i] for i in extra))
    names = {i: e.name for i, e in neighbours.items()}
    return Offer(ordered, kept, names)


@dataclass(frozen=True, slots=True)
class Resolution:
    """Per extracted entity ref: the entity id it resolved to (None: new), how, and the
    candidates when ambiguous."""

    ids: dict[int, int | None]
    how: dict[int, How]
    ambiguous: dict[int, list[int]]


def resolve(rows: GraphRows, extraction: Extraction, offer: Offer,
            name_vectors: Mapping[int, npt.NDArray[np.float32]],
            entity_vectors: Mapping[int, npt.NDArray[np.float32]], *, threshold: float,
            choices: Mapping[int, int | None] | None = None) -> Resolution:
    """Resolve every extracted entity (stages in :mod:`remem.graph.resolve`).

    ``choices``: the disambiguation answer, ref -> entity id (``None``: new), applied to the
    names it covers. ``entity_vectors``: the graph's entity vectors (semantic stage)."""
    ids: dict[int, int | None] = {}
    how: dict[int, How] = {}
    ambiguous: dict[int, list[int]] = {}
    choices = choices or {}
    for x in extraction.entities:
        names = [x.name, *x.aliases]
        if x.existing is not None:
            ids[x.ref], how[x.ref] = offer.entities[x.existing - 1].id, "model"
            continue
        if x.ref in choices:
            ids[x.ref], how[x.ref] = choices[x.ref], "asked"
            continue
        found: list[int] = []
        stage: How = "new"
        exact = rows.by_keys(name_key(n) for n in names)
        if exact:
            found, stage = sorted(exact), "exact"
        else:
            terms = [t for n in names for t in rows.tokenizer.tokenize(n)]
            near = rows.entities(i for i, _ in rows.by_terms(terms, 50))
            found = sorted(i for i, e in near.items()
                           if any(variants(n, m) for n in names for m in (e.name, *e.aliases)))
            stage = "lexical"
            if not found and x.ref in name_vectors and entity_vectors:
                query = name_vectors[x.ref]
                found = sorted(i for i, v in entity_vectors.items()
                               if float(v @ query) >= threshold)
                stage = "semantic"
        if len(found) == 1:
            ids[x.ref], how[x.ref] = found[0], stage
        elif found:
            ids[x.ref], how[x.ref] = None, stage
            ambiguous[x.ref] = found
        else:
            ids[x.ref], how[x.ref] = None, "new"
    return Resolution(ids, how, ambiguous)


@dataclass(slots=True)
class Applied:
    """What :func:`apply_facts` wrote."""

    added: list[int] = field(default_factory=list)
    confirmed: list[int] = field(default_factory=list)
    invalidated: list[int] = field(default_factory=list)


def _day(value: object) -> float | None:
    from datetime import date

    return date_to_timestamp(value) if isinstance(value, date) else None


def _norm(text: str | None) -> str:
    return name_key(text or "")


def apply_facts(rows: GraphRows, facts: Sequence[XFact], entity_of: Mapping[int, int],
                offer: Offer, *, episode_id: int, event_at: float, now: float,
                embeddings: Sequence[npt.NDArray[np.float32] | None]) -> Applied:
    """Write the extracted facts: restated ones gain a source, contradicted current ones
    end (``invalid_at``, never deleted), the rest are new edges."""
    out = Applied()
    for x, vector in zip(facts, embeddings, strict=True):
        subject = entity_of[x.subject]
        obj = entity_of[x.object] if x.object is not None else None
        valid_at = _day(x.valid_at)
        invalid_at = _day(x.invalid_at)
        if valid_at is None and invalid_at is None:
            valid_at = event_at  # stated as true now: true from the episode on
        same: Fact | None = None
        if x.same_as is not None:
            same = offer.facts[x.same_as - 1]
        # the same edge already current (whatever the model said): a new source, no new edge
        current = rows.facts_about([subject], current=True)
        for fact in current:
            if (fact.subject_id == subject and fact.predicate == x.predicate
                    and fact.object_id == obj and _norm(fact.value) == _norm(x.value)):
                same = fact
                break
        if same is not None:
            fresh = rows.facts([same.id]).get(same.id)
            if fresh is not None and fresh.invalid_at is None:
                rows.add_source(fresh, episode_id)
                out.confirmed.append(fresh.id)
                continue
        ended: list[Fact] = []
        for number in x.contradicts:
            old = rows.facts([offer.facts[number - 1].id]).get(offer.facts[number - 1].id)
            if old is None or old.invalid_at is not None:
                continue  # ended meanwhile: nothing to do
            if (not x.correction and valid_at is not None and old.valid_at is not None
                    and valid_at < old.valid_at):
                # the new fact is older than the one it contradicts: it ends there instead
                invalid_at = old.valid_at if invalid_at is None else min(invalid_at,
                                                                         old.valid_at)
                continue
            ended.append(old)
        expired_at = now if invalid_at is not None else None
        new = rows.insert_fact(subject, x.predicate, obj, x.value, x.fact, valid_at,
                               invalid_at, now, expired_at, episode_id, vector)
        out.added.append(new.id)
        for old in ended:
            if x.correction:
                # never true: an empty interval at its start
                start = old.valid_at if old.valid_at is not None else old.recorded_at
                rows.end(old, start, start, now)
            else:
                end = valid_at if valid_at is not None else event_at
                rows.end(old, old.valid_at, max(end, old.valid_at or end), now)
            out.invalidated.append(old.id)
    return out
