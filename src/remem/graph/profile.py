"""The user's profile and timeline, kept from the same extraction call as the graph (no I/O).

Beside entities and facts, the extraction answer (:mod:`remem.graph.extract`) may carry:

* ``profile``: JSON Patch operations (RFC 6902 ``add`` / ``replace`` / ``remove``) on the
  profile of the graph's user, a document of **topics** and **sub-topics** whose values are
  short strings (``/work/company`` -> ``"Acme"``). The topics come from a
  :class:`ProfileSchema` (:data:`DEFAULT_PROFILE`: basic_info, education, work, interests,
  life_events, preferences); a path outside it is refused like any bad answer, so it goes
  back to the model once with the error.
* ``events``: dated things that happened to the user (``"moved to Berlin"``, 2024-05-01,
  tags ``move``, ``home``), the timeline.

:func:`plan_patch` turns a patch into the slot changes it makes (pure, also used for edits
made by hand with :meth:`remem.graph.Graph.patch_profile`); the rows live in the graph's
tables (``g002_profile``, :mod:`remem.graph.profile_rows`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from remem.errors import InvalidInputError
from remem.store.values import nul_problem

__all__ = ["DEFAULT_PROFILE", "Profile", "ProfileChange", "ProfileSchema", "ProfileSlot",
           "SlotChange", "TimelineEvent", "Topic", "XEvent", "XPatch", "parse_patches",
           "parse_path", "plan_patch", "profile_prompt_lines"]

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,49}$")
#: longest value a slot keeps (a profile holds short statements, facts go in the graph)
MAX_VALUE = 500


@dataclass(frozen=True, slots=True)
class Topic:
    """A profile topic: what it is about and its usual sub-topics."""

    description: str
    sub_topics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileSchema:
    """The topics a profile may hold. ``open_sub_topics``: the model may add sub-topics
    beyond the listed ones (under a known topic); ``False`` keeps to the list.
    ``max_slots``: how many slots one profile holds at most (open sub-topics would otherwise
    let it grow without bound)."""

    topics: Mapping[str, Topic]
    open_sub_topics: bool = True
    max_slots: int = 300

    def __post_init__(self) -> None:
        if isinstance(self.max_slots, bool) or not isinstance(self.max_slots, int) or \
                self.max_slots < 1:
            raise InvalidInputError(f"ProfileSchema.max_slots must be a positive int, got "
                                    f"{self.max_slots!r}")
        if not self.topics:
            raise InvalidInputError("ProfileSchema.topics must name at least one topic, e.g. "
                                    "{'work': Topic('job and career', ('company', 'title'))}")
        for name, topic in self.topics.items():
            if not isinstance(topic, Topic):
                raise InvalidInputError(f"ProfileSchema.topics[{name!r}] must be a Topic, got "
                                        f"{type(topic).__name__}")
            for word in (name, *topic.sub_topics):
                if not _NAME.match(word):
                    raise InvalidInputError(
                        f"profile topic and sub-topic names must be snake_case (a-z, 0-9, _; "
                        f"at most 50 characters, starting with a letter), got {word!r}")

    def check(self, topic: str, sub_topic: str) -> None:
        """Raise :class:`InvalidInputError` unless ``topic/sub_topic`` is a slot of this
        schema."""
        if topic not in self.topics:
            raise InvalidInputError(f"profile topic {topic!r} is not in the schema; use one of "
                                    f"{sorted(self.topics)}")
        known = self.topics[topic].sub_topics
        if not _NAME.match(sub_topic):
            raise InvalidInputError(f"profile sub-topic {sub_topic!r} must be snake_case "
                                    "(a-z, 0-9, _; at most 50 characters)")
        if not self.open_sub_topics and sub_topic not in known:
            raise InvalidInputError(f"profile sub-topic {topic}/{sub_topic} is not in the "
                                    f"schema; use one of {list(known)}")


DEFAULT_PROFILE = ProfileSchema({
    "basic_info": Topic("who the user is", ("name", "age", "birthday", "gender",
                                            "nationality", "location", "languages")),
    "education": Topic("schools and studies", ("school", "degree", "major")),
    "work": Topic("job and career", ("company", "title", "industry", "skills")),
    "interests": Topic("what the user likes doing", ("hobbies", "sports", "books", "music",
                                                     "food", "travel")),
    "life_events": Topic("lasting changes of the user's life", ("marriage", "children",
                                                                "moves", "health")),
    "preferences": Topic("how the user wants things done", ("communication", "diet",
                                                            "schedule")),
})


def _no_nul(value: str | None) -> str | None:
    problem = nul_problem(value, "value")
    if problem is not None:
        raise ValueError(problem)
    return value


def parse_path(path: str) -> tuple[str, str]:
    """``/topic/sub_topic`` as ``(topic, sub_topic)``; anything else is refused."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != "" or not parts[1] or not parts[2]:
        raise InvalidInputError(f"a profile path is /topic/sub_topic (e.g. /work/company), "
                                f"got {path!r}")
    return parts[1], parts[2]


