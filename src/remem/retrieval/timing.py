"""Time-aware scoring for "when" questions: turns that say when something happened climb.

"When did Caroline go to the support group?" is answered by the turn that says "I went to a
support group yesterday", not by a later turn that mentions the group again: the answer is a
time, and people say times with a small vocabulary (yesterday, last week, two days ago, in
May, on Friday, 2022). More generally, a turn that says when something happened reports an
event ("we went camping last weekend"), and events are what questions ask about, where much
of a chat is reaction and small talk: on the LoCoMo dev split, 28% of the evidence turns of
all question kinds hold a time expression against 9% of all turns. :class:`Timing` adds a
fixed ``weight`` (a fraction of the best fused score) to the candidates whose text holds one,
for every query or only for those that ask for a time (:func:`asks_when`).

:class:`QuestionTurns` is its counterpart for turns that only ask: a turn ending in a question
("What got you into running?") shares the topic's words with its answer but rarely holds the
evidence (14% of evidence turns on LoCoMo dev against 24% of all turns); it loses ``weight``.
Both read a value field (``"text"``) of the candidates; pure code here, run by
:mod:`remem.store.candidates`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from remem.errors import InvalidInputError

__all__ = ["QuestionTurns", "Timing", "asks_when", "has_time_expression", "is_question"]


def _check(owner: str, field: object, weight: object) -> None:
    if not isinstance(field, str) or not field:
        raise InvalidInputError(
            f"{owner}.field must name the value field holding the text (e.g. 'text'), "
            f"got {field!r}"
        )
    if (isinstance(weight, bool) or not isinstance(weight, int | float)
            or not math.isfinite(weight) or weight < 0):
        raise InvalidInputError(f"{owner}.weight must be a finite number >= 0, got {weight!r}")


@dataclass(frozen=True, slots=True)
class Timing:
    """Add ``weight`` (in units of the best fused score) to candidates whose ``field`` holds a
    time expression (:func:`has_time_expression`). ``only_when``: only for queries that ask
    for a time (:func:`asks_when`); measured, the stage helps every kind of question, so it
    applies to all by default."""

    field: str = "text"
    weight: float = 0.1
    only_when: bool = False

    def __post_init__(self) -> None:
        _check("Timing", self.field, self.weight)
        if not isinstance(self.only_when, bool):
            raise InvalidInputError(
                f"Timing.only_when must be True or False, got {self.only_when!r}"
            )


@dataclass(frozen=True, slots=True)
class QuestionTurns:
    """Subtract ``weight`` (in units of the best fused score) from candidates whose ``field``
    is a question (:func:`is_question`)."""

    field: str = "text"
    weight: float = 0.1

    def __post_init__(self) -> None:
        _check("QuestionTurns", self.field, self.weight)


_MONTH = ("january|february|march|april|may|june|july|august|september|october|november|"
          "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend"
_UNIT = "minute|hour|day|night|week|month|year|decade|morning|evening|afternoon|summer|winter|" \
        "spring|fall|autumn"
_NUMBER = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several"
_TIME = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|recently|lately"
    rf"|(?:last|next|this|past|coming)\s+(?:(?:{_UNIT})s?|{_DAY})"
    rf"|(?:{_NUMBER})\s+(?:{_UNIT})s?\s+(?:ago|back|earlier|later|before)"
    rf"|(?:on|since|until|by)\s+(?:{_DAY})"
    rf"|(?:in|since|until|by|of|early|late|mid)\s+(?:{_MONTH})\b"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})\b"
    rf"|(?:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    rf"|(?:19|20)\d\d|\d{{1,2}}[:.]\d\d\s*(?:am|pm)?|\d{{1,2}}\s*(?:am|pm))\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"^\s*(?:when|since when|until when)\b|\b(?:what|which)\s+(?:date|day|time|year|month|week"
    r"|season)\b|\bhow\s+long\s+ago\b|\bin\s+which\s+(?:year|month)\b",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\s*\[[^\]]*\]\s*$")


# every match of _TIME holds one of these words or a digit: a cheap test first (the full
# pattern costs about 40 microseconds a turn, and a search reads about 150 candidates)
_TIME_WORDS = frozenset(
    ["yesterday", "today", "tonight", "tomorrow", "recently", "lately"]
    + _MONTH.split("|") + _DAY.split("|") + [d + "s" for d in _DAY.split("|")]
    + _UNIT.split("|") + [u + "s" for u in _UNIT.split("|")]
)
_LETTERS = re.compile(r"[a-z]+")


@lru_cache(maxsize=8192)  # the same candidates come back for many queries of one scope
def has_time_expression(text: str) -> bool:
    """Whether ``text`` says when, in everyday English: a relative time ("yesterday", "last
    week", "two days ago"), a weekday or month with a preposition or a day number, a year, or
    a clock time."""
    if not any(ch.isdigit() for ch in text) and _TIME_WORDS.isdisjoint(
            _LETTERS.findall(text.lower())):
        return False
    return _TIME.search(text) is not None


def asks_when(query: str) -> bool:
    """Whether ``query`` asks for a time: it starts with "when", or asks "what date/year...",
    "how long ago", "in which month"."""
    return _WHEN.search(query) is not None


def is_question(text: str) -> bool:
    """Whether ``text`` ends in a question mark, once a trailing bracketed aside (such as an
    image caption, ``"[shares a photo of ...]"``) is set apart."""
    return _ASIDE.sub("", text).rstrip().endswith("?")
