"""Evaluate the product: each conversation added with ``Memory.add`` and searched with
``Memory.search`` (``remem eval ... --through memory``).

Each conversation gets its own namespace ``("eval", <run>, <conversation id>)``. Each session
is one ``Memory.add(messages, infer=False, thread_id=<session>)``: one message per turn, a
user message named after its speaker, sent at the session's time, with the turn's ``dia_id``
as its message id, so every memory keeps its session, speaker, position and time as a user's
would (:mod:`remem.memory.stages`). A question is ``Memory.search(question, namespace=...)``
with the request's defaults (``stages``: what the search applies, ``None``: its defaults);
each hit maps back to its turn through ``source.message_ids``.

With a chat model (``infer=True``), each session is extracted into facts by the formation
pipeline instead; a fact counts for the turns it was extracted from (its session's).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Final

from remem.api import Memory
from remem.embed.base import Embedder
from remem.eval.locomo import TurnMemory
from remem.llm.base import ChatModel
from remem.messages import Message

__all__ = ["THROUGH", "MemoryRetriever", "temporary_memory"]

#: what ``--through`` evaluates: the product (``Memory.add`` / ``Memory.search``) or the
#: store with the eval's own turn retriever
THROUGH: Final[tuple[str, ...]] = ("store", "memory")


class MemoryRetriever:
    """A :class:`~remem.eval.retrievers.Retriever` that goes through :class:`Memory`.

    ``stages``: ``SearchRequest.stages`` for every search (``None``: the search's defaults).
    ``infer``: extract facts with the memory's chat model instead of storing the turns."""

    def __init__(self, memory: Memory, *, stages: str | None = None, infer: bool = False,
                 run: str | None = None) -> None:
        self.memory = memory
        self.stages = stages
        self.infer = infer
        self.run = run or uuid.uuid4().hex[:12]
        self.skipped = 0
        #: conversation -> session -> its turn ids (a fact counts for its session's turns)
        self._sessions: dict[str, dict[str, list[str]]] = {}

    def namespace(self, conversation_id: str) -> list[str]:
        """The namespace holding one conversation's memories."""
        return ["eval", self.run, conversation_id]

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """One ``Memory.add`` per session, its turns as named user messages."""
        sessions: dict[int, list[TurnMemory]] = {}
        for memory in memories:
            sessions.setdefault(memory.session, []).append(memory)
        known = self._sessions.setdefault(conversation_id, {})
        for number, turns in sessions.items():
            thread = f"{conversation_id}:session_{number}"
            known[thread] = [t.dia_id for t in turns]
            start = turns[0].event_time
            messages = [Message.user(t.text, name=t.speaker, id=t.dia_id,
                                     created_at=(start + timedelta(seconds=i)).timestamp())
                        for i, t in enumerate(turns)]
            result = self.memory.add(messages, namespace=self.namespace(conversation_id),
                                     thread_id=thread, infer=self.infer)
            self.skipped += len(result.skipped)

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """The turn ids of ``Memory.search``'s best ``k`` hits, each hit's turns in order."""
        hits = self.memory.search(question, namespace=self.namespace(conversation_id),
                                  limit=k, stages=self.stages).hits
        sessions = self._sessions.get(conversation_id, {})
        ranked: list[str] = []
        for hit in hits:
            source = hit.memory.source
            ids = (list(source.message_ids) if not self.infer
                   else sessions.get(source.thread_id or "", list(source.message_ids)))
            ranked.extend(i for i in ids if i not in ranked)
        return ranked[:k]


@contextmanager
def temporary_memory(embedder: Embedder, *, db: str | None = None,
                     llm: ChatModel | None = None) -> Iterator[Memory]:
    """A :class:`Memory` for one run: a SQLite file in a temporary directory, or the database
    ``db`` (a ``postgresql://`` DSN or a path; the run writes under its own namespace)."""
    if db is not None:
        memory = Memory.open(db, embedder=embedder, llm=llm)
        try:
            yield memory
        finally:
            memory.close()
        return
    with tempfile.TemporaryDirectory(prefix="remem-eval-") as directory:
        memory = Memory.open(Path(directory) / "memory.db", embedder=embedder, llm=llm)
        try:
            yield memory
        finally:
            memory.close()
