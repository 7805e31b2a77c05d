"""Archival memory and conversation search tools (Letta).

``archival_memory_insert`` stores a passage as a memory, as is (no LLM call), and
``archival_memory_search`` finds passages by meaning and keywords, in pages that fit the
tool's token budget and say how many more there are. Both are scoped to one namespace fixed
when the tools are built (as :mod:`remem.tools.memory` is), so a model cannot reach another
user's memories.

``conversation_search`` (:class:`ConversationTools`) finds past messages of the threads whose
metadata matches a filter fixed when the tools are built (e.g. ``{"user_id": "alice"}``), by
text (case-insensitive, literal) and date range, newest first, within the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field

from remem.memory.requests import AddRequest
from remem.requests import Request
from remem.tokens import DEFAULT_COUNTER, TokenCounter
from remem.tools.files import RequestTools, fit_list, to_text

if TYPE_CHECKING:
    from remem.api import Memory
    from remem.threads.api import ThreadAPI

__all__ = ["ARCHIVAL_TOOLS", "CONVERSATION_TOOLS", "ArchivalTools", "ConversationSearchRequest",
           "ConversationTools", "InsertPassageRequest", "SearchPassagesRequest"]

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

    def answer(self, name: str, request: Request) -> dict[str, Any]:
        """The answer of tool ``name`` (without prefix) to the validated ``request``, within
        the budget; a refused edit or search raises the error :meth:`execute` would show
        (the MCP server serves the tools through this)."""
        return self._answer(name, request)

    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        if isinstance(request, InsertPassageRequest):
            result = self.memory.run(AddRequest.of(
                messages=request.content, namespace=list(self.namespace), infer=False,
                kind="passage", actor=self.actor, split="none"))
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


class ConversationSearchRequest(Request):
    """Search past conversation messages."""

    operation: ClassVar[str] = "conversation_search"
    query: Annotated[str, Field(min_length=1, max_length=500, description=(
        "Text the messages contain (case-insensitive, not a regular expression)."))]
    start_date: Annotated[str | None, Field(max_length=40, description=(
        "Only messages from this date on (ISO 8601, e.g. '2025-03-01')."))] = None
    end_date: Annotated[str | None, Field(max_length=40, description=(
        "Only messages before the end of this date (ISO 8601)."))] = None
    offset: Annotated[int, Field(ge=0, le=10_000, description=(
        "Skip this many results (pass the next_offset of the previous page)."))] = 0


CONVERSATION_TOOLS: dict[str, tuple[type[Request], str]] = {
    "conversation_search": (ConversationSearchRequest, "Search your past conversations with "
                                                       "this user by text and date, newest "
                                                       "first."),
}


def _date(text: str | None, field: str, end: bool) -> float | None:
    from remem.errors import ToolError

    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"{field} {text!r} is not an ISO 8601 date; write e.g. "
                        "'2025-03-01' or '2025-03-01T14:00'") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if end and len(text) <= 10:  # a bare date: through the end of that day
        return when.timestamp() + 86400
    return when.timestamp()


class ConversationTools(RequestTools):
    """``conversation_search`` over the threads of ``threads`` whose metadata matches
    ``thread_filter`` (the store's filter language; ``None``: every thread).

    Where the threads have a search index (``ThreadStore(index=ThreadIndex(...))``, what
    ``remem serve`` keeps) and ``owner`` is known, the search asks the index for that owner's
    matching messages (keyword mode: BM25 terms, so ``train`` finds ``TRAIN`` but not
    ``training``) and checks each hit's thread against ``thread_filter``; ``owner`` defaults
    to the ``user_id`` of a ``{"user_id": ...}`` filter. Otherwise (no index, or a filter the
    index cannot serve) it reads the messages of up to ``max_threads`` threads, most
    recently changed first, and matches the text literally (case-insensitive). Either way the
    date range applies and results come newest first."""

    def __init__(self, threads: ThreadAPI, *, thread_filter: Mapping[str, Any] | None = None,
                 budget: int = 1500, counter: TokenCounter = DEFAULT_COUNTER,
                 max_threads: int = 50, prefix: str = "", owner: str | None = None) -> None:
        super().__init__(CONVERSATION_TOOLS, budget=budget, counter=counter, prefix=prefix)
        self.threads = threads
        self.thread_filter = dict(thread_filter) if thread_filter is not None else None
        self.max_threads = max_threads
        if owner is None and self.thread_filter is not None and set(self.thread_filter) == {
                "user_id"} and isinstance(self.thread_filter["user_id"], str):
            owner = self.thread_filter["user_id"]
        self.owner = owner

    def answer(self, name: str, request: Request) -> dict[str, Any]:
        """The answer of ``conversation_search`` to the validated ``request``, within the
        budget (the MCP server serves the tool through this)."""
        return self._answer(name, request)

    def _hit(self, thread_id: str, position: int, role: str, text: str,
             stamp: float) -> dict[str, Any]:
        return {"thread_id": thread_id, "position": position, "role": role,
                "at": datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds"),
                "text": text if len(text) <= self.budget * 2
                else text[:self.budget * 2] + "...(cut)", "_ts": stamp}

    def _indexed(self, query: str) -> list[dict[str, Any]] | None:
        """Matches from the thread search index (``None``: no index to ask)."""
        from remem.errors import UsageError

        if self.owner is None or not all(isinstance(v, str | int | float | bool)
                                         for v in (self.thread_filter or {}).values()):
            return None
        try:
            hits = self.threads.search(query, owner=self.owner, limit=100, per_thread=50,
                                       mode="keyword")
        except UsageError:
            return None
        found: list[dict[str, Any]] = []
        for hit in hits:
            try:
                metadata = self.threads.get(hit.thread_id).metadata
            except LookupError:
                continue
            if any(metadata.get(k) != v for k, v in (self.thread_filter or {}).items()):
                continue  # the index's owner is not the whole filter: check the thread
            found.extend(self._hit(hit.thread_id, m.position, m.role, m.text, m.created_at)
                         for m in hit.matches)
        return found

    def _scanned(self, query: str) -> list[dict[str, Any]]:
        needle = query.casefold()
        found: list[dict[str, Any]] = []
        for info in self.threads.list_threads(self.thread_filter, limit=self.max_threads):
            for position, message in enumerate(self.threads.messages(info.thread_id)):
                if needle in message.text.casefold():
                    found.append(self._hit(info.thread_id, position, message.role,
                                           message.text, message.created_at))
        return found

    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        assert isinstance(request, ConversationSearchRequest)
        after = _date(request.start_date, "start_date", end=False)
        before = _date(request.end_date, "end_date", end=True)
        found = self._indexed(request.query)
        if found is None:
            found = self._scanned(request.query)
        found = [h for h in found if (after is None or h["_ts"] >= after)
                 and (before is None or h["_ts"] < before)]
        found.sort(key=lambda hit: -hit["_ts"])
        for hit in found:
            del hit["_ts"]
        page = found[request.offset:]

        def payload(k: int) -> dict[str, Any]:
            out: dict[str, Any] = {"messages": page[:k], "more": len(page) - k}
            if k < len(page):
                out["next_offset"] = request.offset + k
            return out

        return fit_list(payload, len(page), self.budget, self.counter)
