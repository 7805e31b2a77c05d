"""Moved to :mod:`remem.messages.grounding` (memories, profiles, thread summaries and the
graph all ground their prompts there); the names stay importable from here."""

from remem.messages.grounding import (
    LANGUAGE_RULE,
    SAME_MOMENT,
    TIME_RULE,
    date_to_timestamp,
    format_moment,
    reference_line,
    reference_time,
    timed_conversation,
)

__all__ = [
    "LANGUAGE_RULE",
    "SAME_MOMENT",
    "TIME_RULE",
    "date_to_timestamp",
    "format_moment",
    "reference_line",
    "reference_time",
    "timed_conversation",
]
