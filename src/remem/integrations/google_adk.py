"""remem inside Google's Agent Development Kit (ADK): a session service over remem threads and
a memory service over :class:`remem.Memory`.

* :class:`RememSessionService` is ADK's ``BaseSessionService``: every ADK session is one remem
  thread (checkpointed, forkable, searchable like any other), every event one message of it.
  The message keeps the event's exact ADK form in its metadata (``adk_event``: the JSON text
  ``event.model_dump_json(exclude_none=True)``, what ADK's own ``SqliteSessionService``
  stores), so ``get_session`` returns the events that were appended, unchanged; its text is
  the event's text, or a label such as ``[function_call get_weather]`` for an event without
  any. State follows ADK's scopes: ``app:`` keys are shared by every session of the app,
  ``user:`` keys by every session of the user in the app, ``temp:`` keys live only in the
  session object of the running invocation, the rest belongs to the session. Each append
  records the session's state in its checkpoint (one write: the event and the state it
  leaves cannot part); app and user state live in two small state-only threads per app and
  per user. ``get_session``'s ``num_recent_events`` and ``after_timestamp``, the listing
  order, stripped session ids and an equal re-delivered event not appended twice are as in
  ADK's ``InMemorySessionService``.
* :class:`RememMemoryService` is ADK's ``BaseMemoryService``: ``add_session_to_memory`` and
  ``add_events_to_memory`` remember each event with text as is (one memory per event, kind
  ``"event"``, its author, time, event and session ids in the memory's metadata), or, with
  ``infer=True``, as the facts remem's chat model extracts from them; an event already
  remembered (or remembered and deleted) is not added again. ``search_memory`` is
  :meth:`Memory.search <remem.api.Memory.search>` in the user's scope, answered as ADK
  ``MemoryEntry`` values, so ADK's ``load_memory`` and ``preload_memory`` tools read remem's
  memories. ``add_memory`` and ``delete_memory`` work too.

Needs ``google-adk`` (``pip install 'remem[google-adk]'``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Self
from urllib.parse import quote

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.genai import types
from pydantic_core import to_jsonable_python

from remem.api import Memory
from remem.errors import ConflictError, InvalidInputError, NotFoundError
from remem.memory.records import MemoryRecord
from remem.memory.results import MemoryHit
from remem.messages.types import Message, new_id
from remem.requests import MAX_TEXT
from remem.retrieval.relevance import check_min_score
from remem.threads.api import ThreadAPI
from remem.threads.types import ThreadInfo

__all__ = ["RememMemoryService", "RememSessionService", "event_of", "message_of"]

logger = logging.getLogger(__name__)

#: message metadata: the event's JSON text, as ADK's SqliteSessionService stores it
_EVENT = "adk_event"
#: checkpoint metadata of an append (and thread metadata at creation): the session's state;
#: checkpoint state of an app or user thread: that scope's state
_STATE = "adk_state"
#: checkpoint metadata of an append: the session's last update time (the event's timestamp)
_UPDATED = "adk_update_time"
#: thread metadata: what the thread is (session, app_state, user_state) and whose
_KIND, _APP, _USER, _SESSION, _CREATED = (
    "adk_kind", "adk_app", "adk_user", "adk_session", "adk_create_time")
#: how often a write that lost a race to another writer is tried again
_RETRIES = 20
#: the most messages one read returns by count (MessagesRequest.last), threads per page
_MAX_LAST, _PAGE = 100_000, 1000
#: the remem thread id's limit
_MAX_ID = 256


# -- events and messages ------------------------------------------------------------------


def _text(content: types.Content | None, *, thoughts: bool = False) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts
                     if part.text and (thoughts or not part.thought))


def _label(event: Event) -> str:
    """What an event without text shows in the thread: ``[kind name]``."""
    parts = (event.content.parts if event.content else None) or []
    for part in parts:
        call = part.function_call or part.function_response
        if call is not None:
            kind = "function_call" if part.function_call is not None else "function_response"
            return f"[{kind} {call.name}]" if call.name else f"[{kind}]"
    if event.actions.state_delta:
        return "[state change]"
    return "[event]"


def message_of(event: Event) -> Message:
    """``event`` as the remem message that stores it: its text (a label when it has none),
    ``user`` when the user wrote it and ``assistant`` otherwise, its timestamp as the
    message's time, and its exact ADK form (with its id, author and invocation) in the
    metadata."""
    return _message(event, _text(event.content)[:MAX_TEXT] or _label(event), metadata={
        _EVENT: event.model_dump_json(exclude_none=True), "adk_event_id": event.id,
        "adk_author": event.author, "adk_invocation_id": event.invocation_id})


def _message(event: Event, text: str, **fields: Any) -> Message:
    """A remem message for ``event``: ``user`` when the user wrote it, ``assistant``
    otherwise, at the event's time."""
    make = Message.user if event.author == "user" else Message.assistant
    return make(text, created_at=event.timestamp, **fields)


