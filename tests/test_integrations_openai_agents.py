"""RememSession (the OpenAI Agents SDK's Session over a remem thread), run by the SDK's own
Runner with its ScriptedModel (agents.testing: no network), compared with the SDK's
SQLiteSession on the same calls. Skipped without openai-agents (not in remem's extras)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.testing")

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from remem.errors import InvalidInputError
from remem.integrations.openai_agents import RememSession
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
