"""``remem.Client``: the :class:`~remem.api.Memory` facade over HTTP, against ``remem serve``.

Same methods, same arguments, same result types, sync and async (``aadd``...), so code moves
from an embedded memory to a shared server by changing the line that builds it::

    mem = Memory.open("memory.db")                         # embedded
    mem = Client("http://127.0.0.1:8000", api_key="rk_...")  # served

Each method builds one request in a pure core (:class:`_Call`: method, path, body and how to
read the answer); the sync and async shells only send it. Server errors come back as remem's
own errors (``NotFoundError``, ``ConflictError``, ``InvalidInputError``...), with the
server's message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Self, TypeVar
from urllib.parse import quote

import httpx

from remem.errors import (
    ConfigError,
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    LLMError,
    NotFoundError,
    RememError,
    StoreError,
    UnsupportedError,
    UsageError,
)
from remem.llm.base import Usage
from remem.memory.history import HistoryEvent
from remem.memory.operations import ChangeResult, MemoryHit, SearchResult
from remem.memory.reconcile import Change, Skip
from remem.memory.records import MemoryRecord, Source, iso_to_ts
from remem.memory.store_manager import AddResult
from remem.messages.types import Message
from remem.store.types import SignalScore

__all__ = ["Client"]

T = TypeVar("T")

#: the server's error kinds -> remem errors
_ERRORS: dict[str, type[RememError]] = {
    "invalid_input": InvalidInputError, "validation_error": InvalidInputError,
    "invalid_json": InvalidInputError, "too_large": InvalidInputError,
    "not_found": NotFoundError, "conflict": ConflictError, "unsupported": UnsupportedError,
    "not_configured": ConfigError, "unauthorized": ConfigError, "forbidden": UsageError,
    "llm_failed": LLMError, "embedding_failed": EmbeddingError,
    "store_unavailable": StoreError, "index_config": ConflictError,
}


# -- reading answers (pure) ---------------------------------------------------------------------


def _record(data: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=data["id"], namespace=tuple(data["namespace"]), content=data["content"],
        kind=data.get("kind", "fact"), schema=data.get("schema", "Fact"),
        valid_at=iso_to_ts(data.get("valid_at")) or 0.0,
        invalid_at=iso_to_ts(data.get("invalid_at")),
        event_time=iso_to_ts(data.get("event_time")),
        source=Source.from_dict(data.get("source")),
        content_hash=data.get("content_hash") or "", version=int(data.get("version", 1)),
        metadata=dict(data.get("metadata") or {}), supersedes=data.get("supersedes"),
        superseded_by=data.get("superseded_by"),
    )


def _usage(data: Mapping[str, Any] | None) -> Usage:
    data = data or {}
    return Usage(int(data.get("llm_calls", 0)), int(data.get("input_tokens", 0)),
                 int(data.get("output_tokens", 0)))


def _changes(data: Mapping[str, Any]) -> tuple[tuple[Change, ...], tuple[Skip, ...]]:
    changes = tuple(Change(c["op"], _record(c["memory"]), c["event_id"])
                    for c in data.get("changes", ()))
    skipped = tuple(Skip(s["reason"], s.get("content"), s.get("existing_id"))
                    for s in data.get("skipped", ()))
    return changes, skipped


def _add_result(data: Mapping[str, Any]) -> AddResult:
    changes, skipped = _changes(data)
    return AddResult(tuple(data["namespace"]), changes, skipped, _usage(data.get("usage")),
                     int(data.get("write_attempts", 0)), tuple(data.get("rejected", ())))


def _change_result(data: Mapping[str, Any]) -> ChangeResult:
    changes, skipped = _changes(data)
    return ChangeResult(changes, skipped, _usage(data.get("usage")))


def _search_result(data: Mapping[str, Any]) -> SearchResult:
    hits = tuple(MemoryHit(_record(h["memory"]), h.get("score"),
                           {k: SignalScore(int(v["rank"]), float(v["score"]))
                            for k, v in (h.get("details") or {}).items()})
                 for h in data.get("hits", ()))
    return SearchResult(hits, _usage(data.get("usage")))


def _history(data: Mapping[str, Any]) -> list[HistoryEvent]:
    return [HistoryEvent.from_value({**e, "at": iso_to_ts(e["at"])})
            for e in data.get("events", ())]


def _error(response: httpx.Response) -> RememError:
    try:
        body = response.json()
        kind, message = str(body.get("error", "")), str(body.get("message", response.text))
    except ValueError:
        kind, message = "", response.text or response.reason_phrase
    cls = _ERRORS.get(kind, RememError)
    return cls(f"{message} (HTTP {response.status_code})")


@dataclass(frozen=True, slots=True)
class _Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def read(self, response: httpx.Response) -> T:
        if response.status_code >= 400:
            raise _error(response)
        return self.parse(response.json())


def _messages(messages: Any) -> Any:
    """Messages as JSON: text as is, :class:`Message` values as OpenAI-style dicts."""
    if isinstance(messages, str):
        return messages
    items = [messages] if isinstance(messages, Message | Mapping) else list(messages)
    out: list[Any] = []
    for item in items:
        if isinstance(item, Message):
            from remem.messages import to_openai

            out.extend(to_openai([item]))
        elif isinstance(item, str):
            out.append({"role": "user", "content": item})
        else:
            out.append(dict(item))
    return out


def _drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _ts(value: Any) -> Any:
    return value.timestamp() if hasattr(value, "timestamp") else value


def _id(memory_id: str) -> str:
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInputError(f"memory_id must be a non-empty string, got {memory_id!r}")
    return quote(memory_id.strip(), safe="")


class _Core:
    """The requests of each facade method (no I/O)."""

    @staticmethod
    def add(messages: Any, user_id: str | None, agent_id: str | None, thread_id: str | None,
            namespace: Sequence[str] | None, infer: bool, metadata: Mapping[str, Any] | None,
            kind: str) -> _Call[AddResult]:
        body = _drop_none({"messages": _messages(messages), "user_id": user_id,
                           "agent_id": agent_id, "thread_id": thread_id,
                           "namespace": list(namespace) if namespace is not None else None,
                           "metadata": dict(metadata) if metadata is not None else None})
        return _Call("POST", "/v1/memories", _add_result,
                     {**body, "infer": infer, "kind": kind})

    @staticmethod
    def search(query: str | None, user_id: str | None, agent_id: str | None,
               thread_id: str | None, namespace: Sequence[str] | None,
               filters: Mapping[str, Any] | None, limit: int, as_of: Any,
               include_invalid: bool, mode: str) -> _Call[SearchResult]:
        body = _drop_none({"query": query, "user_id": user_id, "agent_id": agent_id,
                           "thread_id": thread_id,
                           "namespace": list(namespace) if namespace is not None else None,
                           "filters": dict(filters) if filters is not None else None,
                           "as_of": _ts(as_of)})
        return _Call("POST", "/v1/memories/search", _search_result,
                     {**body, "limit": limit, "include_invalid": include_invalid, "mode": mode})

    @staticmethod
    def get(memory_id: str) -> _Call[MemoryRecord]:
        return _Call("GET", f"/v1/memories/{_id(memory_id)}", _record)

    @staticmethod
    def update(memory_id: str, content: Any, kind: str | None,
               metadata: Mapping[str, Any] | None, version: int | None,
               reason: str) -> _Call[ChangeResult]:
        body = _drop_none({"content": content, "kind": kind, "version": version,
                           "metadata": dict(metadata) if metadata is not None else None})
        return _Call("PATCH", f"/v1/memories/{_id(memory_id)}", _change_result,
                     {**body, "reason": reason})

    @staticmethod
    def delete(memory_id: str, hard: bool, version: int | None) -> _Call[ChangeResult]:
        params = _drop_none({"hard": "true" if hard else "false", "version": version})
        return _Call("DELETE", f"/v1/memories/{_id(memory_id)}", _change_result,
                     params=params)

    @staticmethod
    def history(memory_id: str) -> _Call[list[HistoryEvent]]:
        return _Call("GET", f"/v1/memories/{_id(memory_id)}/history", _history)

    @staticmethod
    def undo(event_id: str) -> _Call[ChangeResult]:
        return _Call("POST", f"/v1/events/{_id(event_id)}/undo", _change_result)


class Client:
    """A memory served by ``remem serve`` at ``url``, used like :class:`~remem.api.Memory`.

    ``api_key``: a key from ``remem keys create`` (default: ``$REMEM_API_KEY``; none for a
    ``--no-auth`` server). ``timeout``: seconds per request. The client is thread-safe;
    close it (or use ``with``) to release connections.
    """

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"url must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("REMEM_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.timeout = timeout
        self._sync: httpx.Client | None = None
        self._async: httpx.AsyncClient | None = None

    # -- transport shells ---------------------------------------------------------------------

    def _send(self, call: _Call[T]) -> T:
        if self._sync is None:
            self._sync = httpx.Client(base_url=self.url, headers=self._headers,
                                      timeout=self.timeout)
        try:
            response = self._sync.request(call.method, call.path, json=call.json,
                                          params=call.params)
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the remem server at {self.url}: {exc}") from None
        return call.read(response)

    async def _asend(self, call: _Call[T]) -> T:
        if self._async is None:
            self._async = httpx.AsyncClient(base_url=self.url, headers=self._headers,
                                            timeout=self.timeout)
        try:
            response = await self._async.request(call.method, call.path, json=call.json,
                                                 params=call.params)
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the remem server at {self.url}: {exc}") from None
        return call.read(response)

    # -- sync API (see Memory for the meaning of each argument) ----------------------------------

    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            thread_id: str | None = None, namespace: Sequence[str] | None = None,
            infer: bool = True, metadata: Mapping[str, Any] | None = None,
            kind: str = "fact") -> AddResult:
        """:meth:`remem.api.Memory.add` on the server (its LLM does ``infer=True``)."""
        return self._send(_Core.add(messages, user_id, agent_id, thread_id, namespace, infer,
                                    metadata, kind))

    def search(self, query: str | None = None, *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None,
               filters: Mapping[str, Any] | None = None, limit: int = 10, as_of: Any = None,
               include_invalid: bool = False, mode: str = "auto") -> SearchResult:
        """:meth:`remem.api.Memory.search` on the server."""
        return self._send(_Core.search(query, user_id, agent_id, thread_id, namespace, filters,
                                       limit, as_of, include_invalid, mode))

    def get(self, memory_id: str) -> MemoryRecord:
        """:meth:`remem.api.Memory.get` on the server."""
        return self._send(_Core.get(memory_id))

    def update(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
               kind: str | None = None, metadata: Mapping[str, Any] | None = None,
               version: int | None = None, reason: str = "") -> ChangeResult:
        """:meth:`remem.api.Memory.update` on the server."""
        return self._send(_Core.update(memory_id, content, kind, metadata, version, reason))

    def delete(self, memory_id: str, *, hard: bool = False,
               version: int | None = None) -> ChangeResult:
        """:meth:`remem.api.Memory.delete` on the server."""
        return self._send(_Core.delete(memory_id, hard, version))

    def history(self, memory_id: str) -> list[HistoryEvent]:
        """:meth:`remem.api.Memory.history` on the server."""
        return self._send(_Core.history(memory_id))

    def undo(self, event_id: str) -> ChangeResult:
        """:meth:`remem.api.Memory.undo` on the server."""
        return self._send(_Core.undo(event_id))

    # -- async API ----------------------------------------------------------------------------

    async def aadd(self, messages: Any, *, user_id: str | None = None,
                   agent_id: str | None = None, thread_id: str | None = None,
                   namespace: Sequence[str] | None = None, infer: bool = True,
                   metadata: Mapping[str, Any] | None = None, kind: str = "fact") -> AddResult:
        """Async :meth:`add`."""
        return await self._asend(_Core.add(messages, user_id, agent_id, thread_id, namespace,
                                           infer, metadata, kind))

    async def asearch(self, query: str | None = None, *, user_id: str | None = None,
                      agent_id: str | None = None, thread_id: str | None = None,
                      namespace: Sequence[str] | None = None,
                      filters: Mapping[str, Any] | None = None, limit: int = 10,
                      as_of: Any = None, include_invalid: bool = False,
                      mode: str = "auto") -> SearchResult:
        """Async :meth:`search`."""
        return await self._asend(_Core.search(query, user_id, agent_id, thread_id, namespace,
                                              filters, limit, as_of, include_invalid, mode))

    async def aget(self, memory_id: str) -> MemoryRecord:
        """Async :meth:`get`."""
        return await self._asend(_Core.get(memory_id))

    async def aupdate(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
                      kind: str | None = None, metadata: Mapping[str, Any] | None = None,
                      version: int | None = None, reason: str = "") -> ChangeResult:
        """Async :meth:`update`."""
        return await self._asend(_Core.update(memory_id, content, kind, metadata, version,
                                              reason))

    async def adelete(self, memory_id: str, *, hard: bool = False,
                      version: int | None = None) -> ChangeResult:
        """Async :meth:`delete`."""
        return await self._asend(_Core.delete(memory_id, hard, version))

    async def ahistory(self, memory_id: str) -> list[HistoryEvent]:
        """Async :meth:`history`."""
        return await self._asend(_Core.history(memory_id))

    async def aundo(self, event_id: str) -> ChangeResult:
        """Async :meth:`undo`."""
        return await self._asend(_Core.undo(event_id))

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the sync connection pool (use :meth:`aclose` for the async one)."""
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        """Close both connection pools."""
        self.close()
        if self._async is not None:
            await self._async.aclose()
            self._async = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
