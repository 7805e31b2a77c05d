"""Context assembly as a request value, and the thin sync and async shells that run it.

:class:`ContextRequest` declares the operation once (like every memory request). Running it
gathers each selected section's items (:func:`assemble` calls ``gather``, :func:`aassemble`
``agather``, concurrently) and hands them to the pure packer (:func:`~remem.context.packing.pack`),
so the sync and async paths differ only in how they read.

Sections are selected by name or given as objects, highest priority first. The default is
:data:`DEFAULT_ORDER` followed by every section registered with :func:`register_section`
(core memory blocks, memory files, graph facts... each register theirs).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field, PlainSerializer, PlainValidator, WithJsonSchema

from remem.context.packing import SectionOffer, pack
from remem.context.sections import (
    MemoriesSection,
    ProfileSection,
    RecentMessagesSection,
    SummarySection,
)
from remem.context.types import ContextMemory, ContextResult, ContextScope, ContextSection
from remem.errors import InvalidInputError, UsageError
from remem.memory.requests import MemoryRequest, Query
from remem.requests import NamespacePath, ScopeId
from remem.threads.requests import LocalCounter
from remem.tokens import DEFAULT_COUNTER

if TYPE_CHECKING:
    from remem.threads.api import ThreadAPI

__all__ = ["DEFAULT_ORDER", "ContextRequest", "aassemble", "assemble", "register_section",
           "registered_sections", "unregister_section"]

#: the built-in sections, highest priority first
DEFAULT_ORDER = ("profile", "memories", "summary", "recent")
_BUILT_IN = frozenset(DEFAULT_ORDER)
_REGISTERED: dict[str, ContextSection] = {}
# sections may be registered while other threads assemble: every read takes a snapshot
_REGISTERED_LOCK = threading.Lock()


def register_section(section: ContextSection) -> None:
    """Make ``section`` selectable by its name and part of the default assembly (after the
    built-in ones). Registering a name again replaces the earlier section."""
    if not isinstance(section, ContextSection):
        raise InvalidInputError(f"register_section needs a ContextSection (name, title, order, "
                                f"contiguous, gather, agather), got {type(section).__name__}")
    if section.name in _BUILT_IN:
        raise InvalidInputError(f"context section name {section.name!r} is built in; "
                                "register yours under another name")
    with _REGISTERED_LOCK:
        _REGISTERED[section.name] = section


def unregister_section(name: str) -> bool:
    """Forget the section registered as ``name``; return whether there was one."""
    with _REGISTERED_LOCK:
        return _REGISTERED.pop(name, None) is not None


def registered_sections() -> tuple[str, ...]:
    """Names of the sections registered with :func:`register_section`."""
    with _REGISTERED_LOCK:
        return tuple(_REGISTERED)


def _check_sections(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError("must be a list of section names (or ContextSection objects, from "
                         f"Python), got {type(value).__name__}")
    if len(value) > 32:
        raise ValueError(f"at most 32 sections, got {len(value)}")
    for position, entry in enumerate(value):
        if isinstance(entry, str):
            if not entry or len(entry) > 64:
                raise ValueError(f"sections[{position}] must be a name of 1-64 characters")
        elif not isinstance(entry, ContextSection):
            raise ValueError(f"sections[{position}] is a {type(entry).__name__}; pass a "
                             "section name or a ContextSection")
    return tuple(value)


SectionList = Annotated[
    tuple[Any, ...] | None, PlainValidator(_check_sections),
    PlainSerializer(lambda value: None if value is None else [
        entry if isinstance(entry, str) else entry.name for entry in value]),
    WithJsonSchema({"anyOf": [{"type": "array", "items": {"type": "string", "minLength": 1,
                                                          "maxLength": 64}, "maxItems": 32},
                              {"type": "null"}]}),
]
"""Section names (or, from Python, :class:`ContextSection` objects), highest priority first."""


class ContextRequest(MemoryRequest[ContextResult]):
    """The context for a model call: profile, relevant memories, the thread's running
    summary and recent messages, packed into ``budget_tokens``."""

    operation: ClassVar[str] = "context"

    query: Query | None = Field(None, description="what the memories should be relevant to "
                                                  "(none: the newest memories)")
    user_id: ScopeId | None = Field(None, description="whose memories and profile")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")
    thread_id: ScopeId | None = Field(
        None, description="the conversation whose summary and recent messages to include")
    namespace: NamespacePath | None = Field(
        None, description="a memory namespace instead of user_id/agent_id")
    budget_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = Field(
        None, description="most tokens the context may take (null: no limit)")
    sections: SectionList = Field(
        None, description="sections to include, highest priority first (null: profile, "
                          "memories, summary, recent, then any registered)")
    memory_limit: Annotated[int, Field(ge=1, le=1000)] = Field(
        20, description="most memories offered")
    recent_limit: Annotated[int, Field(ge=0, le=10_000)] = Field(
        50, description="most recent messages offered")
    token_counter: LocalCounter = Field(None, exclude=True, description=(
        "the token counter (local only; default: the offline estimate)"))


def _built_in(name: str, request: ContextRequest,
              registered: dict[str, ContextSection]) -> ContextSection | None:
    if name == "profile":
        return ProfileSection()
    if name == "memories":
        return MemoriesSection(limit=request.memory_limit)
    if name == "summary":
        return SummarySection()
    if name == "recent":
        return RecentMessagesSection(limit=request.recent_limit)
    return registered.get(name)


def resolve_sections(request: ContextRequest) -> list[ContextSection]:
    """The sections ``request`` selects, highest priority first (names resolved to the
    built-in or registered sections). Names are resolved against one snapshot of the
    registered sections: one another thread unregisters meanwhile is either in or out of
    this assembly, never named and then missing."""
    with _REGISTERED_LOCK:
        registered = dict(_REGISTERED)
    chosen = request.sections if request.sections is not None else (
        *DEFAULT_ORDER, *registered)
    sections: list[ContextSection] = []
    for entry in chosen:
        if isinstance(entry, str):
            section = _built_in(entry, request, registered)
            if section is None:
                known = ", ".join([*DEFAULT_ORDER, *registered])
                raise InvalidInputError(f"sections: no context section named {entry!r}; the "
                                        f"sections are {known} (register others with "
                                        "remem.context.register_section)")
            sections.append(section)
        else:
            sections.append(entry)
    names = [section.name for section in sections]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InvalidInputError(f"sections: {', '.join(twice)} given more than once; name "
                                "each section once, in priority order")
    return sections


def _scope(memory: ContextMemory, request: ContextRequest, threads: ThreadAPI | None,
           sections: Sequence[ContextSection]) -> ContextScope:
    if request.thread_id is not None and threads is None and any(
            isinstance(section, SummarySection | RecentMessagesSection) for section in sections):
        # silently leaving the conversation out would hide the mistake
        raise UsageError(
            "context(thread_id=...) reads the thread's summary and recent messages from a "
            "thread store: pass threads=ThreadStore(path) (the same file works), or "
            "sections=[...] without 'summary' and 'recent' to use thread_id as the memory "
            "scope only")
    return ContextScope(memory=memory, query=request.query, user_id=request.user_id,
                        agent_id=request.agent_id, thread_id=request.thread_id,
                        namespace=tuple(request.namespace) if request.namespace else None,
                        threads=threads, counter=request.token_counter)


def _offer(section: ContextSection, items: Sequence[Any]) -> SectionOffer:
    return SectionOffer(section.name, section.title, section.order, section.contiguous,
                        tuple(items))


def assemble(memory: ContextMemory, request: ContextRequest,
             threads: ThreadAPI | None = None) -> ContextResult:
    """Gather every section of ``request`` and pack them (blocking)."""
    if not isinstance(request, ContextRequest):
        raise UsageError(f"assemble runs a ContextRequest, got {type(request).__name__}")
    sections = resolve_sections(request)
    scope = _scope(memory, request, threads, sections)
    offers = [_offer(section, section.gather(scope)) for section in sections]
    return pack(offers, request.budget_tokens, request.token_counter or DEFAULT_COUNTER)


async def aassemble(memory: ContextMemory, request: ContextRequest,
                    threads: ThreadAPI | None = None) -> ContextResult:
    """Async :func:`assemble`: the sections gather concurrently."""
    if not isinstance(request, ContextRequest):
        raise UsageError(f"aassemble runs a ContextRequest, got {type(request).__name__}")
    sections = resolve_sections(request)
    scope = _scope(memory, request, threads, sections)
    gathered = await asyncio.gather(*(section.agather(scope) for section in sections))
    offers = [_offer(section, items) for section, items in zip(sections, gathered, strict=True)]
    return pack(offers, request.budget_tokens, request.token_counter or DEFAULT_COUNTER)
