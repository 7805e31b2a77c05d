"""MemoryStoreManager: extraction against a store, from conversation to committed changes.

One ``add``:

1. fills the namespace template from the call's config;
2. reads, in one batch, the exact candidates (same content or same input already remembered),
   then keyword, then hybrid candidates for queries derived from the conversation (each
   distinct query searched once). Exact and lexical candidates come first, so an exact-name
   duplicate is never crowded out by embedding neighbours;
3. stops there when the input is an exact duplicate: no LLM call, no change;
4. asks the :class:`~remem.memory.manager.MemoryManager` (one structured call);
5. takes the namespace's write lock, re-reading the candidates in the same batch. If they
   changed meanwhile (another writer), the decision is made again on the fresh state;
   otherwise the plan (:mod:`remem.memory.reconcile`) and its history are written with the
   lock's release in one atomic batch.

Effects once: an add given an ``idempotency_key`` (a background job's id) writes a marker under
:data:`APPLIED_NAMESPACE` in the same batch as its changes, and its history events carry the
key as their ``change_id``. An add with a key already applied (a job re-run after a crash)
writes nothing and calls no model.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from remem.errors import ConflictError, InvalidInputError
from remem.llm.base import ChatModel, Usage
from remem.memory.flow import Flow, StoreBatch, run_async, run_sync
from remem.memory.locking import LockSettings
from remem.memory.manager import (
    Fact,
    MemoryExtraction,
    MemoryManager,
    MemoryUpdate,
    NewMemory,
    format_conversation,
)
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.reconcile import Change, ChangeContext, Plan, Skip, plan_changes
from remem.memory.records import (
    RESERVED_LABEL,
    MemoryRecord,
    Source,
    content_hash,
    current_filter,
    memory_records,
    normalize_text,
)
from remem.memory.writer import commit, head_of, head_op
from remem.messages.types import Message
from remem.retrieval.context import turn_contexts
from remem.store.base import BaseStore
from remem.store.types import GetOp, Item, Namespace, Op, PutOp, Result, SearchOp

__all__ = ["APPLIED_NAMESPACE", "AddResult", "MemoryStoreManager", "Split", "derive_queries",
           "input_hash", "speaker_of", "split_groups", "split_texts"]

#: how ``add(infer=False)`` turns a conversation into memories: one per user message, one
#: per turn (a user message and the replies up to the next one), or one for everything
Split = Literal["user_messages", "turns", "none"]

#: where an add with an ``idempotency_key`` records that its changes were written (one item
#: per key, written in the batch of the changes)
APPLIED_NAMESPACE: Namespace = (RESERVED_LABEL, "applied")


def _applied_read(key: str | None) -> list[Op]:
    return [GetOp(APPLIED_NAMESPACE, key)] if key is not None else []


def _already_applied(ns: Namespace, key: str) -> AddResult:
    return AddResult(ns, skipped=(Skip(f"already applied (idempotency key {key})"),))


@dataclass(frozen=True, slots=True)
class AddResult:
    """What an ``add`` did and what it cost.

    ``changes``: applied changes (``add``, ``invalidate``...), each with its history event id;
    ``skipped``: decided changes that were not needed (duplicates); ``usage``: LLM calls and
    tokens; ``write_attempts``: how many times the write phase ran (> 1 after a conflict);
    ``rejected``: problems in a model answer that the model then fixed; ``inferred``: whether
    a chat model extracted the memories (``False``: the text was stored as given).
    """

    namespace: Namespace
    changes: tuple[Change, ...] = ()
    skipped: tuple[Skip, ...] = ()
    usage: Usage = field(default_factory=Usage)
    write_attempts: int = 0
    rejected: tuple[str, ...] = ()
    inferred: bool = True

    @property
    def added(self) -> list[MemoryRecord]:
        """Memories created by this add."""
        return [c.memory for c in self.changes if c.op == "add"]

    @property
    def invalidated(self) -> list[MemoryRecord]:
        """Memories this add made invalid (superseded or soft-deleted)."""
        return [c.memory for c in self.changes if c.op == "invalidate"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "namespace": list(self.namespace),
            "changes": [c.to_dict() for c in self.changes],
            "skipped": [s.to_dict() for s in self.skipped],
            "usage": {"llm_calls": self.usage.calls, "input_tokens": self.usage.input_tokens,
                      "output_tokens": self.usage.output_tokens},
            "write_attempts": self.write_attempts,
            "rejected": list(self.rejected),
            "inferred": self.inferred,
        }


def derive_queries(messages: Sequence[Message], limit: int) -> list[str]:
    """Search queries for related memories: the text of each user and assistant message,
    distinct after normalisation, the most recent ``limit`` ones."""
    seen: dict[str, str] = {}
    for message in messages:
        if message.role not in ("user", "assistant"):
            continue
        text = message.text.strip()
        key = normalize_text(text)
        if key:
            seen.pop(key, None)
            seen[key] = text[:1000]
    return list(seen.values())[-limit:]


def split_groups(messages: Sequence[Message], split: Split) -> list[list[int]]:
    """The positions (in ``messages``) of the messages each memory ``add(infer=False)``
    stores holds: one user message, a turn, or every message (system messages and empty
    texts left out)."""
    groups: list[list[int]] = []
    for position, message in enumerate(messages):
        if not message.text.strip() or message.role == "system":
            continue
        if split == "user_messages":
            if message.role == "user":
                groups.append([position])
        elif split == "none":
            groups[:1] = [[*(groups[0] if groups else []), position]]
        elif message.role == "user" or not groups:  # turns: a user message opens one
            groups.append([position])
        else:
            groups[-1].append(position)
    return groups


def split_texts(messages: Sequence[Message], split: Split) -> list[str]:
    """The texts ``add(infer=False)`` stores for ``messages`` (system messages and empty
    texts left out; a turn's or the whole conversation's messages joined by line breaks)."""
    return ["\n".join(messages[i].text.strip() for i in group)
            for group in split_groups(messages, split)]


def speaker_of(messages: Sequence[Message]) -> str | None:
    """Who said ``messages``: the one name (else role) of those with text, system messages
    aside; ``None`` when several people did, or nobody."""
    said = {message.name or message.role for message in messages
            if message.text.strip() and message.role != "system"}
    return said.pop() if len(said) == 1 else None


def _said(messages: Sequence[Message], group: Sequence[int], thread_id: str | None,
          digest: str) -> tuple[Source, float | None]:
    """The source and time of the memory holding ``messages[group]``: its thread, its
    messages, their speaker and the first one's position (1-based); the latest message's
    time."""
    held = [messages[i] for i in group]
    return (Source(thread_id=thread_id, message_ids=tuple(m.id for m in held),
                   input_hash=digest, speaker=speaker_of(held), turn=group[0] + 1),
            max((m.created_at for m in held), default=None))


def _in_context(texts: Sequence[str], said: Sequence[tuple[Source, float | None]]
                ) -> list[tuple[Source, float | None]]:
    """Each memory's source with its keyword context: the memory before it in the same add
    and the day it was said (one add is one stretch of one conversation)."""
    times = [None if when is None else datetime.fromtimestamp(when, UTC) for _, when in said]
    contexts = turn_contexts(texts, times=times)
    return [(replace(source, context=context or None), when)
            for (source, when), context in zip(said, contexts, strict=True)]


def input_hash(messages: Sequence[Message]) -> str:
    """Hash of a conversation's normalised text (an identical later input is a no-op)."""
    text = normalize_text(format_conversation(messages))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def as_message_list(messages: Sequence[Message] | Message | str,
                    now: float | None = None) -> tuple[Message, ...]:
    """A string becomes one user message (sent at ``now``, when given); a message or a
    sequence of them is kept, with their own times."""
    if isinstance(messages, str):
        return (Message.user(messages) if now is None
                else Message.user(messages, created_at=now),)
    if isinstance(messages, Message):
        return (messages,)
    out = tuple(messages)
    for position, message in enumerate(out):
        if not isinstance(message, Message):
            raise InvalidInputError(
                f"messages[{position}] is a {type(message).__name__}; pass remem Message "
                "values, OpenAI-style dicts (through remem.Memory) or a string"
            )
    return out


