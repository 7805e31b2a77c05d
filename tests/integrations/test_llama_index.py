"""remem inside LlamaIndex: RememChatStore answers every call as LlamaIndex's SimpleChatStore
does, and RememDBChatStore as its SQLAlchemyChatStore, over random call sequences (SQLite in
memory and in a file); a chat engine keeps its conversation in RememChatStore; and a
FunctionAgent driven by llama-index-core's MockFunctionCallingLLM (no network) runs on a
LlamaIndex Memory whose history is RememDBChatStore and whose long-term block is
RememMemoryBlock. llama-index-core's sdist ships no tests, so its own stores are the
reference."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.memory import Memory as LlamaMemory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

from remem import FakeEmbedder, Memory
from remem.errors import InvalidInputError
from remem.integrations.llama_index import RememChatStore, RememDBChatStore, RememMemoryBlock
from remem.llm import ScriptedModel
from remem.threads import ThreadStore

FACTS = ["Alice drinks green tea", "Alice lives in Berlin", "Alice plays the cello"]
#: LlamaIndex's workflow engine lists every attribute of the agent (a pydantic model) when
#: it runs it, pydantic's deprecated ones included; the warnings are theirs
AGENT_WARNINGS = ("ignore::pydantic.warnings.PydanticDeprecatedSince20",
                  "ignore::pydantic.warnings.PydanticDeprecatedSince211")


@pytest.fixture(params=["memory", "file"])
def threads(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = ThreadStore(":memory:" if request.param == "memory" else tmp_path / "chats.db")
    yield store
    store.close()


def _message(rng: random.Random, n: int) -> ChatMessage:
    kinds = [
        ChatMessage(role="user", content=f"question {n}"),
        ChatMessage(role="assistant", content=f"answer {n}", additional_kwargs={"turn": n}),
        ChatMessage(role="system", content=f"be brief {n}"),
        ChatMessage(role="tool", content=f'{{"n": {n}}}',
                    additional_kwargs={"tool_call_id": f"c{n}", "name": "lookup"}),
        ChatMessage(role="assistant", blocks=[
            TextBlock(text=f"looking up {n}"),
            ToolCallBlock(tool_call_id=f"c{n}", tool_name="lookup", tool_kwargs={"q": n})]),
        ChatMessage(role="user", blocks=[TextBlock(text=f"see picture {n}"),
                                         ImageBlock(image=b"\x89PNG" + bytes([n % 256]),
                                                    image_mimetype="image/png")]),
        ChatMessage(role="chatbot", content=f"bonjour {n} é 茶"),
    ]
    return rng.choice(kinds)


def _call(store: Any, rng: random.Random, step: int) -> tuple[str, Any]:
    key = rng.choice(["alice", "bob", "carol"])
    op = rng.choice(["add", "add", "add", "insert", "set", "get", "delete_message",
                     "delete_last", "delete_messages", "keys"])
    if op == "add":
        return op, store.add_message(key, _message(rng, step))
    if op == "insert":
        return op, store.add_message(key, _message(rng, step), idx=rng.randint(0, 3))
    if op == "set":
        return op, store.set_messages(key, [_message(rng, step * 10 + i)
                                            for i in range(rng.randint(0, 3))])
    if op == "get":
        return op, store.get_messages(key)
    if op == "delete_message":
        return op, store.delete_message(key, rng.randint(0, 4))
    if op == "delete_last":
        if not store.get_messages(key):  # SimpleChatStore raises IndexError on an empty key
            return op, "skipped"
        return op, store.delete_last_message(key)
    if op == "delete_messages":
        return op, store.delete_messages(key)
    return op, sorted(store.get_keys())  # the order differs: see the module docstring


@pytest.mark.parametrize("seed", range(4))
def test_the_chat_store_answers_as_simple_chat_store_over_random_calls(
        threads: ThreadStore, seed: int) -> None:
    ours = RememChatStore(threads)
    reference = SimpleChatStore()
    rng_ours, rng_reference = random.Random(seed), random.Random(seed)
    for step in range(60):
        op, got = _call(ours, rng_ours, step)
        _, want = _call(reference, rng_reference, step)
        assert got == want, f"step {step}: {op}"
    for key in reference.get_keys():
        assert ours.get_messages(key) == reference.get_messages(key)


async def _db_call(store: Any, rng: random.Random, step: int) -> tuple[str, Any]:
    key = rng.choice(["alice", "bob"])
    status = rng.choice([MessageStatus.ACTIVE, MessageStatus.ACTIVE, MessageStatus.ARCHIVED])
    any_status = rng.choice([MessageStatus.ACTIVE, MessageStatus.ARCHIVED, None])
    op = rng.choice(["add", "add", "add_many", "set", "get", "get", "count", "delete",
                     "oldest", "archive", "archive", "keys"])
    if op == "add":
        return op, await store.add_message(key, _message(rng, step), status=status)
    if op == "add_many":
        return op, await store.add_messages(
            key, [_message(rng, step * 10 + i) for i in range(rng.randint(1, 3))], status)
    if op == "set":
        return op, await store.set_messages(
            key, [_message(rng, step * 10 + i) for i in range(rng.randint(0, 3))], status)
    if op == "get":
        return op, await store.get_messages(key, any_status, rng.choice([None, 1, 2]),
                                            rng.choice([None, 0, 1]))
    if op == "count":
        return op, await store.count_messages(key, any_status)
    if op == "delete":
        return op, await store.delete_messages(key, any_status)
    if op == "oldest":
        return op, await store.delete_oldest_messages(key, rng.randint(0, 3))
    if op == "archive":
        return op, await store.archive_oldest_messages(key, rng.randint(0, 3))
    return op, sorted(await store.get_keys())


@pytest.mark.parametrize("seed", range(4))
async def test_the_db_chat_store_answers_as_llama_index_s_sql_store_over_random_calls(
        threads: ThreadStore, seed: int) -> None:
    ours = RememDBChatStore(threads)
    reference = SQLAlchemyChatStore(table_name="reference",
                                    async_database_uri="sqlite+aiosqlite:///:memory:")
    rng_ours, rng_reference = random.Random(seed), random.Random(seed)
    try:
        for step in range(60):
            op, got = await _db_call(ours, rng_ours, step)
            _, want = await _db_call(reference, rng_reference, step)
            assert got == want, f"step {step}: {op}"
        for key in await reference.get_keys():
            assert await ours.get_messages(key, None) == await reference.get_messages(key, None)
    finally:
        await _dispose(reference)


async def _dispose(store: SQLAlchemyChatStore) -> None:
    """Close LlamaIndex's SQL store (its aiosqlite connection warns when left open)."""
    engine = store._async_engine
    if engine is not None:
        await engine.dispose()


