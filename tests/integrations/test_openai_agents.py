"""RememSession (the OpenAI Agents SDK's Session over a remem thread), run by the SDK's own
Runner with its ScriptedModel (agents.testing: no network), compared with the SDK's
SQLiteSession on the same calls: a tool call, a tool that needs approval (interrupted, then
resumed), an empty input; items without text; session_settings. Skipped without
openai-agents (in remem's test extra)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.testing")

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.memory import SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call

from remem.errors import InvalidInputError, MessageFormatError, UsageError
from remem.integrations.openai_agents import RememSession, SessionItemError
from remem.threads import ThreadStore

set_tracing_disabled(True)  # traces would be exported to OpenAI


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 24C, sunny"


def _run_conversation(session: Any) -> list[Any]:
    model = ScriptedModel([
        [function_call("weather", {"city": "Rome"}, call_id="c1")],
        [assistant_message("Rome is 24C and sunny.")],
        [assistant_message("You asked about Rome.")],
    ])
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])

    async def scenario() -> list[Any]:
        first = await Runner.run(agent, "Weather in Rome?", session=session)
        second = await Runner.run(agent, "What did I ask?", session=session)
        # the second call saw the whole first turn, read back from the session
        seen = model.last_call.input if model.last_call else None
        items = await session.get_items()
        last_two = await session.get_items(limit=2)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return [first.final_output, second.final_output, seen, items, last_two, popped,
                after_pop, await session.get_items()]

    return asyncio.run(scenario())


def _plain(value: Any) -> Any:
    """SDK items as JSON-like values (both sessions store JSON)."""
    import json

    return json.loads(json.dumps(value, default=str))


def test_runner_with_a_remem_session(tmp_path: Path) -> None:
    threads = ThreadStore(tmp_path / "agents.db")
    got = _run_conversation(RememSession("chat-1", threads, metadata={"user_id": "u1"}))
    want = _run_conversation(SQLiteSession("chat-1", str(tmp_path / "sdk.db")))
    assert _plain(got) == _plain(want)
    final, second, seen, items, last_two, popped, after_pop, cleared = got
    assert (final, second) == ("Rome is 24C and sunny.", "You asked about Rome.")
    assert [item.get("type", "message") for item in items] == [
        "message", "function_call", "function_call_output", "message", "message", "message"]
    assert len(seen) == 4 + 1 and last_two == items[-2:]  # the first turn, then the question
    assert popped == items[-1] and after_pop == items[:-1] and cleared == []
    threads.close()


def test_the_thread_is_a_remem_thread(tmp_path: Path) -> None:
    threads = ThreadStore(tmp_path / "agents.db")
    session = RememSession("chat-2", threads, metadata={"user_id": "u1"})

    async def scenario() -> None:
        await session.add_items([{"role": "user", "content": "I like green tea"},
                                 {"role": "assistant", "content": "Noted."}])
        await session.add_items([{"role": "user", "content": "And jazz"}])
        assert await session.pop_item() == {"role": "user", "content": "And jazz"}
        await session.add_items([{"role": "user", "content": "And chess"}])

    asyncio.run(scenario())
    assert [m.text for m in threads.messages("chat-2")] == [
        "I like green tea", "Noted.", "And chess"]
    assert threads.get("chat-2").metadata == {"user_id": "u1"}
    # the popped message stays in the thread's history (a rewind), readable by checkpoint
    assert any(c.position == 3 for c in threads.checkpoints("chat-2"))
    with pytest.raises(InvalidInputError, match="ThreadStore"):
        RememSession("x", object())  # type: ignore[arg-type]
    threads.close()


@function_tool(needs_approval=True)
def delete_note(name: str) -> str:
    """Delete a note (a person approves first)."""
    return f"deleted {name}"


def _approval_run(session: Any) -> list[Any]:
    model = ScriptedModel([
        [function_call("delete_note", {"name": "groceries"}, call_id="c9")],
        [assistant_message("Deleted the groceries note.")],
        [assistant_message("Nothing to do.")],
    ])
    agent = Agent(name="helper", model=model, tools=[delete_note])

    async def scenario() -> list[Any]:
        first = await Runner.run(agent, "Delete my groceries note", session=session)
        paused = [item.raw_item.name for item in first.interruptions]  # type: ignore[union-attr]
        # the run stopped at the call: a batch with no text (a function_call) was saved
        while_paused = await session.get_items()
        state = first.to_state()
        state.approve(first.interruptions[0])
        resumed = await Runner.run(agent, state, session=session)
        empty = await Runner.run(agent, "", session=session)  # an empty input is an item too
        return [paused, while_paused, resumed.final_output, empty.final_output,
                await session.get_items()]

    return asyncio.run(scenario())


def test_a_tool_that_needs_approval_and_an_empty_input(tmp_path: Path) -> None:
    threads = ThreadStore(tmp_path / "agents.db")
    got = _approval_run(RememSession("approve", threads))
    want = _approval_run(SQLiteSession("approve", str(tmp_path / "sdk.db")))
    assert _plain(got) == _plain(want)
    paused, while_paused, resumed, empty, items = got
    assert paused == ["delete_note"] and resumed == "Deleted the groceries note."
    assert empty == "Nothing to do."
    assert [item.get("type", "message") for item in while_paused] == ["message", "function_call"]
    assert [item.get("type", "message") for item in items] == [
        "message", "function_call", "function_call_output", "message", "message", "message"]
    assert items[4] == {"content": "", "role": "user"}
    # in the thread, items without text show a label; the item itself is kept whole
    texts = [m.text for m in threads.messages("approve")]
    assert texts[1] == "[function_call delete_note]" and texts[4] == "[empty user message]"
    assert texts[2] == "deleted groceries"
    threads.close()


def test_every_kind_of_item_round_trips(tmp_path: Path) -> None:
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "item_reference", "id": "msg_1"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "tea"}},
        {"role": "user", "content": [{"type": "input_image", "image_url": "data:,x"}]},
        {"type": "function_call_output", "call_id": "c", "output": ""},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text",
                                                          "text": "weighing it"}]},
        {"role": "user", "content": "x" * 200_001 + "\ud800"},  # past remem's text limit
    ]
    session = RememSession.open("kinds", str(tmp_path / "kinds.db"))

    async def scenario() -> list[Any]:
        await session.add_items(items[:3])  # a batch with no text at all
        await session.add_items(items[3:])
        return await session.get_items()

    assert asyncio.run(scenario()) == items
    texts = [m.text for m in session.threads.messages("kinds")]
    assert texts[:6] == ["[reasoning]", "[item_reference]", "[web_search_call]",
                         "[empty user message]", "[function_call_output]", "weighing it"]
    assert len(texts[6]) == 200_000  # the text is cut; the item is whole
    session.close()
    with pytest.raises(UsageError, match="closed"):
        asyncio.run(session.get_items())


def test_limits_and_session_settings() -> None:
    threads = ThreadStore(":memory:")
    items = [{"role": "user", "content": f"m{i}"} for i in range(6)]
    asyncio.run(RememSession("s", threads).add_items(items))

    def contents(session: RememSession, limit: int | None = None) -> list[str]:
        return [item["content"] for item in asyncio.run(session.get_items(limit))]

    plain = RememSession("s", threads)
    assert isinstance(plain.session_settings, SessionSettings)
    assert plain.session_settings.limit is None
    assert contents(plain) == [f"m{i}" for i in range(6)]
    assert contents(plain, -1) == contents(plain, -9) == contents(plain)  # negative: all
    assert contents(plain, 0) == [] and contents(plain, 2) == ["m4", "m5"]
    limited = RememSession("s", threads, session_settings={"limit": 3})
    assert isinstance(limited.session_settings, SessionSettings)
    assert contents(limited) == ["m3", "m4", "m5"] and contents(limited, 1) == ["m5"]
    assert contents(RememSession("s", threads, session_settings=SessionSettings(limit=0))) == []
    with pytest.raises(TypeError, match="limitt"):  # the SDK's own check
        RememSession("s", threads, session_settings={"limitt": 1})
    with pytest.raises(InvalidInputError, match="limit"):
        asyncio.run(plain.get_items("2"))  # type: ignore[arg-type]
    with pytest.raises(SessionItemError, match="JSON") as caught:
        asyncio.run(plain.add_items([{"role": "user", "content": object()}]))
    assert isinstance(caught.value, MessageFormatError) and isinstance(caught.value, TypeError)
    assert contents(plain) == [f"m{i}" for i in range(6)]  # nothing of that batch was kept
    threads.close()
