"""remem inside Pydantic AI: an Agent driven by pydantic-ai's own FunctionModel and TestModel
(no network) calls remem's memory tools and continues a conversation from history loaded
from a remem thread; every kind of ModelMessage round-trips exactly through
RememMessageHistory (SQLite in memory and in a file). The agents run with
``asyncio.run(agent.run(...))``: ``run_sync`` leaves its event loop open as the thread's
loop, by design, which pytest reports as a ResourceWarning."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from remem import FakeEmbedder, Memory
from remem.errors import InvalidInputError
from remem.integrations.pydantic_ai import (
    RememMessageHistory,
    pydantic_ai_tools,
    pydantic_ai_toolset,
)
from remem.threads import ThreadStore
from remem.tools import MemoryTools

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(params=["memory", "file"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return ":memory:" if request.param == "memory" else str(tmp_path / "agent.db")


def _parts(messages: list[ModelMessage]) -> list[Any]:
    return [part for message in messages for part in message.parts]


def _model(seen: list[list[ModelMessage]]) -> FunctionModel:
    """Turn 1: save a memory, then confirm. Turn 2: search, then answer from the result."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart) and "Remember" in str(last.content):
            return ModelResponse(parts=[ToolCallPart(
                "manage_memory", {"action": "create", "content": "Drinks green tea"},
                tool_call_id="save-1")])
        if isinstance(last, UserPromptPart):
            return ModelResponse(parts=[ToolCallPart("search_memory", {"query": "drink"},
                                                     tool_call_id="find-1")])
        assert isinstance(last, ToolReturnPart)
        if last.tool_name == "manage_memory":
            return ModelResponse(parts=[TextPart("Saved.")])
        found = json.loads(str(last.content))["memories"]
        return ModelResponse(parts=[TextPart(f"You drink: {found[0]['content']}")])

    return FunctionModel(answer)


def test_an_agent_saves_a_memory_and_a_later_run_continues_from_remem_history(
        where: str) -> None:
    memory = Memory.open(where, embedder=FakeEmbedder())
    threads = ThreadStore(where)
    tools = pydantic_ai_tools(MemoryTools(memory, user_id="alice"))
    seen: list[list[ModelMessage]] = []
    agent = Agent(_model(seen), tools=tools, instructions="Be brief.")

    history = RememMessageHistory(threads, "chat-1", metadata={"user_id": "alice"})
    first = asyncio.run(agent.run("Remember that I drink green tea",
                                  message_history=history.load()))
    history.save(first.all_messages())

    # later, another history object on the same thread: the conversation goes on
    later = RememMessageHistory(threads, "chat-1")
    loaded = later.load()
    second = asyncio.run(agent.run("What do I drink?", message_history=loaded))
    later.save(second.all_messages())

    assert first.output == "Saved."
    assert [hit.memory.text for hit in memory.search("tea", user_id="alice")] == [
        "Drinks green tea"]
    assert loaded == first.all_messages()  # exact, timestamps and ids included
    assert second.output == "You drink: Drinks green tea"
    # the model saw the first turn, read back from remem, before the second question
    assert [p.content for p in _parts(seen[2]) if isinstance(p, UserPromptPart)] == [
        "Remember that I drink green tea", "What do I drink?"]
    assert later.load() == second.all_messages()
    stored = threads.messages("chat-1")
    assert [(m.role, m.text[:20]) for m in stored] == [
        ("user", "Remember that I drin"), ("assistant", ""), ("tool", '{"status": "created"'),
        ("assistant", "Saved."), ("user", "What do I drink?"), ("assistant", ""),
        ("tool", '{"memories": [{"id":'), ("assistant", "You drink: Drinks gr")]
    assert stored[1].tool_calls[0].name == "manage_memory"
    assert threads.get("chat-1").metadata == {"user_id": "alice"}
    # one checkpoint per save, besides the thread's creation
    assert [c.position for c in threads.checkpoints("chat-1")][:2] == [8, 4]
    threads.close()
    memory.close()


