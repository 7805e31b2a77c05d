"""Ranking metrics for turn-level retrieval, their averages, and bootstrap confidence intervals.

Relevance is binary: a ranked ``dia_id`` is relevant when it is in the question's gold set G.
For a ranking R (best first, duplicates ignored after their first occurrence):

* ``recall@k`` = |G ∩ R[:k]| / |G| (the headline figure);
* ``hit@k`` = 1 if any gold id is in R[:k], else 0;
* ``mrr`` = 1 / (rank of the first gold id in R), 0 if none (over the whole ranking);
* ``ndcg@k`` = DCG@k / IDCG@k with DCG@k = sum over relevant positions i < k of 1/log2(i + 2)
  and IDCG@k the DCG of a perfect ranking: min(|G|, k) gold ids at the top.

Averages are over questions. Confidence intervals are percentile bootstrap intervals over
questions: resample the questions with replacement ``resamples`` times (fixed seed), take the
mean of each resample, report the central ``level`` share of those means.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "HEADLINE",
    "KS",
    "SetSummary",
    "bootstrap_ci",
    "hit_at_k",
    "ndcg_at_k",
    "question_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "summarize",
]

KS: tuple[int, ...] = (1, 3, 5, 10, 25, 50)
"""Cut-offs at which every metric is computed for each question."""

HEADLINE: tuple[str, ...] = (
    "recall@1", "recall@3", "recall@5", "recall@10", "recall@25", "recall@50",
    "hit@5", "hit@10", "mrr", "ndcg@10",
)
"""The metrics reported per set (JSON keys and table columns), in order."""

_BOOTSTRAP_CELLS = 4_000_000  # resample-by-question counts held in memory at once


def _unique(ranking: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def recall_at_k(ranking: Sequence[str], gold: Iterable[str], k: int) -> float:
    """|G ∩ R[:k]| / |G|; raises ``ValueError`` for an empty gold set (recall is undefined)."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall is undefined for an empty gold set")
    return len(gold_set.intersection(_unique(ranking)[:k])) / len(gold_set)


def hit_at_k(ranking: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 if any gold id is among the first ``k`` ranked ids, else 0.0."""
    gold_set = set(gold)
    return 1.0 if any(d in gold_set for d in _unique(ranking)[:k]) else 0.0


def reciprocal_rank(ranking: Sequence[str], gold: Iterable[str]) -> float:
    """1 / (1-based rank of the first gold id), 0.0 when no gold id is ranked."""
    gold_set = set(gold)
    for position, dia_id in enumerate(_unique(ranking), start=1):
        if dia_id in gold_set:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranking: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance nDCG@k with the log2 discount; the ideal DCG puts min(|G|, k) gold ids
    first. Raises ``ValueError`` for an empty gold set."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("nDCG is undefined for an empty gold set")
    dcg = sum(1.0 / math.log2(i + 2)
              for i, dia_id in enumerate(_unique(ranking)[:k]) if dia_id in gold_set)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold_set), k)))
    return dcg / ideal


def question_metrics(ranking: Sequence[str], gold: Sequence[str],
                     ks: Sequence[int] = KS) -> dict[str, float]:
    """Every metric for one question: ``recall@k``, ``hit@k``, ``ndcg@k`` for each k in
    ``ks``, and ``mrr``. ``gold`` must be non-empty."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(ranking, gold, k)
    for k in ks:
        out[f"hit@{k}"] = hit_at_k(ranking, gold, k)
    out["mrr"] = reciprocal_rank(ranking, gold)
    for k in ks:
        out[f"ndcg@{k}"] = ndcg_at_k(ranking, gold, k)
    return out


def bootstrap_ci(values: npt.ArrayLike, *, resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> npt.NDArray[np.float64]:
    """Percentile bootstrap interval of the column means of ``values`` (questions x metrics).

    Returns an array of shape ``(2, metrics)``: lower bounds, then upper bounds. Each resample
    draws every question's multiplicity at once (a multinomial row), so a resample's means are
    one matrix product; resamples are processed in blocks to bound memory.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    n = data.shape[0]
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    rng = np.random.default_rng(seed)
    uniform = np.full(n, 1.0 / n)
    block = max(1, _BOOTSTRAP_CELLS // n)
    means = np.empty((resamples, data.shape[1]))
    for start in range(0, resamples, block):
        stop = min(start + block, resamples)
        counts = rng.multinomial(n, uniform, size=stop - start)
        means[start:stop] = counts @ data / n
    tail = (1.0 - level) / 2.0 * 100.0
    bounds: npt.NDArray[np.float64] = np.percentile(means, [tail, 100.0 - tail], axis=0)
    return bounds


@dataclass(frozen=True, slots=True)
class SetSummary:
    """The averages over one set of questions, and their bootstrap intervals.

    ``mean`` maps each metric to its average, ``None`` for an empty set; ``ci`` maps each metric
    to ``(low, high)``, empty when no bootstrap was run or the set is empty.
    """

    n: int
    mean: Mapping[str, float | None]
    ci: Mapping[str, tuple[float, float]]

    def to_dict(self, metrics: Sequence[str] = HEADLINE) -> dict[str, int | float | None]:
        """``{"n": ..., metric: mean, ...}`` for ``metrics`` (the JSON report's set object)."""
        out: dict[str, int | float | None] = {"n": self.n}
        for name in metrics:
            out[name] = self.mean.get(name)
        return out


def summarize(rows: Sequence[Mapping[str, float]], metrics: Sequence[str] = HEADLINE, *,
              resamples: int = 1000, seed: int = 0, level: float = 0.95) -> SetSummary:
    """Average ``metrics`` over ``rows`` (one per question) with bootstrap intervals.

    ``resamples=0`` skips the bootstrap.
    """
    if not rows:
        return SetSummary(0, dict.fromkeys(metrics), {})
    data = np.array([[row[name] for name in metrics] for row in rows], dtype=np.float64)
    means = data.mean(axis=0)
    ci: dict[str, tuple[float, float]] = {}
    if resamples > 0:
        bounds = bootstrap_ci(data, resamples=resamples, seed=seed, level=level)
        ci = {name: (float(bounds[0, j]), float(bounds[1, j])) for j, name in enumerate(metrics)}
    return SetSummary(len(rows), {name: float(means[j]) for j, name in enumerate(metrics)}, ci)
