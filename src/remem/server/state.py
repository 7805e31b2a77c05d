"""What a running server holds: its settings, its store, its keys, and one scoped view of the
store (and one :class:`~remem.api.Memory`) per tenant."""

from __future__ import annotations

import asyncio
import copy
import math
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.to_thread

from remem.api import Memory
from remem.embed.base import Embedder
from remem.errors import ConfigError
from remem.llm.base import ChatModel
from remem.memory.records import KEYWORD_FIELDS
from remem.server.keys import KeyStore, tenant_prefix
from remem.server.quotas import Quota, QuotaStore
from remem.server.ratelimit import RateLimiter, auth_failure_limiter
from remem.shards.router import ShardRouter, TenantStore
from remem.shards.routes import FEWEST, Placement, RouteTable, Shard
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store
from remem.store.guarded import GuardedStore
from remem.store.scoped import ScopedStore

if TYPE_CHECKING:
    from remem.background.queue import JobQueue
    from remem.threads import ThreadStore
    from remem.usage import UsageRecorder

__all__ = ["LEGACY_LOCAL_TENANT", "LOCAL_TENANT", "TENANT_VIEWS", "Principal", "ServerConfig",
           "ServerState", "TenantViews", "legacy_local_notice"]

#: the tenant of every request in ``--no-auth`` mode and of ``remem mcp`` without ``--tenant``
#: or ``--api-key``: ``""``, the database's own data, without a namespace prefix, which
#: ``Memory.open``, ``remem add`` and ``remem ui`` use too. No key can act for it: a key's
#: tenant is a name of 1-64 characters (:func:`remem.server.keys.check_tenant`), and an
#: admin key's ``X-Remem-Tenant`` header is checked by the same rule.
LOCAL_TENANT = ""
#: where remem 0.x before the one local tenant kept the data of ``--no-auth`` and ``remem
#: mcp`` (the tenant ``local``, under ``("tenants", "local")``); still reachable with
#: ``--tenant local`` (see :func:`legacy_local_notice`)
LEGACY_LOCAL_TENANT = "local"
#: the fields memories are searched by (the facade's); raw items may choose their own per put
INDEXED_FIELDS = ("text",)

T = TypeVar("T")
V = TypeVar("V")

#: how many tenants' views (scoped store, Memory, threads, recording model) a process keeps
TENANT_VIEWS = 1024


