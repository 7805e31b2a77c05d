"""Hot-path memory tools: definitions for OpenAI and Anthropic, execution from tool calls,
and errors the model can read."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from remem.api import Memory
from remem.errors import InvalidInputError, ToolError
from remem.llm import ScriptedModel, tool_call
from remem.messages import Message, ToolCall
from remem.tools import MemoryTools, tool_runner
from tests.conftest import FakeClock
from tests.memory_support import make_store


@pytest.fixture
def mem(clock: FakeClock) -> Memory:
    return Memory(make_store("sqlite"), clock=clock)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call_{name}", name=name, arguments=arguments)


def result(message: Message) -> dict[str, Any]:
    assert message.role == "tool" and not message.is_error, message.text
    data: dict[str, Any] = json.loads(message.text)
    return data


def test_definitions_for_both_providers(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice", actions=("create", "update"))
    openai = tools.openai_tools()
    assert [t["function"]["name"] for t in openai] == ["manage_memory", "search_memory"]
    params = openai[0]["function"]["parameters"]
    assert params["properties"]["action"]["enum"] == ["create", "update"]
    assert params["required"] == ["action"]
    anthropic = tools.anthropic_tools()
    assert anthropic[1] == {"name": "search_memory",
                            "description": tools.search_spec().description,
                            "input_schema": dict(tools.search_spec().parameters)}
    json.dumps(openai), json.dumps(anthropic)  # plain JSON
    assert [s.name for s in MemoryTools(mem, user_id="a", prefix="work_").specs()] == [
        "work_manage_memory", "work_search_memory"]


def test_create_search_update_delete_from_tool_calls(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice", thread_id="t1")
    created = result(tools.execute(call("manage_memory", action="create",
                                        content="Prefers window seats")))
    assert created["status"] == "created"
    memory_id = created["id"]
    found = result(tools.execute(call("search_memory", query="window seat")))
    assert found["memories"][0]["id"] == memory_id
    # the agent's memory is the user's memory: the facade sees it at once
    assert mem.search("window", user_id="alice")[0].memory.id == memory_id
    assert mem.get(memory_id).source.thread_id == "t1"
    again = result(tools.execute(call("manage_memory", action="create",
                                      content="prefers window seats.")))
    assert again == {"status": "exists", "id": memory_id, "content": "prefers window seats."}
    updated = result(tools.execute(call("manage_memory", action="update", id=memory_id,
                                        content="Prefers aisle seats")))
    assert updated["status"] == "updated" and mem.get(memory_id).text == "Prefers aisle seats"
    deleted = result(tools.execute(call("manage_memory", action="delete", id=memory_id)))
    assert deleted == {"status": "deleted", "id": memory_id}
    assert mem.get(memory_id).status == "invalid"
    history = mem.history(memory_id)
    assert [(e.op, e.actor, e.reason) for e in history] == [
        ("add", "agent", "stored as given"), ("update", "agent", "manage_memory update"),
        ("invalidate", "agent", "manage_memory delete")]


@pytest.mark.parametrize(("arguments", "fragment"), [
    ({"action": "rename"}, "'action' must be one of create, update, delete"),
    ({"action": "create"}, "'content' is required for action 'create'"),
    ({"action": "create", "content": "  "}, "'content' must be a non-empty string"),
    ({"action": "create", "content": "x", "id": "mem_1"}, "'id' is not used by create"),
    ({"action": "update", "content": "x"}, "'id' is required for action 'update'"),
    ({"action": "delete", "id": "mem_nope"}, "no memory with id 'mem_nope' here"),
    ({"action": "create", "content": "x", "priority": 1}, "unexpected argument(s) priority"),
])
def test_bad_calls_return_errors_the_model_can_read(mem: Memory, arguments: dict[str, Any],
                                                    fragment: str) -> None:
    reply = MemoryTools(mem, user_id="alice").execute(call("manage_memory", **arguments))
    assert reply.is_error and reply.tool_call_id == "call_manage_memory"
    assert fragment in reply.text, reply.text


def test_search_argument_errors(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice")
    assert "limit: Input should be greater than or equal to 1" in tools.execute(
        call("search_memory", query="x", limit=0)).text
    assert "limit: Input should be a valid integer" in tools.execute(
        call("search_memory", query="x", limit="5")).text
    assert "unknown tool 'recall'" in tools.execute(call("recall")).text
    # the scope is the tools': a model cannot widen it by passing one
    for scope in ({"user_id": "bob"}, {"namespace": ["memories"]}, {"mmr": 0.5}):
        reply = tools.execute(call("search_memory", query="x", **scope))
        assert reply.is_error and f"unexpected argument(s) {next(iter(scope))}" in reply.text


def test_search_takes_the_request_parameters(mem: Memory, clock: FakeClock) -> None:
    tools = MemoryTools(mem, user_id="alice", search_limit=2)
    for text in ("Drinks green tea", "Drinks black tea", "Lives in Porto"):
        result(tools.execute(call("manage_memory", action="create", content=text)))
        clock.advance(60)
    newest = result(tools.execute(call("search_memory")))["memories"]  # no query: newest
    assert [m["content"] for m in newest] == ["Lives in Porto", "Drinks black tea"]
    paged = result(tools.execute(call("search_memory", limit=1, offset=2)))["memories"]
    assert [m["content"] for m in paged] == ["Drinks green tea"]
    before = result(tools.execute(call("search_memory", as_of=clock() - 150)))["memories"]
    assert [m["content"] for m in before] == ["Drinks green tea"]
    # every memory holds "tea", none means exactly that: relevance below 1 (hybrid search)
    picky = MemoryTools(mem, user_id="alice", search_options={"min_score": 1.0})
    assert result(picky.execute(call("search_memory", query="tea")))["memories"] == []
    with pytest.raises(InvalidInputError, match="min_score"):  # relevance is within [0, 1]
        MemoryTools(mem, user_id="alice", search_options={"min_score": 1e6})
    with pytest.raises(ToolError, match="search_options cannot set user_id"):
        MemoryTools(mem, user_id="alice", search_options={"user_id": "bob"})
    with pytest.raises(InvalidInputError, match="mmr"):
        MemoryTools(mem, user_id="alice", search_options={"mmr": 7})


def test_tools_cannot_reach_another_scope(mem: Memory) -> None:
    bob = mem.add("Bob's secret", user_id="bob", infer=False).changes[0].memory.id
    tools = MemoryTools(mem, user_id="alice")
    reply = tools.execute(call("manage_memory", action="delete", id=bob))
    assert reply.is_error and "no memory with id" in reply.text
    assert mem.get(bob).status == "current"
    assert result(tools.execute(call("search_memory", query="secret")))["memories"] == []


def test_replaced_memories_cannot_be_edited(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice")
    memory_id = result(tools.execute(call("manage_memory", action="create",
                                          content="Has a cat")))["id"]
    mem.delete(memory_id)
    reply = tools.execute(call("manage_memory", action="update", id=memory_id,
                               content="Has two cats"))
    assert reply.is_error and "no longer current" in reply.text


class Contact(BaseModel):
    """Someone the user knows."""

    name: str
    relation: str = Field(description="friend, colleague, family...")


def test_user_schema_is_validated_with_field_names(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice", schema=Contact)
    spec = tools.manage_spec().parameters["properties"]["content"]
    assert spec["properties"]["relation"]["description"] == "friend, colleague, family..."
    bad = tools.execute(call("manage_memory", action="create", content={"name": "Bo"}))
    assert bad.is_error and "content.relation: Field required" in bad.text
    good = result(tools.execute(call("manage_memory", action="create",
                                     content=json.dumps({"name": "Bo", "relation": "friend"}))))
    record = mem.get(good["id"])
    assert record.content == {"name": "Bo", "relation": "friend"} and record.schema == "Contact"


def test_store_failures_become_tool_errors_too(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice")
    mem.store.close()
    closed = tools.execute(call("search_memory", query="x"))
    assert closed.is_error and closed.text.startswith("Error in search_memory:")


def test_runner_and_async_execution_in_an_agent_loop(mem: Memory) -> None:
    tools = MemoryTools(mem, user_id="alice")
    model = ScriptedModel([tool_call("manage_memory", {"action": "create",
                                                       "content": "Allergic to peanuts"})])
    from remem.llm import ChatRequest

    answer = model.complete(ChatRequest((Message.user("I'm allergic to peanuts"),),
                                        tools=tuple(tools.specs())))
    run = tool_runner([tools])
    replies = [run(c) for c in answer.message.tool_calls]
    assert replies[0] is not None and json.loads(replies[0].text)["status"] == "created"
    assert run(call("weather")) is None
    found = asyncio.run(tools.aexecute(call("search_memory", query="peanuts")))
    assert json.loads(found.text)["memories"][0]["content"] == "Allergic to peanuts"


def test_actions_must_be_known(mem: Memory) -> None:
    with pytest.raises(ToolError, match="subset"):
        MemoryTools(mem, user_id="alice", actions=("create", "purge"))