class XPatch(BaseModel):
    """One profile operation of the answer."""

    model_config = ConfigDict(extra="ignore")
    op: Literal["add", "replace", "remove"]
    path: str = Field(description="/topic/sub_topic, e.g. /work/company")
    value: str | None = Field(default=None, max_length=MAX_VALUE,
                              description="the new value (add, replace)")

    @pydantic.field_validator("value", mode="before")
    @classmethod
    def _scalar_as_text(cls, value: Any) -> Any:
        # a model may state an age as 34 or a list of hobbies: keep them as text. true/false
        # and NaN or infinity (JSON's 1e400) say nothing a profile can keep: refused, naming
        # the value (a model's answer goes back to it once with the error)
        if value is None or isinstance(value, str):
            return _no_nul(value)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, bool):
                raise ValueError(f"{json.dumps(item)} is not a profile value: a value is text "
                                 "(send e.g. \"yes\" or a short statement)")
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"{json.dumps(item)} is not a finite number: a value is "
                                 "text or a finite number (kept as text)")
            if not isinstance(item, str | int | float):
                raise ValueError(f"a value is text, a number or a list of them, got "
                                 f"{type(item).__name__}")
        if isinstance(value, list):
            return _no_nul(", ".join(str(v) for v in value))
        return str(value)

    @pydantic.model_validator(mode="after")
    def _valid(self) -> XPatch:
        parse_path(self.path)  # the schema's topics are checked by the answer holding it
        if self.op != "remove" and not (self.value or "").strip():
            raise ValueError(f"{self.op} {self.path} needs a non-empty value")
        return self


def parse_patches(patch: Sequence[Mapping[str, Any] | XPatch]) -> list[XPatch]:
    """Hand-written patch operations (dicts or :class:`XPatch`) as values; a bad one raises
    :class:`InvalidInputError` naming its position and field (``patch[0]: value: NaN is not
    a finite number...``)."""
    from remem.requests import invalid_input

    ops = []
    for position, op in enumerate(patch):
        try:
            ops.append(op if isinstance(op, XPatch) else XPatch.model_validate(dict(op)))
        except pydantic.ValidationError as exc:
            raise invalid_input(exc, f"patch[{position}]") from None
        except (TypeError, ValueError) as exc:  # not a mapping at all
            raise InvalidInputError(f"patch[{position}] must be an object with op, path and "
                                    f"value: {exc}") from None
    return ops


class XEvent(BaseModel):
    """A dated event of the user's life in the answer."""

    model_config = ConfigDict(extra="ignore")
    text: str = Field(min_length=1, max_length=1000, description="what happened, a sentence")
    date: dt.date | None = Field(default=None, description="when (ISO date); null: the "
                              "episode's day")
    tags: list[str] = Field(default_factory=list, max_length=10,
                            description="a few lowercase topic words")

    @pydantic.field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        return list(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))


