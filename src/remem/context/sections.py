"""The built-in context sections: the user profile, memories relevant to the query, the
thread's running summary and its most recent messages.

Each is a :class:`~remem.context.types.ContextSection`: it reads through public APIs only
(the memory facade, the store, a thread store) and offers whole items, best first. A section
with nothing to offer (no profile yet, no thread given) offers no items and is simply absent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from remem.context.types import ContextItem, ContextScope
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.records import MemoryRecord, memory_records
from remem.memory.results import SearchResult
from remem.messages.types import Message
from remem.store.types import SearchItem
from remem.threads.types import Checkpoint

__all__ = [
    "MemoriesSection",
    "ProfileSection",
    "RecentMessagesSection",
    "SummarySection",
    "default_sections",
]


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def memory_line(record: MemoryRecord) -> str:
    """A memory as one line, with the dates it holds between (the model can tell a fact from
    2019 from one stated yesterday)."""
    when = f"since {_date(record.valid_at)}"
    if record.valid_until is not None:
        when = f"from {_date(record.valid_at)} until {_date(record.valid_until)}"
    return f"- {record.text} ({when})"


def profile_lines(content: str | dict[str, Any]) -> str:
    """A profile document as ``field: value`` lines (values other than text as JSON)."""
    if not isinstance(content, dict):
        return str(content)
    return "\n".join(
        f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
        for name, value in content.items() if value not in (None, "", [], {}))


@dataclass(frozen=True, slots=True)
class ProfileSection:
    """The user's profile documents (:class:`~remem.memory.profiles.ProfileManager`), one
    item each. ``namespace``: the manager's template (default ``("profiles",
    "{user_id}")``); without the ids it needs, the section is absent."""

    namespace: tuple[str, ...] = ("profiles", "{user_id}")
    name: str = "profile"
    title: str = "User profile"
    order: int = 10
    contiguous: bool = False

    def _namespace(self, scope: ContextScope) -> tuple[str, ...] | None:
        template = NamespaceTemplate.of(self.namespace)
        values = {"user_id": scope.user_id, "agent_id": scope.agent_id,
                  "thread_id": scope.thread_id}
        if any(not values.get(name) for name in template.placeholders):
            return None
        return template.fill(values)

    def _items(self, found: Sequence[SearchItem]) -> list[ContextItem]:
        # a profile record that does not parse is left out (reported), never fatal
        records = sorted(memory_records(found), key=lambda record: record.id)
        return [ContextItem(record.id, profile_lines(record.content), order=position)
                for position, record in enumerate(records)
                if record.invalid_at is None and profile_lines(record.content)]

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """The current profiles of the scope's user."""
        namespace = self._namespace(scope)
        if namespace is None:
            return []
        return self._items(scope.memory.store.search(namespace, filter={"kind": "profile"},
                                                     limit=100))

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather`."""
        namespace = self._namespace(scope)
        if namespace is None:
            return []
        return self._items(await scope.memory.store.asearch(
            namespace, filter={"kind": "profile"}, limit=100))


@dataclass(frozen=True, slots=True)
class MemoriesSection:
    """Current memories of the scope, best first for the query (newest first without one),
    each with its validity dates; ``limit``: most memories offered."""

    limit: int = 20
    name: str = "memories"
    title: str = "Relevant memories"
    order: int = 30
    contiguous: bool = False

    def _arguments(self, scope: ContextScope) -> dict[str, Any]:
        return {"user_id": scope.user_id, "agent_id": scope.agent_id,
                "thread_id": scope.thread_id, "namespace": scope.namespace,
                "limit": self.limit}

    @staticmethod
    def _items(result: SearchResult) -> list[ContextItem]:
        return [ContextItem(hit.memory.id, memory_line(hit.memory), order=position)
                for position, hit in enumerate(result.hits)]

    def _has_scope(self, scope: ContextScope) -> bool:
        return any(value is not None for value in (scope.user_id, scope.agent_id,
                                                   scope.thread_id, scope.namespace))

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """The scope's memories for the query."""
        if not self._has_scope(scope):
            return []
        return self._items(scope.memory.search(scope.query, **self._arguments(scope)))

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather`."""
        if not self._has_scope(scope):
            return []
        return self._items(await scope.memory.asearch(scope.query, **self._arguments(scope)))


@dataclass(frozen=True, slots=True)
class SummarySection:
    """The thread's running summary (:meth:`ThreadStore.compact
    <remem.threads.api.ThreadAPI.compact>`), when it has one."""

    name: str = "summary"
    title: str = "Conversation summary"
    order: int = 40
    contiguous: bool = False

    @staticmethod
    def _items(head: Checkpoint) -> list[ContextItem]:
        return [ContextItem(f"summary@{head.id}", head.summary)] if head.summary else []

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """The summary at the thread's head."""
        if scope.threads is None or scope.thread_id is None:
            return []
        return self._items(scope.threads.checkpoint(scope.thread_id))

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather`."""
        if scope.threads is None or scope.thread_id is None:
            return []
        return self._items(await scope.threads.acheckpoint(scope.thread_id))


def conversation_units(messages: Sequence[Message], first_position: int) -> list[ContextItem]:
    """Messages as items, newest first: one turn each (a user message and the replies, tool
    calls and tool results after it), so whatever is kept starts with a user message and
    never separates a tool call from its result (providers refuse both). Messages before the
    first user message (the end of an older turn) are one item; tool results whose call is
    older than the window, and system messages, are left out."""
    units: list[list[tuple[int, Message]]] = []
    for offset, message in enumerate(messages):
        if message.role == "system":
            continue
        if message.role == "tool" and not units:
            continue  # a result whose call is older than the window: useless alone
        if message.role == "user" or not units:
            units.append([])
        units[-1].append((first_position + offset, message))
    items = [ContextItem(unit[0][1].id, "", tuple(message for _, message in unit),
                         order=unit[0][0]) for unit in units]
    return items[::-1]


@dataclass(frozen=True, slots=True)
class RecentMessagesSection:
    """The thread's newest messages the running summary does not cover (at most
    ``limit``), one item per turn, oldest first when rendered; contiguous: when a turn is
    left out, so are all older ones."""

    limit: int = 50
    name: str = "recent"
    title: str = "Recent messages"
    order: int = 50
    contiguous: bool = True

    def _window(self, head: Checkpoint) -> int:
        return max(head.summary_through, head.position - self.limit)

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """The newest messages at the thread's head."""
        if scope.threads is None or scope.thread_id is None:
            return []
        head = scope.threads.checkpoint(scope.thread_id)
        start = self._window(head)
        return conversation_units(scope.threads.messages(
            scope.thread_id, checkpoint_id=head.id, start=start), start)

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather`."""
        if scope.threads is None or scope.thread_id is None:
            return []
        head = await scope.threads.acheckpoint(scope.thread_id)
        start = self._window(head)
        return conversation_units(await scope.threads.amessages(
            scope.thread_id, checkpoint_id=head.id, start=start), start)


def default_sections() -> tuple[ProfileSection | MemoriesSection | SummarySection
                                | RecentMessagesSection, ...]:
    """The built-in sections in their default priority order (first kept longest): the
    profile, the recent messages, the running summary, then the memories."""
    return (ProfileSection(), RecentMessagesSection(), SummarySection(), MemoriesSection())