def event_of(message: Message) -> Event:
    """The ADK event a thread message stores; a message that other code appended to the
    thread becomes an event by the user (a ``user`` message) or by ``message.name`` (else
    its role), with the message's id, time and text."""
    kept = message.metadata.get(_EVENT)
    if isinstance(kept, str):
        return Event.model_validate_json(kept)
    user = message.role == "user"
    content = types.Content(role="user" if user else "model",
                            parts=[types.Part(text=message.text)]) if message.text else None
    return Event(id=message.id, author="user" if user else (message.name or message.role),
                 invocation_id="", timestamp=message.created_at, content=content)


# -- state ------------------------------------------------------------------------------------


def _json_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` as JSON data, as ADK's persistent services keep it: values that are not
    JSON are stored as their text (with a warning in the log)."""
    try:
        value = to_jsonable_python(dict(state))
    except Exception:  # pydantic_core raises its own serialisation errors
        logger.warning("ADK state holds values that are not JSON (e.g. callables); they are "
                       "stored as their text", exc_info=True)
        value = to_jsonable_python(dict(state), fallback=str)
    return dict(value)


def _split(state: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any],
                                                     dict[str, Any]]:
    """The app, user and session parts of a state or state delta (``temp:`` keys dropped),
    prefixes removed from the first two."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in _json_state(state or {}).items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            session[key] = value
    return app, user, session


def _merged(session: Mapping[str, Any], app: Mapping[str, Any],
            user: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(session)
    merged.update({State.APP_PREFIX + key: value for key, value in app.items()})
    merged.update({State.USER_PREFIX + key: value for key, value in user.items()})
    return merged


def _strip(session_id: str) -> str:
    return session_id.strip() if session_id else session_id


class RememSessionService(BaseSessionService):
    """ADK's session service over ``threads`` (a :class:`~remem.threads.ThreadStore` on
    SQLite or PostgreSQL, or a server's ``client.threads``).

    Thread ids are ``{prefix}:session:{app}:{user}:{session}`` (each part percent-encoded;
    a sha256 of them past remem's 256 characters), ``{prefix}:app:{app}`` and
    ``{prefix}:user:{app}:{user}`` for the shared state; their metadata names the app, the
    user and the session, so remem's own tools list and search them. ``recheck``: how many
    of a session's latest events an appended event is compared with, so that an equal
    re-delivery is not appended twice (ADK's ``InMemorySessionService`` compares with all).
    :meth:`open` opens a thread store by location and :meth:`close` closes it.
    """

    def __init__(self, threads: ThreadAPI, *, prefix: str = "adk", recheck: int = 100,
                 owns_threads: bool = False) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememSessionService needs remem threads (a ThreadStore), "
                                    f"got {type(threads).__name__}")
        if not prefix or len(prefix) > 64 or "/" in prefix or not prefix.isprintable():
            raise InvalidInputError(f"prefix must be 1-64 printable characters without '/', "
                                    f"got {prefix!r}")
        if not 0 <= recheck <= _MAX_LAST:
            raise InvalidInputError(f"recheck must be 0 to {_MAX_LAST}, got {recheck}")
        self.threads = threads
        self.prefix = prefix
        self.recheck = recheck
        self._owns_threads = owns_threads

    @classmethod
    def open(cls, location: str = ":memory:", **options: Any) -> Self:
        """A session service over a :class:`~remem.threads.ThreadStore` opened at
        ``location`` (a SQLite path, ``":memory:"`` or a ``postgresql://`` DSN), closed by
        :meth:`close`; ``options`` are the constructor's."""
        from remem.threads import ThreadStore

        return cls(ThreadStore(location), owns_threads=True, **options)

    def close(self) -> None:
        """Close the thread store if :meth:`open` opened it (one passed in stays open)."""
        close = getattr(self.threads, "close", None)
        if self._owns_threads and callable(close):
            close()

    # -- ids and shared state ---------------------------------------------------------------

    def thread_id(self, kind: str, *parts: str) -> str:
        """The remem thread that holds an ADK ``session`` (parts: app, user, session id),
        an ``app``'s state (app) or a ``user``'s state (app, user)."""
        readable = f"{self.prefix}:{kind}:" + ":".join(quote(part, safe="") for part in parts)
        if len(readable) <= _MAX_ID:
            return readable
        digest = hashlib.sha256(json.dumps([kind, *parts]).encode()).hexdigest()
        return f"{self.prefix}:{kind}#{digest}"

    async def _scoped_state(self, thread_id: str) -> tuple[dict[str, Any], str | None]:
        """A state thread's state and head (``({}, None)`` when it does not exist yet)."""
        try:
            info = await self.threads.aget(thread_id)
        except NotFoundError:
            return {}, None
        value = info.head.state.get(_STATE)
        return (dict(value) if isinstance(value, Mapping) else {}), info.head.id

    async def _update_scoped(self, thread_id: str, delta: Mapping[str, Any],
                             metadata: Mapping[str, Any]) -> None:
        """Merge ``delta`` into a state thread's state (created on first use), again when
        another writer moved its head meanwhile."""
        for _ in range(_RETRIES):
            state, head = await self._scoped_state(thread_id)
            try:
                if head is None:
                    await self.threads.acreate(thread_id, metadata=metadata)
                    continue
                await self.threads.aupdate_state(thread_id, {_STATE: {**state, **delta}},
                                                 expected_head=head)
                return
            except ConflictError:
                continue
        raise ConflictError(f"state thread {thread_id!r} kept changing under "
                            f"{_RETRIES} writes; try again")

    async def _app_state(self, app_name: str) -> dict[str, Any]:
        return (await self._scoped_state(self.thread_id("app", app_name)))[0]

    async def _user_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        return (await self._scoped_state(self.thread_id("user", app_name, user_id)))[0]

    async def _write_shared(self, app_name: str, user_id: str, app: Mapping[str, Any],
                            user: Mapping[str, Any]) -> None:
        if app:
            await self._update_scoped(self.thread_id("app", app_name), app,
                                      {_KIND: "app_state", _APP: app_name})
        if user:
            await self._update_scoped(self.thread_id("user", app_name, user_id), user,
                                      {_KIND: "user_state", _APP: app_name, _USER: user_id})

    # -- a session's own state ----------------------------------------------------------------

    async def _own_state(self, info: ThreadInfo) -> tuple[dict[str, Any], float]:
        """The session-scoped state and last update time at the thread's head: recorded by
        the append that made the head, else (a new session, or a head that remem itself
        made: a rewind, a compaction) the creation state with the deltas of the events at
        the head folded in."""
        head = info.head.metadata
        if isinstance(head.get(_STATE), Mapping) and isinstance(head.get(_UPDATED),
                                                                 int | float):
            return dict(head[_STATE]), float(head[_UPDATED])
        created = info.metadata.get(_STATE)
        state = dict(created) if isinstance(created, Mapping) else {}
        updated = float(info.metadata.get(_CREATED, info.created_at))
        if info.head.position:
            messages = await self.threads.amessages(info.thread_id,
                                                    checkpoint_id=info.head.id)
            for message in messages:
                event = event_of(message)
                state.update(_split(event.actions.state_delta)[2])
                updated = event.timestamp
        return state, updated

    async def _session_info(self, app_name: str, user_id: str,
                            session_id: str) -> ThreadInfo | None:
        try:
            info = await self.threads.aget(self.thread_id("session", app_name, user_id,
                                                          session_id))
        except NotFoundError:
            return None
        meta = info.metadata
        if (meta.get(_KIND), meta.get(_APP), meta.get(_USER), meta.get(_SESSION)) != (
                "session", app_name, user_id, session_id):
            return None
        return info

    # -- BaseSessionService -------------------------------------------------------------------

    async def create_session(self, *, app_name: str, user_id: str,
                             state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        """Create a session (a new id unless ``session_id`` is given, stripped): its
        ``app:`` and ``user:`` state go to the shared state, the rest is the session's.
        Raises ADK's ``AlreadyExistsError`` when the id is taken."""
        wanted = _strip(session_id) if session_id else None
        if wanted and await self._session_info(app_name, user_id, wanted) is not None:
            raise AlreadyExistsError(f"Session with id {wanted} already exists.")
        app, user, own = _split(state)
        await self._write_shared(app_name, user_id, app, user)
        new_id = wanted or platform_uuid.new_uuid()
        now = platform_time.get_time()
        try:
            await self.threads.acreate(
                self.thread_id("session", app_name, user_id, new_id), metadata={
                    _KIND: "session", _APP: app_name, _USER: user_id, _SESSION: new_id,
                    _STATE: own, _CREATED: now})
        except ConflictError as exc:
            raise AlreadyExistsError(f"Session with id {new_id} already exists.") from exc
        merged = _merged(own, await self._app_state(app_name),
                         await self._user_state(app_name, user_id))
        return Session(id=new_id, app_name=app_name, user_id=user_id, state=merged,
                       last_update_time=now)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        """The session with its events, oldest first (``None`` if there is none):
        ``config.num_recent_events`` keeps the latest n (0: none), ``after_timestamp`` the
        events after the last one older than it; the state merges the app's and the user's
        (``app:`` and ``user:`` keys)."""
        session_id = _strip(session_id)
        info = await self._session_info(app_name, user_id, session_id)
        if info is None:
            return None
        recent = config.num_recent_events if config else None
        if recent == 0:
            messages: list[Message] = []
        else:
            last = recent if recent is not None and recent <= _MAX_LAST else None
            messages = await self.threads.amessages(info.thread_id, checkpoint_id=info.head.id,
                                                    last=last)
            if recent is not None:
                messages = messages[-recent:]
        events = [event_of(message) for message in messages]
        after = config.after_timestamp if config else None
        if after is not None:
            start = len(events)
            while start > 0 and events[start - 1].timestamp >= after:
                start -= 1
            events = events[start:]
        own, updated = await self._own_state(info)
        merged = _merged(own, await self._app_state(app_name),
                         await self._user_state(app_name, user_id))
        return Session(id=session_id, app_name=app_name, user_id=user_id, state=merged,
                       events=events, last_update_time=updated)

    async def list_sessions(self, *, app_name: str,
                            user_id: str | None = None) -> ListSessionsResponse:
        """The app's sessions (of ``user_id``, or of every user), without events, least
        recently updated first, each with its merged state."""
        wanted: dict[str, Any] = {_KIND: "session", _APP: app_name}
        if user_id is not None:
            wanted[_USER] = user_id
        found: list[ThreadInfo] = []
        while True:
            page = await self.threads.alist_threads(wanted, limit=_PAGE, offset=len(found))
            found.extend(page)
            if len(page) < _PAGE:
                break
        app = await self._app_state(app_name)
        users: dict[str, dict[str, Any]] = {}
        sessions = []
        for info in found:
            owner, own_id = str(info.metadata[_USER]), str(info.metadata[_SESSION])
            if owner not in users:
                users[owner] = await self._user_state(app_name, owner)
            own, updated = await self._own_state(info)
            sessions.append(Session(id=own_id, app_name=app_name, user_id=owner,
                                    state=_merged(own, app, users[owner]),
                                    last_update_time=updated))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session's thread (nothing when there is none); the app's and the
        user's state stay."""
        await self.threads.adelete(self.thread_id("session", app_name, user_id,
                                                  _strip(session_id)))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's state in the app, keys without their ``user:`` prefix."""
        return await self._user_state(app_name, user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Append ``event`` to the session, unless it is partial (a streaming chunk) or an
        equal copy of one of its latest events: the message and the session's new state in
        one remem checkpoint, then the app's and the user's state; ``temp:`` keys change
        only ``session``. ``session`` (the caller's object) gets the event and its state
        delta, as in ADK. Raises ADK's ``SessionNotFoundError`` for a session not stored."""
        if event.partial:
            return event
        thread_id = self.thread_id("session", session.app_name, session.user_id, session.id)
        info = await self._session_info(session.app_name, session.user_id, session.id)
        if info is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if self.recheck and info.head.position:
            latest = await self.threads.amessages(thread_id, checkpoint_id=info.head.id,
                                                  last=self.recheck)
            if any(event_of(message) == event for message in latest
                   if message.metadata.get("adk_event_id") == event.id):
                return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        app, user, own = _split(event.actions.state_delta)
        message = message_of(event)
        for _ in range(_RETRIES):
            state, _updated = await self._own_state(info)
            try:
                await self.threads.aappend(thread_id, [message], expected_head=info.head.id,
                                           metadata={_STATE: {**state, **own},
                                                     _UPDATED: event.timestamp})
                break
            except ConflictError:
                fresh = await self._session_info(session.app_name, session.user_id,
                                                 session.id)
                if fresh is None:
                    raise SessionNotFoundError(f"Session {session.id} not found.") from None
                info = fresh
        else:
            raise ConflictError(f"session {session.id!r} kept changing under {_RETRIES} "
                                "appends; try again")
        await self._write_shared(session.app_name, session.user_id, app, user)
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)


# -- memory -----------------------------------------------------------------------------------


def _iso(timestamp: float) -> str:
    """A time as ADK's memory services write it: local ISO 8601."""
    return datetime.fromtimestamp(timestamp).isoformat()


class RememMemoryService(BaseMemoryService):
    """ADK's memory service over ``memory`` (a :class:`remem.Memory`): each ADK user of an
    app is the remem scope ``user_id=user, agent_id=app`` (:meth:`scope`).

    ``infer``: how events are remembered: ``False`` (default, as ADK's own in-memory
    service keeps them) one memory per event with text, as is; ``True`` the facts remem's
    chat model extracts from the new events of each call, reconciled with what is stored;
    ``None`` extracts when the memory has a chat model. ``limit``: memories per search
    (ADK's in-memory service answers at most 10); ``min_score`` (0-1) drops hits whose
    relevance is below it.
    """

    def __init__(self, memory: Memory, *, infer: bool | None = False, limit: int = 10,
                 min_score: float | None = None, kind: str = "event") -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"RememMemoryService needs a remem.Memory, got "
                                    f"{type(memory).__name__}")
        if not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be 1 to 1000, got {limit}")
        check_min_score(min_score)
        self.memory = memory
        self.infer = infer
        self.limit = limit
        self.min_score = min_score
        self.kind = kind

    def scope(self, app_name: str, user_id: str) -> tuple[str, ...]:
        """The remem namespace of an ADK user's memories in an app."""
        return self.memory.namespace_of(user_id=user_id, agent_id=app_name)

    def _infers(self) -> bool:
        return self.memory.llm is not None if self.infer is None else self.infer

    async def _known(self, namespace: tuple[str, ...], events: Sequence[Event],
                     session_id: str | None) -> set[str]:
        """The ids among ``events`` that are already remembered in ``namespace`` (deleted
        memories included: a deleted event is not added back)."""
        ids = [event.id for event in events if event.id]
        known: set[str] = set()
        if self._infers():
            if not ids:
                return known
            filters: dict[str, Any] = {"metadata.adk_event_ids": {"$exists": True}}
            if session_id is not None:
                filters["metadata.adk_session_id"] = session_id
            async for record in self._records(namespace, filters):
                stored = record.metadata.get("adk_event_ids")
                if isinstance(stored, list):
                    known.update(str(each) for each in stored)
            return known & set(ids)
        for start in range(0, len(ids), 500):
            filters = {"metadata.adk_event_id": {"$in": ids[start:start + 500]}}
            async for record in self._records(namespace, filters):
                known.add(str(record.metadata["adk_event_id"]))
        return known

    async def _records(self, namespace: tuple[str, ...],
                       filters: dict[str, Any]) -> AsyncIterator[MemoryRecord]:
        offset: int | None = 0
        while offset is not None:
            page = await self.memory.aget_all(namespace=namespace, filters=filters,
                                              include_invalid=True, limit=1000,
                                              offset=offset)
            for record in page.memories:
                yield record
            offset = page.next_offset

    async def _remember(self, app_name: str, user_id: str, events: Sequence[Event],
                        session_id: str | None,
                        custom_metadata: Mapping[str, object] | None) -> None:
        namespace = self.scope(app_name, user_id)
        with_text = [event for event in events if _text(event.content).strip()]
        known = await self._known(namespace, with_text, session_id)
        new = [event for event in with_text if not event.id or event.id not in known]
        if not new:
            return
        extra: dict[str, Any] = {}
        if session_id is not None:
            extra["adk_session_id"] = session_id
        if custom_metadata:
            extra["adk_custom_metadata"] = _json_state(custom_metadata)
        messages = [_message(event, _text(event.content)[:MAX_TEXT], id=event.id or new_id())
                    for event in new]
        if self._infers():
            await self.memory.aadd(messages, namespace=namespace, infer=True, metadata={
                **extra, "adk_event_ids": [event.id for event in new if event.id]})
            return
        for event, message in zip(new, messages, strict=True):
            await self.memory.aadd([message], namespace=namespace, infer=False,
                                   split="none", kind=self.kind, metadata={
                                       **extra, "adk_event_id": event.id,
                                       "adk_author": event.author,
                                       "adk_invocation_id": event.invocation_id,
                                       "adk_timestamp": event.timestamp})

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's events that have text and are not remembered yet (a
        session may be added again as it grows)."""
        await self._remember(session.app_name, session.user_id, session.events, session.id,
                             None)

    async def add_events_to_memory(self, *, app_name: str, user_id: str,
                                   events: Sequence[Event], session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        """Remember ``events`` (a delta, e.g. the latest turn) as
        :meth:`add_session_to_memory` does; ``custom_metadata`` is kept with each memory
        (``adk_custom_metadata``)."""
        await self._remember(app_name, user_id, events, session_id, custom_metadata)

    async def add_memory(self, *, app_name: str, user_id: str,
                         memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        """Remember explicit entries (their text; ``infer=True`` extracts from it), with
        their author, timestamp, id and custom metadata in the memory's metadata."""
        namespace = self.scope(app_name, user_id)
        for entry in memories:
            text = _text(entry.content)
            if not text.strip():
                raise InvalidInputError(f"RememMemoryService keeps text: memory entry "
                                        f"{entry.id or '(no id)'} has none; describe its "
                                        "content in a text part")
            metadata: dict[str, Any] = {"adk_author": entry.author,
                                        "adk_timestamp_text": entry.timestamp,
                                        "adk_memory_id": entry.id}
            custom = {**entry.custom_metadata, **(custom_metadata or {})}
            if custom:
                metadata["adk_custom_metadata"] = _json_state(custom)
            await self.memory.aadd(text[:MAX_TEXT], namespace=namespace,
                                   infer=self._infers(), kind=self.kind,
                                   metadata={k: v for k, v in metadata.items()
                                             if v is not None})

    async def search_memory(self, *, app_name: str, user_id: str,
                            query: str) -> SearchMemoryResponse:
        """The user's memories that best match ``query``, best first, as ADK
        ``MemoryEntry`` values (an empty query finds nothing, as in ADK)."""
        if not query.strip():
            return SearchMemoryResponse()
        found = await self.memory.asearch(query[:10_000], namespace=self.scope(app_name,
                                                                               user_id),
                                          limit=self.limit, min_score=self.min_score)
        return SearchMemoryResponse(memories=[_entry(hit) for hit in found])

    async def delete_memory(self, *, app_name: str, user_id: str,
                            memory_id: str | None = None) -> None:
        """Forget one memory of the user (invalidated, kept in remem's history); an id
        that is unknown or another scope's is ignored, as in ADK."""
        if not memory_id:
            return
        try:
            record = await self.memory.aget(memory_id)
        except NotFoundError:
            return
        if tuple(record.namespace) == self.scope(app_name, user_id):
            await self.memory.adelete(memory_id, reason="ADK delete_memory")


def _entry(hit: MemoryHit) -> MemoryEntry:
    record = hit.memory
    author = record.metadata.get("adk_author")
    author = author if isinstance(author, str) else None
    when = record.metadata.get("adk_timestamp_text")
    if not isinstance(when, str):
        when = _iso(record.event_time if record.event_time is not None else record.valid_at)
    return MemoryEntry(
        id=record.id, author=author, timestamp=when,
        content=types.Content(role="user" if author == "user" else "model",
                              parts=[types.Part(text=record.text)]),
        custom_metadata={**record.metadata, "score": hit.score, "kind": record.kind})
