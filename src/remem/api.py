"""The ``Memory`` facade: open a memory in one line, then add, search, get, update, delete,
look at history, undo, export and import. Every method has an async twin (``aadd``...)
running the same flow (:mod:`remem.memory.flow`).

>>> from remem import FakeEmbedder
>>> from remem.api import Memory
>>> mem = Memory.open(":memory:", embedder=FakeEmbedder())
>>> result = mem.add("Alice drinks green tea", user_id="alice", infer=False)
>>> mem.search("tea", user_id="alice")[0].memory.text
'Alice drinks green tea'
>>> mem.close()

Scopes: ``user_id`` and ``agent_id`` select the namespace ``("memories", "user", <user_id>,
"agent", <agent_id>)`` (each part only when given); ``thread_id`` is recorded as the source
of what was said, and is the scope only when neither of the others is given. ``namespace=``
names a namespace directly. Searches look under the namespace as a prefix, so a user's search
also finds memories scoped to that user and an agent.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from remem.embed.base import Embedder
from remem.errors import ConfigError, InvalidInputError, MessageFormatError
from remem.llm.base import ChatModel
from remem.llm.config import require_model
from remem.memory.flow import Flow, run_async, run_sync
from remem.memory.history import HistoryEvent
from remem.memory.locking import LockSettings
from remem.memory.manager import MemoryManager
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.operations import (
    ChangeResult,
    SearchResult,
    delete_flow,
    export_lines,
    get_flow,
    history_flow,
    import_lines,
    search_flow,
    undo_flow,
    update_flow,
)
from remem.memory.reconcile import ChangeContext
from remem.memory.records import MemoryRecord, check_user_namespace
from remem.memory.store_manager import AddResult, MemoryStoreManager
from remem.messages import from_openai
from remem.messages.types import Message
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store
from remem.store.types import Namespace, SearchMode, validate_namespace

__all__ = ["Memory", "MessagesInput", "to_messages"]

MessagesInput = (str | Message | Mapping[str, Any]
                 | Sequence[str | Message | Mapping[str, Any]])
"""What ``add`` accepts: text, a message, an OpenAI-style dict, or a list of them."""

MEMORY_FIELDS = ("text",)
"""The record field remem indexes for keyword and vector search."""


def to_messages(messages: MessagesInput) -> tuple[Message, ...]:
    """``messages`` as :class:`Message` values (strings, alone or in a list, are user
    messages; dicts are read as OpenAI-style chat messages)."""
    if isinstance(messages, str):
        return (Message.user(messages),)
    if isinstance(messages, Message):
        return (messages,)
    if isinstance(messages, Mapping):
        return _from_dicts([messages])
    out: list[Message] = []
    dicts: list[Mapping[str, Any]] = []
    for position, message in enumerate(messages):
        if isinstance(message, Message | str):
            if dicts:
                out += _from_dicts(dicts)
                dicts = []
            out.append(Message.user(message) if isinstance(message, str) else message)
        elif isinstance(message, Mapping):
            dicts.append(message)
        else:
            raise MessageFormatError(
                f"messages[{position}] is a {type(message).__name__}; pass strings, "
                "remem.messages.Message values or OpenAI-style dicts"
            )
    if dicts:
        out += _from_dicts(dicts)
    return tuple(out)


def _from_dicts(dicts: Sequence[Mapping[str, Any]]) -> tuple[Message, ...]:
    return tuple(from_openai([dict(d) for d in dicts]))


def scope_namespace(user_id: str | None = None, agent_id: str | None = None,
                    thread_id: str | None = None) -> Namespace:
    """The default namespace of a scope (see the module docstring)."""
    labels: list[str] = ["memories"]
    for name, value in (("user", user_id), ("agent", agent_id)):
        if value is not None:
            labels += [name, _label(name, value)]
    if len(labels) == 1 and thread_id is not None:
        labels += ["thread", _label("thread", thread_id)]
    if len(labels) == 1:
        raise InvalidInputError(
            "no scope given: pass user_id=, agent_id=, thread_id= or namespace= so the "
            "memory knows whose it is"
        )
    return tuple(labels)


def _label(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name}_id must be a non-empty string, got {value!r}")
    return value


class Memory:
    """Long-term memory over a store: the one object most users need.

    Build it with :meth:`open` (a SQLite path or ``":memory:"``), or around a store you
    opened (``Memory(store, llm=...)``; the store should index the ``text`` field).
    ``llm``: the chat model for ``add(infer=True)``; without one, remem reads the
    ``REMEM_LLM_*`` settings when it first needs a model. ``manager``: a
    :class:`~remem.memory.MemoryManager` with your schemas and instructions.
    ``namespace``: a template filled from ``user_id`` / ``agent_id`` / ``thread_id``
    (default: :func:`scope_namespace`). ``hard_delete``: deletes decided by the model
    remove records instead of invalidating them.
    """

    def __init__(self, store: BaseStore, *, llm: ChatModel | None = None,
                 manager: MemoryManager | None = None,
                 namespace: NamespaceTemplate | Sequence[str] | None = None,
                 hard_delete: bool = False, lock: LockSettings | None = None,
                 clock: Callable[[], float] = time.time, owns_store: bool = False) -> None:
        self.store = store
        self._llm = llm if llm is not None else (manager.model if manager else None)
        self.template = NamespaceTemplate.of(namespace) if namespace is not None else None
        self.lock = lock or LockSettings()
        self.clock = clock
        self._owns_store = owns_store
        #: memory formation over the store (extraction, reconciliation, writes)
        self.formation = MemoryStoreManager(
            store, manager or MemoryManager(self._llm),
            namespace=self.template or ("memories", "user", "{user_id}"),
            hard_delete=hard_delete, lock=self.lock, clock=clock,
        )

    @classmethod
    def open(cls, path_or_dsn: str | os.PathLike[str] = ":memory:", *,
             embedder: Embedder | bool | None = None, llm: ChatModel | None = None,
             **options: Any) -> Memory:
        """Open (creating if needed) a memory at ``path_or_dsn``.

        ``embedder``: ``None`` loads the offline local model
        (:class:`~remem.embed.local.LocalEmbedder`); ``False`` keeps keyword search only;
        tests pass :class:`~remem.embed.FakeEmbedder`. Other options go to :class:`Memory`.
        """
        if embedder is None or embedder is True:
            from remem.embed.local import LocalEmbedder

            embedder = LocalEmbedder()
        index = IndexConfig(embedder, fields=MEMORY_FIELDS) if embedder else None
        store = open_store(path_or_dsn, index=index, keyword=KeywordConfig(fields=MEMORY_FIELDS))
        return cls(store, llm=llm, owns_store=True, **options)

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def llm(self) -> ChatModel | None:
        """The chat model, if one was given or configured."""
        return self._llm

    def _model(self) -> ChatModel:
        if self._llm is None:
            try:
                self._llm = require_model()
            except ConfigError as exc:
                raise ConfigError(
                    f"add(infer=True) extracts memories with a chat model: {exc}. Or pass "
                    "llm=... to Memory.open, or add(..., infer=False) (CLI: --no-infer) to "
                    "store the text as is"
                ) from None
        return self._llm

    def namespace_of(self, user_id: str | None = None, agent_id: str | None = None,
                     thread_id: str | None = None,
                     namespace: Sequence[str] | None = None) -> Namespace:
        """The namespace a scope selects (what ``add`` writes to)."""
        if namespace is not None:
            return check_user_namespace(validate_namespace(namespace))
        if self.template is not None:
            return self.template.fill({"user_id": user_id, "agent_id": agent_id,
                                       "thread_id": thread_id})
        return scope_namespace(user_id, agent_id, thread_id)

    def _ctx(self, actor: str, reason: str) -> ChangeContext:
        return ChangeContext(now=self.clock(), actor=actor, reason=reason)

    def _run(self, flow: Flow[Any], model: ChatModel | None = None) -> Any:
        return run_sync(flow, self.store, model)

    async def _arun(self, flow: Flow[Any], model: ChatModel | None = None) -> Any:
        return await run_async(flow, self.store, model)

    # -- flows ------------------------------------------------------------------------------------

    def _add_flow(self, messages: MessagesInput, user_id: str | None, agent_id: str | None,
                  thread_id: str | None, namespace: Sequence[str] | None, infer: bool,
                  metadata: Mapping[str, Any] | None, kind: str, actor: str
                  ) -> Flow[AddResult]:
        ns = self.namespace_of(user_id, agent_id, thread_id, namespace)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
        return self.formation.add_flow(to_messages(messages), namespace=ns, infer=infer,
                                     metadata=metadata, actor=actor, thread_id=thread_id,
                                     kind=kind)

    def _search_flow(self, query: str | None, user_id: str | None, agent_id: str | None,
                     thread_id: str | None, namespace: Sequence[str] | None,
                     filters: Mapping[str, Any] | None, limit: int, as_of: Any,
                     include_invalid: bool, mode: SearchMode) -> Flow[SearchResult]:
        if namespace is None and user_id is None and agent_id is None and thread_id is None:
            prefix: Namespace = ("memories",) if self.template is None else ()
        else:
            prefix = self.namespace_of(user_id, agent_id, thread_id, namespace)
        return search_flow(prefix, query, filters=filters, limit=limit, as_of=as_of,
                           include_invalid=include_invalid, mode=mode)

    # -- sync API ---------------------------------------------------------------------------------

    def add(self, messages: MessagesInput, *, user_id: str | None = None,
            agent_id: str | None = None, thread_id: str | None = None,
            namespace: Sequence[str] | None = None, infer: bool = True,
            metadata: Mapping[str, Any] | None = None, kind: str = "fact",
            actor: str = "user") -> AddResult:
        """Remember what ``messages`` say.

        ``infer=True`` extracts memories with one LLM call and reconciles them with what is
        stored (none for an exact duplicate); ``infer=False`` stores the text as is (kind
        ``kind``), embedded and searchable at once. The result lists the changes, what was
        skipped, and the LLM calls and tokens it cost.
        """
        flow = self._add_flow(messages, user_id, agent_id, thread_id, namespace, infer,
                              metadata, kind, actor)
        result: AddResult = self._run(flow, self._model() if infer else None)
        return result

    def search(self, query: str | None = None, *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None,
               filters: Mapping[str, Any] | None = None, limit: int = 10,
               as_of: Any = None, include_invalid: bool = False,
               mode: SearchMode = "auto") -> SearchResult:
        """Current memories in the scope, best first for ``query`` (newest first without).

        ``filters``: the store's filter language over record fields (``kind``,
        ``metadata.*``...). ``as_of``: an aware datetime or epoch seconds; returns what was
        valid then. ``include_invalid``: also superseded and deleted memories.
        """
        result: SearchResult = self._run(self._search_flow(
            query, user_id, agent_id, thread_id, namespace, filters, limit, as_of,
            include_invalid, mode))
        return result

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory with this id (:class:`~remem.errors.NotFoundError` if none)."""
        record: MemoryRecord = self._run(get_flow(memory_id))
        return record

    def update(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
               kind: str | None = None, metadata: Mapping[str, Any] | None = None,
               version: int | None = None, actor: str = "user",
               reason: str = "") -> ChangeResult:
        """Correct a memory in place (same id, version + 1; history keeps the old content).
        ``version``: fail with :class:`~remem.errors.ConflictError` if it changed since."""
        result: ChangeResult = self._run(update_flow(
            memory_id, self._ctx(actor, reason), self.lock, content=content, kind=kind,
            metadata=metadata, version=version))
        return result

    def delete(self, memory_id: str, *, hard: bool = False, version: int | None = None,
               actor: str = "user", reason: str = "") -> ChangeResult:
        """Invalidate a memory (kept for history and ``as_of``); ``hard=True`` removes it."""
        result: ChangeResult = self._run(delete_flow(
            memory_id, self._ctx(actor, reason), self.lock, hard=hard, version=version))
        return result

    def history(self, memory_id: str) -> list[HistoryEvent]:
        """Every change of a memory, oldest first."""
        events: list[HistoryEvent] = self._run(history_flow(memory_id))
        return events

    def undo(self, event_id: str, *, actor: str = "user") -> ChangeResult:
        """Revert the change an event recorded (both halves of a supersession)."""
        result: ChangeResult = self._run(undo_flow(event_id, self._ctx(actor, "undo"),
                                                   self.lock))
        return result

    def export(self, target: str | os.PathLike[str] | IO[str], *,
               namespace: Sequence[str] = ()) -> int:
        """Write memories and history as JSONL; return the number of lines."""
        prefix = tuple(namespace)
        if isinstance(target, str | os.PathLike):
            with Path(target).open("w", encoding="utf-8") as handle:
                return self.export(handle, namespace=prefix)
        count = 0
        for line in export_lines(self.store, prefix):
            target.write(line + "\n")
            count += 1
        return count

    def import_(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """Read JSONL written by :meth:`export`; return the number of lines imported."""
        if isinstance(source, str | os.PathLike):
            with Path(source).open(encoding="utf-8") as handle:
                return import_lines(self.store, handle)
        return import_lines(self.store, source)

    # -- async API --------------------------------------------------------------------------------

    async def aadd(self, messages: MessagesInput, *, user_id: str | None = None,
                   agent_id: str | None = None, thread_id: str | None = None,
                   namespace: Sequence[str] | None = None, infer: bool = True,
                   metadata: Mapping[str, Any] | None = None, kind: str = "fact",
                   actor: str = "user") -> AddResult:
        """Async :meth:`add`."""
        flow = self._add_flow(messages, user_id, agent_id, thread_id, namespace, infer,
                              metadata, kind, actor)
        result: AddResult = await self._arun(flow, self._model() if infer else None)
        return result

    async def asearch(self, query: str | None = None, *, user_id: str | None = None,
                      agent_id: str | None = None, thread_id: str | None = None,
                      namespace: Sequence[str] | None = None,
                      filters: Mapping[str, Any] | None = None, limit: int = 10,
                      as_of: Any = None, include_invalid: bool = False,
                      mode: SearchMode = "auto") -> SearchResult:
        """Async :meth:`search`."""
        result: SearchResult = await self._arun(self._search_flow(
            query, user_id, agent_id, thread_id, namespace, filters, limit, as_of,
            include_invalid, mode))
        return result

    async def aget(self, memory_id: str) -> MemoryRecord:
        """Async :meth:`get`."""
        record: MemoryRecord = await self._arun(get_flow(memory_id))
        return record

    async def aupdate(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
                      kind: str | None = None, metadata: Mapping[str, Any] | None = None,
                      version: int | None = None, actor: str = "user",
                      reason: str = "") -> ChangeResult:
        """Async :meth:`update`."""
        result: ChangeResult = await self._arun(update_flow(
            memory_id, self._ctx(actor, reason), self.lock, content=content, kind=kind,
            metadata=metadata, version=version))
        return result

    async def adelete(self, memory_id: str, *, hard: bool = False, version: int | None = None,
                      actor: str = "user", reason: str = "") -> ChangeResult:
        """Async :meth:`delete`."""
        result: ChangeResult = await self._arun(delete_flow(
            memory_id, self._ctx(actor, reason), self.lock, hard=hard, version=version))
        return result

    async def ahistory(self, memory_id: str) -> list[HistoryEvent]:
        """Async :meth:`history`."""
        events: list[HistoryEvent] = await self._arun(history_flow(memory_id))
        return events

    async def aundo(self, event_id: str, *, actor: str = "user") -> ChangeResult:
        """Async :meth:`undo`."""
        result: ChangeResult = await self._arun(undo_flow(event_id, self._ctx(actor, "undo"),
                                                          self.lock))
        return result

    async def aexport(self, target: str | os.PathLike[str] | IO[str], *,
                      namespace: Sequence[str] = ()) -> int:
        """Async :meth:`export` (in a worker thread)."""
        return await asyncio.to_thread(self.export, target, namespace=namespace)

    async def aimport(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """Async :meth:`import_` (in a worker thread)."""
        return await asyncio.to_thread(self.import_, source)

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this memory opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.close)