class TenantViews(Generic[V]):
    """One view per tenant, built on first use and kept for the ``limit`` most recently used
    tenants. An admin key may name any tenant, so without a bound a process would keep a
    view of every tenant ever named. Views hold no state of their own that is not in the
    database (a quota's count is read again, as another process would), so a view dropped
    while a request still uses it, and rebuilt for the next, behaves as two processes do."""

    def __init__(self, lock: threading.RLock, limit: int = TENANT_VIEWS) -> None:
        self._views: OrderedDict[str, V] = OrderedDict()
        self._lock = lock
        self.limit = limit

    def get(self, tenant: str, build: Callable[[], V]) -> V:
        """``tenant``'s view, built by ``build`` (under the state's lock) if it has none."""
        with self._lock:
            view = self._views.get(tenant)
            if view is None:
                view = self._views[tenant] = build()
                while len(self._views) > self.limit:
                    self._views.popitem(last=False)
            else:
                self._views.move_to_end(tenant)
            return view

    def __len__(self) -> int:
        return len(self._views)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Settings of one server.

    ``db``: a SQLite path (``":memory:"`` for a throwaway one) or a ``postgresql://`` DSN.
    ``auth``: ``False`` serves every request without a key as :data:`LOCAL_TENANT`, the
    database's own data (only on loopback; :func:`remem.cli.serve` enforces it).
    ``max_body_bytes``: larger request bodies get a 413. ``embedder``: vectors for hybrid
    search (``None``: keyword search only). ``llm``: the chat model for ``infer=true`` adds
    (``None``: such adds get a 400).
    ``key_cache_seconds``: how long a verified key is trusted before it is read again.
    ``mcp``: serve MCP at ``/mcp``. ``host``: the address served on (on loopback, ``/mcp``
    also checks Host and Origin headers against DNS rebinding). ``store_threads``: how many
    requests of one process run store work at once; the rest wait their turn (see
    :meth:`ServerState.run`). ``thread_search``: index every appended thread message in the
    tenant's store (under ``("threads", <user_id>)``) so ``/v1/threads/search`` finds it;
    ``False`` saves that write (and its embedding) per message, and search answers 400.
    ``rate_limit``: requests per second each key may make (``None``: unlimited), with bursts
    of ``rate_burst`` (default: one second's worth); more get a 429 with ``Retry-After``
    (see :mod:`remem.server.ratelimit`). ``ready_timeout``: seconds ``/readyz`` waits for the
    store before answering 503. ``quota_items`` / ``quota_bytes``: the items and bytes of
    values each tenant may keep (``None``: unlimited); a write past them gets a 413
    ``quota_exceeded`` and writes nothing (see :mod:`remem.server.quotas`).
    ``quota_recount_seconds``: how old a tenant's exact count may get in a process.
    ``metrics_token``: the bearer token ``/metrics/tenants`` (per-tenant series) asks for
    (``None``: that route answers 404; ``/metrics`` never shows tenants).
    ``shards``: PostgreSQL databases tenants' data is spread over (``()``: all in ``db``);
    ``db`` is then the control database (keys, jobs, usage and the routing table), new
    tenants are placed by ``placement`` (``"fewest"`` or a shard name) and a tenant's route
    is read again after ``route_cache_seconds`` (see docs/shards.md).
    """

    db: str = "memory.db"
    auth: bool = True
    max_body_bytes: int = 1 << 20
    embedder: Embedder | None = None
    llm: ChatModel | None = None
    key_cache_seconds: float = 1.0
    mcp: bool = True
    host: str = "127.0.0.1"
    store_threads: int = 2
    thread_search: bool = True
    rate_limit: float | None = None
    rate_burst: float | None = None
    ready_timeout: float = 5.0
    quota_items: int | None = None
    quota_bytes: int | None = None
    quota_recount_seconds: float = 60.0
    metrics_token: str | None = None
    shards: tuple[Shard, ...] = ()
    placement: str = FEWEST
    route_cache_seconds: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1024:
            raise ConfigError(
                f"max_body_bytes must be an integer >= 1024, got {self.max_body_bytes!r}")
        if (not isinstance(self.store_threads, int) or isinstance(self.store_threads, bool)
                or not 1 <= self.store_threads <= 256):
            raise ConfigError(f"store_threads must be an integer from 1 to 256, got "
                              f"{self.store_threads!r} (remem serve --store-threads)")
        for name in ("rate_limit", "rate_burst"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(
                    value, int | float) or not math.isfinite(value) or value <= 0):
                raise ConfigError(f"{name} must be a positive number or None, got {value!r}")
        if self.rate_burst is not None and self.rate_burst < 1:
            raise ConfigError(f"rate_burst must be at least 1, got {self.rate_burst!r}")
        if (isinstance(self.ready_timeout, bool) or not isinstance(self.ready_timeout,
                                                                   int | float)
                or not 0 < self.ready_timeout <= 300):
            raise ConfigError(f"ready_timeout must be seconds in (0, 300], got "
                              f"{self.ready_timeout!r}")
        self.quota()  # validates the quota settings, naming the option
        if self.metrics_token is not None and (not isinstance(self.metrics_token, str)
                                               or len(self.metrics_token.strip()) < 16):
            raise ConfigError("metrics_token must be a string of at least 16 characters "
                              "(remem serve --metrics-token, or REMEM_METRICS_TOKEN)")
        if self.shards:
            from remem.store import is_dsn

            if not is_dsn(os.fspath(self.db)):
                raise ConfigError("shards need a PostgreSQL control database: --db must be a "
                                  "postgresql:// DSN when --shard is given")
            Placement(self.placement).choose(self.shards, {})  # names a configured shard
        if (isinstance(self.route_cache_seconds, bool)
                or not isinstance(self.route_cache_seconds, int | float)
                or not 0 <= self.route_cache_seconds <= 60):
            raise ConfigError(f"route_cache_seconds must be seconds in [0, 60], got "
                              f"{self.route_cache_seconds!r}")

    def quota(self) -> Quota:
        """The per-tenant storage quota these settings describe."""
        return Quota(self.quota_items, self.quota_bytes, self.quota_recount_seconds)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who makes a request: the key's tenant, whether it may write, and whether its key is an
    admin key (which may also read the family roots a policy governs through the raw store,
    for repair: :meth:`ServerState.raw_store_for`)."""

    tenant: str
    read_only: bool = False
    key_id: str | None = None
    admin: bool = False


def open_server_store(config: ServerConfig) -> BaseStore:
    """The server's store: memories' ``text`` field indexed for keywords and vectors."""
    index = IndexConfig(config.embedder, fields=INDEXED_FIELDS) if config.embedder else None
    return open_store(os.fspath(config.db), index=index,
                      keyword=KeywordConfig(fields=KEYWORD_FIELDS))


@dataclass
class ServerState:
    """The store, the key store and per-tenant views; built by :func:`ServerState.open`."""

    config: ServerConfig
    store: BaseStore
    keys: KeyStore
    owns_store: bool = True
    #: requests per second per key (``None``: unlimited), from the config
    limiter: RateLimiter | None = None
    #: failed authentications per client address (always on: see remem.server.auth)
    auth_failures: RateLimiter = field(default_factory=auth_failure_limiter)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _scoped: TenantViews[ScopedStore] = field(init=False)
    _memories: TenantViews[Memory] = field(init=False)
    _threads: ThreadStore | None = None
    _tenant_threads: TenantViews[ThreadStore] = field(init=False)
    _llms: TenantViews[ChatModel] = field(init=False)
    _usage: UsageRecorder | None = None
    _jobs: JobQueue | None = None
    #: tenants' shards (``None``: every tenant in the one database)
    router: ShardRouter | None = None
    _shard_threads: dict[str, ThreadStore] = field(default_factory=dict)
    # one limiter per event loop: in-process harnesses serve the app from several loops
    _limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = \
        field(default_factory=weakref.WeakKeyDictionary)

    def __post_init__(self) -> None:
        self._scoped = TenantViews(self._lock)
        self._memories = TenantViews(self._lock)
        self._tenant_threads = TenantViews(self._lock)
        self._llms = TenantViews(self._lock)

    @classmethod
    def open(cls, config: ServerConfig, store: BaseStore | None = None) -> ServerState:
        """Open the configured store (or use ``store``, which the caller keeps owning)."""
        owns = store is None
        base = open_server_store(config) if store is None else store
        limiter = (RateLimiter(config.rate_limit, config.rate_burst)
                   if config.rate_limit is not None else None)
        router = None
        if config.shards:
            routes = RouteTable(os.fspath(config.db), config.shards,
                                placement=Placement(config.placement),
                                pool_size=config.store_threads + 8)
            router = ShardRouter(
                routes, lambda shard: open_server_store(_on(config, shard)),
                cache_seconds=config.route_cache_seconds, control=base)
        return cls(config, base, KeyStore(base, cache_seconds=config.key_cache_seconds),
                   owns_store=owns, limiter=limiter, router=router)

    def _view_key(self, tenant: str) -> str:
        """Where a tenant's views are kept: by tenant, and by shard when sharded (a moved
        tenant gets new views, over its new shard's database)."""
        if self.router is None or tenant == LOCAL_TENANT:
            return tenant
        return f"{tenant}\x1f{self.router.shard_of(tenant)}"

    async def run(self, work: Callable[[], T], *, waits_on_llm: bool = False) -> T:
        """Run a request's blocking ``work`` in a worker thread and return its result.

        Store work is mostly Python holding the GIL, so at most ``config.store_threads``
        requests run it at once and the rest queue here: dozens of runnable threads would
        only take the GIL from each other (measured in docs/server.md). Work that spends
        most of its time waiting for a chat model (``waits_on_llm``) uses anyio's larger
        default pool instead, so slow LLM calls never hold up searches."""
        limiter = None
        if not waits_on_llm:
            loop = asyncio.get_running_loop()
            limiter = self._limiters.get(loop)
            if limiter is None:
                limiter = self._limiters[loop] = anyio.CapacityLimiter(self.config.store_threads)
        return await anyio.to_thread.run_sync(work, limiter=limiter)

    def store_for(self, principal: Principal) -> BaseStore:
        """The store as ``principal``'s tenant sees it: a :class:`ScopedStore` under the
        tenant's prefix, or, for :data:`LOCAL_TENANT`, the whole store (the database's own
        data, as ``Memory.open`` sees it; no quota applies to it)."""
        tenant = principal.tenant
        if tenant == LOCAL_TENANT:
            return self.store

        key = self._view_key(tenant)

        def build() -> ScopedStore:
            quota = self.config.quota()
            prefix = tenant_prefix(tenant)
            inner: BaseStore = self.store
            if self.router is not None:
                inner = TenantStore(self.router, tenant,
                                    self.router.store(key.rpartition("\x1f")[2]))
            return (QuotaStore(inner, prefix, quota, tenant=tenant)
                    if quota.active else ScopedStore(inner, prefix))
        return self._scoped.get(key, build)

    def raw_store_for(self, principal: Principal) -> GuardedStore:
        """The tenant's store as the raw store surfaces (``/v1/store``, the MCP
        ``list_namespaces`` tool) may use it: no write under a family's root, no read of a
        governed root unless ``principal`` is an admin (:mod:`remem.store.guarded`). Those
        surfaces take their store from here only; :meth:`store_for` is the families'."""
        if principal.tenant == LOCAL_TENANT:  # the whole store, each tenant's roots checked
            return GuardedStore(self.store, admin=principal.admin, whole_store=True)
        return GuardedStore(self.store_for(principal), admin=principal.admin)

    def memory_for(self, principal: Principal) -> Memory:
        """The :class:`~remem.api.Memory` facade over the tenant's scoped store (the facade
        imported with this module: its plug-ins, the families' job kinds among them, are
        registered before the in-process worker lists them)."""
        return self._memories.get(self._view_key(principal.tenant), lambda: Memory(
            self.store_for(principal), llm=self.llm_for(principal)))

    def jobs(self) -> JobQueue:
        """The server's job queue, in the store's database (opened on first use, closed with
        the state)."""
        if self._jobs is None:
            from remem.background.queue import JobQueue

            with self._lock:
                if self._jobs is None:
                    self._jobs = JobQueue.beside(self.store)
        return self._jobs

    def usage(self) -> UsageRecorder:
        """Where the tenants' chat model calls are recorded: the ``remem_usage`` rows beside
        the job queue (:mod:`remem.usage`)."""
        if self._usage is None:
            from remem.usage import UsageRecorder

            queue = self.jobs()
            with self._lock:
                if self._usage is None:
                    self._usage = UsageRecorder(queue)
        return self._usage

    def llm_for(self, principal: Principal) -> ChatModel | None:
        """The server's chat model as ``principal``'s tenant uses it: each call's tokens
        recorded for the tenant, per day, operation and model (``None``: no model)."""
        inner = self.config.llm
        if inner is None:
            return None
        from remem.usage import RecordingChatModel

        recorder = self.usage()
        return self._llms.get(principal.tenant, lambda: RecordingChatModel(
            inner, recorder, tenant=principal.tenant))

    def threads(self) -> ThreadStore:
        """The thread store on the server's database, every tenant's threads (opened on
        first use); requests use :meth:`threads_for`."""
        if self._threads is None:
            from remem.threads import ThreadStore

            with self._lock:
                if self._threads is None:
                    self._threads = ThreadStore.open(os.fspath(self.config.db))
        return self._threads

    def threads_for(self, principal: Principal) -> ThreadStore:
        """The threads as ``principal``'s tenant sees them: its own only, searchable through
        an index in its scoped store, compacted by the server's LLM. :data:`LOCAL_TENANT`
        sees the database's threads as ``remem threads`` does, indexed in the whole store."""
        from remem.threads.scoped import ScopedThreads
        from remem.threads.search import ThreadIndex

        key = self._view_key(principal.tenant)
        threads = (self.threads() if key == principal.tenant
                   else self._threads_on(key.rpartition("\x1f")[2]))

        def build() -> ThreadStore:
            index = (ThreadIndex(self.store_for(principal))
                     if self.config.thread_search else None)
            if principal.tenant == LOCAL_TENANT:
                # the same connections, with this view's index and chat model
                view = copy.copy(threads)
                view.index, view.summarizer = index, self.llm_for(principal)
                return view
            if self.router is not None:
                from remem.shards.threads import FencedThreads

                def on_shard(shard: str) -> ScopedThreads:
                    return ScopedThreads(self._threads_on(shard), principal.tenant,
                                         index=index, summarizer=self.llm_for(principal))
                return FencedThreads(threads, principal.tenant, index=index,
                                     summarizer=self.llm_for(principal),
                                     shard=key.rpartition("\x1f")[2], router=self.router,
                                     on_shard=on_shard)
            return ScopedThreads(threads, principal.tenant, index=index,
                                 summarizer=self.llm_for(principal))
        return self._tenant_threads.get(key, build)

    def _threads_on(self, shard: str) -> ThreadStore:
        """The thread store on ``shard``'s database (opened on first use)."""
        found = self._shard_threads.get(shard)
        if found is None:
            from remem.threads import ThreadStore

            assert self.router is not None
            dsn = self.router.routes.shard(shard).dsn
            with self._lock:
                found = self._shard_threads.get(shard)
                if found is None:
                    found = self._shard_threads[shard] = ThreadStore.open(dsn)
        return found

    def checkpoint(self) -> bool:
        """Write what is waiting in memory (usage rows) and copy a SQLite database's WAL
        into its file (:func:`remem._sqlite.checkpoint_file`), so the file alone holds
        every acknowledged write; servers call it when they stop serving. Returns whether
        the WAL was emptied (``True`` on PostgreSQL or ``:memory:``: nothing to copy)."""
        if self._usage is not None:
            self._usage.flush()
        from remem.store.sqlite import SQLiteStore

        if not isinstance(self.store, SQLiteStore) or self.store.in_memory:
            return True
        from remem._sqlite import checkpoint_file

        return checkpoint_file(self.store.path)

    def close(self) -> None:
        """Close the thread store, and the store if the server opened it (each SQLite
        connection set checkpoints the WAL as it closes)."""
        if self._usage is not None:
            self._usage.flush()  # rows a failed write left in memory
        if self._threads is not None:
            self._threads.close()
        for shard_threads in self._shard_threads.values():
            shard_threads.close()
        if self.router is not None:
            self.router.close()
        if self._jobs is not None:
            self._jobs.close()
        if self.owns_store:
            self.store.close()

    def describe(self) -> dict[str, Any]:
        """What readiness reports about the configuration (no secrets)."""
        found = {"backend": type(self.store).__name__, "auth": self.config.auth,
                 "vector_search": self.config.embedder is not None,
                 "llm": self.config.llm is not None}
        if self.config.shards:
            found["shards"] = [shard.name for shard in self.config.shards]
        return found


def _on(config: ServerConfig, shard: Shard) -> ServerConfig:
    """``config`` with ``shard``'s database as its store's."""
    import dataclasses

    return dataclasses.replace(config, db=shard.dsn, shards=())


def legacy_local_notice(store: BaseStore) -> str | None:
    """What to tell the user of ``--no-auth``, ``remem mcp`` or ``remem ui`` when ``store``
    still holds data of :data:`LEGACY_LOCAL_TENANT`, which they no longer show by default
    (``None``: it holds none)."""
    prefix = tenant_prefix(LEGACY_LOCAL_TENANT)
    if not store.list_namespaces(prefix=prefix, limit=1):
        return None
    count = store.count(prefix)
    return (f"this database also holds {count:,} item(s) of the tenant "
            f"{LEGACY_LOCAL_TENANT!r}, where earlier versions of `remem serve --no-auth` and "
            "`remem mcp` kept their data; by default every local interface now shows the "
            "database's own data (what `remem add` and Memory.open use). See the old data "
            f"with --tenant {LEGACY_LOCAL_TENANT} (remem list, remem mcp, remem ui, remem "
            "files), or copy its memories over: remem export --tenant local - | remem import -")
