"""Query decomposition by rules: one search per part of a question that joins several things.

"What do Melanie and Caroline both like?" needs what each of them said; one keyword query over
all its words ranks the turns that mention the most of them first, and a turn about Caroline
alone may never reach the top 10. :func:`query_parts` rewrites a question with a coordination
("X and Y", "X, Y or Z", "both X and Y", "X or Y first", "compare X with Y") into one question
per conjunct, the coordination replaced by that conjunct; :class:`Decompose` searches the
keyword index once per part and adds each part's min-max normalised BM25 scores (so each
part's best turn gets the same lift, however rare its words) with a weight, after fusion.

Only coordinations of capitalised names ("Joanna and Nate", "Jo Ann, Bob or Max"), or of words
after "both"/"either"/"between", are split: without a parser a lower-case word may end a
longer phrase ("make vegan ice cream and share it", where splitting at "and" would drop half
of each side), "Melanie and her kids" joins a name to a phrase, and a question joining two
clauses has no shared frame to rewrite; all of these are left whole.
The functions here are pure; :mod:`remem.store.candidates` runs the searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remem.retrieval.options import check_number

__all__ = ["Decompose", "query_parts"]


@dataclass(frozen=True, slots=True)
class Decompose:
    """Rule-based query decomposition: each part of a coordinated question (see
    :func:`query_parts`) is searched by keywords on its own, and its min-max normalised BM25
    scores add ``weight`` (in units of the best fused score) to a result's score. A question
    without a coordination is unchanged."""

    weight: float = 0.2

    def __post_init__(self) -> None:
        check_number("Decompose", "weight", self.weight)


# a conjunct: a run of capitalised words (a name such as "Jo Ann") or one other word. The
# second branch may not start where the first does: a capitalised word matching both made
# "A, B, C, ... likes" try every way to read each name when no "and" follows (twice the
# time per name, 17 s at 22 names); now a failed attempt costs time linear in its length
_CONJUNCT = r"(?:[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)*|(?![A-Z])[\w'\u2019-]+)"
# "X and Y", "X, Y and Z", "X or Y", optionally after "both"/"either"/"between"
_COORDINATION = re.compile(
    rf"(?:\b(?:both|either|between)\s+)?"
    rf"(?P<items>{_CONJUNCT}(?:\s*,\s*{_CONJUNCT})*,?\s+(?:and|or|&)\s+{_CONJUNCT})"
)
# "compare X with/to/and Y": the comparison's two sides
_COMPARE = re.compile(rf"\bcompare\s+(?P<a>{_CONJUNCT})\s+(?:with|to|and)\s+(?P<b>{_CONJUNCT})",
                      re.IGNORECASE)
# longer queries are not decomposed: no question is this long, and the failed attempts at
# each start of a long list of names cost time quadratic in its length (50 ms at 1,000
# characters, 10 at 500)
_MAX_QUERY_CHARS = 500
# every coordination holds one of these: a query without one is not searched further
_JOINER = re.compile(r"\s(?:and|or|&)\s")
# a coordination of more conjuncts is a list, not a question about each: left whole (each
# part is a keyword search of its own)
_MAX_PARTS = 8
_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+")
# words that never make a conjunct on their own: a coordination of these joins clauses
_FUNCTION_WORDS = frozenset((
    "a", "an", "the", "he", "she", "they", "we", "you", "i", "it", "his", "her", "their",
    "our", "my", "your", "its", "him", "them", "us", "me", "is", "are", "was", "were", "be",
    "been", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could",
    "should", "what", "when", "where", "who", "whom", "whose", "which", "why", "how", "that",
    "this", "these", "those", "there", "to", "of", "in", "on", "at", "for", "from", "with",
    "by", "about", "as", "into", "than", "then", "also", "not", "no",
))


def query_parts(query: str) -> list[str]:
    """The questions ``query`` splits into, one per conjunct of its first coordination (each
    with the coordination replaced by that conjunct), or ``[]`` when it has none that the
    rules split (see the module docstring).

    >>> query_parts("What do Melanie and Caroline both like?")
    ['What do Melanie both like?', 'What do Caroline both like?']
    """
    if len(query) > _MAX_QUERY_CHARS:
        return []
    compare = _COMPARE.search(query)
    if compare is not None:
        conjuncts = [compare.group("a"), compare.group("b")]
        start, end = compare.span()
        head = query[:start] + "compare "
        return _rewrite(query, head, query[end:], conjuncts)
    if _JOINER.search(query) is None:
        return []
    for match in _COORDINATION.finditer(query):
        conjuncts = [c for c in _SPLIT.split(match.group("items")) if c]
        if (len(conjuncts) < 2 or len(conjuncts) > _MAX_PARTS
                or any(c.lower() in _FUNCTION_WORDS for c in conjuncts)):
            continue
        if not (match.group().lower().startswith(("both", "either", "between"))
                or all(c[0].isupper() for c in conjuncts)):
            # lower-case words may end a longer phrase ("make vegan icecream and share it"):
            # without a parser only names, or an explicit "both", mark where a conjunct ends
            continue
        start, end = match.span()
        first = conjuncts[0].split()
        if not query[:start].strip() and len(first) > 1:
            # a capitalised run at the start holds the question's first word ("Did Jo Ann")
            conjuncts[0] = " ".join(first[1:])
            start = query.index(conjuncts[0], start)
        return _rewrite(query, query[:start], query[end:], conjuncts)
    return []


def _rewrite(query: str, head: str, tail: str, conjuncts: list[str]) -> list[str]:
    # "Jon and Gina's hobbies": the possessive of the last conjunct belongs to every one
    possessive = re.search(r"['\u2019]s$", conjuncts[-1])
    if possessive is not None:
        conjuncts = [c if c.endswith(possessive.group()) else c + possessive.group()
                     for c in conjuncts]
    parts = [f"{head}{conjunct}{tail}" for conjunct in dict.fromkeys(conjuncts)]
    return parts if len(parts) > 1 else []
