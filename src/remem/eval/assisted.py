"""Evaluate LLM-assisted retrieval (``remem eval locomo --llm rewrite|hyde|rerank``).

:class:`AssistedRetriever` wraps any :class:`~remem.eval.retrievers.Retriever` with a
:class:`~remem.retrieval.llm_assist.LLMAssist`: ``rewrite`` and ``hyde`` search the inner
retriever once with the question and once with each query the model adds, and fuse the rankings
(:func:`~remem.retrieval.llm_assist.fuse_rankings`); ``rerank`` lets the model reorder the first
hits, shown with the texts that were ingested. One model call per question at most.
"""

from __future__ import annotations

from collections.abc import Sequence

from remem.eval.locomo import TurnMemory
from remem.eval.retrievers import Retriever
from remem.retrieval.llm_assist import LLMAssist, fuse_rankings

__all__ = ["AssistedRetriever"]


class AssistedRetriever:
    """A :class:`~remem.eval.retrievers.Retriever` whose rankings a chat model helps make."""

    def __init__(self, inner: Retriever, assist: LLMAssist) -> None:
        self.inner = inner
        self.assist = assist
        self._texts: dict[str, dict[str, str]] = {}

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """Store through ``inner`` and keep the texts (the reranker shows them to the model).
        Several calls for one conversation add up."""
        self.inner.ingest(conversation_id, memories)
        texts = self._texts.setdefault(conversation_id, {})
        texts.update((m.dia_id, m.text) for m in memories)

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """The inner ranking, helped by the model as its mode says."""
        first = self.inner.rank(conversation_id, question, k)
        if self.assist.mode == "rerank":
            texts = self._texts.get(conversation_id, {})
            order = self.assist.rerank(question, [texts.get(key, key) for key in first])
            return [first[i] for i in order]
        extra = self.assist.queries(question)
        if not extra:
            return first
        rankings = [first, *(self.inner.rank(conversation_id, query, k) for query, _ in extra)]
        weights = [1.0, *(weight for _, weight in extra)]
        return fuse_rankings(rankings, weights)[:k]
