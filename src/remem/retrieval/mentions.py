"""Mentions: the candidates that name the same person pool what of the question they match.

Facts about one person are often told in separate messages that share only the name:
"我球友叫庞明辉", "庞明辉在杭州当英语老师", "庞明辉生日是2月6号". A question asked by relation
and condition ("我那个在杭州上班的朋友生日是哪天") matches each of them in part: the birthday
message matches "生日" as well as every other birthday in the pool does, and nothing in it says
this is the friend in Hangzhou. Read together, the messages naming 庞明辉 match the question's
"杭州" and "生日" between them, which no other person's do.

:class:`Mentions` groups the candidates by the names they mention (:func:`mentioned_names`:
capitalised words, and in Chinese the person names jieba tags) and gives each candidate
``weight`` times the share of the query's terms that the other candidates naming the same
person match and it does not, so the birthday message of the friend in Hangzhou rises past
the other birthdays. A name found in more than ``max_share`` of the scope's items (the
speaker of a chat, the user's own name) groups too much to tell anything and is ignored.

The scoring here is pure; the store's candidate code (:mod:`remem.store.candidates`) reads the
candidates' text, tokenizes it with the keyword index's tokenizer and hands the shares to the
ranking as an extra signal (``"mentions"`` in ``hit.details``). Only candidates of the search
(found by a signal, under its prefix, filter and time range) take part.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from remem.retrieval.expansion import proper_nouns
from remem.retrieval.memo import memoise_short_texts
from remem.retrieval.options import check_field, check_number, check_requires

__all__ = ["Mentions", "mention_shares", "mentioned_names"]


@dataclass(frozen=True, slots=True)
class Mentions:
    """Candidates naming the same person share the query terms they match.

    ``field``: the value field holding the text (names and terms are read from it).
    ``weight``: what a candidate gains, in units of the best fused score, when the other
    candidates naming its person match every query term it does not. ``max_share``: a name
    is ignored when its rarest term is in more than this share of the scope's items (the
    live items under the search's namespace prefix, as BM25 counts them: a filter does not
    narrow it, so a user's own name in a namespace shared by many users, told apart by a
    filter, may count as rare; and a name in two items needs a scope of ``2 / max_share``
    items, 20 at the default, to be grouped at all).

    The defaults were measured on remem's Chinese sets (``docs/search.md``, "Mentions"); the
    stage is on by default in ``remem eval memdaily``, not in ``remem eval locomo``, where
    the people named are the two speakers and it changes nothing. ``requires``: only
    candidates carrying this value field (not null) take part (``None``: every candidate).
    """

    field: str = "text"
    weight: float = 1.0
    max_share: float = 0.1
    requires: str | None = None

    def __post_init__(self) -> None:
        check_requires("Mentions", self.requires)
        check_field("Mentions", "field", self.field, holding="the text", example="text")
        check_number("Mentions", "weight", self.weight)
        check_number("Mentions", "max_share", self.max_share, high=1.0)


@memoise_short_texts(16_384)
def mentioned_names(text: str) -> tuple[str, ...]:
    """The names ``text`` mentions: capitalised words that do not start a sentence and, in
    Chinese, the person names jieba tags (:func:`remem.retrieval.expansion.proper_nouns`).

    Memoised for short texts (:mod:`remem.retrieval.memo`): tagging is most of what the
    stage costs."""
    return tuple(proper_nouns(text))


def mention_shares(query_terms: Collection[str], terms: Mapping[int, Collection[str]],
                   names: Mapping[int, Collection[str]]) -> dict[int, float]:
    """Candidate id -> the share of ``query_terms`` that the other candidates naming one of
    its names match and it does not (the best over its names), for the candidates with a
    share above 0.

    ``terms``: each candidate's keyword terms; ``names``: each candidate's names, already
    limited to the names worth grouping by. Pure."""
    wanted = set(query_terms)
    if not wanted:
        return {}
    matched = {item: wanted.intersection(found) for item, found in terms.items()}
    covered: dict[str, set[str]] = {}
    for item, found in names.items():
        for name in found:
            covered.setdefault(name, set()).update(matched.get(item, ()))
    shares: dict[int, float] = {}
    for item, found in names.items():
        own = matched.get(item, set())
        best = max((len(covered[name] - own) for name in found), default=0)
        if best:
            shares[item] = best / len(wanted)
    return shares
