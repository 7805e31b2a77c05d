"""Retrieval helped by a chat model: rewrite the query, imagine an answer, or rerank the top hits.

Three ways a configured chat model (:mod:`remem.llm`, ``REMEM_LLM_*``) can help a search, each
costing **at most one call per query** (structured output without a validation retry, so the
count holds), every call counted in :class:`AssistStats`:

* ``rewrite``: the model turns the question into 1 to :data:`MAX_QUERIES` short search queries
  (naming the people, things, places and times an answer would mention; one query per part of
  a question that asks about several things). Each is searched beside the question itself.
* ``hyde`` (hypothetical document): the model writes a short passage that *would* answer the
  question; it is searched (embedded and matched) beside the question, so the search meets
  the answer's words and meaning rather than the question's.
* ``rerank``: the model reorders the first :data:`RERANK_DEPTH` hits. Candidates are shown
  under small integer aliases (1, 2, ...), never their keys, so the model cannot invent ids;
  numbers it returns that name no candidate are ignored and counted.

The searches of ``rewrite`` and ``hyde`` are merged by :func:`fuse_rankings` (weighted
reciprocal rank: the rankings of different queries have scores on different scales, their
ranks compare). The question keeps weight 1; the model's queries share weight 1 between them,
so a poor rewrite cannot outvote the question. These weights are reasoned, not tuned: no model
was reachable where this was written (see ``docs/eval.md``).

The prompts and the parsing are pure (:func:`rewrite_prompt`, :func:`hyde_prompt`,
:func:`rerank_prompt`, :func:`rerank_order`); :class:`LLMAssist` drives them through
:func:`remem.llm.generate` (sync) or :func:`remem.llm.agenerate` (async). A failed call raises,
unless the assist was built with ``fallback=True``: then the search goes on without help and
the failure is counted, never hidden.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

import pydantic

from remem.errors import InvalidInputError, LLMError
from remem.llm.base import ChatModel, Usage
from remem.llm.structured import Structured, agenerate, generate

__all__ = [
    "ASSIST_MODES",
    "MAX_QUERIES",
    "RERANK_DEPTH",
    "AssistMode",
    "AssistStats",
    "HydeAnswer",
    "LLMAssist",
    "RerankAnswer",
    "RewriteAnswer",
    "fuse_rankings",
    "hyde_prompt",
    "rerank_order",
    "rerank_prompt",
    "rewrite_prompt",
]

AssistMode: TypeAlias = Literal["rewrite", "hyde", "rerank"]
ASSIST_MODES: Final[tuple[str, ...]] = get_args(AssistMode)
MAX_QUERIES: Final = 3
"""The most search queries a rewrite adds."""
RERANK_DEPTH: Final = 30
"""How many of the first hits the model reorders."""
MAX_CANDIDATE_CHARS: Final = 400
"""A candidate's text is cut to this many characters in the rerank prompt."""
FUSION_K: Final = 60
"""The rank offset of reciprocal rank fusion (the usual constant)."""


class RewriteAnswer(pydantic.BaseModel):
    """The model's search queries for a question."""

    queries: list[str] = pydantic.Field(min_length=1, max_length=MAX_QUERIES)


class HydeAnswer(pydantic.BaseModel):
    """A passage that would answer the question (invented; used only to search)."""

    passage: str = pydantic.Field(min_length=1)


class RerankAnswer(pydantic.BaseModel):
    """The numbers of the helpful candidates, most helpful first."""

    ranking: list[int]


# -- the pure core: prompts and parsing -----------------------------------------------------

_REWRITE = (
    "You help search a memory of past conversations. Turn the user's question into 1 to "
    f"{MAX_QUERIES} short search queries. Each query names the people, things, places, dates "
    "or events that a message holding the answer would mention. If the question asks about "
    "several things (a comparison, a list, 'and'), write one query per thing. Keep the "
    "question's language. Do not answer the question."
)
_HYDE = (
    "You help search a memory of past conversations. Write one or two sentences, in the "
    "question's language, that someone in the conversation might have said and that would "
    "answer the question. Invent plausible specifics (names, dates, places): the passage is "
    "only used to find the real messages and is never shown."
)
_RERANK = (
    "You help search a memory of past conversations. Below are numbered memories and a "
    "question. Return the numbers of the memories that help answer it, the most useful "
    "first; a memory that only helps together with another still counts. Leave out the ones "
    "that do not help."
)


