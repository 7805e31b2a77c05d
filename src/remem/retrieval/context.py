"""Context for memories taken from a conversation: what a turn's keyword index should also hold.

A conversation turn is often unintelligible alone ("Yes, last Saturday!"): what it answers is in
the turn before. Indexing each turn's keywords together with the previous turn of the same
session, and with the date it was said, lets a question that names the topic or the month find
the turn that holds the answer. The turn's own text stays what is stored, shown and embedded;
the context goes into a separate field that only the keyword index reads
(``KeywordConfig(fields=("text", "context"))``).

Measured on LoCoMo (``docs/search.md``): keyword recall@10 rose from 0.624 (turn alone) to 0.711
with the previous turn and to 0.722 with the date as well. Embedding the previous turn too
costs a second model pass per turn and did not improve hybrid recall, so vectors stay per turn.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from datetime import datetime

__all__ = ["CONTEXT_FIELD", "turn_contexts"]

#: the value field that holds a turn's keyword context
CONTEXT_FIELD = "context"


def turn_contexts(texts: Sequence[str], *, sessions: Sequence[Hashable] | None = None,
                  times: Sequence[datetime | None] | None = None, previous: int = 1) -> list[str]:
    """The keyword context of each turn of a conversation, in order.

    Each context holds the ``previous`` turns before it within the same session (turns of
    another session are a different conversation) and the turn's date as words, such as
    ``"8 May 2023"``, so "what did she do in May 2023?" meets it.
    """
    if sessions is not None and len(sessions) != len(texts):
        raise ValueError("sessions must have one entry per text")
    if times is not None and len(times) != len(texts):
        raise ValueError("times must have one entry per text")
    contexts: list[str] = []
    for position in range(len(texts)):
        parts: list[str] = []
        for before in range(max(0, position - previous), position):
            if sessions is None or sessions[before] == sessions[position]:
                parts.append(texts[before])
        when = times[position] if times is not None else None
        if when is not None:
            parts.append(f"{when.day} {when:%B %Y}")
        contexts.append("\n".join(parts))
    return contexts
