"""RememMemory (AutoGen's ``Memory`` over remem): an AssistantAgent run by autogen-ext's
ReplayChatCompletionClient (no network) gets the relevant memories in its model context; the
protocol's calls on SQLite in memory and in a file; and AutoGen's own memory tests (from the
autogen-core and autogen-agentchat sdists, downloaded once into a cache directory) run
against RememMemory and against their own classes, every difference listed."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage
from autogen_core import ComponentModel
from autogen_core.memory import Memory as AutogenMemory
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from remem import FakeEmbedder, Memory
from remem.errors import InvalidInputError, UsageError
from remem.integrations.autogen import RememMemory
from remem.llm import ScriptedModel
from tests.integrations.langgraph_suites import _parse, fetch

FACTS = ["Alice drinks green tea", "Alice lives in Berlin", "Alice plays the cello",
         "Alice works as a nurse"]


def _text(value: str) -> MemoryContent:
    return MemoryContent(content=value, mime_type=MemoryMimeType.TEXT)


async def _seeded(memory: Memory, **options: Any) -> RememMemory:
    adapter = RememMemory(memory, user_id="alice", **options)
    for fact in FACTS:
        await adapter.add(_text(fact))
    return adapter


@pytest.fixture(params=["memory", "file"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    where = ":memory:" if request.param == "memory" else str(tmp_path / "autogen.db")
    opened = Memory.open(where, embedder=FakeEmbedder())
    yield opened
    opened.close()


async def test_an_assistant_agent_gets_the_relevant_memories_in_its_model_context(
        memory: Memory) -> None:
    adapter = await _seeded(memory, limit=2)
    client = ReplayChatCompletionClient(["You drink green tea.", "Berlin."])
    agent = AssistantAgent("helper", model_client=client, memory=[adapter])

    result = await agent.run(task="What tea does Alice drink?")

    assert isinstance(result.messages[-1], TextMessage)
    assert result.messages[-1].content == "You drink green tea."
    sent = client.create_calls[0]["messages"]
    assert [type(m) for m in sent] == [SystemMessage, UserMessage, SystemMessage]
    assert sent[-1].content.splitlines()[2:] == ["1. Alice drinks green tea",
                                                 "2. Alice lives in Berlin"]
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert [item.content for item in events[0].content] == ["Alice drinks green tea",
                                                            "Alice lives in Berlin"]
    # the next turn is ranked for its own question, and the agent's context keeps both turns
    second = await agent.run(task="Which city does Alice live in? Berlin?")
    assert second.messages[-1].content == "Berlin."
    sent = client.create_calls[1]["messages"]
    assert [type(m) for m in sent] == [SystemMessage, UserMessage, SystemMessage,
                                       AssistantMessage, UserMessage, SystemMessage]
    assert sent[-1].content.splitlines()[2] == "1. Alice lives in Berlin"


async def test_query_ranks_the_scope_and_carries_scores_ids_and_metadata(
        memory: Memory) -> None:
    adapter = await _seeded(memory)
    await RememMemory(memory, user_id="bob").add(_text("Bob drinks green tea"))
    await adapter.add(MemoryContent(content="Alice likes jasmine tea", mime_type="text/plain",
                                    metadata={"source": "chat", "turn": 3}))

    found = (await adapter.query("jasmine tea")).results

    assert found[0].content == "Alice likes jasmine tea"
    assert found[0].metadata is not None
    assert found[0].metadata["source"] == "chat" and found[0].metadata["turn"] == 3
    assert found[0].metadata["id"].startswith("mem_")
    assert found[0].metadata["kind"] == "fact"
    scores = [item.metadata["score"] for item in found if item.metadata]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5
    assert "Bob drinks green tea" not in {item.content for item in found}
    assert [i.content for i in (await adapter.query(_text("cello"), limit=1)).results] == [
        "Alice plays the cello"]
    with pytest.raises(InvalidInputError, match="got top_k"):
        await adapter.query("tea", top_k=3)


async def test_json_contents_come_back_as_the_same_dict_and_binaries_are_refused(
        memory: Memory) -> None:
    adapter = RememMemory(memory, agent_id="planner")
    await adapter.add(MemoryContent(content={"diet": "vegetarian", "allergies": ["nuts"]},
                                    mime_type=MemoryMimeType.JSON))

    found = (await adapter.query("vegetarian diet")).results

    assert found[0].content == {"diet": "vegetarian", "allergies": ["nuts"]}
    assert found[0].mime_type == "application/json"
    with pytest.raises(InvalidInputError, match="keeps text and JSON, got bytes"):
        await adapter.add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY))


async def test_update_context_searches_with_the_last_user_message(memory: Memory) -> None:
    adapter = await _seeded(memory, limit=1)
    context = BufferedChatCompletionContext(buffer_size=10)

    newest = await adapter.update_context(context)  # no user message yet: the newest
    await context.add_message(UserMessage(content="Does Alice play the cello?", source="u"))
    await context.add_message(AssistantMessage(content="Let me check.", source="helper"))
    result = await adapter.update_context(context)

    assert [item.content for item in newest.memories.results] == [FACTS[-1]]
    messages = await context.get_messages()
    assert messages[0].content == ("\nRelevant memories (newest first):\n"
                                   f"1. {FACTS[-1]}\n")
    assert len(messages) == 4 and isinstance(messages[-1], SystemMessage)
    assert messages[-1].content == ("\nRelevant memories (most relevant first):\n"
                                    "1. Alice plays the cello\n")
    assert [item.content for item in result.memories.results] == ["Alice plays the cello"]


async def test_clear_forgets_the_scope_only_and_close_keeps_a_memory_passed_in(
        memory: Memory) -> None:
    alice = await _seeded(memory)
    bob = RememMemory(memory, user_id="bob")
    await bob.add(_text("Bob drinks coffee"))

    await alice.clear()
    await alice.close()

    assert (await alice.query("tea")).results == []
    assert [item.content for item in (await bob.query("coffee")).results] == [
        "Bob drinks coffee"]
    # the forgotten memories are invalidated, not erased: remem's history still has them
    gone = memory.search("tea", user_id="alice", include_invalid=True)
    assert {hit.memory.text for hit in gone} == set(FACTS)


async def test_add_extracts_with_remem_s_chat_model_when_asked() -> None:
    model = ScriptedModel(default={"inserts": [{"memory": {"content": "Prefers green tea"}}]})
    memory = Memory.open(":memory:", embedder=FakeEmbedder(), llm=model)
    adapter = RememMemory(memory, user_id="alice", infer=True)

    await adapter.add(_text("I'd like green tea, as always"))

    assert [item.content for item in (await adapter.query("tea")).results] == [
        "Prefers green tea"]
    assert "green tea, as always" in model.requests[0].messages[-1].text
    memory.close()


async def test_a_component_config_reopens_the_same_memories(tmp_path: Path) -> None:
    path = str(tmp_path / "agent.db")
    adapter = RememMemory.open(path, embedder="fake", user_id="alice", limit=3, name="prefs")
    await adapter.add(_text("Alice drinks green tea"))
    config = adapter.dump_component()
    await adapter.close()

    loaded = AutogenMemory.load_component(config)

    assert isinstance(loaded, RememMemory)
    assert config.provider == "remem.integrations.autogen.RememMemory"
    assert config.config == {"location": path, "embedder": "fake", "name": "prefs",
                             "user_id": "alice", "limit": 3, "infer": False}
    assert (loaded.name, loaded.limit) == ("prefs", 3)
    assert [item.content for item in (await loaded.query("tea")).results] == [
        "Alice drinks green tea"]
    await loaded.close()
    with pytest.raises(UsageError, match="lives in this process only"):
        RememMemory.open(":memory:", embedder="fake", user_id="a").dump_component()
    with pytest.raises(UsageError, match=r"only when RememMemory\.open made it"):
        RememMemory(Memory.open(":memory:", embedder=FakeEmbedder()),
                    user_id="a").dump_component()
    assert isinstance(ComponentModel.model_validate(config.model_dump()), ComponentModel)


def test_a_scope_is_required() -> None:
    with pytest.raises(InvalidInputError, match="no scope given"):
        RememMemory(Memory.open(":memory:", embedder=FakeEmbedder()))


# -- AutoGen's own memory tests, run on RememMemory --------------------------------------------

#: (sdist, test file, the tests selected): autogen-core's Memory tests (written for
#: ListMemory), and autogen-agentchat's AssistantAgent tests that give the agent a memory
SUITES = {
    "autogen-core": ("tests/test_memory.py", ""),
    "autogen-agentchat": ("tests/test_assistant_agent.py", "memory or Memory"),
}

#: the tests that fail on RememMemory and pass on their class, and why (docs/integrations.md)
EXPECTED_DIFFERENCES = {
    "autogen-core": {
        # ListMemory-specific: the config names ListMemory's provider and its `content` list
        "test_memory::test_memory_component_load_config_from_base_model",
        "test_memory::test_memory_component_dump_config_to_base_model",
        # bytes are refused: remem keeps text and JSON
        "test_memory::test_list_memory_content_types",
    },
    "autogen-agentchat": {
        # the test's MockMemory dumps a made-up config; an in-memory RememMemory refuses to
        # dump one (its memories could not be reopened from it)
        "test_assistant_agent.TestAssistantAgentComponentSerialization::"
        "test_to_config_agent_with_memory",
    },
}


def _run_suite(dist: str, variant: str, workdir: Path) -> dict[str, str]:
    """Their test file run by pytest in a subprocess (their pyproject's config), with
    autogen_suite_plugin in ``variant``: each test's outcome by ``module::test`` id."""
    root = fetch(dist, metadata.version(dist))
    path, select = SUITES[dist]
    report = workdir / f"{dist}-{variant}.xml"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(Path(__file__).parent),
               REMEM_AUTOGEN_VARIANT=variant, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-p", "autogen_suite_plugin", "-p",
               "no:cacheprovider", "-q", "--rootdir", str(root), "-c",
               str(root / "pyproject.toml"), f"--junitxml={report}", path,
               *(["-k", select] if select else [])]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert report.exists(), f"{dist} ({variant}) wrote no report:\n{done.stdout[-4000:]}"
    outcomes = _parse(report, variant).outcomes
    return {test.removeprefix("tests."): outcome for test, outcome in outcomes.items()}


@pytest.mark.slow
@pytest.mark.parametrize("dist", list(SUITES))
def test_autogen_s_own_memory_tests_pass_on_remem_but_the_documented_ones(
        dist: str, tmp_path: Path) -> None:
    reference = _run_suite(dist, "reference", tmp_path)
    ours = _run_suite(dist, "remem", tmp_path)

    assert reference and set(ours) == set(reference)
    assert all(outcome == "passed" for outcome in reference.values()), reference
    failed = {test for test, outcome in ours.items() if outcome != "passed"}
    assert failed == EXPECTED_DIFFERENCES[dist], ours
