"""Self-reports: turns in which the speaker tells something about themselves climb.

What a conversation memory is asked about ("What does Melanie do to destress?") is mostly what
someone said about their own life, in the first person ("I've been running farther to
de-stress"); turns about the other person ("You're so inspiring!") and reactions share the
topic's words but rarely hold the fact. On the LoCoMo dev split 83% of the evidence turns use
"I", "my", "we" or "our" against 58% of all turns. :class:`SelfReports` adds a fixed
``weight`` (a fraction of the best fused score) to the candidates whose text is in the first
person (:func:`is_self_report`; English rules). Pure code; :mod:`remem.store.candidates`
reads the candidates' text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remem.retrieval.options import check_field, check_number

__all__ = ["SelfReports", "is_self_report"]


@dataclass(frozen=True, slots=True)
class SelfReports:
    """Add ``weight`` (in units of the best fused score) to candidates whose ``field`` is in
    the first person (:func:`is_self_report`)."""

    field: str = "text"
    weight: float = 0.1

    def __post_init__(self) -> None:
        check_field("SelfReports", "field", self.field, holding="the text", example="text")
        check_number("SelfReports", "weight", self.weight)


_FIRST_PERSON = re.compile(r"(?<![\w'\u2019])(?:I|I'm|I've|I'd|I'll|I\u2019m|I\u2019ve|my|mine|"
                           r"myself|we|we're|we've|our|ours|us)(?![\w'\u2019])", re.IGNORECASE)
_SPEAKER = re.compile(r"^[^:\n]{1,40}:\s")


def is_self_report(text: str) -> bool:
    """Whether ``text`` (after a ``"Name: "`` prefix) uses a first-person word: I, my, we,
    our, us..."""
    return _FIRST_PERSON.search(_SPEAKER.sub("", text, count=1)) is not None
