"""Google ADK over remem: an ADK ``Agent`` run by ADK's ``Runner`` on a scripted ``BaseLlm`` (no
network, no key) keeps its sessions in remem threads (RememSessionService) and finds what
earlier sessions said through remem memories (RememMemoryService), with ADK's own
``load_memory`` and ``preload_memory`` tools; state scopes (app:, user:, temp:) through a
tool's ToolContext; the session and memory services' calls on SQLite in memory and in a
file. Skipped without google-adk. The session service's answers are compared with ADK's
InMemorySessionService in tests/integrations/test_google_adk_differential.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

pytest.importorskip("google.adk")

from google.adk.agents import Agent
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.tools import load_memory, preload_memory
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from remem import FakeEmbedder, Memory
from remem.errors import InvalidInputError
from remem.integrations.google_adk import (
    RememMemoryService,
    RememSessionService,
    event_of,
    message_of,
)
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.threads import ThreadStore

APP, USER = "travel", "ann"
Step = LlmResponse | Callable[[LlmRequest], LlmResponse]


class ScriptedLlm(BaseLlm):
    """An ADK model that answers from a script and records every request it gets."""

    model: str = "scripted"
    script: list[Any] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        step = self.script.pop(0)
        yield step(llm_request) if callable(step) else step


def said(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def calls(name: str, **args: Any) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(name=name, args=args))]))


def user_says(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def request_texts(request: LlmRequest) -> list[str]:
    return [part.text for content in request.contents for part in content.parts or []
            if part.text]


@pytest.fixture(params=["memory", "file"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return ":memory:" if request.param == "memory" else str(tmp_path / "adk.db")


@pytest.fixture
def sessions(where: str) -> Iterator[RememSessionService]:
    service = RememSessionService.open(where)
    yield service
    service.close()


@pytest.fixture
def memory(where: str) -> Iterator[Memory]:
    opened = Memory.open(where, embedder=FakeEmbedder())
    yield opened
    opened.close()


async def run(runner: Runner, session_id: str, text: str) -> list[Event]:
    return [event async for event in runner.run_async(
        user_id=USER, session_id=session_id, new_message=user_says(text))]


# -- an agent run by ADK's Runner ---------------------------------------------------------------


async def test_an_agent_finds_what_an_earlier_session_said_with_load_memory(
        sessions: RememSessionService, memory: Memory) -> None:
    memories = RememMemoryService(memory)
    first = Agent(name="helper", model=ScriptedLlm(script=[said("Noted: a window seat.")]),
                  instruction="Be brief.")
    runner = Runner(app_name=APP, agent=first, session_service=sessions,
                    memory_service=memories)
    earlier = await sessions.create_session(app_name=APP, user_id=USER)
    await run(runner, earlier.id, "I always book a window seat")
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=earlier.id)
    assert stored is not None
    assert [(e.author, e.content.parts[0].text) for e in stored.events if e.content] == [
        ("user", "I always book a window seat"), ("helper", "Noted: a window seat.")]
    # the conversation is a remem thread, each event a message with its exact ADK form
    thread = sessions.thread_id("session", APP, USER, earlier.id)
    messages = sessions.threads.messages(thread)
    assert [(m.role, m.text) for m in messages] == [
        ("user", "I always book a window seat"), ("assistant", "Noted: a window seat.")]
    assert [event_of(m) for m in messages] == stored.events
    await memories.add_session_to_memory(stored)
    await memories.add_session_to_memory(stored)  # again: nothing new to remember
    scope = memories.scope(APP, USER)
    remembered = memory.get_all(namespace=scope).memories
    assert sorted((r.text, r.metadata["adk_author"]) for r in remembered) == [
        ("I always book a window seat", "user"), ("Noted: a window seat.", "helper")]

    def answer(request: LlmRequest) -> LlmResponse:
        response = request.contents[-1].parts[0].function_response
        assert response is not None and response.name == "load_memory"
        found = response.response["result"].memories  # type: ignore[index]
        return said("Remembered: " + " | ".join(sorted(
            f"{entry.author}: {entry.content.parts[0].text}" for entry in found)))

    model = ScriptedLlm(script=[calls("load_memory", query="seat preference"), answer])
    second = Agent(name="helper", model=model, instruction="Be brief.", tools=[load_memory])
    runner = Runner(app_name=APP, agent=second, session_service=sessions,
                    memory_service=memories)
    later = await sessions.create_session(app_name=APP, user_id=USER)
    events = await run(runner, later.id, "Which seat do I like?")
    assert events[-1].content is not None
    answer_text = "Remembered: helper: Noted: a window seat. | user: I always book a window seat"
    assert events[-1].content.parts[0].text == answer_text
    assert len(model.requests) == 2 and not model.script
    # the tool call and its answer are events of the later session, kept as ADK wrote them
    reread = await sessions.get_session(app_name=APP, user_id=USER, session_id=later.id)
    assert reread is not None
    # equal in ADK's stored form: the tool's answer was a LoadMemoryResponse object, it is
    # read back as the dict it serialises to, as from ADK's own SqliteSessionService
    assert [e.model_dump(mode="json", exclude_none=True) for e in reread.events[1:]] == [
        e.model_dump(mode="json", exclude_none=True) for e in events]
    labels = [m.text for m in sessions.threads.messages(
        sessions.thread_id("session", APP, USER, later.id))]
    assert labels == ["Which seat do I like?", "[function_call load_memory]",
                      "[function_response load_memory]",
                      answer_text]


async def test_preload_memory_puts_remem_memories_in_the_model_request(
        sessions: RememSessionService, memory: Memory) -> None:
    memories = RememMemoryService(memory)
    await memories.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(content=types.Content(parts=[types.Part(text="Ann is vegetarian")]),
                    author="user", timestamp="2025-03-01T09:00:00"),
        MemoryEntry(content=types.Content(parts=[types.Part(text="Ann flies from Lisbon")]))])
    memory.add("Bob is vegan", user_id="bob", agent_id=APP, infer=False)  # another user
    model = ScriptedLlm(script=[said("A vegetarian menu, then.")])
    agent = Agent(name="helper", model=model, instruction="Be brief.", tools=[preload_memory])
    runner = Runner(app_name=APP, agent=agent, session_service=sessions,
                    memory_service=memories)
    session = await sessions.create_session(app_name=APP, user_id=USER)
    await run(runner, session.id, "Is Ann vegetarian or vegan?")
    preloaded = next(text for text in request_texts(model.requests[0])
                     if "<PAST_CONVERSATIONS>" in text)
    assert "Time: 2025-03-01T09:00:00\nuser: Ann is vegetarian" in preloaded
    assert "Bob" not in preloaded


async def test_state_scopes_through_a_tool_and_a_later_session(
        sessions: RememSessionService) -> None:
    def remember_city(city: str, tool_context: ToolContext) -> str:
        """Remember the user's city."""
        tool_context.state["user:city"] = city
        tool_context.state["app:bookings"] = 1
        tool_context.state["temp:scratch"] = "gone after the run"
        tool_context.state["last_city"] = city
        return "saved"

    model = ScriptedLlm(script=[calls("remember_city", city="Porto"), said("Saved Porto.")])
    agent = Agent(name="helper", model=model, instruction="Be brief.", tools=[remember_city])
    runner = Runner(app_name=APP, agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name=APP, user_id=USER, state={"lang": "pt"})
    await run(runner, session.id, "I live in Porto")
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert stored is not None
    assert stored.state == {"lang": "pt", "last_city": "Porto", "user:city": "Porto",
                            "app:bookings": 1}
    assert await sessions.get_user_state(app_name=APP, user_id=USER) == {"city": "Porto"}
    other = await sessions.create_session(app_name=APP, user_id=USER)
    assert other.state == {"user:city": "Porto", "app:bookings": 1}
    stranger = await sessions.create_session(app_name=APP, user_id="bob")
    assert stranger.state == {"app:bookings": 1}


