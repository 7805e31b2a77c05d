"""remem inside LangChain: the retriever under langchain-tests' own standard suite, the chat
message history keeping every kind of LangChain message exactly over random calls, and remem's
tools as LangChain tools called the way an agent calls them."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.retrievers import BaseRetriever
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_tests.integration_tests import RetrieversIntegrationTests

from remem import FakeEmbedder, Memory
from remem.integrations.langchain import (
    RememChatMessageHistory,
    RememRetriever,
    langchain_tools,
)
from remem.threads import ThreadStore
from remem.tools import MemoryTools

FACTS = ["Alice drinks green tea", "Alice lives in Berlin", "Alice plays the cello",
         "Alice works as a nurse", "Alice has a cat named Miso"]


def _memory() -> Memory:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    for fact in FACTS:
        memory.add(fact, user_id="alice", infer=False)
    return memory


class TestRememRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever suite (k in the constructor and per call, sync and async
    documents)."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RememRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": _memory(), "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "what does Alice drink?"


def test_the_retriever_ranks_the_scope_s_memories_and_carries_their_ids() -> None:
    memory = _memory()
    memory.add("Bob drinks coffee", user_id="bob", infer=False)
    docs = RememRetriever(memory=memory, user_id="alice", k=5).invoke("Alice drinks tea")
    assert docs[0].page_content == "Alice drinks green tea"
    assert {doc.page_content for doc in docs} <= set(FACTS)  # never Bob's
    assert all(doc.id == doc.metadata["id"] and doc.metadata["score"] is not None
               for doc in docs)
    found = asyncio.run(RememRetriever(memory=memory, user_id="bob").ainvoke("coffee"))
    assert [doc.page_content for doc in found] == ["Bob drinks coffee"]


def _random_messages(rng: random.Random, turn: int) -> list[BaseMessage]:
    kinds: list[BaseMessage] = [
        HumanMessage(f"question {turn}", id=f"h{turn}"),
        AIMessage(f"answer {turn}", response_metadata={"model": "m", "turn": turn}),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": turn}, "id": f"c{turn}"}]),
        ToolMessage(json.dumps({"turn": turn}), tool_call_id=f"c{turn}"),
        SystemMessage("be brief", additional_kwargs={"tag": turn}),
        HumanMessage([{"type": "text", "text": f"part {turn}"}], name="alice"),
        AIMessage(""),
    ]
    return rng.sample(kinds, rng.randint(1, 3))


@pytest.mark.parametrize("seed", range(4))
def test_chat_history_keeps_every_message_exactly(seed: int, tmp_path: Any) -> None:
    rng = random.Random(seed)
    reference: list[BaseMessage] = []  # what LangChain's in-memory history keeps: a list
    with ThreadStore(str(tmp_path / "threads.db")) as threads:
        ours = RememChatMessageHistory(f"s{seed}", threads, metadata={"user_id": "alice"})
        assert ours.messages == []
        for turn in range(30):
            action = rng.random()
            if action < 0.75:
                batch = _random_messages(rng, turn)
                reference.extend(batch)
                if rng.random() < 0.5:
                    ours.add_messages(batch)
                else:
                    asyncio.run(ours.aadd_messages(batch))
            elif action < 0.85:
                reference.clear()
                ours.clear()
            got = ours.messages if rng.random() < 0.5 else asyncio.run(ours.aget_messages())
            assert got == reference, f"seed {seed}, turn {turn}"
        if reference:
            assert threads.get(f"s{seed}").metadata == {"user_id": "alice"}


def test_memory_tools_as_langchain_tools_keep_their_schema_and_run() -> None:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    tools = {tool.name: tool for tool in langchain_tools(MemoryTools(memory, user_id="alice"))}
    assert sorted(tools) == ["manage_memory", "search_memory"]
    sent = convert_to_openai_tool(tools["search_memory"])["function"]
    ours = MemoryTools(memory, user_id="alice").search_spec()
    assert sent["parameters"]["properties"] == dict(ours.parameters)["properties"]
    created = json.loads(tools["manage_memory"].invoke({"action": "create",
                                                        "content": "Likes oolong"}))
    assert created["status"] == "created"
    found = json.loads(asyncio.run(tools["search_memory"].ainvoke(
        {"query": "oolong", "filters": {"kind": "fact"}})))
    assert [hit["content"] for hit in found["memories"]] == ["Likes oolong"]
    refused = tools["manage_memory"].invoke({"action": "update", "content": "x"})
    assert refused.startswith("Error in manage_memory")