def test_the_chat_store_keeps_history_in_checkpoints_and_lists_its_own_keys(
        threads: ThreadStore) -> None:
    store = RememChatStore(threads, metadata={"user_id": "alice"})
    other = RememChatStore(threads, name="other")
    store.set_messages("chat-1", [ChatMessage(role="user", content="I drink green tea"),
                                  ChatMessage(role="assistant", content="Noted."),
                                  ChatMessage(role="user", content="and coffee")])
    other.add_message("chat-2", ChatMessage(role="user", content="hello"))
    threads.append("chat-1", "written by remem")  # another writer: role and text come back

    removed = store.delete_message("chat-1", 1)

    assert removed == ChatMessage(role="assistant", content="Noted.")
    assert [(m.role.value, m.content) for m in store.get_messages("chat-1")] == [
        ("user", "I drink green tea"), ("user", "and coffee"), ("user", "written by remem")]
    assert store.get_keys() == ["chat-1"] and other.get_keys() == ["chat-2"]
    assert threads.get("chat-1").metadata["user_id"] == "alice"
    # the deleted message is still in the thread's earlier checkpoints
    first = threads.checkpoints("chat-1", limit=100)[-2]
    assert [m.text for m in threads.messages("chat-1", checkpoint_id=first.id)][1] == "Noted."
    with pytest.raises(InvalidInputError):
        RememChatStore(object())  # type: ignore[arg-type]


def test_a_chat_engine_keeps_its_conversation_in_a_remem_thread(threads: ThreadStore) -> None:
    store = RememChatStore(threads)

    def engine() -> SimpleChatEngine:
        buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="alice-1",
                                                token_limit=2000)
        return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=buffer)

    engine().chat("My name is Alice")
    answer = engine().chat("What is my name?")  # a new engine: the history is read back

    # MockLLM answers with the prompt it was sent: the first turn was in it
    assert "My name is Alice" in str(answer)
    assert [(m.role, m.text[:16]) for m in threads.messages("alice-1")] == [
        ("user", "My name is Alice"), ("assistant", "user: My name is"),
        ("user", "What is my name?"), ("assistant", "user: My name is")]


def _block(memory: Memory, **options: Any) -> RememMemoryBlock:
    return RememMemoryBlock(memory=memory, user_id="alice", **options)


