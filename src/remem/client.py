"""``remem.Client``: the :class:`~remem.api.Memory` facade over HTTP, against ``remem serve``.

Same methods, same arguments, same result types, sync and async (``aadd``...), so code moves
from an embedded memory to a shared server by changing the line that builds it::

    mem = Memory.open("memory.db")                         # embedded
    mem = Client("http://127.0.0.1:8000", api_key="rk_...")  # served

Each method builds the same request value as ``Memory`` (:mod:`remem.memory.requests`);
:func:`call_of`, a pure function, turns it into one HTTP call from the request's row in the
operation table (:data:`~remem.memory.operation_table.MEMORY_OPERATIONS`: the route the server
builds from the same row, each field where the row says, the answer read by the row's result
model; :meth:`remem.operations.Operation.call`), and the sync and async shells only send it.
The one difference: no ``actor`` argument, since the server records the caller's key. Server
errors come back as remem's own errors (``NotFoundError``, ``ConflictError``,
``InvalidInputError``...), with the server's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

import httpx

from remem.background.budgets import StoredBudget
from remem.background.jobs import QueueStats
from remem.background.methods import ThreadJobMethods
from remem.background.operation_table import CANCEL, FLUSH, JOB_OPERATIONS, SUBMIT
from remem.background.requests import (
    BudgetScope,
    CancelJobRequest,
    GetJobRequest,
    JobStatsRequest,
    ListBudgetsRequest,
    ListJobsRequest,
    RetryJobRequest,
    SetBudgetRequest,
)
from remem.background.wire import JobJson
from remem.context.assemble import ContextRequest
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.context.types import ContextResult
from remem.errors import ConfigError, StoreError, UsageError
from remem.memory.methods import MemoryAPI
from remem.memory.methods import method_args as _args
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import (
    ExportRequest,
    ImportRequest,
    MemoryRequest,
)
from remem.operations import Operation, row_of
from remem.requests import Request

# the call value lives below the families, whose remote sides share it
from remem.transport import Call as _Call

if TYPE_CHECKING:
    from remem.blocks.remote import RemoteBlocks
    from remem.episodic.remote import RemoteEpisodes
    from remem.graph import Profile, TimelineEvent
    from remem.graph.remote import RemoteGraph
    from remem.procedural.remote import RemotePrompts
    from remem.raw_store.remote import RemoteStore
    from remem.threads.remote import RemoteThreads

__all__ = ["Client"]

T = TypeVar("T")
R = TypeVar("R")

#: the row of each memory request type (the table the server's memory routes are built from)
_ROWS: Mapping[type[Any], Operation] = {row.request: row for row in MEMORY_OPERATIONS}
#: context assembly's row (its own table: it reads threads as well as memories)
_CONTEXT = row_of(CONTEXT_OPERATIONS, ContextRequest)
#: the rows of the job and budget requests that have one row each (flush and cancel share
#: a request: their rows are named, SUBMIT, FLUSH, CANCEL)
_JOB_ROWS: Mapping[type[Any], Operation] = {
    row.request: row for row in JOB_OPERATIONS if row not in (SUBMIT, FLUSH, CANCEL)}

#: most bytes of export lines one import request carries (the server's default body limit
#: is 1 MiB; Client.import_ splits a file into requests of this size)
IMPORT_CHUNK_BYTES = 512 * 1024


# -- the pure core: a request value -> one HTTP call ------------------------------------------


def call_of(request: MemoryRequest[R]) -> _Call[R]:
    """The HTTP call that runs ``request`` on a server, from its row in the memory operation
    table: the row's method and path (ids in the path), the other fields in the query or the
    JSON body as the row says, the answer read with the row's result model."""
    row = _ROWS.get(type(request))
    if row is None:
        raise UsageError(f"Client cannot send a {type(request).__name__}; pass one of the "
                         "requests in remem.memory.requests")
    return cast(_Call[R], row.call(request))


def context_call(request: ContextRequest) -> _Call[ContextResult]:
    """The HTTP call of a context assembly (``POST /v1/memories/context``): the server uses
    the tenant's threads and its default token counter."""
    if request.token_counter is not None or any(
            not isinstance(entry, str) for entry in request.sections or ()):
        raise UsageError("a token counter or a ContextSection object cannot be sent to a "
                         "server: pass section names, or assemble the context with "
                         "remem.Memory locally")
    return cast(_Call[ContextResult], _CONTEXT.call(request))


def job_call(request: Any) -> _Call[Any]:
    """The HTTP call of a job or budget request (``/v1/jobs``, ``/v1/budgets``): its row's."""
    return _JOB_ROWS[type(request)].call(request)


