"""Grounding for the prompts that turn conversations into lasting text (memories, profiles,
thread summaries): when it was said, and in which language to keep it.

A model that does not know today's date cannot resolve "next Friday" or "since March", and one
that is not told otherwise may translate a Chinese conversation into English memories. Every
such prompt therefore carries:

* the **reference time**: the time the latest message was sent (each
  :class:`~remem.messages.Message` has a ``created_at``; remem stamps a plain string with its
  clock when it reads it), else the caller's ``now``;
* each message's own time, in the conversation, whenever it differs from the one before;
* :data:`LANGUAGE_RULE` and :data:`TIME_RULE` in the instructions.

Times are shown in UTC with the weekday (``Sunday 2025-06-15 13:46 UTC``), the form a model
resolves relative dates against most reliably. Dates the model states back are ISO dates
(``2025-06-20``), read as midnight UTC (:func:`date_to_timestamp`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime

from remem.messages.types import Message

__all__ = [
    "LANGUAGE_RULE",
    "TIME_RULE",
    "date_to_timestamp",
    "format_moment",
    "reference_line",
    "reference_time",
    "timed_conversation",
]

LANGUAGE_RULE = (
    "Keep each memory in the language it was stated in: a fact said in Chinese is written "
    "in Chinese, one said in English in English. Never translate."
)

TIME_RULE = (
    "Resolve relative times (\"next Friday\", \"tomorrow\", \"last year\") against the time "
    "the message was sent (shown in the conversation; the reference time otherwise) and "
    "write absolute dates into the memory. When the conversation states since when or until "
    "when something holds (\"since March\", \"until next week\"), give those dates as "
    "valid_from / valid_until (ISO dates, YYYY-MM-DD); leave them out when nothing is stated."
)

#: messages sent within this many seconds of the previous one share its time line
SAME_MOMENT = 60.0


def reference_time(messages: Sequence[Message], now: float) -> float:
    """The time the conversation is read at: its latest message's ``created_at`` (``now``
    when there is no message)."""
    return max((m.created_at for m in messages), default=now)


def format_moment(ts: float) -> str:
    """``Sunday 2025-06-15 13:46 UTC``: epoch seconds as a model reads them best."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%A %Y-%m-%d %H:%M UTC")


def reference_line(messages: Sequence[Message], now: float) -> str:
    """The prompt's first line: the reference time (its date included)."""
    return f"Reference time (now): {format_moment(reference_time(messages, now))}"


def timed_conversation(messages: Sequence[Message]) -> str:
    """The conversation as ``role: text`` lines, each preceded by a ``[sent ...]`` line when
    its time differs from the previous message's (system messages, tool calls and images left
    out, as in :func:`~remem.memory.manager.format_conversation`)."""
    lines: list[str] = []
    last: float | None = None
    for message in messages:
        text = message.text.strip()
        if not text or message.role == "system":
            continue
        if last is None or abs(message.created_at - last) > SAME_MOMENT:
            lines.append(f"[sent {format_moment(message.created_at)}]")
        last = message.created_at
        lines.append(f"{message.role}: {text}")
    return "\n".join(lines)


def date_to_timestamp(day: date) -> float:
    """An ISO date the model stated, as epoch seconds (midnight UTC)."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
