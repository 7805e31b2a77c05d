"""Archival memory tools (Letta): ``archival_memory_insert`` stores a passage as a memory,
as is (no LLM call), and ``archival_memory_search`` finds passages by meaning and keywords,
in pages that fit the tool's token budget and say how many more there are.

Both are scoped to one namespace fixed when the tools are built (as :mod:`remem.tools.memory`
is), so a model cannot reach another user's memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field

from remem.requests import Request
from remem.tokens import DEFAULT_COUNTER, TokenCounter
from remem.tools.files import RequestTools, fit_list, to_text

if TYPE_CHECKING:
    from remem.api import Memory

__all__ = ["ARCHIVAL_TOOLS", "ArchivalTools", "InsertPassageRequest", "SearchPassagesRequest"]

#: how many hits one search looks at (what does not fit is counted in ``more``)
SCAN = 100


class InsertPassageRequest(Request):
    """Store a passage in archival memory."""

    operation: ClassVar[str] = "archival_memory_insert"
    content: Annotated[str, Field(min_length=1, max_length=20_000, description=(
        "The passage to remember, self-contained (it is found later by meaning)."))]


class SearchPassagesRequest(Request):
    """Search archival memory."""

    operation: ClassVar[str] = "archival_memory_search"
    query: Annotated[str, Field(min_length=1, max_length=2000, description=(
        "What to look for, in words."))]
    offset: Annotated[int, Field(ge=0, le=10_000, description=(
        "Skip this many results (pass the next_offset of the previous page)."))] = 0


ARCHIVAL_TOOLS: dict[str, tuple[type[Request], str]] = {
    "archival_memory_insert": (InsertPassageRequest, "Save a passage to your archival "
                                                     "memory (long-term, searched on demand)."),
    "archival_memory_search": (SearchPassagesRequest, "Search your archival memory; results "
                                                      "come best first, a page at a time."),
}


class ArchivalTools(RequestTools):
    """Archival memory over ``memory`` in one scope (``user_id`` / ``agent_id`` /
    ``namespace``, as :meth:`Memory.add`)."""

    def __init__(self, memory: Memory, *, user_id: str | None = None,
                 agent_id: str | None = None, namespace: Sequence[str] | None = None,
                 budget: int = 1500, counter: TokenCounter = DEFAULT_COUNTER,
                 actor: str = "agent", prefix: str = "") -> None:
        super().__init__(ARCHIVAL_TOOLS, budget=budget, counter=counter, prefix=prefix)
        self.memory = memory
        self.namespace = memory.namespace_of(user_id, agent_id, None, namespace)
        self.actor = actor

    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        if isinstance(request, InsertPassageRequest):
            result = self.memory.add(request.content, namespace=list(self.namespace),
                                     infer=False, kind="passage", actor=self.actor,
                                     split="none")
            ids = [change.memory.id for change in result.changes]
            return {"status": "saved" if ids else "already saved", "ids": ids}
        assert isinstance(request, SearchPassagesRequest)
        found = self.memory.search(request.query, namespace=list(self.namespace),
                                   limit=SCAN, offset=request.offset)
        # a passage longer than the whole budget is shown cut (read it in pieces by id)
        cap = self.budget * 2
        hits = []
        for hit in found:
            content = hit.memory.content
            text = content if isinstance(content, str) else to_text(content)
            hits.append({"id": hit.memory.id,
                         "content": text if len(text) <= cap else text[:cap] + "...(cut)",
                         "score": round(hit.score, 3) if hit.score is not None else None})
        full = len(hits) == SCAN

        def payload(k: int) -> dict[str, Any]:
            out: dict[str, Any] = {"results": hits[:k], "more": len(hits) - k}
            if k < len(hits) or full:
                out["next_offset"] = request.offset + k
            if full:
                out["more_is_at_least"] = True
            return out

        return fit_list(payload, len(hits), self.budget, self.counter)