def rewrite_prompt(question: str) -> tuple[str, str]:
    """``(instructions, user message)`` asking for search queries for ``question``."""
    return _REWRITE, f"Question: {question}"


def hyde_prompt(question: str) -> tuple[str, str]:
    """``(instructions, user message)`` asking for a passage that would answer ``question``."""
    return _HYDE, f"Question: {question}"


def rerank_prompt(question: str, texts: Sequence[str]) -> tuple[str, str]:
    """``(instructions, user message)`` listing ``texts`` as memories 1..n for ``question``."""
    lines = []
    for number, text in enumerate(texts, start=1):
        flat = " ".join(text.split())
        if len(flat) > MAX_CANDIDATE_CHARS:
            flat = flat[:MAX_CANDIDATE_CHARS - 1] + "\u2026"
        lines.append(f"[{number}] {flat}")
    return _RERANK, "Memories:\n" + "\n".join(lines) + f"\n\nQuestion: {question}"


def rerank_order(answer: RerankAnswer, n: int) -> tuple[list[int], int]:
    """The candidates' 0-based positions in the model's order, then those it left out in their
    first-pass order; and how many numbers it returned that name no candidate (or repeat one).
    """
    chosen: list[int] = []
    ignored = 0
    for number in answer.ranking:
        if 1 <= number <= n and number - 1 not in chosen:
            chosen.append(number - 1)
        else:
            ignored += 1
    return chosen + [i for i in range(n) if i not in set(chosen)], ignored


def fuse_rankings(rankings: Sequence[Sequence[str]], weights: Sequence[float], *,
                  k: int = FUSION_K) -> list[str]:
    """Weighted reciprocal rank fusion: each id scores ``sum(w / (k + rank))`` over the
    rankings that hold it (rank from 1); ties keep the order of first appearance."""
    if len(rankings) != len(weights):
        raise InvalidInputError(f"fuse_rankings needs one weight per ranking; got "
                                f"{len(rankings)} rankings and {len(weights)} weights")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    order = {key: position for position, key in enumerate(scores)}
    return sorted(scores, key=lambda key: (-scores[key], order[key]))


# -- the shells -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AssistStats:
    """What the assist cost and how it went: queries helped, model calls, tokens, failures
    (calls that raised or answered invalid JSON) and rerank numbers ignored."""

    queries: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failures: int = 0
    ignored_ids: int = 0

    def to_dict(self) -> dict[str, float | int | None]:
        """A JSON-ready dict, with the per-query means."""
        per = (lambda value: value / self.queries) if self.queries else (lambda value: None)
        return {"queries": self.queries, "calls": self.calls,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "failures": self.failures, "ignored_ids": self.ignored_ids,
                "calls_per_query": per(self.calls),
                "tokens_per_query": per(self.input_tokens + self.output_tokens)}


