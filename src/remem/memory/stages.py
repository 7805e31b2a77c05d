"""The conversation stages of a memory search: what ``remem eval`` measured, in the product.

Memories stored from a conversation carry where and when they were said: their session (the
thread, ``source.thread_id``), their speaker (``source.speaker``: the message's name, else its
role), their position (``source.turn``) and the time the message was sent (``event_time``).
The multi-evidence stages of :mod:`remem.retrieval` read those fields, so a search over a
user's conversations ranks as the evaluation measured (``docs/search.md``, "Multi-evidence
stages"; ``docs/eval.md``):

- ``sessions``: a memory whose session holds several good matches climbs;
- ``speakers``: memories said by someone the query names climb;
- ``timing``: memories that say when something happened climb;
- ``questions``: memories that only ask a question sink;
- ``mentions``: memories naming the same person pool what of the query they match;
- ``neighbours``: a memory next to a strong match in its session gains from it;
- ``spread``: at most three memories of one session before every other session's best;
- ``subjects``: a query naming a person searches that person's sessions again, and their
  best memories lead (``subjects:N``: the N best; :mod:`remem.retrieval.subjects`).

On by default, as the measurement keeps them (chosen by leave-one-conversation-out on the
development conversations): ``sessions, speakers, timing, questions`` for a query in a
Latin script, ``sessions, mentions, subjects`` for a query mostly in Han characters. Every
stage takes part only for memories with a session: a memory stored without a thread (a plain
fact) gets nothing from any stage, so a search over plain facts ranks exactly as plain hybrid
search.

``SearchRequest.stages`` chooses and tunes them: ``"none"``, or names separated by commas,
each with an optional weight after a colon (``"sessions:0.8,speakers,timing:0.05"``); unset
(``None``), the defaults above.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Final, TypeVar

from remem.errors import InvalidInputError
from remem.retrieval.mentions import Mentions
from remem.retrieval.neighbours import Neighbours
from remem.retrieval.ranking import Ranking
from remem.retrieval.sessions import Sessions, Spread
from remem.retrieval.speakers import Speakers
from remem.retrieval.subjects import Subjects
from remem.retrieval.timing import QuestionTurns, Timing
from remem.retrieval.tokenize import han_share

__all__ = [
    "CHINESE_STAGES",
    "DEFAULT_STAGES",
    "SESSION_FIELD",
    "SPEAKER_FIELD",
    "STAGE_NAMES",
    "TURN_FIELD",
    "parse_stages",
    "staged_ranking",
]

#: the value fields the stages read (dotted paths into the memory record's value)
SESSION_FIELD: Final = "source.thread_id"
SPEAKER_FIELD: Final = "source.speaker"
TURN_FIELD: Final = "source.turn"
TEXT_FIELD: Final = "text"

STAGE_NAMES: Final[tuple[str, ...]] = ("sessions", "speakers", "timing", "questions",
                                       "mentions", "neighbours", "spread", "subjects")
"""The stages a memory search can turn on."""

DEFAULT_STAGES: Final[tuple[str, ...]] = ("sessions", "speakers", "timing", "questions")
"""On by default for queries not mostly in Han characters (``remem eval locomo``'s)."""

CHINESE_STAGES: Final[tuple[str, ...]] = ("sessions", "mentions", "subjects")
"""On by default for queries mostly in Han characters (``remem eval memdaily``'s)."""

_ENTRY = re.compile(r"^([a-z]+)(?::(\d+(?:\.\d*)?|\.\d+))?$")


def parse_stages(spec: str) -> dict[str, float | None]:
    """Stage name -> its weight (``None``: the measured default) from a ``stages`` option:
    ``"none"`` (or an empty string) is no stage; otherwise names separated by commas, each
    optionally ``name:weight``. An unknown name or a bad weight raises
    :class:`~remem.errors.InvalidInputError` naming it."""
    text = spec.strip().lower()
    if text in ("", "none"):
        return {}
    out: dict[str, float | None] = {}
    for entry in (part.strip() for part in text.split(",")):
        found = _ENTRY.match(entry)
        if found is None or found.group(1) not in STAGE_NAMES:
            raise InvalidInputError(
                f"stages: {entry!r} is not a stage; write 'none' or names separated by "
                f"commas, each optionally name:weight, from {', '.join(STAGE_NAMES)}"
            )
        weight = found.group(2)
        out[found.group(1)] = float(weight) if weight is not None else None
    return out


_Stage = TypeVar("_Stage", Sessions, Speakers, Timing, QuestionTurns, Mentions, Neighbours)


def _weighted(stage: _Stage, weights: Mapping[str, float | None], name: str) -> _Stage:
    """``stage`` with the weight ``weights`` gives ``name``, if any."""
    weight = weights.get(name)
    return stage if weight is None else replace(stage, weight=weight)


def staged_ranking(base: Ranking, query: str | None, stages: str | None) -> Ranking:
    """``base`` with the conversation stages ``stages`` asks for (``None``: the defaults for
    the query's script), each reading the memory fields above and taking part only for
    memories with a session. No query: ``base`` as it is (a listing, newest first)."""
    if query is None or not query.strip():
        return base
    if stages is None:
        chosen: Mapping[str, float | None] = dict.fromkeys(
            CHINESE_STAGES if han_share(query) > 0.5 else DEFAULT_STAGES)
    else:
        chosen = parse_stages(stages)
    if not chosen:
        return base
    on = set(chosen)
    return replace(
        base,
        sessions=(_weighted(Sessions(field=SESSION_FIELD), chosen, "sessions")
                  if "sessions" in on else None),
        spread=Spread(field=SESSION_FIELD) if "spread" in on else None,
        speakers=(_weighted(Speakers(field=SPEAKER_FIELD, requires=SESSION_FIELD), chosen,
                            "speakers") if "speakers" in on else None),
        timing=(_weighted(Timing(field=TEXT_FIELD, requires=SESSION_FIELD), chosen, "timing")
                if "timing" in on else None),
        questions=(_weighted(QuestionTurns(field=TEXT_FIELD, requires=SESSION_FIELD), chosen,
                             "questions") if "questions" in on else None),
        mentions=(_weighted(Mentions(field=TEXT_FIELD, requires=SESSION_FIELD), chosen,
                            "mentions") if "mentions" in on else None),
        neighbours=(_weighted(Neighbours(field=SESSION_FIELD, order=TURN_FIELD), chosen,
                              "neighbours") if "neighbours" in on else None),
        subjects=_subjects(chosen) if "subjects" in on else None,
    )


def _subjects(chosen: Mapping[str, float | None]) -> Subjects:
    """The ``subjects`` stage; its number is how many of the subject's memories lead."""
    take = chosen.get("subjects")
    if take is None:
        return Subjects(field=SESSION_FIELD)
    if take != int(take) or take < 1:
        raise InvalidInputError(f"stages: subjects:{take:g} must be a whole number >= 1 (how "
                                "many of the subject's memories lead the page)")
    return Subjects(field=SESSION_FIELD, take=int(take))


def check_stages(value: str | None) -> str | None:
    """Pydantic check of ``SearchRequest.stages``: the value, once it parses."""
    if value is not None:
        try:
            parse_stages(value)
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None
    return value
