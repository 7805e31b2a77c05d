"""Speaker-aware scoring: results said by the person a query names climb.

In a conversation between two people, "What does Melanie like to paint?" is answered by what
Melanie said far more often than by what was said to her; the keyword signal sees the name,
but a name on half of the turns weighs almost nothing in BM25. :class:`Speakers` adds a fixed
``weight`` (a fraction of the best fused score) to every candidate whose ``field`` (the
speaker, a metadata field of the value) is named in the query as a whole word, ignoring case.
A query naming nobody is unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remem.retrieval.options import check_field, check_number, check_requires

__all__ = ["Speakers", "names_in"]


@dataclass(frozen=True, slots=True)
class Speakers:
    """Add ``weight`` (in units of the best fused score) to candidates whose ``field`` value
    is named in the query. ``requires``: only candidates carrying this value field (not null)
    take part (``None``: every candidate)."""

    field: str = "speaker"
    weight: float = 0.2
    requires: str | None = None

    def __post_init__(self) -> None:
        check_field("Speakers", "field", self.field, holding="the speaker", example="speaker")
        check_number("Speakers", "weight", self.weight)
        check_requires("Speakers", self.requires)


def names_in(query: str, name: str) -> bool:
    """Whether ``name`` occurs in ``query`` as a whole word (or words), ignoring case."""
    name = name.strip()
    if not name:
        return False
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query, re.IGNORECASE) is not None