@dataclass(slots=True)
class _Read:
    ops: list[Op]
    exact_slot: int


class MemoryStoreManager:
    """Extract memories from conversations into a store, reconciled with what it holds.

    ``manager``: a :class:`MemoryManager` (or a chat model, for one with the defaults).
    ``namespace``: a template such as ``("memories", "{user_id}")`` filled from each call's
    config. ``search_limit`` results per query and signal, ``max_queries`` queries, at most
    ``max_candidates`` existing memories shown to the model. ``hard_delete``: deletes remove
    records instead of invalidating them. ``max_attempts``: write attempts after conflicts
    before :class:`~remem.errors.ConflictError`.
    """

    def __init__(self, store: BaseStore, manager: MemoryManager | ChatModel | None = None, *,
                 namespace: NamespaceTemplate | Sequence[str] = ("memories", "{user_id}"),
                 search_limit: int = 5, max_queries: int = 4, max_candidates: int = 10,
                 hard_delete: bool = False, max_attempts: int = 4,
                 lock: LockSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        for name, value in (("search_limit", search_limit), ("max_queries", max_queries),
                            ("max_candidates", max_candidates), ("max_attempts", max_attempts)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be an integer >= 1, got {value!r}")
        self.store = store
        #: the LLM extraction step (schemas, instructions, the chat model)
        self.extractor = (manager if isinstance(manager, MemoryManager)
                          else MemoryManager(manager))
        self.template = NamespaceTemplate.of(namespace)
        self.search_limit = search_limit
        self.max_queries = max_queries
        self.max_candidates = max_candidates
        self.hard_delete = hard_delete
        self.max_attempts = max_attempts
        self.lock = lock or LockSettings()
        self.clock = clock

    # -- reading ----------------------------------------------------------------------------------

    def _reads(self, namespace: Namespace, messages: Sequence[Message], digest: str) -> _Read:
        texts = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
        text_hashes = [content_hash(schema.__name__, text) for text in texts
                       for schema in self.extractor.schemas if issubclass(schema, Fact)]
        current = current_filter()
        ops: list[Op] = [SearchOp(namespace, filter={
            **current,
            "$or": [{"content_hash": {"$in": text_hashes or [""]}},
                    {"source.input_hash": digest}],
        }, limit=self.max_candidates)]
        queries = derive_queries(messages, self.max_queries)
        keyword = self.store.keyword is not None
        vector = self.store.index is not None
        for query in queries:
            if keyword:
                ops.append(SearchOp(namespace, filter=current, query=query,
                                    limit=self.search_limit, mode="keyword"))
        for query in queries:
            if vector:
                ops.append(SearchOp(namespace, filter=current, query=query,
                                    limit=self.search_limit,
                                    mode="hybrid" if keyword else "vector"))
        if not (keyword or vector) or not queries:  # no ranking possible: the newest ones
            ops.append(SearchOp(namespace, filter=current, limit=self.max_candidates))
        return _Read(ops, 0)

    def _candidates(self, results: Sequence[Result]) -> list[MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        for result in results:
            assert isinstance(result, list)
            # a record that does not parse is no candidate (reported, never fatal)
            for record in memory_records(i for i in result if isinstance(i, Item)):
                if len(found) >= self.max_candidates:
                    break
                found.setdefault(record.id, record)
        return list(found.values())

    @staticmethod
    def _is_exact_duplicate(exact: Sequence[Item], messages: Sequence[Message],
                            digest: str, schemas: Sequence[str]) -> MemoryRecord | None:
        records = memory_records(exact)
        for record in records:
            if record.source.input_hash == digest:
                return record
        texts = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
        hashes = {record.content_hash: record for record in records}
        matched = [hashes.get(content_hash(name, text)) for text in texts for name in schemas]
        hits = [r for r in matched if r is not None]
        if texts and len(hits) >= len(texts):
            return hits[0]
        return None

    # -- the add flow -----------------------------------------------------------------------------

    def namespace_for(self, config: Mapping[str, Any] | None) -> Namespace:
        """The namespace the template gives for ``config``."""
        return self.template.fill(config or {})

    def add_flow(self, messages: Sequence[Message] | Message | str,
                 config: Mapping[str, Any] | None = None, *, namespace: Namespace | None = None,
                 infer: bool = True, metadata: Mapping[str, Any] | None = None,
                 actor: str = "user", thread_id: str | None = None,
                 kind: str = "fact", split: Split = "user_messages",
                 idempotency_key: str | None = None) -> Flow[AddResult]:
        """The add as a flow (see the module docstring); ``split``: how ``infer=False``
        stores a conversation (:func:`split_texts`); ``idempotency_key``: apply the
        changes at most once under this key."""
        ns = namespace if namespace is not None else self.namespace_for(config)
        key = idempotency_key
        if key is not None:
            [marker] = yield StoreBatch(_applied_read(key))
            if isinstance(marker, Item):
                return _already_applied(ns, key)
        now = self.clock()
        msgs = as_message_list(messages, now)
        digest = input_hash(msgs)
        ctx_source = Source(thread_id=thread_id, message_ids=tuple(m.id for m in msgs),
                            input_hash=digest, speaker=speaker_of(msgs))
        event_time = max((m.created_at for m in msgs), default=None)
        if not infer:
            if split not in ("user_messages", "turns", "none"):
                raise InvalidInputError(f"split must be 'user_messages', 'turns' or 'none', "
                                        f"got {split!r}")
            groups = split_groups(msgs, split)
            if not groups:
                raise InvalidInputError(
                    f"add(infer=False, split={split!r}) got no text to store"
                    + (": there is no user message with text; pass split='turns' or "
                       "split='none' to store the other messages"
                       if split == "user_messages" and split_texts(msgs, "none")
                       else "; pass a non-empty string or messages with text"))
            texts = ["\n".join(msgs[i].text.strip() for i in group) for group in groups]
            said = _in_context(texts, [_said(msgs, group, thread_id, digest)
                                       for group in groups])
            memories = [NewMemory(text, kind, "Fact", source=source, event_time=when)
                        for text, (source, when) in zip(texts, said, strict=True)]
            return (yield from self.store_flow(ns, memories,
                                               source=ctx_source, event_time=event_time,
                                               metadata=metadata, actor=actor,
                                               idempotency_key=key))
        if not format_conversation(msgs):
            return AddResult(ns)
        read = self._reads(ns, msgs, digest)
        results = yield StoreBatch([*read.ops, head_op(ns)])
        head = head_of(results.pop())
        names = [s.__name__ for s in self.extractor.schemas if issubclass(s, Fact)]
        exact = results[read.exact_slot]
        assert isinstance(exact, list)
        duplicate = self._is_exact_duplicate(exact, msgs, digest, names)
        if duplicate is not None:
            return AddResult(ns, skipped=(Skip("duplicate input", None, duplicate.id),))
        usage = Usage()
        rejected: list[str] = []
        candidates = self._candidates(results)
        for attempt in range(1, self.max_attempts):
            extraction = yield from self.extractor.extract_flow(msgs, candidates, now)
            usage = usage + extraction.usage
            rejected += extraction.rejected
            if extraction.empty:
                return AddResult(ns, usage=usage, rejected=tuple(rejected))
            try:
                plan = yield from self._write(ns, candidates, extraction, ctx_source,
                                              event_time, metadata, actor, (read.ops, head),
                                              key)
            except _Stale as stale:
                candidates, head = stale.candidates, stale.head
                continue
            except ConflictError:
                results = yield StoreBatch([*read.ops, head_op(ns)])
                head = head_of(results.pop())
                candidates = self._candidates(results)
                continue
            return AddResult(ns, tuple(plan.changes), tuple(plan.skipped), usage, attempt,
                             tuple(rejected))
        # other writers kept changing related memories: decide while holding the lock, so
        # this last attempt cannot be overtaken
        holder = _Decision()

        def decide(fresh: list[Result], head: int) -> Flow[Plan]:
            extraction = yield from self.extractor.extract_flow(msgs, self._candidates(fresh),
                                                                now)
            holder.extraction = extraction
            duplicates = yield StoreBatch([self._hash_search(ns, extraction)])
            return self._plan(ns, extraction, [*fresh, *duplicates], ctx=ctx)

        ctx = self._context(ctx_source, event_time, metadata, actor, True, key)
        plan = yield from commit(ns, [*read.ops, *_applied_read(key)],
                                 self._once(ns, key, ctx, decide), self._held_lock())
        if holder.extraction is None:  # another run of the same key got there first
            return AddResult(ns, skipped=tuple(plan.skipped), usage=usage,
                             write_attempts=self.max_attempts, rejected=tuple(rejected))
        usage = usage + holder.extraction.usage
        rejected += holder.extraction.rejected
        return AddResult(ns, tuple(plan.changes), tuple(plan.skipped), usage,
                         self.max_attempts, tuple(rejected))

    def store_flow(self, namespace: Namespace, memories: Sequence[NewMemory], *,
                   source: Source | None = None, event_time: float | None = None,
                   metadata: Mapping[str, Any] | None = None,
                   actor: str = "user",
                   idempotency_key: str | None = None) -> Flow[AddResult]:
        """Store ``memories`` as given (no LLM call); exact duplicates of current memories
        are skipped. One write under the namespace's lock."""
        extraction = MemoryExtraction(inserts=tuple(memories))
        plan = yield from self._write(namespace, [], extraction, source or Source(),
                                      event_time, metadata, actor, None, idempotency_key)
        return AddResult(namespace, tuple(plan.changes), tuple(plan.skipped), Usage(), 1,
                         inferred=False)

    def _context(self, source: Source, event_time: float | None,
                 metadata: Mapping[str, Any] | None, actor: str, extracted: bool,
                 idempotency_key: str | None = None) -> ChangeContext:
        ctx = ChangeContext(now=self.clock(), actor=actor, source=source,
                            event_time=event_time, metadata=dict(metadata or {}),
                            reason="extracted from conversation" if extracted
                            else "stored as given")
        # the events of a keyed add share its key as their change id: history names the job
        return replace(ctx, change_id=idempotency_key) if idempotency_key else ctx

    @staticmethod
    def _once(ns: Namespace, key: str | None, ctx: ChangeContext,
              plan_for: Callable[[list[Result], int], Flow[Plan]]
              ) -> Callable[[list[Result], int], Flow[Plan]]:
        """``plan_for`` made idempotent under ``key``: the commit's reads end with the
        key's marker (read under the lock); when present, nothing is planned; otherwise the
        plan also writes the marker, in the same atomic batch as its changes."""
        if key is None:
            return plan_for

        def once(results: list[Result], head: int) -> Flow[Plan]:
            if isinstance(results[-1], Item):
                return Plan(skipped=[Skip(f"already applied (idempotency key {key})")])
            plan = yield from plan_for(results[:-1], head)
            if plan.ops:
                plan.ops.append(PutOp(APPLIED_NAMESPACE, key, {
                    "type": "applied", "namespace": list(ns), "at": ctx.now,
                    "events": [change.event_id for change in plan.changes]},
                    index=False, ttl=None))
            return plan

        return once

    def _held_lock(self) -> LockSettings:
        # the model is called while the lock is held: the ticket must outlive that call
        return LockSettings(ttl=max(self.lock.ttl, 120.0), timeout=self.lock.timeout)

    @staticmethod
    def _hash_search(ns: Namespace, extraction: MemoryExtraction) -> SearchOp:
        """Current memories with the content of any insert or update (exact duplicates)."""
        contents: list[NewMemory | MemoryUpdate] = [*extraction.inserts, *extraction.updates]
        hashes = sorted({content_hash(c.schema, c.content) for c in contents}) or [""]
        return SearchOp(ns, filter={**current_filter(), "content_hash": {"$in": hashes}},
                        limit=len(hashes) + 10)

    def _plan(self, ns: Namespace, extraction: MemoryExtraction, results: Sequence[Result], *,
              ctx: ChangeContext) -> Plan:
        """Plan ``extraction`` against the records of ``results`` (read under the lock): they
        are its possible targets and the current memories it may duplicate."""
        records: dict[str, MemoryRecord] = {}
        for result in results:
            found = result if isinstance(result, list) else [result]
            memories = [i for i in found if isinstance(i, Item) and i.value.get("type") == "memory"]
            for record in memory_records(memories):
                records.setdefault(record.id, record)
        current = {k: r for k, r in records.items() if r.invalid_at is None}
        by_hash = {r.content_hash: r for r in current.values()}
        return plan_changes(extraction, ns, current, by_hash, ctx, hard_delete=self.hard_delete)

    def _write(self, ns: Namespace, candidates: Sequence[MemoryRecord],
               extraction: MemoryExtraction, source: Source, event_time: float | None,
               metadata: Mapping[str, Any] | None,
               actor: str, recheck: tuple[Sequence[Op], int] | None,
               idempotency_key: str | None = None) -> Flow[Plan]:
        """Commit ``extraction`` under the lock.

        ``recheck``: the candidate reads and the namespace counter seen when the model was
        asked. If the namespace changed since (the counter moved), the candidate reads run
        again under the lock; if a candidate the model saw changed, or a new related memory
        appeared, :class:`_Stale` carries the fresh candidates (the model must decide again).
        """
        targets = [u.id for u in extraction.updates] + list(extraction.deletes)
        seen = {(r.id, r.version) for r in candidates}
        reads: list[Op] = [
            self._hash_search(ns, extraction),
            *(GetOp(ns, target) for target in targets),
        ]
        ctx = self._context(source, event_time, metadata, actor, recheck is not None,
                            idempotency_key)

        def plan_for(results: list[Result], head: int) -> Flow[Plan]:
            if recheck is not None and head != recheck[1]:
                again = yield StoreBatch(recheck[0])
                fresh = self._candidates(again)
                if {(r.id, r.version) for r in fresh} != seen:
                    raise _Stale(fresh, head)
                results = [*results, *again]
            return self._plan(ns, extraction, results, ctx=ctx)

        plan = yield from commit(ns, [*reads, *_applied_read(idempotency_key)],
                                 self._once(ns, idempotency_key, ctx, plan_for), self.lock)
        return plan

    def add(self, messages: Sequence[Message] | Message | str,
            config: Mapping[str, Any] | None = None, **options: Any) -> AddResult:
        """Extract memories from ``messages`` into the namespace ``config`` selects.

        Options: ``namespace`` (instead of the template), ``infer`` (``False`` stores the text
        as is), ``metadata``, ``actor``, ``thread_id``, ``kind``.
        """
        return run_sync(self.add_flow(messages, config, **options), self.store,
                        self.extractor.model)

    async def aadd(self, messages: Sequence[Message] | Message | str,
                   config: Mapping[str, Any] | None = None, **options: Any) -> AddResult:
        """Async :meth:`add`."""
        return await run_async(self.add_flow(messages, config, **options), self.store,
                               self.extractor.model)


class _Decision:
    """Where the locked last attempt leaves the model's decision."""

    extraction: MemoryExtraction | None = None


class _Stale(Exception):
    """The candidates changed between the model's decision and the write."""

    def __init__(self, candidates: list[MemoryRecord], head: int) -> None:
        super().__init__("candidates changed")
        self.candidates = candidates
        self.head = head