def _chunks(lines: Iterable[str], limit: int = IMPORT_CHUNK_BYTES) -> Iterator[list[str]]:
    """Non-empty lines in groups of at most ``limit`` bytes (one line may exceed it)."""
    chunk: list[str] = []
    size = 0
    for line in lines:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        if chunk and size + len(line.encode()) > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(line)
        size += len(line.encode()) + 8
    if chunk:
        yield chunk


class Client(MemoryAPI, ThreadJobMethods):
    """A memory served by ``remem serve`` at ``url``, used like :class:`~remem.api.Memory`.

    ``api_key``: a key from ``remem keys create`` (default: ``$REMEM_API_KEY``; none for a
    ``--no-auth`` server). ``tenant``: with an admin key (``remem keys create --admin``), the
    tenant every request acts for, sent as the ``X-Remem-Tenant`` header (default: the key's
    own tenant; the server refuses it from any other key with
    :class:`~remem.errors.PermissionDeniedError`). ``timeout``: seconds per request. The
    client is thread-safe; close it (or use ``with``) to release connections. The sync methods
    use httpx's blocking client, so they also work where an event loop runs (a notebook cell),
    holding it for the request; the ``a``-prefixed twins use the async client.
    """

    def __init__(self, url: str, api_key: str | None = None, *, tenant: str | None = None,
                 timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"url must start with http:// or https://, got {url!r}")
        if tenant is not None and (not isinstance(tenant, str) or not tenant.strip()):
            raise ConfigError(f"tenant must be a non-empty tenant name or None, got {tenant!r}")
        self.url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("REMEM_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        if tenant is not None:
            self._headers["X-Remem-Tenant"] = tenant.strip()
        self.tenant = tenant
        self.timeout = timeout
        self._sync: httpx.Client | None = None
        self._async: httpx.AsyncClient | None = None
        self._threads: RemoteThreads | None = None

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

    # -- requests as values -----------------------------------------------------------------

    def run(self, request: MemoryRequest[R]) -> R:
        """Run one memory request on the server: :meth:`remem.api.Memory.run` over HTTP
        (the server records the caller's key as the ``actor``)."""
        return self._send(call_of(request))

    async def arun(self, request: MemoryRequest[R]) -> R:
        """Async :meth:`run`."""
        return await self._asend(call_of(request))

    @property
    def threads(self) -> RemoteThreads:
        """The server's conversation threads, with :class:`~remem.threads.ThreadStore`'s
        methods (one object per client, so handles compare equal)."""
        if self._threads is None:
            from remem.threads.remote import RemoteThreads

            self._threads = RemoteThreads(self)
        return self._threads

    @property
    def store(self) -> RemoteStore:
        """The tenant's raw store (``/v1/store``): put, get, delete, search, count and
        list_namespaces, sync and async (``aput``...), answering the store's types."""
        found: RemoteStore | None = self.__dict__.get("_store")
        if found is None:
            from remem.raw_store.remote import RemoteStore

            found = self.__dict__["_store"] = RemoteStore(self)
        return found

    @property
    def prompts(self) -> RemotePrompts:
        """The tenant's versioned prompts (``/v1/prompts``), with
        :class:`~remem.procedural.PromptRegistry`'s methods plus ``optimize``."""
        found: RemotePrompts | None = self.__dict__.get("_prompts")
        if found is None:
            from remem.procedural.remote import RemotePrompts

            found = self.__dict__["_prompts"] = RemotePrompts(self)
        return found

    @property
    def episodes(self) -> RemoteEpisodes:
        """The tenant's episodes (``/v1/episodes``), with
        :class:`~remem.episodic.EpisodeStore`'s methods."""
        found: RemoteEpisodes | None = self.__dict__.get("_episodes")
        if found is None:
            from remem.episodic.remote import RemoteEpisodes

            found = self.__dict__["_episodes"] = RemoteEpisodes(self)
        return found

    @property
    def blocks(self) -> RemoteBlocks:
        """The tenant's core memory blocks (``/v1/blocks``), with
        :class:`~remem.blocks.Blocks`' methods."""
        found: RemoteBlocks | None = self.__dict__.get("_blocks")
        if found is None:
            from remem.blocks.remote import RemoteBlocks

            found = self.__dict__["_blocks"] = RemoteBlocks(self)
        return found

    def graph(self, *, user_id: str | None = None, agent_id: str | None = None) -> RemoteGraph:
        """The temporal knowledge graph of a scope (``/v1/graph``), with
        :class:`~remem.graph.Graph`'s methods: :meth:`remem.api.Memory.graph` over HTTP."""
        from remem.graph.remote import RemoteGraph

        return RemoteGraph(self, user_id=user_id, agent_id=agent_id)

    def profile(self, user_id: str, *, as_of: datetime | float | None = None) -> Profile:
        """The user's profile: :meth:`remem.api.Memory.profile` over HTTP."""
        return self.graph(user_id=user_id).profile(as_of=as_of)

    def timeline(self, user_id: str, *, since: datetime | float | None = None,
                 until: datetime | float | None = None,
                 tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """The user's timeline: :meth:`remem.api.Memory.timeline` over HTTP."""
        return self.graph(user_id=user_id).timeline(since=since, until=until, tags=tags)

    # -- the memory methods (add, search, ... and their async twins) are MemoryAPI's, less
    # ``actor``: the server records the caller's key

    def export(self, target: str | os.PathLike[str] | IO[str], *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None) -> int:
        """:meth:`remem.api.Memory.export` from the server: its JSONL written to ``target``."""
        scope = _args(locals())
        del scope["target"]
        return _write_lines(self.run(ExportRequest.of(**scope)).lines, target)

    def import_(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """:meth:`remem.api.Memory.import_` into the server, in requests of at most 512 KiB
        of lines (under the server's default body limit)."""
        with _lines_of(source) as lines:
            return sum(self.run(ImportRequest.of(lines=chunk)).count
                       for chunk in _chunks(lines))

    async def aexport(self, target: str | os.PathLike[str] | IO[str], *,
                      user_id: str | None = None, agent_id: str | None = None,
                      thread_id: str | None = None,
                      namespace: Sequence[str] | None = None) -> int:
        """Async :meth:`export` (the file is written in a worker thread)."""
        scope = _args(locals())
        del scope["target"]
        result = await self.arun(ExportRequest.of(**scope))
        return await asyncio.to_thread(_write_lines, result.lines, target)

    async def aimport(self, source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> int:
        """Async :meth:`import_`."""
        count = 0
        with _lines_of(source) as lines:
            for chunk in _chunks(lines):
                count += (await self.arun(ImportRequest.of(lines=chunk))).count
        return count

    # -- context assembly (POST /v1/memories/context) -------------------------------------------

    def context(self, query: str | None = None, *, user_id: str | None = None,
                agent_id: str | None = None, thread_id: str | None = None,
                namespace: Sequence[str] | None = None, budget_tokens: int | None = None,
                sections: Sequence[str] | None = None, memory_limit: int = 20,
                recent_limit: int = 50) -> ContextResult:
        """:meth:`remem.api.Memory.context` on the server, over the tenant's threads (section
        names only; tokens counted by the server's offline estimate)."""
        return self._send(context_call(ContextRequest.of(**_args(locals()))))

    async def acontext(self, query: str | None = None, *, user_id: str | None = None,
                       agent_id: str | None = None, thread_id: str | None = None,
                       namespace: Sequence[str] | None = None,
                       budget_tokens: int | None = None, sections: Sequence[str] | None = None,
                       memory_limit: int = 20, recent_limit: int = 50) -> ContextResult:
        """Async :meth:`context`."""
        return await self._asend(context_call(ContextRequest.of(**_args(locals()))))

    # -- background extraction (POST /v1/memories/submit, /v1/jobs) ---------------------------
    # each call is its row's (remem.background.operation_table)

    def run_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Send a ``submit``, ``flush`` or ``cancel`` (``row``) to the server."""
        return self._send(row.call(request))

    async def arun_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Async :meth:`run_thread_jobs`."""
        return await self._asend(row.call(request))

    # -- jobs and budgets (GET /v1/jobs..., /v1/budgets): each call is its row's -------------

    def job(self, job_id: str) -> JobJson:
        """One of the tenant's jobs (``GET /v1/jobs/{id}``): its JSON, a dict typed key by key
        (``["status"]``, ``["result"]``...)."""
        return cast(JobJson, self._send(job_call(GetJobRequest.of(**_args(locals())))))

    def jobs(self, *, status: str | None = None, kind: str | None = None,
             thread_id: str | None = None, limit: int = 100) -> list[JobJson]:
        """The tenant's jobs, newest first (``GET /v1/jobs``; ``kind``: of that kind only),
        as :meth:`job` gives each."""
        return cast(list[JobJson], self._send(job_call(ListJobsRequest.of(**_args(locals())))))

    def job_stats(self) -> QueueStats:
        """How many of the tenant's jobs have each status, the lag of the oldest due one and
        the failures (``GET /v1/jobs/stats``)."""
        return cast(QueueStats, self._send(job_call(JobStatsRequest.of())))

    def retry_job(self, job_id: str) -> JobJson:
        """Queue a failed, dead or cancelled job again, attempts reset
        (``POST /v1/jobs/{id}/retry``); the job's JSON."""
        return cast(JobJson, self._send(job_call(RetryJobRequest.of(**_args(locals())))))

    def cancel_job(self, job_id: str) -> JobJson:
        """Drop a queued (or failed, dead) job (``POST /v1/jobs/{id}/cancel``); its JSON."""
        return cast(JobJson, self._send(job_call(CancelJobRequest.of(**_args(locals())))))

    def set_budget(self, *, user_id: str | None = None, agent_id: str | None = None,
                   namespace: Sequence[str] | None = None, max_memories: int | None = None,
                   max_tokens: int | None = None,
                   policy: Literal["retention", "lru"] = "retention",
                   half_life: float = 30 * 86400.0,
                   consolidate_first: bool = True) -> StoredBudget:
        """Store a budget for a scope (``PUT /v1/budgets``; see
        ``mem.background.set_budget``): later writes to it are checked, and a namespace over
        it gets a ``forget`` job."""
        return cast(StoredBudget,
                    self._send(job_call(SetBudgetRequest.of(**_args(locals())))))

    def budgets(self) -> list[StoredBudget]:
        """The tenant's stored budgets, by namespace (``GET /v1/budgets``)."""
        return cast(list[StoredBudget], self._send(job_call(ListBudgetsRequest.of())))

    def delete_budget(self, *, user_id: str | None = None, agent_id: str | None = None,
                      namespace: Sequence[str] | None = None) -> bool:
        """Drop a scope's stored budget (``DELETE /v1/budgets``); whether it had one."""
        return cast(bool, self._send(job_call(BudgetScope.of(**_args(locals())))))

    async def ajob(self, job_id: str) -> JobJson:
        """Async :meth:`job`."""
        return cast(JobJson, await self._asend(job_call(GetJobRequest.of(**_args(locals())))))

    async def ajobs(self, *, status: str | None = None, kind: str | None = None,
                    thread_id: str | None = None, limit: int = 100) -> list[JobJson]:
        """Async :meth:`jobs`."""
        return cast(list[JobJson],
                    await self._asend(job_call(ListJobsRequest.of(**_args(locals())))))

    async def ajob_stats(self) -> QueueStats:
        """Async :meth:`job_stats`."""
        return cast(QueueStats, await self._asend(job_call(JobStatsRequest.of())))

    async def aretry_job(self, job_id: str) -> JobJson:
        """Async :meth:`retry_job`."""
        return cast(JobJson,
                    await self._asend(job_call(RetryJobRequest.of(**_args(locals())))))

    async def acancel_job(self, job_id: str) -> JobJson:
        """Async :meth:`cancel_job`."""
        return cast(JobJson,
                    await self._asend(job_call(CancelJobRequest.of(**_args(locals())))))

    async def aset_budget(self, *, user_id: str | None = None, agent_id: str | None = None,
                          namespace: Sequence[str] | None = None,
                          max_memories: int | None = None, max_tokens: int | None = None,
                          policy: Literal["retention", "lru"] = "retention",
                          half_life: float = 30 * 86400.0,
                          consolidate_first: bool = True) -> StoredBudget:
        """Async :meth:`set_budget`."""
        return cast(StoredBudget,
                    await self._asend(job_call(SetBudgetRequest.of(**_args(locals())))))

    async def abudgets(self) -> list[StoredBudget]:
        """Async :meth:`budgets`."""
        return cast(list[StoredBudget], await self._asend(job_call(ListBudgetsRequest.of())))

    async def adelete_budget(self, *, user_id: str | None = None, agent_id: str | None = None,
                             namespace: Sequence[str] | None = None) -> bool:
        """Async :meth:`delete_budget`."""
        return cast(bool, await self._asend(job_call(BudgetScope.of(**_args(locals())))))

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


def _write_lines(lines: Iterable[str], target: str | os.PathLike[str] | IO[str]) -> int:
    if isinstance(target, str | os.PathLike):
        with Path(target).open("w", encoding="utf-8") as handle:
            return _write_lines(lines, handle)
    count = 0
    for line in lines:
        target.write(line + "\n")
        count += 1
    return count


@contextlib.contextmanager
def _lines_of(source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> Iterator[Iterable[str]]:
    if isinstance(source, str | os.PathLike):
        with Path(source).open(encoding="utf-8") as handle:
            yield handle
    else:
        yield source
