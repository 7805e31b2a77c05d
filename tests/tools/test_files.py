"""Agent tools for files, blocks and archival memory: definitions as a model sees them, tool
errors the model can read, and results that never exceed their token budget."""

from __future__ import annotations

import contextlib
import json

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from remem import FakeEmbedder
from remem.api import Memory
from remem.blocks import Blocks
from remem.errors import InvalidInputError
from remem.files import InMemoryFileBackend
from remem.messages.types import ToolCall
from remem.tokens import DEFAULT_COUNTER
from remem.tools.archival import ArchivalTools
from remem.tools.blocks import BlockTools
from remem.tools.files import FileTools


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def test_definitions_for_openai_and_anthropic() -> None:
    tools = FileTools(InMemoryFileBackend(), budget=800)
    openai = tools.openai_tools()
    assert [t["function"]["name"] for t in openai] == [
        "ls", "read_file", "write_file", "edit_file", "glob", "grep"]
    edit = next(t for t in tools.anthropic_tools() if t["name"] == "edit_file")
    schema = edit["input_schema"]
    assert schema["required"] == ["path", "old_string", "new_string"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["replace_all"]["default"] is False
    assert "800 tokens" in edit["description"]
    blocks = BlockTools(Blocks(InMemoryFileBackend()), "a").openai_tools()
    assert [t["function"]["name"] for t in blocks] == [
        "core_memory_append", "core_memory_replace", "memory_rethink"]
    read_only = FileTools(InMemoryFileBackend(), tools=["ls", "read_file"])
    assert [s.name for s in read_only.specs()] == ["ls", "read_file"]
    assert read_only.execute(_call("write_file", path="/a", content="x")).is_error
    with pytest.raises(InvalidInputError, match="budget"):
        FileTools(InMemoryFileBackend(), budget=10)


@pytest.mark.parametrize(("call", "expected"), [
    (_call("read_file", path="/missing.md"), "no file at '/missing.md'"),
    (_call("read_file", path="/../etc/passwd"), "'..' segment"),
    (_call("read_file"), "path: Field required"),
    (_call("read_file", path="/a.md", offset=-1), "offset"),
    (_call("ls", path="/", recursive=True), "unknown argument(s) recursive"),
    (_call("edit_file", path="/a.md", old_string="zzz", new_string="y"), "does not occur"),
    (_call("write_file", path="/a.md", content="x", etag="stale"), "changed since etag stale"),
    (_call("rm", path="/a.md"), "unknown tool 'rm'"),
])
def test_bad_calls_come_back_as_errors_the_model_can_read(call: ToolCall,
                                                           expected: str) -> None:
    files = InMemoryFileBackend()
    files.write("/a.md", "hello\n")
    reply = FileTools(files).execute(call)
    assert reply.is_error and expected in reply.text, reply.text
    assert reply.text.startswith(f"Error in {call.name}: ")


def test_read_file_pages_with_next_offset() -> None:
    files = InMemoryFileBackend()
    files.write("/long.md", "".join(f"line number {n}\n" for n in range(200)))
    tools = FileTools(files, budget=100)
    first = json.loads(tools.execute(_call("read_file", path="/long.md")).text)
    assert 0 < first["content"].count("\n") < 200 and first["remaining"] > 0
    second = json.loads(tools.execute(
        _call("read_file", path="/long.md", offset=first["next_offset"])).text)
    assert second["content"].startswith(f"line number {first['next_offset']}\n")


def test_edit_then_read_through_tools_uses_etags() -> None:
    files = InMemoryFileBackend()
    tools = FileTools(files)
    written = json.loads(tools.execute(_call("write_file", path="/n.md", content="a b")).text)
    edited = tools.execute(_call("edit_file", path="/n.md", old_string="b", new_string="c",
                                 etag=written["etag"]))
    assert not edited.is_error and files.read("/n.md").content == "a c"
    assert files.history("/n.md")[-1].actor == "agent"


NAMES = st.sampled_from(["a", "b", "notes", "x", "深"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
TEXT = st.text(alphabet=st.sampled_from(list("ab c\n.字é")), max_size=400)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=st.dictionaries(PATHS, TEXT, max_size=12),
       budget=st.integers(min_value=64, max_value=300),
       calls=st.lists(st.one_of(
           st.builds(lambda p: _call("ls", path=p), PATHS),
           st.builds(lambda p, o: _call("read_file", path=p, offset=o), PATHS,
                     st.integers(0, 5)),
           st.builds(lambda p: _call("glob", pattern="**", path=p), PATHS),
           st.builds(lambda t: _call("grep", pattern=t), st.sampled_from(["a", "b", "字"])),
           st.builds(lambda p, t: _call("write_file", path=p, content=t), PATHS, TEXT),
       ), min_size=1, max_size=6))
def test_file_tool_results_never_exceed_the_budget(contents: dict[str, str], budget: int,
                                                   calls: list[ToolCall]) -> None:
    files = InMemoryFileBackend()
    for path, text in contents.items():
        with contextlib.suppress(InvalidInputError):  # e.g. a path holding another's dir
            files.write(path, text)
    tools = FileTools(files, budget=budget)
    for call in calls:
        reply = tools.execute(call)
        assert DEFAULT_COUNTER.count(reply.text) <= budget, (call, reply.text)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(passages=st.lists(st.text(alphabet=st.sampled_from(list("tea coffee 茶 x.")),
                                 min_size=1, max_size=300), min_size=1, max_size=10),
       budget=st.integers(min_value=64, max_value=200))
def test_archival_search_results_fit_the_budget_and_count_the_rest(passages: list[str],
                                                                   budget: int) -> None:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    tools = ArchivalTools(memory, user_id="u", budget=budget)
    for passage in passages:
        if passage.strip():
            assert not tools.execute(_call("archival_memory_insert", content=passage)).is_error
    reply = tools.execute(_call("archival_memory_search", query="tea"))
    assert DEFAULT_COUNTER.count(reply.text) <= budget
    page = json.loads(reply.text)
    stored = len({p for p in passages if p.strip()})
    assert len(page["results"]) + page["more"] <= stored
    memory.close()


def test_block_tools_refuse_over_limit_edits_with_a_fix() -> None:
    blocks = Blocks(InMemoryFileBackend())
    blocks.create("h", label="human", limit=20)
    blocks.attach("agent", "h")
    tools = BlockTools(blocks, "agent")
    ok = tools.execute(_call("core_memory_append", label="human", content="likes tea"))
    assert json.loads(ok.text) == {"status": "updated", "label": "human", "chars": "9/20"}
    over = tools.execute(_call("core_memory_append", label="human", content="x" * 30))
    assert over.is_error and "memory_rethink" in over.text and "20 over" in over.text
    missing = tools.execute(_call("memory_rethink", label="persona", new_memory="x"))
    assert missing.is_error and "the blocks are: human" in missing.text


def test_conversation_search_by_text_and_date_within_budget() -> None:
    from datetime import UTC, datetime

    from remem.messages import Message
    from remem.threads import ThreadStore
    from remem.tools.archival import ConversationTools

    def at(day: int) -> float:
        return datetime(2025, 3, day, 12, tzinfo=UTC).timestamp()

    with ThreadStore(":memory:") as threads:
        threads.create("t-alice", metadata={"user_id": "alice"})
        threads.create("t-bob", metadata={"user_id": "bob"})
        threads.append("t-alice", [
            Message.user("Book a train to Lyon", created_at=at(1)),
            Message.assistant("Booked the TRAIN for Friday", created_at=at(2)),
            Message.user("Any train on Sunday?", created_at=at(5))])
        threads.append("t-bob", [Message.user("train secrets of bob", created_at=at(3))])
        tools = ConversationTools(threads, thread_filter={"user_id": "alice"}, budget=200)
        reply = json.loads(tools.execute(_call("conversation_search", query="train")).text)
        assert [m["at"][:10] for m in reply["messages"]] == [
            "2025-03-05", "2025-03-02", "2025-03-01"]  # newest first, bob's thread unseen
        ranged = json.loads(tools.execute(_call(
            "conversation_search", query="train", start_date="2025-03-02",
            end_date="2025-03-02")).text)
        assert [m["text"] for m in ranged["messages"]] == ["Booked the TRAIN for Friday"]
        small = ConversationTools(threads, thread_filter={"user_id": "alice"}, budget=64)
        page = small.execute(_call("conversation_search", query="train"))
        assert DEFAULT_COUNTER.count(page.text) <= 64
        data = json.loads(page.text)
        assert len(data["messages"]) + data["more"] == 3 and data["more"] > 0
        bad = tools.execute(_call("conversation_search", query="x", start_date="March 2"))
        assert bad.is_error and "ISO 8601" in bad.text
