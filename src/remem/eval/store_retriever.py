"""Evaluate a remem store: each conversation in its own namespace, searched with the question.

Each conversation's turns go into the namespace ``("locomo", conversation_id)`` in one batch,
one item per turn keyed by its ``dia_id``. Only the ``text`` field is indexed: ``dia_id``,
speaker, session and event time are metadata in the value, never part of the indexed text.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Final, Literal, TypeAlias, get_args

from remem.embed.base import Embedder
from remem.errors import InvalidInputError
from remem.eval.locomo import TurnMemory
from remem.retrieval.context import CONTEXT_FIELD, turn_contexts
from remem.retrieval.decompose import Decompose
from remem.retrieval.expansion import Entities, PseudoFeedback
from remem.retrieval.mentions import Mentions, mentioned_names
from remem.retrieval.neighbours import Neighbours
from remem.retrieval.ranking import Ranking
from remem.retrieval.sessions import Sessions, Spread
from remem.retrieval.speakers import Speakers
from remem.retrieval.subjects import Subjects, merge_subject, subject_sessions
from remem.retrieval.timing import QuestionTurns, Timing
from remem.store import (
    BaseStore,
    IndexConfig,
    InMemoryStore,
    KeywordConfig,
    PutOp,
    SearchItem,
    SQLiteStore,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_STAGES",
    "MODES",
    "STAGES",
    "Backend",
    "EvalMode",
    "StoreRetriever",
    "stage_ranking",
    "temporary_store",
]

EvalMode: TypeAlias = Literal["keyword", "vector", "hybrid"]
Backend: TypeAlias = Literal["sqlite", "memory"]
MODES: Final[tuple[str, ...]] = get_args(EvalMode)
BACKENDS: Final[tuple[str, ...]] = get_args(Backend)
NAMESPACE_ROOT: Final = "locomo"
INDEXED_FIELD: Final = "text"

STAGES: Final[tuple[str, ...]] = ("sessions", "speakers", "timing", "questions", "spread",
                                   "feedback", "entities", "decompose", "neighbours",
                                   "mentions", "subjects")
"""The multi-evidence ranking stages ``remem eval locomo --stages`` can turn on."""

DEFAULT_STAGES: Final[tuple[str, ...]] = ("sessions", "speakers", "timing", "questions")
"""The stages on by default: the ones that won on every dev conversation under
leave-one-conversation-out cross-validation (``docs/search.md``, "Multi-evidence stages")."""


def stage_ranking(stages: Sequence[str]) -> Ranking:
    """The hybrid ranking with ``stages`` (names of :data:`STAGES`) on, each with its measured
    default; the sessions and speakers stages group by the turn's ``session`` and ``speaker``
    metadata, the neighbours stage its ``session`` and ``turn``, and the timing and
    questions stages read its ``text``, as
    :class:`StoreRetriever` stores them. ``subjects:N`` sets how many of the subject's turns
    lead (as ``SearchRequest.stages`` does)."""
    take: int | None = None
    names: list[str] = []
    for entry in stages:
        name, _, number = entry.partition(":")
        if name == "subjects" and number:
            if not number.isdigit() or int(number) < 1:
                raise InvalidInputError(f"{entry!r}: subjects:N takes a whole number N >= 1 "
                                        "(how many of the subject's turns lead)")
            take = int(number)
        elif number:
            name = entry  # only subjects takes a number here
        names.append(name)
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InvalidInputError(
            f"unknown ranking stage {unknown[0]!r}: choose from {', '.join(STAGES)} "
            "(or none of them)"
        )
    on = set(names)
    return Ranking(
        sessions=Sessions(field="session") if "sessions" in on else None,
        speakers=Speakers(field="speaker") if "speakers" in on else None,
        spread=Spread(field="session") if "spread" in on else None,
        feedback=PseudoFeedback() if "feedback" in on else None,
        entities=Entities() if "entities" in on else None,
        decompose=Decompose() if "decompose" in on else None,
        timing=Timing(field=INDEXED_FIELD) if "timing" in on else None,
        questions=QuestionTurns(field=INDEXED_FIELD) if "questions" in on else None,
        neighbours=(Neighbours(field="session", order="turn") if "neighbours" in on
                    else None),
        mentions=Mentions(field=INDEXED_FIELD) if "mentions" in on else None,
        subjects=(Subjects(field="session", **({"take": take} if take else {}))
                  if "subjects" in on else None),
    )


class StoreRetriever:
    """A :class:`~remem.eval.retrievers.Retriever` backed by a remem store.

    ``mode`` is the store's search mode: ``"vector"`` (cosine over embeddings), ``"keyword"``
    (BM25) or ``"hybrid"`` (both, fused). ``ranking``: the store's ranking options, such as
    the multi-evidence stages (``None``: the store's default ranking). ``ingested``: the ids of
    conversations already in the store, shared by retrievers that rank one store in several
    modes, so each conversation is ingested (and embedded) once (``None``: every call
    ingests, as when turns and facts of one conversation come in separate calls).
    """

    def __init__(self, store: BaseStore, mode: EvalMode = "vector",
                 ranking: Ranking | None = None, *, ingested: set[str] | None = None) -> None:
        if mode not in MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        if ranking is not None and not isinstance(ranking, Ranking):
            raise InvalidInputError(f"ranking must be a remem.retrieval.Ranking, got {ranking!r}")
        self.store = store
        self.mode: EvalMode = mode
        self.ranking = ranking
        self.ingested = ingested

    @staticmethod
    def namespace(conversation_id: str) -> tuple[str, str]:
        """The namespace holding one conversation's turns."""
        return (NAMESPACE_ROOT, conversation_id)

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """Put every turn of the conversation in one batch (one transaction, one embedding
        call), each with its keyword context (:func:`remem.retrieval.context.turn_contexts`)."""
        if not memories or (self.ingested is not None and conversation_id in self.ingested):
            return
        contexts = turn_contexts([m.text for m in memories],
                                 sessions=[m.session for m in memories],
                                 times=[m.event_time for m in memories])
        self.store.batch([self._put_op(conversation_id, m, context)
                          for m, context in zip(memories, contexts, strict=True)])
        if self.ingested is not None:
            self.ingested.add(conversation_id)

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """The ``dia_id``s of the store's best ``k`` items for ``question`` in this
        conversation's namespace."""
        return [item.key for item in self._search(self.namespace(conversation_id), question, k)]

    def _put_op(self, conversation_id: str, memory: TurnMemory, context: str) -> PutOp:
        value = {
            "text": memory.text,
            CONTEXT_FIELD: context,
            "dia_id": memory.dia_id,
            "speaker": memory.speaker,
            "session": memory.session,
            "turn": memory.turn,
            "event_time": memory.event_time.isoformat(),
        }
        return PutOp(self.namespace(conversation_id), memory.dia_id, value,
                     event_at=memory.event_time)

    def _search(self, namespace: tuple[str, str], query: str, limit: int) -> list[SearchItem]:
        stage = self.ranking.subjects if self.ranking is not None else None
        names = mentioned_names(query) if stage is not None else ()
        if self.ranking is None or stage is None or not names:
            return self.store.search(namespace, query=query, limit=limit, mode=self.mode,
                                     ranking=self.ranking)
        # the subjects stage, as the memory search runs it (remem.memory.subject_search)
        ranking = replace(self.ranking, subjects=None)
        probed = self.store.search(namespace, query=" ".join(names), limit=stage.probe,
                                   mode="keyword")
        found = self.store.search(namespace, query=query, limit=limit, mode=self.mode,
                                  ranking=ranking)
        sessions = subject_sessions(names, [(str(item.value.get(INDEXED_FIELD, "")),
                                             item.value.get(stage.field)) for item in probed],
                                    stage)
        if not sessions:
            return found
        own = self.store.search(namespace, query=query, limit=stage.take, mode=self.mode,
                                ranking=ranking, filter={stage.field: {"$in": sessions}})
        by_key = {item.key: item for item in [*found, *own]}
        order = merge_subject([item.key for item in own], [item.key for item in found], stage)
        return [by_key[key] for key in order][:limit]


@contextmanager
def temporary_store(backend: Backend, embedder: Embedder) -> Iterator[BaseStore]:
    """A fresh store embedding the ``text`` field with ``embedder`` and indexing its keywords
    with the turn's context, removed on exit.

    ``"sqlite"``: a SQLite file in a temporary directory (the embedded default, as users run
    it); ``"memory"``: the in-memory backend.
    """
    index = IndexConfig(embedder=embedder, fields=(INDEXED_FIELD,))
    keyword = KeywordConfig(fields=(INDEXED_FIELD, CONTEXT_FIELD))
    if backend == "memory":
        with InMemoryStore(index=index, keyword=keyword) as memory_store:
            yield memory_store
        return
    if backend != "sqlite":
        raise InvalidInputError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    with tempfile.TemporaryDirectory(prefix="remem-eval-") as directory, \
            SQLiteStore(Path(directory) / "locomo.db", index=index,
                        keyword=keyword) as sqlite_store:
        yield sqlite_store
