"""The retriever seam of the harness, and the two built-in retrievers used as self-tests.

Anything that can store a conversation's turns and rank them for a question can be evaluated:
implement :class:`Retriever`. :class:`OracleRetriever` (gold first) and
:class:`RandomRetriever` (a seeded shuffle) bound every real retriever from above and below,
and check the harness itself: the oracle must score 1.0 on hit@k.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from remem.eval.locomo import Question, TurnMemory

__all__ = ["OracleRetriever", "RandomRetriever", "Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """Stores conversations' turns and ranks them for questions.

    ``ingest`` is called once per conversation with all its turns, before any question of
    that conversation. ``rank`` returns at most ``k`` ``dia_id``s, best first, from the
    conversation ``conversation_id`` only.
    """

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """Store the turns of one conversation."""
        ...

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """The ``dia_id``s of the best ``k`` turns for ``question``, best first."""
        ...


class _TurnIds:
    """The ``dia_id``s of each ingested conversation, in turn order."""

    def __init__(self) -> None:
        self.turn_ids: dict[str, list[str]] = {}

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """Remember the conversation's ``dia_id``s."""
        self.turn_ids[conversation_id] = [m.dia_id for m in memories]

    def _ids(self, conversation_id: str) -> list[str]:
        try:
            return self.turn_ids[conversation_id]
        except KeyError:
            raise KeyError(f"conversation {conversation_id!r} was not ingested") from None


class OracleRetriever(_TurnIds):
    """Ranks the gold turns first (in evidence order), then every other turn in turn order.

    It knows the gold of ``questions`` by (conversation, question text). When two questions of
    a conversation share a text, their golds are joined (first question's ids first).
    """

    def __init__(self, questions: Iterable[Question]) -> None:
        super().__init__()
        self._gold: dict[tuple[str, str], list[str]] = {}
        for q in questions:
            ids = self._gold.setdefault((q.conversation_id, q.question), [])
            ids.extend(d for d in q.gold if d not in ids)

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """Gold first, then the rest."""
        gold = self._gold.get((conversation_id, question), [])
        turns = self._ids(conversation_id)
        present = set(turns)
        first = [d for d in gold if d in present]
        chosen = set(first)
        return (first + [d for d in turns if d not in chosen])[:k]


class RandomRetriever(_TurnIds):
    """A uniformly random ranking of the conversation's turns: the floor any method must beat.

    Deterministic: the shuffle for a question depends only on ``seed``, the conversation and the
    question text, not on the order of calls.
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """A seeded shuffle of the conversation's turns, cut to ``k``."""
        turns = self._ids(conversation_id)
        key = f"{self.seed}\0{conversation_id}\0{question}".encode()
        seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
        order = np.random.default_rng(seed).permutation(len(turns))[:k]
        return [turns[i] for i in order]
