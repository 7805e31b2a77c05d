"""Text for the system prompt within a token budget: what a ``render()`` returns, and cutting a
text at a sentence or line boundary (never mid-sentence) so it fits.

Every ``render()`` of files, skills and memory blocks returns a :class:`Rendered`: the text,
its token count by the counter used, the budget, and what did not fit (:class:`Overflow`),
so the caller (or the model, through the marker line) knows what is missing and where to read
it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from remem.errors import InvalidInputError
from remem.tokens import TokenCounter

__all__ = ["Overflow", "Rendered", "budget_fits", "check_budget", "cut_points", "fit_prefix"]

# a cut may fall after a line break or after a sentence's end mark (and its spaces)
# (CJK full stop, exclamation and question marks, semicolon, written as escapes)
_CJK_END = "\u3002\uff01\uff1f\uff1b"
_BOUNDARY = re.compile(rf"\n+|(?<=[.!?;:{_CJK_END}])[\"')\]]*\s+|(?<=[{_CJK_END}])")


@dataclass(frozen=True, slots=True)
class Overflow:
    """Part of a source that did not fit: ``source`` (a path or label), its tokens, and how
    many of them were included (0: left out entirely)."""

    source: str
    tokens: int
    included_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"source": self.source, "tokens": self.tokens,
                "included_tokens": self.included_tokens}


@dataclass(frozen=True, slots=True)
class Rendered:
    """A prompt section: ``text`` is ``tokens`` long (by ``counter``) and at most ``budget``;
    ``overflow`` lists what was cut or left out."""

    text: str
    tokens: int
    budget: int
    counter: str
    overflow: list[Overflow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"text": self.text, "tokens": self.tokens, "budget": self.budget,
                "counter": self.counter, "overflow": [o.to_dict() for o in self.overflow]}


def check_budget(budget: object, what: str = "budget") -> int:
    """``budget`` if it is a positive integer of tokens, else :class:`InvalidInputError`."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InvalidInputError(f"{what} must be a positive integer of tokens, got {budget!r}")
    return budget


def cut_points(text: str) -> list[int]:
    """Offsets where ``text`` may be cut without splitting a sentence, ascending (the end of
    the text included)."""
    points = {match.end() for match in _BOUNDARY.finditer(text)}
    points.add(len(text))
    points.discard(0)
    return sorted(points)


def fit_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of ``text`` ending at a cut point for which ``fits`` holds (``""``
    when not even the first sentence fits). ``fits`` must be monotone: if a prefix fits, a
    shorter one does too (true of token counts)."""
    if fits(text):
        return text
    points = cut_points(text)
    low, high, best = 0, len(points) - 1, ""
    while low <= high:  # binary search over the cut points
        middle = (low + high) // 2
        prefix = text[:points[middle]]
        if fits(prefix):
            best, low = prefix, middle + 1
        else:
            high = middle - 1
    return best


def budget_fits(counter: TokenCounter, budget: int) -> Callable[[str], bool]:
    """A ``fits`` test: the whole text is within ``budget`` tokens by ``counter``."""
    return lambda text: counter.count(text) <= budget