def test_test_model_calls_every_remem_tool_with_remem_s_schemas() -> None:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    memory.add("Alice drinks green tea", user_id="alice", infer=False)
    remem_tools = MemoryTools(memory, user_id="alice")
    model = TestModel(call_tools=["search_memory"])
    agent = Agent(model, toolsets=[pydantic_ai_toolset(remem_tools)])

    result = asyncio.run(agent.run("What does Alice drink?"))

    sent = {tool.name: tool.parameters_json_schema
            for tool in model.last_model_request_parameters.function_tools}
    assert sent == {spec.name: spec.parameters for spec in remem_tools.specs()}
    output = json.loads(result.output)["search_memory"]
    assert [m["content"] for m in json.loads(output)["memories"]] == ["Alice drinks green tea"]


def _every_kind() -> list[ModelMessage]:
    return [
        ModelRequest(parts=[SystemPromptPart("Be brief.", timestamp=WHEN),
                            UserPromptPart(["Look at this", "and this"], timestamp=WHEN)],
                     instructions="Answer in French."),
        ModelResponse(parts=[ThinkingPart("hmm", signature="sig"),
                             TextPart("Je regarde."),
                             ToolCallPart("lookup", '{"q": "thé 茶"}', tool_call_id="c1"),
                             ToolCallPart("weather", {"city": "Rome"}, tool_call_id="c2")],
                      model_name="scripted", timestamp=WHEN),
        ModelRequest(parts=[ToolReturnPart("lookup", {"found": [1, 2]}, tool_call_id="c1",
                                           timestamp=WHEN),
                            ToolReturnPart("weather", "city is unknown", tool_call_id="c2",
                                           outcome="retried", timestamp=WHEN)]),
        ModelResponse(parts=[TextPart("Voilà.")], timestamp=WHEN),
    ]


def test_every_kind_of_message_round_trips_and_a_rewrite_rewinds(where: str) -> None:
    threads = ThreadStore(where)
    history = RememMessageHistory(threads, "t")
    messages = _every_kind()

    history.save(messages[:2])
    history.save(messages)  # an extension: appended
    history.save(messages)  # nothing new: no checkpoint
    positions = [c.position for c in threads.checkpoints("t")]
    rewritten = [*messages[:2], ModelRequest(parts=[UserPromptPart("Plus court.")])]
    history.save(rewritten)

    assert positions == [4, 2, 0]
    assert history.load() == rewritten
    assert ModelMessagesTypeAdapter.dump_json(history.load()) == \
        ModelMessagesTypeAdapter.dump_json(rewritten)
    # the rewritten messages stay in the checkpoint before the rewrite
    before = threads.checkpoints("t")[2]
    assert [m.text for m in threads.messages("t", checkpoint_id=before.id)][2:] == [
        '{"found":[1,2]}\n{"error":"city is unknown"}', "Voilà."]
    assert [m.role for m in threads.messages("t")] == ["user", "assistant", "user"]
    threads.append("t", "written by remem")  # another writer: a user prompt comes back
    written = threads.messages("t")[-1].created_at
    assert history.load()[-1] == ModelRequest(parts=[UserPromptPart(
        "written by remem", timestamp=datetime.fromtimestamp(written, UTC))])
    history.clear()
    assert history.load() == []
    with pytest.raises(InvalidInputError):
        RememMessageHistory(object(), "t")  # type: ignore[arg-type]
    threads.close()


def test_the_async_methods_answer_as_the_sync_ones() -> None:
    threads = ThreadStore(":memory:")
    history = RememMessageHistory(threads, "t")

    async def scenario() -> tuple[list[ModelMessage], list[ModelMessage]]:
        await history.asave(_every_kind())
        loaded = await history.aload()
        await history.aclear()
        return loaded, await history.aload()

    loaded, cleared = asyncio.run(scenario())
    assert loaded == _every_kind() and cleared == []