# -- the session service's calls ------------------------------------------------------------


def event(text: str | None, at: float, *, author: str = "user",
          delta: dict[str, Any] | None = None, **fields: Any) -> Event:
    content = types.Content(role="user" if author == "user" else "model",
                            parts=[types.Part(text=text)]) if text is not None else None
    return Event(author=author, invocation_id="inv", timestamp=at, content=content,
                 actions=EventActions(state_delta=delta or {}), **fields)


async def test_sessions_are_created_read_listed_and_deleted(
        sessions: RememSessionService) -> None:
    made = await sessions.create_session(app_name=APP, user_id=USER, session_id="  s1 ",
                                         state={"a": 1, "app:b": 2, "user:c": 3, "temp:d": 4})
    assert (made.id, made.state) == ("s1", {"a": 1, "app:b": 2, "user:c": 3})
    with pytest.raises(AlreadyExistsError):
        await sessions.create_session(app_name=APP, user_id=USER, session_id="s1")
    generated = await sessions.create_session(app_name=APP, user_id="bob")
    assert len(generated.id) == 36 and generated.state == {"app:b": 2}
    for n in range(5):
        await sessions.append_event(made, event(f"message {n}", 1000.0 + n))
    recent = await sessions.get_session(app_name=APP, user_id=USER, session_id=" s1",
                                        config=GetSessionConfig(num_recent_events=2))
    assert recent is not None
    assert [e.content.parts[0].text for e in recent.events if e.content] == [
        "message 3", "message 4"]
    after = await sessions.get_session(app_name=APP, user_id=USER, session_id="s1",
                                       config=GetSessionConfig(after_timestamp=1002.0))
    assert after is not None and len(after.events) == 3
    none = await sessions.get_session(app_name=APP, user_id=USER, session_id="s1",
                                      config=GetSessionConfig(num_recent_events=0))
    assert none is not None and none.events == [] and none.last_update_time == 1004.0
    listed = await sessions.list_sessions(app_name=APP)
    # least recently updated first: s1's last event is stamped 1004.0, bob's session now
    assert [(s.user_id, s.id, s.events, s.state) for s in listed.sessions] == [
        (USER, "s1", [], {"a": 1, "app:b": 2, "user:c": 3}),
        ("bob", generated.id, [], {"app:b": 2})]
    assert [s.id for s in (await sessions.list_sessions(app_name=APP,
                                                        user_id="bob")).sessions] == [
        generated.id]
    assert (await sessions.list_sessions(app_name="other")).sessions == []
    await sessions.delete_session(app_name=APP, user_id=USER, session_id="s1")
    assert await sessions.get_session(app_name=APP, user_id=USER, session_id="s1") is None
    with pytest.raises(SessionNotFoundError):
        await sessions.append_event(made, event("late", 2000.0))
    assert await sessions.get_user_state(app_name=APP, user_id=USER) == {"c": 3}


