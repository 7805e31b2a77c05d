"""Deep Agents over remem: its store-backed file memory (StoreBackend) on RememStore and its
agent's threads on RememSaver, with langchain-core's fake chat model (no network). Skipped
without deepagents (not in remem's extras: it brings several provider SDKs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents")

from deepagents import create_deep_agent
from deepagents.backends import StoreBackend
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from remem.integrations.langgraph import RememSaver, RememStore


class ToolCallingFake(GenericFakeChatModel):
    """langchain-core's scripted chat model, accepting tools (its answers are scripted)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"id": call_id, "name": name, "args": args}])


def test_deep_agent_file_memory_on_remem(tmp_path: Path) -> None:
    path = str(tmp_path / "deep.db")
    store, saver = RememStore.open(path), RememSaver.open(path)
    model = ToolCallingFake(messages=iter([
        _call("write_file", {"file_path": "/memories/prefs.md",
                             "content": "- likes green tea\n"}, "c1"),
        AIMessage("Saved to memory."),
        _call("read_file", {"file_path": "/memories/prefs.md"}, "c2"),
        AIMessage("You like green tea."),
    ]))
    backend = StoreBackend(namespace=lambda runtime: ("filesystem", "alice"))
    agent = create_deep_agent(model=model, backend=backend, checkpointer=saver, store=store)
    first = agent.invoke({"messages": [HumanMessage("Remember I like green tea")]},
                         {"configurable": {"thread_id": "d1"}})
    assert first["messages"][2].content == "Updated file /memories/prefs.md"
    # another thread (a new conversation) reads the file back from the store
    second = agent.invoke({"messages": [HumanMessage("What do I like?")]},
                          {"configurable": {"thread_id": "d2"}})
    assert "- likes green tea" in str(second["messages"][2].content)
    assert second["messages"][-1].content == "You like green tea."
    files = store.search(("filesystem", "alice"))
    assert [(item.key, item.value["content"]) for item in files] == [
        ("/memories/prefs.md", "- likes green tea\n")]
    # the files are plain remem items; the threads remem threads, in the same SQLite file
    assert store.store.get(("filesystem", "alice"), "/memories/prefs.md") is not None
    assert {t.metadata["lg_thread"] for t in saver.threads.list_threads()} == {"d1", "d2"}
    store.close()
    saver.close()
