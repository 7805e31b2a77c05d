"""Context assembly: budgets hold for any counter, whole items, priorities, renderings."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import FakeEmbedder
from remem.api import Memory
from remem.context import (
    ContextItem,
    ContextRequest,
    ContextScope,
    ContextSection,
    SectionOffer,
    pack,
    register_section,
    unregister_section,
)
from remem.context.packing import context_tokens
from remem.errors import InvalidInputError, UsageError
from remem.memory.records import MemoryRecord
from remem.messages import Message
from remem.threads import ThreadStore
from remem.tokens import EstimateCounter, count_messages


class CharCounter:
    """One token per character: additive, and large."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


class WordCounter:
    """One token per whitespace-separated word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class LumpyCounter:
    """Not additive: a whole costs more than its parts (a square root penalty on length)."""

    name = "lumpy"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 5 + math.sqrt(len(text))) if text else 0


COUNTERS = [EstimateCounter(), CharCounter(), WordCounter(), LumpyCounter(),
            EstimateCounter(cjk_per_char=1.2, scale=1.1)]


@pytest.fixture
def mem() -> Iterator[Memory]:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    yield memory
    memory.close()


@pytest.fixture
def threads() -> Iterator[ThreadStore]:
    store = ThreadStore(":memory:")
    yield store
    store.close()


def _profile(mem: Memory, user: str, content: dict[str, object]) -> None:
    record = MemoryRecord(id=f"prof_{user}", namespace=("profiles", user), content=content,
                          kind="profile", schema="Profile", valid_at=1_700_000_000.0)
    mem.store.put(("profiles", user), record.id, record.to_value())


def _fill(mem: Memory, threads: ThreadStore) -> None:
    mem.add("Alice drinks green tea every morning", user_id="alice", infer=False)
    mem.add("Alice moved to Berlin in 2024", user_id="alice", infer=False)
    mem.add("Alice is allergic to peanuts", user_id="alice", infer=False)
    mem.add("Bob likes coffee", user_id="bob", infer=False)
    _profile(mem, "alice", {"name": "Alice", "city": "Berlin", "languages": ["en", "de"]})
    threads.create("t1", messages=[
        "Hi, I am planning a trip",
        {"role": "assistant", "content": "Where to?"},
        "Somewhere warm",
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "weather", "arguments": "{\"city\": \"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Rome: 24C, sunny"},
        {"role": "assistant", "content": "Rome is 24C and sunny."},
        "What should I drink there?",
    ])
    threads.update_state("t1", {"summary": "Alice plans a trip somewhere warm.",
                                "summary_through": 2})


def test_everything_relevant_with_no_budget(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads)
    text = result.to_string()
    # profile, then memories, summary, recent messages (render order), Bob's memory absent
    assert text.index("## User profile") < text.index("## Relevant memories") < text.index(
        "## Conversation summary") < text.index("## Recent messages")
    assert "city: Berlin" in text and 'languages: ["en", "de"]' in text
    assert "Alice drinks green tea every morning (since " in text
    assert "Alice is allergic to peanuts" in text and "Bob" not in text
    assert "Alice plans a trip somewhere warm." in text
    # messages the summary covers (the first two) are left to it
    assert "Hi, I am planning a trip" not in text and "user: Somewhere warm" in text
    assert result.dropped == ()
    # recent: two turns ("Somewhere warm" with the tool call and answers, then the question)
    assert {r.name: r.kept for r in result.sections} == {
        "profile": 1, "memories": 3, "summary": 1, "recent": 2}
    assert result.tokens == context_tokens(result.blocks, EstimateCounter())


def test_messages_shapes(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads)
    openai = result.to_messages("openai")
    assert openai[0]["role"] == "system" and "## Relevant memories" in openai[0]["content"]
    assert "## Recent messages" not in openai[0]["content"]
    assert [m["role"] for m in openai[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    system, messages = result.to_messages("anthropic")
    assert system == openai[0]["content"]
    assert messages[0] == {"role": "user", "content": "Somewhere warm"}
    assert messages[-1]["content"] == "What should I drink there?"
    remem_messages = result.to_messages()
    assert all(isinstance(m, Message) for m in remem_messages)
    assert count_messages(remem_messages) <= result.tokens
    with pytest.raises(InvalidInputError, match="shape"):
        result.to_messages("gemini")  # type: ignore[arg-type]


def test_budget_drops_lowest_priority_whole_items(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    full = mem.context("tea", user_id="alice", thread_id="t1", threads=threads)
    budget = full.tokens - 10
    result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads,
                         budget_tokens=budget)
    assert result.tokens <= budget
    # the lowest priority section (recent) loses its oldest kept message first
    assert result.dropped and all(d.section == "recent" for d in result.dropped)
    assert result.dropped[0].reason == "over_budget"
    assert "user: Somewhere warm" not in result.to_string()
    # contiguous: once a message is out, older ones are out too (no gaps)
    kept = [m.text for m in result.to_messages() if m.role == "user"]
    assert kept == ["What should I drink there?"]
    # a tool call is never separated from its result; what is kept starts with a user turn
    roles = [m.role for m in result.to_messages()[1:]]
    assert ("tool" in roles) == any(m.tool_calls for m in result.to_messages())
    assert roles[0] == "user"


def test_priority_order_is_configurable(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    full = mem.context("tea", user_id="alice", thread_id="t1", threads=threads,
                       sections=["recent", "memories"])
    assert [r.name for r in full.sections] == ["recent", "memories"]
    result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads,
                         sections=["recent", "memories"], budget_tokens=full.tokens - 5)
    assert {d.section for d in result.dropped} == {"memories"}
    assert result.section_tokens()["recent"] == full.section_tokens()["recent"]


def test_zero_budget_is_empty_and_reports_everything(mem: Memory,
                                                     threads: ThreadStore) -> None:
    _fill(mem, threads)
    result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads,
                         budget_tokens=0)
    assert result.tokens == 0 and result.to_string() == "" and result.to_messages() == []
    assert len(result.dropped) == 1 + 3 + 1 + 2
    reasons = [d.reason for d in result.dropped if d.section == "recent"]
    assert reasons == ["over_budget", "after_dropped"]


def test_deterministic_and_async_parity(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    args = {"user_id": "alice", "thread_id": "t1", "threads": threads, "budget_tokens": 90}
    first = mem.context("tea", **args)  # type: ignore[arg-type]
    again = mem.context("tea", **args)  # type: ignore[arg-type]
    later = asyncio.run(mem.acontext("tea", **args))  # type: ignore[arg-type]
    assert first.to_dict() == again.to_dict() == later.to_dict()
    assert mem.run(ContextRequest(query="tea", user_id="alice")).to_dict() == \
        asyncio.run(mem.arun(ContextRequest(query="tea", user_id="alice"))).to_dict()


def test_a_thread_without_a_thread_store_is_refused(mem: Memory, threads: ThreadStore) -> None:
    _fill(mem, threads)
    with pytest.raises(UsageError, match="threads=ThreadStore"):
        mem.context("tea", user_id="alice", thread_id="t1")
    # thread_id as the memory scope only: the thread sections are not selected
    result = mem.context("tea", user_id="alice", thread_id="t1",
                         sections=["profile", "memories"])
    assert "## Relevant memories" in result.to_string()
    # without thread_id there is no thread to read: those sections are simply absent
    assert mem.context("tea", user_id="alice").section_tokens()["recent"] == 0


def test_bad_input_names_the_field(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="budget_tokens"):
        mem.context(user_id="a", budget_tokens=-1)
    with pytest.raises(InvalidInputError, match="no context section named 'blocks'"):
        mem.context(user_id="a", sections=["blocks"])
    with pytest.raises(InvalidInputError, match="more than once"):
        mem.context(user_id="a", sections=["memories", "memories"])
    with pytest.raises(InvalidInputError, match="sections"):
        mem.context(user_id="a", sections="memories")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="register_section needs a ContextSection"):
        register_section(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="built in"):
        register_section(Notes(name="memories"))
    assert ContextRequest(query="q", sections=["recent"]).model_dump(mode="json")[
        "sections"] == ["recent"]


@dataclass(frozen=True)
class Notes:
    """A section from outside: what a later capability registers."""

    notes: tuple[str, ...] = ("Remember to stretch.",)
    name: str = "notes"
    title: str = "Notes"
    order: int = 5
    contiguous: bool = False

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        return [ContextItem(f"note{i}", text) for i, text in enumerate(self.notes)]

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        return self.gather(scope)


def test_a_section_through_the_protocol(mem: Memory) -> None:
    mem.add("Alice drinks green tea", user_id="alice", infer=False)
    assert isinstance(Notes(), ContextSection)
    result = mem.context("tea", user_id="alice", sections=[Notes(), "memories"])
    assert result.to_string().startswith("## Notes\nRemember to stretch.\n\n## Relevant")
    register_section(Notes(name="registered-notes", notes=("From the registry.",)))
    try:
        by_default = mem.context("tea", user_id="alice")
        assert "From the registry." in by_default.to_string()
        assert by_default.sections[-1].name == "registered-notes"
    finally:
        assert unregister_section("registered-notes")
    assert "From the registry." not in mem.context("tea", user_id="alice").to_string()


# -- the budget holds: random offers (pure), then random stores ---------------------------------

_TEXT = st.text(st.sampled_from("ab cd\n中文,.!0123456789xyz"), min_size=1, max_size=120)


@st.composite
def _offers(draw: st.DrawFn) -> list[SectionOffer]:
    offers = []
    for s in range(draw(st.integers(0, 4))):
        conversation = draw(st.booleans())
        items = []
        for i in range(draw(st.integers(0, 12))):
            text = draw(_TEXT)
            if conversation:
                items.append(ContextItem(f"m{i}", "", (Message.user(text),), order=-i))
            else:
                items.append(ContextItem(f"k{i}", text, order=i))
        offers.append(SectionOffer(f"s{s}", draw(_TEXT.filter(lambda t: "\n" not in t)),
                                   draw(st.integers(0, 100)), conversation, tuple(items)))
    return offers


@settings(max_examples=300, deadline=None)
@given(offers=_offers(), budget=st.integers(0, 8000) | st.integers(0, 200),
       counter=st.sampled_from(COUNTERS))
def test_pack_never_exceeds_the_budget(offers: list[SectionOffer], budget: int,
                                       counter: object) -> None:
    result = pack(offers, budget, counter)  # type: ignore[arg-type]
    assert result.tokens <= budget
    assert counter.count(result.to_string()) <= budget  # type: ignore[attr-defined]
    assert count_messages(result.to_messages(), counter) <= budget  # type: ignore[arg-type]
    offered = sum(len(offer.items) for offer in offers)
    assert sum(r.kept for r in result.sections) + len(result.dropped) == offered
    assert pack(offers, budget, counter) == result  # type: ignore[arg-type]
    unlimited = pack(offers, None, counter)  # type: ignore[arg-type]
    assert unlimited.dropped == () and sum(r.kept for r in unlimited.sections) == offered
    if unlimited.tokens <= budget:  # everything fits: nothing may be dropped
        assert result.dropped == ()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memories=st.lists(_TEXT.filter(str.strip), max_size=15),
       messages=st.lists(_TEXT.filter(str.strip), max_size=15),
       budget=st.integers(0, 8000) | st.integers(0, 300), counter=st.sampled_from(COUNTERS),
       query=st.sampled_from([None, "ab", "中文"]))
def test_context_never_exceeds_the_budget_over_random_stores(
        memories: list[str], messages: list[str], budget: int, counter: object,
        query: str | None) -> None:
    with Memory.open(":memory:", embedder=FakeEmbedder()) as mem, \
            ThreadStore(":memory:") as threads:
        for text in memories:
            mem.add(text, user_id="u", infer=False, split="none")
        threads.create("t", messages=messages or None)
        kwargs = {"user_id": "u", "thread_id": "t", "threads": threads,
                  "token_counter": counter, "memory_limit": 1000}
        result = mem.context(query, budget_tokens=budget, **kwargs)  # type: ignore[arg-type]
        assert result.tokens <= budget
        assert counter.count(result.to_string()) <= budget  # type: ignore[attr-defined]
        everything = mem.context(query, **kwargs)  # type: ignore[arg-type]
        kept = {r.name: r.kept for r in everything.sections}
        assert kept["memories"] == len(mem.get_all(user_id="u", limit=1000).memories)
        assert kept["recent"] == len(messages) and everything.dropped == ()


def test_every_budget_gives_a_sequence_providers_accept(mem: Memory,
                                                       threads: ThreadStore) -> None:
    from remem.threads import check_anthropic_sequence, check_openai_sequence

    _fill(mem, threads)
    threads.append("t1", [{"role": "assistant", "content": "Try granita."}, "Thanks!"])
    full = mem.context("tea", user_id="alice", thread_id="t1", threads=threads)
    seen = set()
    for budget in range(0, full.tokens + 1, 3):
        result = mem.context("tea", user_id="alice", thread_id="t1", threads=threads,
                             budget_tokens=budget)
        assert result.tokens <= budget
        messages = result.to_messages()
        check_openai_sequence(messages)
        conversation = [m for m in messages if m.role != "system"]
        if conversation:
            assert conversation[0].role == "user"
            check_anthropic_sequence(conversation)
        seen.add(len(conversation))
    assert len(seen) >= 3  # the budgets went through several cuts


def test_the_profile_a_profile_manager_keeps(mem: Memory) -> None:
    from pydantic import BaseModel, Field

    from remem.llm import ScriptedModel
    from remem.memory import ProfileManager

    class UserProfile(BaseModel):
        """What we know about the user."""

        name: str | None = None
        city: str | None = None
        languages: list[str] = Field(default_factory=list)

    model = ScriptedModel([
        {"patches": [{"op": "replace", "path": "/name", "value": "Alice"},
                     {"op": "replace", "path": "/city", "value": "Berlin"}]},
        {"patches": [{"op": "replace", "path": "/city", "value": "Munich"},
                     {"op": "add", "path": "/languages/-", "value": "German"}]},
    ])
    profiles = ProfileManager(mem.store, model, UserProfile)
    profiles.update("I'm Alice from Berlin", {"user_id": "alice"})
    profiles.update("I moved to Munich and I speak German", {"user_id": "alice"})
    result = mem.context(user_id="alice", sections=["profile"])
    # the current version only, empty fields left out
    assert result.to_string() == (
        '## User profile\nname: Alice\ncity: Munich\nlanguages: ["German"]')
    assert mem.context(user_id="bob", sections=["profile"]).to_string() == ""
