"""Relevance: how well a search result matches its query, on a fixed scale from 0 to 1.

A result's ``score`` orders a page, and it means little outside it: weighted fusion
min-max normalises each signal over the candidates, so the last candidate of a signal
scores 0 there and an item one signal missed is capped by the other's weight, whatever its
similarity. ``relevance`` is what a person (or a ``min_score``) can read instead. It depends
on the query, the item, the embedding model and, for keywords, the corpus statistics BM25
already reads; never on the page (``limit``, ``offset``), ``Ranking.candidates``, a filter
or the other results:

* **vector**: the cosine similarity of the query's embedding and the item's (its best
  field's, as the vector signal scores it), clamped to [0, 1]: an unrelated text's
  negative or near-zero similarity reads as 0;
* **keyword**: the share of the query's term weight the item holds,
  ``Σ idf(t) over the query terms the item holds / Σ idf(t) over the query terms``, where a
  query term counts once and only if some live item under the search's prefix holds it (a
  word found nowhere cannot be matched, so it weighs nothing), and ``idf`` is BM25's
  ``ln(1 + (N - df + 0.5) / (df + 0.5))`` over those items. 1.0: the item holds every query
  word that occurs at all; 0.5: words carrying half the query's weight (one rare word can
  outweigh three common ones). Term frequency and length do not count: the raw BM25 score
  (in ``details``) weighs them, and divided by the query's IDF it is unbounded (a short text
  repeating one rare word passes 1.0 without holding the rest of the query). When no query
  term occurs under the prefix, the keyword signal has nothing to measure and is left out;
* **relevance**: the weighted mean of the signals the search used, with the weights it
  fuses with (``Ranking.weights``; a query written mostly in Chinese has its keyword weight
  times ``han_keyword_factor``); a signal that does not match the item counts 0 (it holds
  no query term; it has no vector). Keyword-only search: the keyword share; vector-only:
  the clamped cosine. Recency, MMR and the multi-evidence stages move ``score`` and the
  order, never relevance.

Every part is computed in Python from what every backend reads alike (postings and corpus
counts; float32 vectors multiplied row by row as every backend's vector search does,
:func:`remem.store.vectors.best_scores`), with ``math.fsum`` over sorted terms, so the same
data gives the same relevance on every backend, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

from remem.errors import InvalidInputError

__all__ = ["check_min_score", "keyword_share", "relevance", "vector_share"]


def check_min_score(value: object, owner: str = "min_score") -> None:
    """Refuse a ``min_score`` that is not ``None`` or a number within [0, 1] (the relevance
    scale), naming ``owner`` (e.g. ``"Ranking.min_score"``)."""
    if value is None:
        return
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not 0.0 <= value <= 1.0):
        raise InvalidInputError(
            f"{owner} is a relevance within [0, 1] (or None), got {value!r}: hits whose "
            "relevance is below it are dropped (docs/search.md, Scores)"
        )


def vector_share(cosine: float) -> float:
    """A cosine similarity on the relevance scale: clamped to [0, 1] (NaN: 0)."""
    if not math.isfinite(cosine):
        return 0.0
    return min(1.0, max(0.0, cosine))


def keyword_share(held: Collection[str], idf: Mapping[str, float], query_idf: float) -> float:
    """The share of the query's term weight held: the IDF of the query terms in ``held``
    (terms absent from ``idf`` weigh nothing) over ``query_idf``, the IDF of every query
    term found in scope; 0 when ``query_idf`` is not positive."""
    if query_idf <= 0:
        return 0.0
    # fsum over sorted terms: one rounding, whatever order a backend read the postings in
    matched = math.fsum(idf.get(term, 0.0) for term in sorted(set(held)))
    return min(1.0, max(0.0, matched / query_idf))


def relevance(parts: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The weighted mean of ``parts`` (signal -> its share in [0, 1]) with ``weights``
    (a signal missing from it weighs 1.0; all weights 0: a plain mean). No part: 0."""
    if not parts:
        return 0.0
    names = sorted(parts)
    weight = {name: float(weights.get(name, 1.0)) for name in names}
    total = math.fsum(weight.values())
    if total <= 0:
        weight, total = dict.fromkeys(names, 1.0), float(len(names))
    value = math.fsum(weight[name] * parts[name] for name in names) / total
    return min(1.0, max(0.0, value))