async def test_append_keeps_state_partial_events_and_redeliveries_as_adk(
        sessions: RememSessionService) -> None:
    session = await sessions.create_session(app_name=APP, user_id=USER)
    first = event("hi", 10.0, delta={"k": [1, None], "temp:t": "x", "user:u": "y"})
    returned = await sessions.append_event(session, first)
    assert returned.actions.state_delta == {"k": [1, None], "user:u": "y"}
    assert session.state == {"k": [1, None], "temp:t": "x", "user:u": "y"}
    assert session.last_update_time == 10.0
    again = returned.model_copy(deep=True)
    await sessions.append_event(session, again)  # an equal re-delivery is not stored twice
    await sessions.append_event(session, event("chunk", 11.0, partial=True))  # not stored
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert stored is not None
    assert stored.events == [returned] and stored.state == {"k": [1, None], "user:u": "y"}
    assert len(session.events) == 1


async def test_a_rewound_thread_is_read_back_with_the_state_it_had(
        sessions: RememSessionService) -> None:
    session = await sessions.create_session(app_name=APP, user_id=USER, state={"n": 0})
    for n in range(1, 4):
        await sessions.append_event(session, event(f"step {n}", float(n), delta={"n": n}))
    thread = sessions.thread_id("session", APP, USER, session.id)
    two = next(c for c in sessions.threads.checkpoints(thread) if c.position == 2)
    sessions.threads.rewind(thread, two.id)  # remem's own time travel
    sessions.threads.append(thread, Message.user("typed into remem directly"))
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert stored is not None and stored.state == {"n": 2}
    assert [e.author for e in stored.events] == ["user", "user", "user"]
    assert stored.events[-1].content is not None
    assert stored.events[-1].content.parts[0].text == "typed into remem directly"
    await sessions.append_event(session, event("after", 9.0, delta={"m": 1}))
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert stored is not None and stored.state == {"n": 2, "m": 1}


