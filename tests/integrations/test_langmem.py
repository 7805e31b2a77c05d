"""LangMem's own code over remem: its memory tools in a LangGraph agent (RememStore for the
memories, RememSaver for the threads) and its memory store manager, with a fake chat model
from langchain-core (no network). Skipped where LangMem is not installed (it is not in
remem's extras: it brings LangChain's OpenAI and Anthropic clients)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langmem")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langmem import (
    create_manage_memory_tool,
    create_memory_store_manager,
    create_search_memory_tool,
)

from remem import FakeEmbedder
from remem.integrations.langgraph import RememSaver, RememStore

_FAKE = FakeEmbedder(dims=64)


def _embed(texts: list[str]) -> list[list[float]]:
    return [[float(x) for x in row] for row in _FAKE.embed_documents(texts)]


class ToolCallingFake(GenericFakeChatModel):
    """langchain-core's scripted chat model, accepting tools (its answers are scripted)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


@pytest.fixture
def store(tmp_path: Any) -> Iterator[RememStore]:
    opened = RememStore.open(str(tmp_path / "langmem.db"),
                             index={"dims": 64, "embed": _embed})
    yield opened
    opened.close()


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"id": call_id, "name": name, "args": args}])


def test_memory_tools_in_an_agent(store: RememStore, tmp_path: Any) -> None:
    saver = RememSaver.open(str(tmp_path / "langmem.db"))
    model = ToolCallingFake(messages=iter([
        _call("manage_memory", {"content": "User likes green tea", "action": "create"}, "c1"),
        AIMessage("Saved."),
        _call("search_memory", {"query": "tea"}, "c2"),
        AIMessage("You like green tea."),
    ]))
    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(model, tools, checkpointer=saver, store=store)
    first = agent.invoke({"messages": [HumanMessage("Remember that I like green tea")]},
                         {"configurable": {"thread_id": "t1", "langgraph_user_id": "alice"}})
    assert str(first["messages"][2].content).startswith("created memory ")
    second = agent.invoke({"messages": [HumanMessage("What do I like?")]},
                          {"configurable": {"thread_id": "t2", "langgraph_user_id": "alice"}})
    found = str(second["messages"][2].content)
    assert '"namespace":["memories","alice"]' in found and "User likes green tea" in found
    assert second["messages"][-1].content == "You like green tea."
    assert [item.value for item in store.search(("memories", "alice"))] == [
        {"content": "User likes green tea"}]
    # the threads are remem threads: resumable from the same file
    assert len(list(saver.list({"configurable": {"thread_id": "t1"}}))) >= 4
    saver.close()


def test_memory_store_manager(store: RememStore) -> None:
    model = ToolCallingFake(messages=iter([
        _call("Memory", {"content": "Alice drinks green tea every morning"}, "x1"),
    ]))
    manager = create_memory_store_manager(model, namespace=("memories", "{langgraph_user_id}"),
                                          store=store)
    written = manager.invoke(
        {"messages": [{"role": "user", "content": "I drink green tea every morning"}]},
        config={"configurable": {"langgraph_user_id": "alice"}})
    assert [entry["value"] for entry in written] == [
        {"kind": "Memory", "content": {"content": "Alice drinks green tea every morning"}}]
    hits = store.search(("memories", "alice"), query="green tea")
    assert [hit.key for hit in hits] == [written[0]["key"]] and hits[0].score is not None
