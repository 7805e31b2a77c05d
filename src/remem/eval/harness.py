"""Run a retriever over a LoCoMo dataset: ingest, query, time, score, and self-test.

The loop is I/O-free apart from what the retriever does: every conversation is ingested first
(each into its own space, as the retriever decides), then every question that has gold is asked
of its own conversation, with the question text verbatim. Questions are grouped into the sets
the report prints: ``main`` (categories 1-4), one set per category 1-4, and ``cat5``
(adversarial, a diagnostic kept out of ``main``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from remem.eval.locomo import LocomoDataset, Question
from remem.eval.metrics import HEADLINE, KS, SetSummary, question_metrics, summarize
from remem.eval.retrievers import OracleRetriever, RandomRetriever, Retriever

__all__ = [
    "MAIN_CATEGORIES",
    "SET_NAMES",
    "Progress",
    "QuestionResult",
    "RunResult",
    "RunTiming",
    "SelfTestResult",
    "Timing",
    "run_locomo",
    "scored_questions",
    "self_test",
    "summarize_sets",
]

MAIN_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
"""Categories of the main set; category 5 (adversarial) is reported apart."""

SET_NAMES: tuple[str, ...] = ("main", "1", "2", "3", "4", "cat5")
"""The question sets of a report, in print order."""

Phase = Literal["ingest", "query"]


class Progress(Protocol):
    """Told how much work each phase has and when some of it is done (e.g. a progress bar)."""

    def start(self, phase: Phase, total: int) -> None:
        """``phase`` begins with ``total`` units: turns to ingest, or questions to ask."""
        ...

    def advance(self, phase: Phase, amount: int) -> None:
        """``amount`` more units of ``phase`` are done."""
        ...


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """One asked question: the ranking it got, its metrics at every k, and the query time."""

    question: Question
    ranking: tuple[str, ...]
    metrics: Mapping[str, float]
    latency_ms: float


@dataclass(frozen=True, slots=True)
class RunTiming:
    """Wall-clock cost: all ingestion (embedding included) and each query (its embedding
    included)."""

    ingest_s: float
    query_ms: tuple[float, ...]

    def percentile_ms(self, q: float) -> float | None:
        """The ``q``-th percentile of the query times in ms (``None`` without queries)."""
        if not self.query_ms:
            return None
        return float(np.percentile(np.asarray(self.query_ms), q))

    def to_dict(self) -> dict[str, float | None]:
        """``{"ingest_s", "query_p50_ms", "query_p95_ms"}``."""
        return {"ingest_s": self.ingest_s, "query_p50_ms": self.percentile_ms(50),
                "query_p95_ms": self.percentile_ms(95)}


#: the old name (issue 34: one name per concept), kept so user code keeps working
Timing = RunTiming


@dataclass(frozen=True, slots=True)
class RunResult:
    """Every asked question's result, and the timing of the run."""

    results: tuple[QuestionResult, ...]
    timing: RunTiming
    k: int

    def by_set(self) -> dict[str, list[QuestionResult]]:
        """The results of each set of :data:`SET_NAMES`."""
        sets: dict[str, list[QuestionResult]] = {name: [] for name in SET_NAMES}
        for result in self.results:
            category = result.question.category
            if category in MAIN_CATEGORIES:
                sets["main"].append(result)
                sets[str(category)].append(result)
            else:
                sets["cat5"].append(result)
        return sets


def scored_questions(dataset: LocomoDataset) -> list[Question]:
    """The questions that can be scored: those with a non-empty gold set."""
    return [q for c in dataset.conversations for q in c.questions if q.gold]


def run_locomo(dataset: LocomoDataset, retriever: Retriever, *, k: int = 50,
               progress: Progress | None = None,
               clock: Callable[[], float] = time.perf_counter) -> RunResult:
    """Ingest every conversation into ``retriever``, then ask every scorable question.

    ``k`` is the ranking depth asked of the retriever; longer rankings are cut to ``k``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if progress is not None:
        progress.start("ingest", dataset.n_turns)
    ingest_s = 0.0
    for conversation in dataset.conversations:
        started = clock()
        retriever.ingest(conversation.id, conversation.turns)
        ingest_s += clock() - started
        if progress is not None:
            progress.advance("ingest", len(conversation.turns))
    questions = scored_questions(dataset)
    if progress is not None:
        progress.start("query", len(questions))
    results: list[QuestionResult] = []
    for question in questions:
        started = clock()
        ranking = retriever.rank(question.conversation_id, question.question, k)
        latency_ms = (clock() - started) * 1000.0
        ranking = list(ranking)[:k]
        results.append(QuestionResult(question, tuple(ranking),
                                      question_metrics(ranking, question.gold), latency_ms))
        if progress is not None:
            progress.advance("query", 1)
    return RunResult(tuple(results), RunTiming(ingest_s, tuple(r.latency_ms for r in results)), k)


def summarize_sets(run: RunResult, *, resamples: int = 1000, seed: int = 0,
                   metrics: Sequence[str] = HEADLINE) -> dict[str, SetSummary]:
    """A :class:`SetSummary` per set of :data:`SET_NAMES` (bootstrap with ``resamples``)."""
    return {name: summarize([r.metrics for r in results], metrics, resamples=resamples,
                            seed=seed)
            for name, results in run.by_set().items()}


@dataclass(frozen=True, slots=True)
class SelfTestResult:
    """What the built-in retrievers scored: the oracle must be perfect, random is the floor.

    ``failures`` lists the oracle's shortfalls (empty when the harness is sound).
    """

    oracle: SetSummary
    random: SetSummary
    random_seed: int
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether the oracle scored 1.0 wherever it must."""
        return not self.failures


def self_test(dataset: LocomoDataset, *, k: int = 50, seed: int = 0) -> SelfTestResult:
    """Run the oracle and a seeded random ranking through the same loop and metrics.

    The oracle must score 1.0 on hit@k for every k, and on recall@k wherever k and the
    ranking depth are both at least |G|. Cheap: no store, no embedding.
    """
    questions = [q for c in dataset.conversations for q in c.questions]
    oracle_run = run_locomo(dataset, OracleRetriever(questions), k=k)
    random_run = run_locomo(dataset, RandomRetriever(seed), k=k)
    failures: list[str] = []
    for result in oracle_run.results:
        q = result.question
        wrong = [f"hit@{n}" for n in KS if result.metrics[f"hit@{n}"] != 1.0]
        wrong += [f"recall@{n}" for n in KS
                  if min(n, k) >= len(q.gold) and result.metrics[f"recall@{n}"] != 1.0]
        if wrong:
            failures.append(f"{q.conversation_id} qa[{q.index}]: oracle scored below 1.0 on "
                            f"{', '.join(wrong)}")
    return SelfTestResult(summarize_sets(oracle_run, resamples=0)["main"],
                          summarize_sets(random_run, resamples=0)["main"], seed,
                          tuple(failures))