async def test_long_ids_get_a_hashed_thread_id_and_bad_arguments_are_named(
        sessions: RememSessionService) -> None:
    long = "x" * 300
    made = await sessions.create_session(app_name="a/b", user_id=long, session_id="s")
    thread = sessions.thread_id("session", "a/b", long, "s")
    assert thread.startswith("adk:session#") and len(thread) < 100
    assert (await sessions.get_session(app_name="a/b", user_id=long, session_id="s")) == made
    assert sessions.thread_id("app", "a:b") == "adk:app:a%3Ab"
    with pytest.raises(InvalidInputError, match="remem threads"):
        RememSessionService(object())  # type: ignore[arg-type]
    with ThreadStore(":memory:") as threads, pytest.raises(InvalidInputError, match="prefix"):
        RememSessionService(threads, prefix="a/b")
    with pytest.raises(InvalidInputError, match=r"remem\.Memory"):
        RememMemoryService(object())  # type: ignore[arg-type]


def test_events_round_trip_through_messages_exactly() -> None:
    blob = types.Part(inline_data=types.Blob(data=b"\x00\xff", mime_type="image/png"))
    original = Event(author="helper", invocation_id="i", timestamp=5.5, content=types.Content(
        role="model", parts=[types.Part(text="look", thought=True), blob]),
        actions=EventActions(state_delta={"x": None}), long_running_tool_ids={"b", "a"})
    message = message_of(original)
    assert (message.role, message.text, message.created_at) == ("assistant",
                                                                "[state change]", 5.5)
    assert event_of(Message.model_validate_json(message.model_dump_json())) == original


# -- the memory service -----------------------------------------------------------------------


async def test_memories_are_added_once_searched_and_deleted(memory: Memory) -> None:
    service = RememMemoryService(memory, limit=3)
    events = [event("I moved to Porto last spring", 1_700_000_000.0, id="e1"),
              event("Porto is lovely", 1_700_000_001.0, author="helper", id="e2"),
              event(None, 1_700_000_002.0, id="e3", delta={"k": 1})]
    await service.add_events_to_memory(app_name=APP, user_id=USER, events=events,
                                       session_id="s1", custom_metadata={"source": "test"})
    await service.add_events_to_memory(app_name=APP, user_id=USER, events=events)
    found = await service.search_memory(app_name=APP, user_id=USER, query="moved to Porto")
    top = found.memories[0]
    assert top.content.parts[0].text == "I moved to Porto last spring"
    assert (top.author, top.content.role) == ("user", "user")
    assert top.timestamp is not None and top.timestamp.startswith("2023-11-1")
    assert top.custom_metadata["adk_event_id"] == "e1"
    assert top.custom_metadata["adk_custom_metadata"] == {"source": "test"}
    assert len(found.memories) == 2
    assert (await service.search_memory(app_name=APP, user_id="bob", query="Porto")).memories \
        == []
    assert (await service.search_memory(app_name=APP, user_id=USER, query="  ")).memories == []
    await service.delete_memory(app_name=APP, user_id="bob", memory_id=top.id)  # not bob's
    await service.delete_memory(app_name=APP, user_id=USER, memory_id="mem_unknown")
    assert len((await service.search_memory(app_name=APP, user_id=USER,
                                            query="Porto")).memories) == 2
    await service.delete_memory(app_name=APP, user_id=USER, memory_id=top.id)
    await service.add_events_to_memory(app_name=APP, user_id=USER, events=events)
    left = await service.search_memory(app_name=APP, user_id=USER, query="Porto")
    assert [m.custom_metadata["adk_event_id"] for m in left.memories] == ["e2"]
    with pytest.raises(InvalidInputError, match="keeps text"):
        await service.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(content=types.Content(parts=[]), id="m9")])


async def test_infer_extracts_facts_from_the_new_events_once(where: str) -> None:
    model = ScriptedModel(default={"inserts": [{"memory": {"content": "Ann lives in Porto"}}]})
    memory = Memory.open(where, embedder=FakeEmbedder(), llm=model)
    try:
        service = RememMemoryService(memory, infer=None)
        events = [event("I moved to Porto", 1.0, id="e1"),
                  event("Nice!", 2.0, author="helper", id="e2")]
        await service.add_events_to_memory(app_name=APP, user_id=USER, events=events,
                                           session_id="s1")
        await service.add_events_to_memory(app_name=APP, user_id=USER, events=events,
                                           session_id="s1")
        assert len(model.requests) == 1
        assert "I moved to Porto" in model.requests[0].messages[-1].text
        found = await service.search_memory(app_name=APP, user_id=USER, query="Porto")
        assert [(m.content.parts[0].text, m.author) for m in found.memories] == [
            ("Ann lives in Porto", None)]
        assert found.memories[0].custom_metadata["adk_event_ids"] == ["e1", "e2"]
    finally:
        memory.close()
