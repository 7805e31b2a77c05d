"""The two prompts of an ingest and the answers they must validate against (no I/O).

**Extraction** (one call per episode): the episode with its reference time, the candidate
existing entities as ``E1``, ``E2``, ... and their current facts as ``F1``, ``F2``, ... (small
integers instead of database ids, so the model cannot invent ids). The answer lists the
entities mentioned (each numbered, optionally ``existing``: an ``E`` number) and the facts
between them, with dates, which known facts each one ends (``contradicts``), whether that is a
correction, and which known fact it merely restates (``same_as``).

**Disambiguation** (only when resolution leaves a name with several candidates): each such
name with its candidates numbered ``1..n``; the answer picks one or ``null`` (a new entity).

Both answers are validated with pydantic, numbers checked against what was offered, so a bad
answer goes back to the model once with the errors (:mod:`remem.llm.structured`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import ClassVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from remem.graph.profile import (
    ProfileSchema,
    XEvent,
    XPatch,
    parse_path,
    profile_prompt_lines,
)
from remem.graph.types import Entity, Fact
from remem.messages.grounding import LANGUAGE_RULE, format_moment

__all__ = ["PROFILE_INSTRUCTIONS", "Choice", "Disambiguation", "Extraction", "Summary",
           "XEntity", "XFact", "disambiguation_prompt", "disambiguation_schema",
           "extraction_prompt", "extraction_schema", "summary_prompt"]


class XEntity(BaseModel):
    """An entity the episode mentions."""

    model_config = ConfigDict(extra="ignore")
    ref: int = Field(ge=1, description="this entity's number in the answer (1, 2, ...)")
    name: str = Field(min_length=1, max_length=200, description="its fullest name in the text")
    type: str = Field(default="entity", max_length=50,
                      description="person, organization, place, thing, ...")
    aliases: list[str] = Field(default_factory=list,
                               description="other names the text uses for it")
    existing: int | None = Field(default=None,
                                 description="the E number of the known entity it is, if any")


class XFact(BaseModel):
    """A fact the episode states."""

    model_config = ConfigDict(extra="ignore")
    subject: int = Field(description="ref of the subject entity")
    predicate: str = Field(min_length=1, max_length=100,
                           description="snake_case relation, e.g. works_at, lives_in")
    object: int | None = Field(default=None, description="ref of the object entity, if any")
    value: str | None = Field(default=None, description="a literal object (no entity)")
    fact: str = Field(min_length=1, max_length=2000, description="the fact as a sentence")
    valid_at: date | None = Field(default=None, description="when it started to hold")
    invalid_at: date | None = Field(default=None, description="when it stopped holding")
    contradicts: list[int] = Field(default_factory=list,
                                   description="F numbers of known facts this one ends")
    correction: bool = Field(default=False,
                             description="true: the contradicted facts were never true")
    same_as: int | None = Field(default=None,
                                description="the F number of a known fact this restates")


class Extraction(BaseModel):
    """The extraction answer."""

    model_config = ConfigDict(extra="ignore", title="Extraction")
    known_entities: ClassVar[int] = 0
    known_facts: ClassVar[int] = 0
    #: the profile's schema (None: the graph keeps no profile; patches and events dropped)
    profile_schema: ClassVar[ProfileSchema | None] = None
    entities: list[XEntity] = Field(default_factory=list)
    facts: list[XFact] = Field(default_factory=list)
    profile: list[XPatch] = Field(default_factory=list,
                                  description="JSON Patch operations on the user's profile")
    events: list[XEvent] = Field(default_factory=list,
                                 description="dated events of the user's life")

    @pydantic.model_validator(mode="after")
    def _numbers_offered(self) -> Extraction:
        refs = [e.ref for e in self.entities]
        if len(set(refs)) != len(refs):
            raise ValueError(f"entity refs must be distinct, got {refs}")
        n_e, n_f = type(self).known_entities, type(self).known_facts
        for entity in self.entities:
            if entity.existing is not None and not 1 <= entity.existing <= n_e:
                raise ValueError(f"entity {entity.ref}: existing must be an E number in "
                                 f"1..{n_e} or null, got {entity.existing}")
        for i, fact in enumerate(self.facts):
            for end in ("subject", "object"):
                ref = getattr(fact, end)
                if ref is not None and ref not in refs:
                    raise ValueError(f"facts[{i}].{end} must be one of the entity refs "
                                     f"{refs}, got {ref}")
            for number in (*fact.contradicts, *([fact.same_as] if fact.same_as else [])):
                if not 1 <= number <= n_f:
                    raise ValueError(f"facts[{i}]: F numbers must be in 1..{n_f}, got {number}")
        schema = type(self).profile_schema
        if schema is None:
            self.profile, self.events = [], []
        for i, patch in enumerate(self.profile):
            assert schema is not None
            try:
                schema.check(*parse_path(patch.path))
            except ValueError as exc:
                raise ValueError(f"profile[{i}]: {exc}") from None
        return self


def extraction_schema(known_entities: int, known_facts: int,
                      profile: ProfileSchema | None = None) -> type[Extraction]:
    """:class:`Extraction` checking E and F numbers against how many were offered, and
    profile paths against ``profile``."""

    class Bounded(Extraction):
        model_config = ConfigDict(extra="ignore", title="Extraction")

    Bounded.known_entities = known_entities
    Bounded.known_facts = known_facts
    Bounded.profile_schema = profile
    return Bounded


EXTRACTION_INSTRUCTIONS = (
    "You build a temporal knowledge graph. From the episode, list the entities it mentions "
    "(people, organizations, places, things) and the facts it states between them. For an "
    "entity that is one of the known entities, give its E number as existing (also when the "
    "episode uses another name for it; list that name in aliases). Predicates are short "
    "snake_case relations (works_at, lives_in, married_to). "
    "Resolve relative dates (\"last March\", \"two years ago\", \"yesterday\") against the "
    "reference time and give absolute ISO dates (YYYY-MM-DD) as valid_at (when the fact "
    "started to hold) and invalid_at (when it stopped), leaving them null when the episode "
    "does not say. When a fact ends a known fact (same subject and predicate, an object that "
    "cannot hold at the same time, e.g. a new employer), put the known fact's F number in "
    "contradicts; set correction to true when the episode says the known fact was wrong. When "
    "a fact only restates a known fact, give its F number as same_as. " + LANGUAGE_RULE
)

#: added to the extraction instructions when the graph keeps a profile
PROFILE_INSTRUCTIONS = (
    " Also keep the user's profile (the user is who speaks as user, or whom the episode is "
    "about): in profile, give JSON Patch operations (op add, replace or remove; path "
    "/topic/sub_topic with a topic listed below; value a short text) for what the episode "
    "states about the user, and an empty list when nothing changes. In events, list what "
    "happened to the user with its date (ISO, resolved against the reference time; null "
    "when the episode does not say) and a few lowercase tags."
)


def extraction_prompt(content: str, event_at: float, entities: Sequence[Entity],
                      facts: Sequence[Fact], names: dict[int, str],
                      profile: tuple[ProfileSchema, Mapping[str, Mapping[str, str]]] | None
                      = None) -> str:
    """The user message of the extraction call (``profile``: the schema and the current
    values, when the graph keeps a profile)."""
    lines = [f"Reference time (when the episode happened): {format_moment(event_at)}", "",
             "Known entities:"]
    number = {e.id: i for i, e in enumerate(entities, 1)}
    lines += [f"E{i}: {e.name} ({e.type})" + (f", also {', '.join(e.aliases)}"
                                               if e.aliases else "")
              for i, e in enumerate(entities, 1)] or ["(none)"]
    lines += ["", "Known current facts:"]
    for i, fact in enumerate(facts, 1):
        subject = f"E{number[fact.subject_id]}" if fact.subject_id in number else \
            names.get(fact.subject_id, "?")
        since = f" (since {format_moment(fact.valid_at)[:-10].strip()})" if fact.valid_at else ""
        lines.append(f"F{i}: {subject} {fact.predicate}: {fact.fact}{since}")
    if not facts:
        lines.append("(none)")
    if profile is not None:
        lines += ["", *profile_prompt_lines(*profile)]
    lines += ["", "Episode:", content]
    return "\n".join(lines)


class Choice(BaseModel):
    """The answer for one ambiguous name."""

    model_config = ConfigDict(extra="ignore")
    ref: int = Field(description="the name's number")
    choice: int | None = Field(description="the candidate number it is, or null: a new entity")


class Disambiguation(BaseModel):
    """The disambiguation answer."""

    model_config = ConfigDict(extra="ignore", title="Disambiguation")
    candidates: ClassVar[dict[int, int]] = {}
    choices: list[Choice]

    @pydantic.model_validator(mode="after")
    def _numbers_offered(self) -> Disambiguation:
        offered = type(self).candidates
        seen = {c.ref for c in self.choices}
        if seen != set(offered):
            raise ValueError(f"give one choice for each name ref {sorted(offered)}, "
                             f"got {sorted(seen)}")
        for c in self.choices:
            if c.choice is not None and not 1 <= c.choice <= offered[c.ref]:
                raise ValueError(f"name {c.ref}: choice must be in 1..{offered[c.ref]} or null, "
                                 f"got {c.choice}")
        return self


def disambiguation_schema(candidates: dict[int, int]) -> type[Disambiguation]:
    """:class:`Disambiguation` for names ``ref -> number of candidates``."""

    class Bounded(Disambiguation):
        model_config = ConfigDict(extra="ignore", title="Disambiguation")

    Bounded.candidates = dict(candidates)
    return Bounded


DISAMBIGUATION_INSTRUCTIONS = (
    "Each name below comes from the episode and could be one of several known entities. "
    "For each name give the number of the candidate it is, or null when it is none of them "
    "(a different entity). Decide from the episode and the candidates' facts; " + LANGUAGE_RULE
)


def disambiguation_prompt(content: str, event_at: float,
                          names: Sequence[tuple[int, str, str]],
                          candidates: dict[int, list[tuple[Entity, list[str]]]]) -> str:
    """The user message of the disambiguation call: ``names`` are ``(ref, name, type)``;
    ``candidates[ref]`` the entities with a few of their facts."""
    lines = [f"Reference time: {format_moment(event_at)}", "", "Episode:", content, ""]
    for ref, name, type_ in names:
        lines.append(f"Name {ref}: {name} ({type_})")
        for i, (entity, facts) in enumerate(candidates[ref], 1):
            also = f", also {', '.join(entity.aliases)}" if entity.aliases else ""
            known = "; ".join(facts[:5]) or "no facts"
            lines.append(f"  {i}: {entity.name} ({entity.type}{also}): {known}")
    return "\n".join(lines)


class Summary(BaseModel):
    """The summary answer."""

    model_config = ConfigDict(extra="ignore", title="Summary")
    summary: str = Field(min_length=1, max_length=2000)


SUMMARY_INSTRUCTIONS = (
    "Write a short summary (at most three sentences) of what is known about the entity now, "
    "from its current facts; mention earlier states only when they matter. Use only the "
    "facts given. " + LANGUAGE_RULE
)


def summary_prompt(entity: Entity, current: Sequence[str], past: Sequence[str]) -> str:
    """The user message of a summary refresh."""
    also = f" (also {', '.join(entity.aliases)})" if entity.aliases else ""
    lines = [f"Entity: {entity.name}{also}, {entity.type}", "", "Current facts:"]
    lines += [f"- {f}" for f in current] or ["(none)"]
    lines += ["", "Earlier facts:"]
    lines += [f"- {f}" for f in past] or ["(none)"]
    return "\n".join(lines)
