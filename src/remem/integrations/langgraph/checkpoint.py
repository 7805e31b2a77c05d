"""A LangGraph checkpointer over remem threads: a graph's short-term memory in the same
SQLite file or PostgreSQL database as its long-term store.

:class:`RememSaver` is a ``BaseCheckpointSaver``. Each LangGraph thread and checkpoint
namespace is one remem thread (id ``lg-<hash>``, the LangGraph names in its metadata); each
saved checkpoint, and each batch of pending writes, is one remem checkpoint whose state holds
the record, serialised by LangGraph's own serde (base64 of its typed bytes), like
``InMemorySaver`` keeps them: the checkpoint without its channel values, its metadata, its
parent, and a blob per channel version that changed.

Every operation is written once as a generator of thread requests
(:mod:`remem.threads.requests`); :meth:`RememSaver._run` drives it with ``threads.run`` and
:meth:`RememSaver._arun` with ``await threads.arun``, so the sync and async methods cannot
drift. Reading a checkpoint reads the records of its namespace (their count bounds the cost);
time travel and forks are LangGraph's own: a run from an old ``checkpoint_id`` saves new
checkpoints whose parent is that one.

Branches never share a channel version: :meth:`RememSaver.get_next_version` makes them as
LangGraph's own savers do (a counter and a random fraction), so a blob, found by channel and
version, belongs to one branch. Threads saved by earlier releases carry LangGraph's default
integer versions, which two branches can share: there the blob a checkpoint reads is its own
or its nearest ancestor's (:class:`_Namespace`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import random
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from typing import Any

from remem.errors import ConflictError, InvalidInputError, NotFoundError, RememError
from remem.threads.api import ThreadAPI
from remem.threads.requests import (
    CheckpointsRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    GetThreadRequest,
    ListThreadsRequest,
    ThreadRequest,
    UpdateStateRequest,
)
from remem.threads.store import ThreadStore
from remem.threads.types import Checkpoint as RememCheckpoint

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_checkpoint_metadata,
        writes_sort_key,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as error:  # pragma: no cover - the extra is missing
    from remem.errors import ConfigError

    raise ConfigError("remem.integrations.langgraph needs LangGraph: pip install "
                      "'remem[langgraph]'") from error

__all__ = ["RememSaver"]

#: a flow yields thread requests and receives their results (or has NotFoundError thrown in)
Flow = Generator[ThreadRequest[Any], Any, Any]

_KEY = "langgraph"  # the state key of a record
_PAGE = 100


def thread_key(thread_id: str, checkpoint_ns: str) -> str:
    """The remem thread of a LangGraph thread and checkpoint namespace."""
    digest = hashlib.sha256(json.dumps([thread_id, checkpoint_ns]).encode()).hexdigest()
    return f"lg-{digest[:32]}"


def _typed(pair: tuple[str, bytes]) -> list[str]:
    return [pair[0], base64.b64encode(pair[1]).decode("ascii")]


def _untyped(value: Sequence[str]) -> tuple[str, bytes]:
    return value[0], base64.b64decode(value[1])


def _configurable(config: RunnableConfig | None) -> Mapping[str, Any]:
    configurable = (config or {}).get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise InvalidInputError("config['configurable'] must be a dict")
    return configurable


def _thread_id(config: RunnableConfig) -> str:
    thread_id = _configurable(config).get("thread_id")
    if thread_id is None or thread_id == "":
        raise InvalidInputError("config['configurable']['thread_id'] is required: pass "
                                "{'configurable': {'thread_id': ...}} to the graph")
    return str(thread_id)


def _records(flow_key: str) -> Flow:
    """Every remem checkpoint of a thread holding a record, newest first ([] if none)."""
    out: list[RememCheckpoint] = []
    offset = 0
    while True:
        try:
            page = yield CheckpointsRequest.of(thread_id=flow_key, limit=_PAGE, offset=offset)
        except NotFoundError:
            return []
        out.extend(checkpoint for checkpoint in page if _KEY in checkpoint.state)
        if len(page) < _PAGE:
            return out
        offset += _PAGE


class _Namespace:
    """The records of one LangGraph thread and namespace, indexed once per read: the newest
    record of each checkpoint id, every blob with the checkpoint that wrote it, and the
    pending writes of each checkpoint (the first write of a task's index kept)."""

    def __init__(self, thread_id: str, ns: str, records: Sequence[RememCheckpoint]) -> None:
        self.thread_id, self.ns = thread_id, ns
        self.checkpoints: dict[str, Mapping[str, Any]] = {}
        self.blobs: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
        self.writes: dict[str, dict[tuple[str, int], tuple[str, str, list[str], str]]] = {}
        for saved in reversed(records):  # oldest first
            data = saved.state[_KEY]
            if data["kind"] == "checkpoint":
                self.checkpoints[data["id"]] = data
                for channel, version, typed in data["blobs"]:
                    self.blobs.setdefault((channel, json.dumps(version)), []).append(
                        (data["id"], typed))
            elif data["kind"] == "writes":
                kept = self.writes.setdefault(data["checkpoint_id"], {})
                for task_id, channel, typed, path, idx in data["writes"]:
                    if idx < 0 or (task_id, idx) not in kept:
                        kept[(task_id, idx)] = (task_id, channel, typed, path)

    def blob(self, record: Mapping[str, Any], channel: str, version: Any) -> list[str] | None:
        """The value of ``channel`` at ``version`` as ``record`` sees it. Several records
        wrote the same channel and version only with integer versions (threads saved before
        :meth:`RememSaver.get_next_version` made versions unique), one per branch: the one
        on ``record``'s branch is the record itself or its nearest ancestor that wrote it."""
        found = self.blobs.get((channel, json.dumps(version)))
        if not found:
            return None
        if len(found) > 1:
            by_writer = dict(found)  # a checkpoint saved twice: its newest record
            current: Any = record["id"]
            seen: set[str] = set()
            while current is not None and current not in seen:
                if current in by_writer:
                    return by_writer[current]
                seen.add(current)
                current = (self.checkpoints.get(current) or {}).get("parent")
        return found[-1][1]  # the only one, or (off every branch we know) the newest


class RememSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints in remem threads (``ThreadStore`` on SQLite or PostgreSQL).

    ``RememSaver(threads)`` uses a thread store you opened; :meth:`open` opens one by
    location (the same file or DSN as the store, if you like).
    """

    def __init__(self, threads: ThreadAPI, *, serde: SerializerProtocol | None = None,
                 owns_threads: bool = False) -> None:
        super().__init__(serde=serde)
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememSaver needs remem threads (a ThreadStore), got "
                                    f"{type(threads).__name__}")
        self.threads = threads
        self._owns = owns_threads

    @classmethod
    def open(cls, location: str = ":memory:", **options: Any) -> RememSaver:
        """A saver over a new :class:`~remem.threads.ThreadStore` at ``location``."""
        return cls(ThreadStore(location, **options), owns_threads=True)

    def close(self) -> None:
        """Close the thread store if :meth:`open` opened it."""
        if self._owns and isinstance(self.threads, ThreadStore):
            self.threads.close()

    def __enter__(self) -> RememSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RememSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- drivers ------------------------------------------------------------------------------

    def _run(self, flow: Flow) -> Any:
        request = next(flow)
        while True:
            value: Any = None
            failure: RememError | None = None
            try:
                value = self.threads.run(request)
            except (NotFoundError, ConflictError) as error:
                failure = error  # the flow decides what a missing thread means
            try:
                request = flow.throw(failure) if failure is not None else flow.send(value)
            except StopIteration as stop:
                return stop.value

    async def _arun(self, flow: Flow) -> Any:
        request = next(flow)
        while True:
            value: Any = None
            failure: RememError | None = None
            try:
                value = await self.threads.arun(request)
            except (NotFoundError, ConflictError) as error:
                failure = error  # the flow decides what a missing thread means
            try:
                request = flow.throw(failure) if failure is not None else flow.send(value)
            except StopIteration as stop:
                return stop.value

    # -- flows --------------------------------------------------------------------------------

    def _tuple(self, space: _Namespace, record: Mapping[str, Any]) -> CheckpointTuple:
        """A checkpoint record as LangGraph's tuple: channel values from the blobs of its
        branch, pending writes of this checkpoint in LangGraph's order."""
        checkpoint: Checkpoint = self.serde.loads_typed(_untyped(record["checkpoint"]))
        values = {}
        for channel, version in checkpoint["channel_versions"].items():
            typed = space.blob(record, channel, version)
            if typed is not None and typed[0] != "empty":
                values[channel] = self.serde.loads_typed(_untyped(typed))
        writes = space.writes.get(record["id"], {})
        ordered = sorted(writes.items(), key=lambda entry: writes_sort_key(
            entry[1][3], entry[0][0], entry[0][1]))
        parent = record.get("parent")
        thread_id, ns = space.thread_id, space.ns
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                     "checkpoint_id": record["id"]}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(_untyped(record["metadata"])),
            parent_config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                            "checkpoint_id": parent}} if parent else None,
            pending_writes=[(task_id, channel, self.serde.loads_typed(_untyped(typed)))
                            for _, (task_id, channel, typed, _path) in ordered],
        )

    def _get_flow(self, config: RunnableConfig) -> Flow:
        thread_id = _thread_id(config)
        ns = str(_configurable(config).get("checkpoint_ns", ""))
        records = yield from _records(thread_key(thread_id, ns))
        space = _Namespace(thread_id, ns, records)
        wanted = get_checkpoint_id(config)
        if wanted:
            record = space.checkpoints.get(wanted)
        else:
            record = space.checkpoints[max(space.checkpoints)] if space.checkpoints else None
        return None if record is None else self._tuple(space, record)

    def _list_flow(self, config: RunnableConfig | None, filter: Mapping[str, Any] | None,
                   before: RunnableConfig | None, limit: int | None) -> Flow:
        configurable = _configurable(config)
        where: dict[str, Any] = {"lg_thread": {"$exists": True}}
        if config is not None:
            where = {"lg_thread": _thread_id(config)}
            if configurable.get("checkpoint_ns") is not None:
                where["lg_ns"] = str(configurable["checkpoint_ns"])
        infos = []
        offset = 0
        while True:
            page = yield ListThreadsRequest.of(filter=where, limit=_PAGE, offset=offset)
            infos.extend(page)
            if len(page) < _PAGE:
                break
            offset += _PAGE
        # threads and namespaces in the order they were first saved (InMemorySaver: its dict
        # order), each newest checkpoint first
        infos.sort(key=lambda info: (info.created_at, info.thread_id))
        wanted = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        out: list[CheckpointTuple] = []
        for info in infos:
            thread_id, ns = str(info.metadata["lg_thread"]), str(info.metadata["lg_ns"])
            space = _Namespace(thread_id, ns, (yield from _records(info.thread_id)))
            for record in sorted(space.checkpoints.values(), key=lambda r: r["id"],
                                 reverse=True):
                if wanted and record["id"] != wanted:
                    continue
                if before_id and record["id"] >= before_id:
                    continue
                if filter:
                    metadata = self.serde.loads_typed(_untyped(record["metadata"]))
                    if not all(metadata.get(key) == value for key, value in filter.items()):
                        continue
                if limit is not None and len(out) >= limit:
                    return out
                out.append(self._tuple(space, record))
        return out

    def _ensure_thread(self, thread_id: str, ns: str) -> Flow:
        key = thread_key(thread_id, ns)
        try:
            yield GetThreadRequest.of(thread_id=key)
        except NotFoundError:
            with contextlib.suppress(ConflictError):  # created meanwhile by another writer
                yield CreateThreadRequest.of(thread_id=key, metadata={
                    "lg_thread": thread_id, "lg_ns": ns})
        return key

    def _put_flow(self, config: RunnableConfig, checkpoint: Checkpoint,
                  metadata: CheckpointMetadata, new_versions: ChannelVersions) -> Flow:
        thread_id = _thread_id(config)
        ns = str(_configurable(config).get("checkpoint_ns", ""))
        key = yield from self._ensure_thread(thread_id, ns)
        copy: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = copy.pop("channel_values", None) or {}
        blobs = [[channel, version, _typed(self.serde.dumps_typed(values[channel]))
                  if channel in values else ["empty", ""]]
                 for channel, version in new_versions.items()]
        record = {"kind": "checkpoint", "id": checkpoint["id"],
                  "parent": _configurable(config).get("checkpoint_id"),
                  "checkpoint": _typed(self.serde.dumps_typed(copy)),
                  "metadata": _typed(self.serde.dumps_typed(
                      get_checkpoint_metadata(config, metadata))),
                  "blobs": blobs}
        yield UpdateStateRequest.of(thread_id=key, state={_KEY: record}, merge=False,
                                    metadata={"lg_checkpoint": checkpoint["id"]})
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                 "checkpoint_id": checkpoint["id"]}}

    def _put_writes_flow(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                         task_id: str, task_path: str) -> Flow:
        thread_id = _thread_id(config)
        ns = str(_configurable(config).get("checkpoint_ns", ""))
        checkpoint_id = _configurable(config).get("checkpoint_id")
        key = yield from self._ensure_thread(thread_id, ns)
        entries = [[task_id, channel, _typed(self.serde.dumps_typed(value)), task_path,
                    WRITES_IDX_MAP.get(channel, position)]
                   for position, (channel, value) in enumerate(writes)]
        record = {"kind": "writes", "checkpoint_id": checkpoint_id, "writes": entries}
        yield UpdateStateRequest.of(thread_id=key, state={_KEY: record}, merge=False,
                                    metadata={"lg_writes": str(checkpoint_id)})

    def _delete_flow(self, thread_id: str) -> Flow:
        while True:
            page = yield ListThreadsRequest.of(filter={"lg_thread": str(thread_id)},
                                               limit=_PAGE)
            for info in page:
                yield DeleteThreadRequest.of(thread_id=info.thread_id)
            if len(page) < _PAGE:
                return None

    # -- LangGraph's API ----------------------------------------------------------------------

    def get_next_version(self, current: str | int | None, channel: None = None) -> Any:
        """The version after ``current``, as LangGraph's SQL savers make them: a zero-padded
        counter and a random fraction (``"000...0003.0.4217..."``), so versions order by the
        counter and two branches forked from one checkpoint never share one (their blobs
        would overwrite each other). Integer versions (threads saved by earlier remem
        releases) stay integers: LangGraph takes the ``max`` of a checkpoint's versions,
        which cannot compare an integer with a string."""
        if isinstance(current, int):
            return current + 1
        counter = str(current).split(".")[0] if current is not None else "0"
        if not counter.isdigit():
            raise InvalidInputError(f"channel version {current!r} is not one LangGraph's savers "
                                    f"make: an integer, or a string '<counter>.<fraction>'")
        return f"{int(counter) + 1:032}.{random.random():016}"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the latest)."""
        result: CheckpointTuple | None = self._run(self._get_flow(config))
        return result

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first per thread and namespace, matching ``filter`` (metadata
        equality), older than ``before``, at most ``limit``."""
        yield from self._run(self._list_flow(config, filter, before, limit))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint,
            metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        """Save a checkpoint; return the config that names it."""
        result: RunnableConfig = self._run(self._put_flow(config, checkpoint, metadata,
                                                          new_versions))
        return result

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        """Save the pending writes of a task for the checkpoint ``config`` names."""
        self._run(self._put_writes_flow(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a LangGraph thread (all its namespaces)."""
        self._run(self._delete_flow(thread_id))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        result: CheckpointTuple | None = await self._arun(self._get_flow(config))
        return result

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        for item in await self._arun(self._list_flow(config, filter, before, limit)):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Async :meth:`put`."""
        result: RunnableConfig = await self._arun(self._put_flow(config, checkpoint, metadata,
                                                                 new_versions))
        return result

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        """Async :meth:`put_writes`."""
        await self._arun(self._put_writes_flow(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._arun(self._delete_flow(thread_id))