class LLMAssist:
    """One chat model helping searches in one ``mode``: ``rewrite``, ``hyde`` or ``rerank``.

    :meth:`queries` (and :meth:`aqueries`) give the extra weighted queries of ``rewrite`` and
    ``hyde``; :meth:`rerank` (and :meth:`arerank`) reorder candidates. Each makes one call.
    ``fallback``: a failed call yields no help (no extra query, the first-pass order) instead
    of raising; either way it is counted in :attr:`stats`. Thread-safe.
    """

    def __init__(self, model: ChatModel, mode: AssistMode, *, fallback: bool = False,
                 rerank_depth: int = RERANK_DEPTH, max_tokens: int | None = 400) -> None:
        if mode not in ASSIST_MODES:
            raise InvalidInputError(
                f"mode must be one of {', '.join(ASSIST_MODES)}; got {mode!r}")
        if rerank_depth < 2:
            raise InvalidInputError(f"rerank_depth must be >= 2, got {rerank_depth}")
        self.model = model
        self.mode: AssistMode = mode
        self.fallback = fallback
        self.rerank_depth = rerank_depth
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._stats = AssistStats()

    @property
    def stats(self) -> AssistStats:
        """The totals so far."""
        with self._lock:
            return self._stats

    def _count(self, usage: Usage | None, *, failed: bool = False, ignored: int = 0) -> None:
        with self._lock:
            s = self._stats
            self._stats = AssistStats(
                s.queries + 1, s.calls + (usage.calls if usage else 1),
                s.input_tokens + (usage.input_tokens if usage else 0),
                s.output_tokens + (usage.output_tokens if usage else 0),
                s.failures + failed, s.ignored_ids + ignored)

    def _need(self, *modes: AssistMode) -> None:
        if self.mode not in modes:
            raise InvalidInputError(f"this assist was built for mode {self.mode!r}; "
                                    f"{' or '.join(modes)} is another assist")

    def _prompt(self, question: str) -> tuple[str, str, type[RewriteAnswer | HydeAnswer]]:
        self._need("rewrite", "hyde")
        if self.mode == "rewrite":
            return (*rewrite_prompt(question), RewriteAnswer)
        return (*hyde_prompt(question), HydeAnswer)

    def _queries_of(self, result: Structured[RewriteAnswer | HydeAnswer]
                    ) -> list[tuple[str, float]]:
        self._count(result.usage)
        value = result.value
        texts = ([q.strip() for q in value.queries if q.strip()]
                 if isinstance(value, RewriteAnswer) else [value.passage.strip()])
        texts = list(dict.fromkeys(t for t in texts if t))
        return [(text, 1.0 / len(texts)) for text in texts]

    def _failed(self, error: LLMError) -> None:
        self._count(None, failed=True)
        if not self.fallback:
            raise error

    def queries(self, question: str) -> list[tuple[str, float]]:
        """The extra ``(query, weight)`` pairs to search beside ``question`` (weights sum to 1;
        empty when a call failed under ``fallback``)."""
        instructions, prompt, schema = self._prompt(question)
        try:
            result = generate(self.model, prompt, schema, instructions=instructions,
                              operation=f"retrieval.{self.mode}", max_retries=0,
                              max_tokens=self.max_tokens)
        except LLMError as error:
            self._failed(error)
            return []
        return self._queries_of(result)

    async def aqueries(self, question: str) -> list[tuple[str, float]]:
        """Async :meth:`queries`."""
        instructions, prompt, schema = self._prompt(question)
        try:
            result = await agenerate(self.model, prompt, schema, instructions=instructions,
                                     operation=f"retrieval.{self.mode}", max_retries=0,
                                     max_tokens=self.max_tokens)
        except LLMError as error:
            self._failed(error)
            return []
        return self._queries_of(result)

    def _order_of(self, result: Structured[RerankAnswer], n: int) -> list[int]:
        order, ignored = rerank_order(result.value, n)
        self._count(result.usage, ignored=ignored)
        return order

    def rerank(self, question: str, texts: Sequence[str]) -> list[int]:
        """The positions of the first :attr:`rerank_depth` ``texts`` in the model's order, then
        the rest unchanged (the first-pass order when a call failed under ``fallback``)."""
        self._need("rerank")
        head = list(texts[:self.rerank_depth])
        if len(head) < 2:
            return list(range(len(texts)))
        instructions, prompt = rerank_prompt(question, head)
        try:
            result = generate(self.model, prompt, RerankAnswer, instructions=instructions,
                              operation="retrieval.rerank", max_retries=0,
                              max_tokens=self.max_tokens)
        except LLMError as error:
            self._failed(error)
            return list(range(len(texts)))
        return self._order_of(result, len(head)) + list(range(len(head), len(texts)))

    async def arerank(self, question: str, texts: Sequence[str]) -> list[int]:
        """Async :meth:`rerank`."""
        self._need("rerank")
        head = list(texts[:self.rerank_depth])
        if len(head) < 2:
            return list(range(len(texts)))
        instructions, prompt = rerank_prompt(question, head)
        try:
            result = await agenerate(self.model, prompt, RerankAnswer,
                                     instructions=instructions, operation="retrieval.rerank",
                                     max_retries=0, max_tokens=self.max_tokens)
        except LLMError as error:
            self._failed(error)
            return list(range(len(texts)))
        return self._order_of(result, len(head)) + list(range(len(head), len(texts)))
