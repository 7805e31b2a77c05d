"""remem as an AutoGen memory: :class:`RememMemory` implements ``autogen_core.memory.Memory``
over a :class:`remem.Memory`, so an ``AssistantAgent(memory=[RememMemory(...)])`` gets the
memories most relevant to each user message in its model context.

* ``add`` stores a ``MemoryContent`` in the memory's scope: its text as is by default
  (``infer=False``, like AutoGen's own memories: what you add is what is kept), or extracted
  into facts by remem's chat model with ``infer=True`` (``None``: extract when a model is
  configured, as :meth:`Memory.add <remem.api.Memory.add>` does). Text, Markdown and JSON
  contents are kept (JSON comes back as the same dict); bytes and images are refused.
* ``query`` is :meth:`Memory.search <remem.api.Memory.search>`: best first, each result's
  metadata holding the stored metadata plus ``id``, ``score``, ``kind`` and ``created_at``.
* ``update_context`` searches with the last user message of the model context and adds one
  ``SystemMessage`` listing the ``limit`` best hits, most relevant first (the newest
  memories when no user message has text); AutoGen's ``ListMemory`` lists every memory,
  oldest first.
* ``clear`` forgets the scope (:meth:`Memory.delete_all <remem.api.Memory.delete_all>`:
  invalidated, kept in history, undoable); ``close`` closes a memory this object opened.
* ``dump_component`` / ``load_component`` work for one made by :meth:`RememMemory.open` on a
  SQLite file or a ``postgresql://`` DSN: the config names the location, the embedder and
  the scope, never the memories themselves.

Needs ``autogen-core`` (``pip install 'remem[autogen]'``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

from autogen_core import CancellationToken, Component
from autogen_core.memory import (
    Memory as AutogenMemory,
)
from autogen_core.memory import (
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, Field

from remem.api import Memory
from remem.embed.base import Embedder
from remem.errors import InvalidInputError, UsageError
from remem.memory.results import MemoryHit
from remem.retrieval.relevance import check_min_score

__all__ = ["RememMemory", "RememMemoryConfig"]

#: the metadata key where a stored memory keeps the MIME type it was added with
_MIME = "autogen_mime_type"
_TEXT_TYPES = (MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value)
#: the Memory.search options a query may pass (the scope is the memory's own)
_QUERY_OPTIONS = frozenset({"limit", "offset", "min_score", "filters", "mode", "as_of",
                            "include_invalid", "recency_half_life", "recency_weight", "mmr"})
EmbedderName = Literal["local", "fake", "openai", "none"]


class RememMemoryConfig(BaseModel):
    """What :meth:`RememMemory.dump_component` writes and ``load_component`` reads."""

    location: str = Field(description="the SQLite file or postgresql:// DSN of the memory")
    embedder: EmbedderName = Field(
        default="local", description="local (offline model), fake (tests), openai (REMEM_EMBED_* "
                             "settings) or none (keyword search only)")
    name: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    namespace: list[str] | None = None
    limit: int = Field(default=5, ge=1, le=1000,
                       description="memories per query and context update")
    min_score: float | None = Field(default=None, ge=0, le=1,
                                    description="drop hits whose relevance (0-1) is below it")
    infer: bool | None = False


def _embedder(name: EmbedderName) -> Embedder | bool | None:
    if name == "fake":
        from remem.embed.fake import FakeEmbedder

        return FakeEmbedder()
    if name == "openai":
        from remem.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder()
    return False if name == "none" else None  # None: Memory.open's local model


def _mime(content: MemoryContent) -> str:
    kind = content.mime_type
    return kind.value if isinstance(kind, MemoryMimeType) else str(kind)


def _text_of(content: MemoryContent) -> str:
    """The text a content is stored and searched by (JSON as sorted JSON text)."""
    value = content.content
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    raise InvalidInputError(
        f"RememMemory keeps text and JSON, got {type(value).__name__} content (mime type "
        f"{_mime(content)}): store a text description of it, and keep the data elsewhere")


def _content_of(hit: MemoryHit) -> MemoryContent:
    record = hit.memory
    stored = dict(record.metadata)
    mime = str(stored.pop(_MIME, MemoryMimeType.TEXT.value))
    value: str | dict[str, Any] = record.text
    if mime == MemoryMimeType.JSON.value:
        try:
            decoded = json.loads(record.text)
        except ValueError:  # a model's rewording of it (infer=True): text
            decoded = None
        if isinstance(decoded, dict):
            value = decoded
        else:
            mime = MemoryMimeType.TEXT.value
    return MemoryContent(content=value, mime_type=mime, metadata={
        **stored, "id": record.id, "score": hit.score, "kind": record.kind,
        "created_at": record.created_at})


def _last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                return message.content
            return " ".join(part for part in message.content if isinstance(part, str))
    return ""


class RememMemory(AutogenMemory, Component[RememMemoryConfig]):
    """An AutoGen memory over ``memory`` (a :class:`remem.Memory`), in one scope:
    ``user_id`` / ``agent_id`` / ``thread_id`` or ``namespace``, as in :meth:`Memory.add
    <remem.api.Memory.add>` (one is required). ``limit``: memories per query and per context
    update; ``min_score`` (0-1) drops hits whose relevance is below it. ``infer``: how
    ``add`` stores (see the module docstring). ``name`` identifies it among an agent's
    memories."""

    component_type = "memory"
    component_config_schema = RememMemoryConfig
    component_provider_override = "remem.integrations.autogen.RememMemory"

    def __init__(self, memory: Memory, *, user_id: str | None = None,
                 agent_id: str | None = None, thread_id: str | None = None,
                 namespace: Sequence[str] | None = None, limit: int = 5,
                 min_score: float | None = None, infer: bool | None = False,
                 name: str | None = None) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"RememMemory needs a remem.Memory, got "
                                    f"{type(memory).__name__}")
        if not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be 1 to 1000, got {limit}")
        check_min_score(min_score)
        self.memory = memory
        #: every call's scope, resolved (and checked) once
        self.namespace = memory.namespace_of(user_id, agent_id, thread_id, namespace)
        self.limit = limit
        self.min_score = min_score
        self.infer = infer
        self._name = name or "remem"
        self._scope = RememMemoryConfig(location="", user_id=user_id, agent_id=agent_id,
                                        thread_id=thread_id, namespace=list(namespace)
                                        if namespace is not None else None)
        self._opened: tuple[str, EmbedderName] | None = None

    @classmethod
    def open(cls, location: str, *, embedder: EmbedderName = "local",
             **options: Any) -> Self:
        """A memory on ``location`` (a SQLite path or ``postgresql://`` DSN) that this object
        owns (``close`` closes it) and can describe in a component config. ``embedder``:
        ``"local"`` (the offline model), ``"fake"`` (tests), ``"openai"`` or ``"none"``.
        ``options`` are :class:`RememMemory`'s."""
        memory = Memory.open(location, embedder=_embedder(embedder))
        try:
            made = cls(memory, **options)
        except BaseException:
            memory.close()
            raise
        made._opened = (location, embedder)
        return made

    @property
    def name(self) -> str:
        """The memory's name among an agent's memories."""
        return self._name

    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        """Remember ``content`` in the scope (its metadata kept with it)."""
        text = _text_of(content)
        metadata = {**(content.metadata or {}), _MIME: _mime(content)}
        await self.memory.aadd(text, namespace=self.namespace, infer=self.infer,
                               metadata=metadata)

    async def query(self, query: str | MemoryContent = "",
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """The scope's memories that best match ``query``, best first (newest first for an
        empty query); ``kwargs``: other :meth:`Memory.search <remem.api.Memory.search>`
        options (``limit``, ``min_score``, ``filters``, ``mode``...)."""
        unknown = sorted(set(kwargs) - _QUERY_OPTIONS)
        if unknown:
            raise InvalidInputError(f"RememMemory.query takes {', '.join(sorted(_QUERY_OPTIONS))}"
                                    f"; got {', '.join(unknown)}")
        text = query if isinstance(query, str) else _text_of(query)
        options = {"limit": self.limit, "min_score": self.min_score, **kwargs}
        found = await self.memory.asearch(text if text.strip() else None,
                                          namespace=self.namespace, **options)
        return MemoryQueryResult(results=[_content_of(hit) for hit in found])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the memories relevant to the context's last user message as one
        ``SystemMessage``, most relevant first (the newest ones when the context has no user
        text to rank by); nothing when the scope has no memory."""
        text = _last_user_text(await model_context.get_messages())
        found = await self.query(text)
        if found.results:
            order = "most relevant first" if text.strip() else "newest first"
            lines = [f"{n}. {_text_of(item)}" for n, item in enumerate(found.results, 1)]
            await model_context.add_message(SystemMessage(
                content=f"\nRelevant memories ({order}):\n" + "\n".join(lines) + "\n"))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Forget every memory of the scope (invalidated: kept in remem's history)."""
        await self.memory.adelete_all(namespace=self.namespace, reason="autogen clear")

    async def close(self) -> None:
        """Close the remem memory if :meth:`open` made it (one passed in stays open)."""
        if self._opened is not None:
            self.memory.close()

    def _to_config(self) -> RememMemoryConfig:
        if self._opened is None:
            raise UsageError("RememMemory can describe itself in a config only when "
                             "RememMemory.open made it (the config names the location); "
                             "use RememMemory.open(path_or_dsn, embedder=...)")
        location, embedder = self._opened
        if location in (":memory:", "memory://", ""):
            raise UsageError(f"a RememMemory on {location!r} lives in this process only: a "
                             "config could not reopen its memories; open a file or a "
                             "postgresql:// DSN")
        return self._scope.model_copy(update={
            "location": location, "embedder": embedder, "name": self._name,
            "limit": self.limit, "min_score": self.min_score, "infer": self.infer})

    @classmethod
    def _from_config(cls, config: RememMemoryConfig) -> Self:
        options: Mapping[str, Any] = config.model_dump(exclude={"location", "embedder"})
        return cls.open(config.location, embedder=config.embedder, **options)