@pytest.mark.filterwarnings(AGENT_WARNINGS[0])
@pytest.mark.filterwarnings(AGENT_WARNINGS[1])
async def test_a_function_agent_gets_remem_s_memories_and_flushed_turns_are_remembered(
        ) -> None:
    remem_memory = Memory.open(":memory:", embedder=FakeEmbedder())
    for fact in FACTS:
        remem_memory.add(fact, user_id="alice", infer=False)
    sent: list[list[ChatMessage]] = []

    def answer(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        sent.append(list(messages))
        return ChatMessage(role="assistant", content=f"answer {len(sent)}")

    threads = ThreadStore(":memory:")
    memory = LlamaMemory.from_defaults(
        session_id="alice-1", token_limit=60, chat_history_token_ratio=0.5,
        token_flush_size=20, chat_store=RememDBChatStore(threads),
        memory_blocks=[_block(remem_memory, limit=2)])
    agent = FunctionAgent(llm=MockFunctionCallingLLM(response_generator=answer), tools=[],
                          system_prompt="Be brief.")

    first = await agent.run("What tea does Alice drink?", memory=memory)
    for turn in range(3):
        await agent.run(f"Remember that I like rooibos number {turn}, it matters", memory=memory)

    assert str(first) == "answer 1"
    assert [(m.role.value, m.content) for m in sent[0]] == [
        ("system", "Be brief."),
        ("system", "<memory>\n<remem>\n- Alice drinks green tea\n- Alice lives in Berlin\n"
                   "</remem>\n</memory>"),
        ("user", "What tea does Alice drink?")]
    # LlamaIndex flushed the oldest turns out of its short-term memory into the block:
    # remem keeps the user's messages as they were said
    stored = {m.text for m in remem_memory.get_all(user_id="alice").memories}
    assert {"What tea does Alice drink?",
            "Remember that I like rooibos number 0, it matters"} <= stored
    assert not any(text.startswith("answer") for text in stored)  # only what the user said
    # the short-term history is the thread: the flushed messages archived, the rest active
    kept = threads.messages("alice-1")
    statuses = [m.metadata["llama_index_status"] for m in kept]
    assert [m.text for m in kept[:2]] == ["What tea does Alice drink?", "answer 1"]
    assert statuses[0] == "archived" and statuses[-1] == "active"
    # archived ones first: the oldest are flushed
    assert statuses == sorted(statuses, key=lambda status: status == "active")
    assert [m.content for m in await memory.aget_all(status=MessageStatus.ACTIVE)] == [
        m.text for m in kept if m.metadata["llama_index_status"] == "active"]
    threads.close()
    remem_memory.close()


async def test_the_block_ranks_the_last_user_message_and_extracts_when_asked() -> None:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    for fact in FACTS:
        memory.add(fact, user_id="alice", infer=False)
    memory.add("Bob plays the cello", user_id="bob", infer=False)
    block = _block(memory, limit=1)

    ranked = await block.aget([ChatMessage(role="user", content="cello?"),
                               ChatMessage(role="assistant", content="Berlin")])
    newest = await block.aget([])
    await block.aput([ChatMessage(role="user", content="hi")], from_short_term_memory=True)
    closed = _block(memory, accept_short_term_memory=False)
    await closed.aput([ChatMessage(role="user", content="never stored")],
                      from_short_term_memory=True)

    assert ranked == "- Alice plays the cello"
    assert newest == f"- {FACTS[-1]}"
    texts = {m.text for m in memory.get_all(user_id="alice").memories}
    assert "hi" in texts and "never stored" not in texts
    with pytest.raises(ValueError, match="no scope given"):  # pydantic's, naming remem's
        RememMemoryBlock(memory=memory)

    model = ScriptedModel(default={"inserts": [{"memory": {"content": "Likes rooibos"}}]})
    extracting = RememMemoryBlock(memory=Memory.open(":memory:", embedder=FakeEmbedder(),
                                                     llm=model), user_id="alice", infer=True)
    await extracting.aput([ChatMessage(role="user", content="rooibos is my favourite"),
                           ChatMessage(role="assistant", content="Noted.")])
    assert await extracting.aget([ChatMessage(role="user", content="tea")]) == "- Likes rooibos"
    assert "rooibos is my favourite" in model.requests[0].messages[-1].text


def test_a_message_without_text_is_kept(threads: ThreadStore) -> None:
    """An assistant message that only calls a tool (no text) round-trips too."""
    store = RememChatStore(threads)
    call = ChatMessage(role="assistant", blocks=[
        ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": 1})])
    store.add_message("k", ChatMessage(role="user", content="look it up"))
    store.add_message("k", call)  # a batch of one message without text
    assert store.get_messages("k")[-1] == call
