"""BM25 scoring, computed in Python from postings each backend reads, so scores are identical
on every backend.

Corpus statistics (document count, average length, document frequency) cover the live items
under the searched namespace prefix that have any terms; filters narrow the candidates but not
the statistics, so a filter never changes an item's score. IDF is the non-negative
``ln(1 + (N - df + 0.5) / (df + 0.5))`` form, so a term in every document still scores >= 0.

The scores come back as :class:`KeywordScores`, which also carries the query's total IDF: a
raw BM25 score says little on its own (a match of two everyday words can top a list), but
divided by the IDF of the whole query it says how much of the query the item covers. Fusion
uses that for Chinese queries (:mod:`remem.retrieval.ranking`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from remem.errors import InvalidInputError

__all__ = ["BM25Params", "KeywordScores", "Posting", "bm25_scores", "idf_weights"]

#: (item id, tie-break key, term, term frequency in the item, item length in terms)
SortKey = tuple[tuple[str, ...], str]
Posting = tuple[int, SortKey, str, int, int]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """``k1`` saturates term frequency; ``b`` normalises by document length."""

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        for name, value in (("k1", self.k1), ("b", self.b)):
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or value < 0 or (name == "b" and value > 1)):
                raise InvalidInputError(
                    f"BM25Params.{name} must be a number"
                    f"{' within [0, 1]' if name == 'b' else ' >= 0'}, got {value!r}"
                )


class KeywordScores(list[tuple[int, SortKey, float]]):
    """BM25 results, best first, and ``query_idf``: the sum of the IDF of the query terms found
    under the prefix (terms found nowhere cannot match, so they do not count).

    An item of average length holding each of those terms once scores exactly ``query_idf``,
    so ``score / query_idf`` is roughly the share of the query the item matches, weighted by
    how rare each word is: near 1 for an item that says what the query says, low for one that
    only shares a few common words. It depends only on the corpus statistics, so it is the
    same on every backend."""

    __slots__ = ("query_idf",)

    def __init__(self, ranked: Iterable[tuple[int, SortKey, float]] = (), *,
                 query_idf: float = 0.0) -> None:
        super().__init__(ranked)
        self.query_idf = query_idf


def idf_weights(doc_freq: Mapping[str, int], n_docs: int) -> tuple[dict[str, float], float]:
    """Each term's IDF (``ln(1 + (N - df + 0.5) / (df + 0.5))``) and the query's total: the
    sum over the terms found (``df > 0``)."""
    idf = {term: math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
           for term, df in doc_freq.items()}
    # fsum rounds once, whatever the order: the same on every backend
    return idf, math.fsum(idf[term] for term, df in doc_freq.items() if df > 0)


def bm25_scores(postings: Iterable[Posting], *, doc_freq: Mapping[str, int], n_docs: int,
                total_len: int, params: BM25Params = BM25Params(), limit: int | None = None
                ) -> KeywordScores:
    """Score every item that has a query term: ``(item id, tie-break key, score)``, best first,
    ties broken by the key (namespace, key), so every backend returns the same order.
    ``limit`` keeps only the best ``limit`` (a heap, not a full sort). ``doc_freq`` holds the
    query terms (those absent from it, or with 0, occur nowhere in scope)."""
    if n_docs <= 0:
        return KeywordScores()
    avg_len = total_len / n_docs if total_len > 0 else 1.0
    idf, query_idf = idf_weights(doc_freq, n_docs)
    k1, b = params.k1, params.b
    by_term: dict[str, list[tuple[int, float]]] = {}
    keys: dict[int, SortKey] = {}
    for item_id, key, term, tf, length in postings:
        weight = idf.get(term)
        if weight is None:
            continue
        norm = k1 * (1.0 - b + b * length / avg_len)
        by_term.setdefault(term, []).append((item_id, weight * tf * (k1 + 1.0) / (tf + norm)))
        keys[item_id] = key
    # add terms in sorted order: backends read postings in different orders, and float
    # addition is not associative, so this keeps scores (and ties) bit-identical across backends
    scores: dict[int, float] = {}
    for term in sorted(by_term):
        for item_id, value in by_term[term]:
            scores[item_id] = scores.get(item_id, 0.0) + value

    def order(pair: tuple[int, float]) -> tuple[float, SortKey]:
        return -pair[1], keys[pair[0]]

    ranked = (sorted(scores.items(), key=order) if limit is None
              else heapq.nsmallest(limit, scores.items(), key=order))
    return KeywordScores(((item_id, keys[item_id], score) for item_id, score in ranked),
                         query_idf=query_idf)