@dataclass(frozen=True, slots=True)
class ProfileSlot:
    """A slot's value, when it was last written and by which episode (``None``: by hand)."""

    value: str
    updated_at: float
    episode_id: int | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    """The profile of a graph's user: topic -> sub-topic -> slot."""

    topics: dict[str, dict[str, ProfileSlot]] = field(default_factory=dict)

    def get(self, topic: str, sub_topic: str) -> str | None:
        """A slot's value (``None``: unset)."""
        slot = self.topics.get(topic, {}).get(sub_topic)
        return None if slot is None else slot.value

    def to_dict(self) -> dict[str, dict[str, str]]:
        """``{topic: {sub_topic: value}}`` (what a prompt or a JSON answer shows)."""
        return {t: {s: slot.value for s, slot in subs.items()}
                for t, subs in self.topics.items()}


@dataclass(frozen=True, slots=True)
class SlotChange:
    """One change a patch makes to one slot (``old`` / ``new``: ``None`` when unset)."""

    topic: str
    sub_topic: str
    old: str | None
    new: str | None

    @property
    def op(self) -> str:
        """``add``, ``replace`` or ``remove``."""
        return "add" if self.old is None else "remove" if self.new is None else "replace"


@dataclass(frozen=True, slots=True)
class ProfileChange:
    """A recorded change of the profile (the history)."""

    id: int
    topic: str
    sub_topic: str
    op: str
    old: str | None
    new: str | None
    changed_at: float
    episode_id: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {"id": self.id, "topic": self.topic, "sub_topic": self.sub_topic,
                "op": self.op, "old": self.old, "new": self.new,
                "changed_at": self.changed_at, "episode_id": self.episode_id}


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """A dated event of the user's timeline."""

    id: int
    happened_at: float
    text: str
    tags: tuple[str, ...]
    episode_id: int | None
    recorded_at: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {"id": self.id, "happened_at": self.happened_at, "text": self.text,
                "tags": list(self.tags), "episode_id": self.episode_id,
                "recorded_at": self.recorded_at}


def plan_patch(current: Mapping[str, Mapping[str, str]], patches: Sequence[XPatch],
               schema: ProfileSchema) -> list[SlotChange]:
    """The slot changes ``patches`` make to ``current`` (``{topic: {sub_topic: value}}``),
    applied in order. ``add`` of a set slot replaces it (RFC 6902 on an object member);
    ``replace`` of an unset slot sets it (the model cannot know every slot); ``remove`` of an
    unset slot and a value equal to the current one change nothing."""
    state = {(t, s): v for t, subs in current.items() for s, v in subs.items()}
    first: dict[tuple[str, str], str | None] = {}
    for patch in patches:
        topic, sub_topic = parse_path(patch.path)
        schema.check(topic, sub_topic)
        slot = (topic, sub_topic)
        first.setdefault(slot, state.get(slot))
        new = None if patch.op == "remove" else (patch.value or "").strip()
        if new is None:
            state.pop(slot, None)
        else:
            state[slot] = new
    if len(state) > schema.max_slots and len(state) > len(
            [1 for subs in current.values() for _ in subs]):
        raise InvalidInputError(f"the profile would hold {len(state)} slots, more than the "
                                f"schema's max_slots ({schema.max_slots}); remove slots first "
                                "or raise ProfileSchema.max_slots")
    return [SlotChange(t, s, old, state.get((t, s))) for (t, s), old in first.items()
            if old != state.get((t, s))]


def profile_prompt_lines(schema: ProfileSchema, current: Mapping[str, Mapping[str, str]]
                         ) -> list[str]:
    """The extraction prompt's profile section: the topics and the current values."""
    lines = ["Profile topics (paths /topic/sub_topic):"]
    for name, topic in schema.topics.items():
        subs = ", ".join(topic.sub_topics) + (", ..." if schema.open_sub_topics else "")
        lines.append(f"- {name}: {topic.description} ({subs})")
    lines += ["", "Current profile:"]
    values = [f"/{t}/{s} = {v}" for t, subs in current.items() for s, v in subs.items()]
    return lines + (values or ["(empty)"])
