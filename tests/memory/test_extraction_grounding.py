"""Extraction, profiles and summaries know when things were said and keep their language.

Scenario tests on the scripted model, in English and Chinese: the captured request carries the
reference date, the time each message was sent and the language rule; a validity the model
resolved from the text ("next Friday", "since March", "until next week") lands in the record's
``valid_at`` / ``valid_until``, apart from ``recorded_at``; ``as_of`` searches use it. Records
written before these fields existed read back unchanged (a value without them, put as is).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.llm import ChatRequest, ScriptedModel
from remem.memory import ProfileManager
from remem.memory.grounding import LANGUAGE_RULE, TIME_RULE, format_moment
from remem.memory.records import MemoryRecord
from remem.memory.store_manager import MemoryStoreManager
from remem.messages import Message
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store
from remem.store.types import PutOp
from remem.threads.summary import SummaryPolicy, compact
from tests.conftest import FakeClock
from tests.memory_support import make_store

# FakeClock's start, 1_750_000_000: Sunday 2025-06-15 15:06:40 UTC
SUNDAY = "Sunday 2025-06-15 15:06 UTC"


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def system_text(request: ChatRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role == "system")


def prompt_text(request: ChatRequest) -> str:
    return request.messages[-1].text


_schemas = itertools.count()


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)
    for store in _opened:
        store.close()
    _opened.clear()


_opened: list[BaseStore] = []


def store_of(kind: str, request: pytest.FixtureRequest) -> BaseStore:
    """A store indexed like Memory.open's; PostgreSQL in a fresh schema of the test
    database (its as_of filter and per-chunk vectors are SQL, not Python)."""
    if kind != "postgres":
        return make_store(kind)
    dsn = request.getfixturevalue("pg_database")
    store = open_store(dsn, schema=f"grounding{next(_schemas)}",
                       index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    _opened.append(store)
    return store


def test_next_friday_is_resolved_against_the_reference_date(
        kind: str, clock: FakeClock, request: pytest.FixtureRequest) -> None:
    llm = ScriptedModel([{"inserts": [{
        "memory": {"content": "Flies to Tokyo on 2025-06-20", "kind": "plan"},
        "valid_from": "2025-06-20"}]}])
    mem = Memory(store_of(kind, request), llm=llm, clock=clock)
    said = Message.user("I fly to Tokyo next Friday", created_at=clock.now)
    added = mem.add(said, user_id="alice").added[0]

    request = llm.requests[0]
    prompt = prompt_text(request)
    assert prompt.startswith(f"Reference time (now): {SUNDAY}\n\n")
    assert f"[sent {SUNDAY}]\nuser: I fly to Tokyo next Friday" in prompt
    assert LANGUAGE_RULE in system_text(request) and TIME_RULE in system_text(request)
    assert '"valid_from"' in system_text(request)  # the schema asks for it

    assert added.valid_at == day("2025-06-20") and added.valid_until is None
    assert added.recorded_at == clock.now
    stored = mem.get(added.id)
    assert (stored.valid_at, stored.recorded_at) == (day("2025-06-20"), clock.now)
    wire = added.to_dict()
    assert wire["valid_at"].startswith("2025-06-20T00:00:00")
    assert wire["recorded_at"].startswith("2025-06-15T15:06:40")
    # current now (stated plans are memories today), valid only from the stated day
    assert [h.memory.id for h in mem.search(user_id="alice")] == [added.id]
    assert mem.search(user_id="alice", as_of=day("2025-06-19")).hits == ()
    assert [h.memory.id for h in mem.search(user_id="alice", as_of=day("2025-06-21"))] == [
        added.id]


def test_a_chinese_conversation_stays_chinese_with_its_own_timestamps(
        kind: str, request: pytest.FixtureRequest) -> None:
    llm = ScriptedModel([
        {"inserts": [{"memory": {"content": "住在北京"}}]},
        {"updates": [{"id": 0, "memory": {"content": "住在上海"}, "valid_from": "2025-03-01"}]},
    ])
    clock = FakeClock(day("2025-01-10"))
    mem = Memory(store_of(kind, request), llm=llm, clock=clock)
    beijing = mem.add(Message.user("我住在北京", created_at=clock.now), user_id="li").added[0]
    clock.now = said = day("2025-07-10") + 9 * 3600 + 30
    moved = mem.add([Message.user("我从三月开始就住在上海了", created_at=said),
                     Message.assistant("好的，记住了。", created_at=said + 5)], user_id="li")

    prompt = prompt_text(llm.requests[1])
    assert prompt.startswith("Reference time (now): Thursday 2025-07-10 09:00 UTC\n\n")
    assert '{"id": 0, "type": "Fact", "memory": {"content": "住在北京"' in prompt
    assert ("[sent Thursday 2025-07-10 09:00 UTC]\nuser: 我从三月开始就住在上海了\n"
            "assistant: 好的，记住了。") in prompt
    assert LANGUAGE_RULE in system_text(llm.requests[1])

    shanghai = moved.added[0]
    assert shanghai.text == "住在上海" and shanghai.valid_at == day("2025-03-01")
    assert shanghai.recorded_at == clock.now
    closed = moved.invalidated[0]
    assert closed.id == beijing.id and closed.valid_until == day("2025-03-01")
    assert closed.invalid_at == clock.now  # recorded as superseded now, stated as ended March

    def as_of(moment: str) -> list[str]:
        return [h.memory.text for h in mem.search(user_id="li", as_of=day(moment))]

    # as_of follows what was said: Beijing until March, Shanghai since
    assert as_of("2025-02-01") == ["住在北京"]
    assert as_of("2025-04-01") == ["住在上海"]
    assert as_of("2025-07-11") == ["住在上海"]
    assert [h.memory.text for h in mem.search(user_id="li")] == ["住在上海"]


def test_a_stated_end_closes_the_memory_for_as_of(kind: str, clock: FakeClock,
                                                  request: pytest.FixtureRequest) -> None:
    llm = ScriptedModel([{"inserts": [{"memory": {"content": "Is in Paris"},
                                        "valid_until": "2025-06-22"}]}])
    mem = Memory(store_of(kind, request), llm=llm, clock=clock)
    paris = mem.add("I'm in Paris until next Sunday", user_id="alice").added[0]
    assert (paris.valid_at, paris.valid_until) == (clock.now, day("2025-06-22"))
    assert paris.status == "current"
    assert [h.memory.id for h in mem.search(user_id="alice", as_of=day("2025-06-21"))] == [
        paris.id]
    assert mem.search(user_id="alice", as_of=day("2025-06-23")).hits == ()
    assert paris.is_valid_at(day("2025-06-21")) and not paris.is_valid_at(day("2025-06-23"))


def test_an_end_before_the_start_goes_back_to_the_model(clock: FakeClock) -> None:
    llm = ScriptedModel([
        {"inserts": [{"memory": {"content": "Works remotely"}, "valid_from": "2025-06-20",
                      "valid_until": "2025-06-01"}]},
        {"inserts": [{"memory": {"content": "Works remotely"}, "valid_from": "2025-06-01",
                      "valid_until": "2025-06-20"}]},
    ])
    mem = Memory(make_store("sqlite"), llm=llm, clock=clock)
    result = mem.add("I work remotely from June 1 to June 20", user_id="alice")
    assert result.rejected == ("inserts[0].valid_until = 2025-06-01 is not after valid_from = "
                               "2025-06-20; give an end after the start, or leave one out",)
    assert "is not after valid_from" in prompt_text(llm.requests[1])
    record = result.added[0]
    assert (record.valid_at, record.valid_until) == (day("2025-06-01"), day("2025-06-20"))


def test_a_plain_string_is_read_now(clock: FakeClock) -> None:
    """Text and OpenAI-style dicts carry no time: they are stamped when read (the wall clock
    through Memory, whose requests read them; the manager's clock when given to it)."""
    llm = ScriptedModel(default={"inserts": []})
    formation = MemoryStoreManager(make_store("sqlite"), llm, clock=clock)
    formation.add("I like tea", {"user_id": "alice"})
    assert prompt_text(llm.requests[0]).startswith(f"Reference time (now): {SUNDAY}\n")
    mem = Memory(make_store("sqlite"), llm=llm, clock=clock)
    before = datetime.now(UTC)
    mem.add({"role": "user", "content": "I like coffee"}, user_id="alice")
    after = datetime.now(UTC)
    shown = {f"Reference time (now): {format_moment(t.timestamp())}" for t in (before, after)}
    assert prompt_text(llm.requests[1]).split("\n", 1)[0] in shown


def test_records_from_before_recorded_at_read_as_they_were(
        kind: str, clock: FakeClock, request: pytest.FixtureRequest) -> None:
    store = store_of(kind, request)
    mem = Memory(store, clock=clock)
    fresh = mem.add("Has a cat", user_id="alice", infer=False).added[0]
    old_value = fresh.to_value()
    for key in ("valid_until", "recorded_at"):
        del old_value[key]
    old_value["id"] = "mem_old"
    old_value["text"] = old_value["content"] = "Has a dog"
    store.batch([PutOp(fresh.namespace, "mem_old", old_value)])
    old = MemoryRecord.from_value(fresh.namespace, old_value)
    assert (old.recorded_at, old.valid_until) == (old.valid_at, None)
    found = mem.search(user_id="alice", as_of=clock.now + 1)
    assert sorted(h.memory.text for h in found) == ["Has a cat", "Has a dog"]
    dog = next(h.memory for h in found if h.memory.id == "mem_old")
    assert dog.recorded_at == fresh.valid_at and dog.valid_until is None


class Trip(BaseModel):
    """Where the user travels next."""

    destination: str | None = None
    date: str | None = None


def test_profiles_carry_the_reference_time_and_the_language_rule(clock: FakeClock) -> None:
    llm = ScriptedModel([{"patches": [{"op": "replace", "path": "/destination",
                                       "value": "东京"},
                                      {"op": "replace", "path": "/date",
                                       "value": "2025-06-20"}]}])
    profiles = ProfileManager(make_store("sqlite"), llm, Trip, clock=clock)
    result = profiles.update("我下周五飞东京", {"user_id": "li"})
    assert result.profile == {"destination": "东京", "date": "2025-06-20"}
    request = llm.requests[0]
    assert prompt_text(request).startswith(f"Reference time (now): {SUNDAY}\n\n")
    assert f"[sent {SUNDAY}]\nuser: 我下周五飞东京" in prompt_text(request)
    system = system_text(request)
    assert "Keep each value in the language it was stated in" in system
    assert "absolute dates" in system


@pytest.mark.parametrize("text", ["I fly to Tokyo next Friday", "我下周五飞东京"])
def test_summaries_carry_the_reference_time_and_the_language_rule(text: str) -> None:
    sent = day("2025-06-15") + 8 * 3600
    messages = [Message.user(text, created_at=sent),
                Message.assistant("ok " * 50, created_at=sent + 1),
                Message.user("and then?", created_at=sent + 7200),
                Message.assistant("done", created_at=sent + 7201)]
    model = ScriptedModel(default="summary")
    compact(model, messages, policy=SummaryPolicy(trigger_tokens=2, keep_tokens=1),
            force=True)
    request = model.requests[0]
    prompt: Any = prompt_text(request)
    assert prompt.startswith("Reference time (now): Sunday 2025-06-15 10:00 UTC\n\n")
    assert f"[Sunday 2025-06-15 08:00 UTC] User: {text}" in prompt
    system = system_text(request)
    assert "in the language of the conversation" in system and "as dates" in system


def test_a_long_memory_is_found_by_a_sentence_on_every_backend(
        kind: str, clock: FakeClock, request: pytest.FixtureRequest) -> None:
    sentences = [f"Harbor{i} lemur{i} kiwi{i} lantern{i} meadow{i} violin{i}." for i in range(60)]
    mem = Memory(store_of(kind, request), clock=clock)
    mem.add("A short note about tea", user_id="alice", infer=False)
    record = mem.add(" ".join(sentences), user_id="alice", infer=False).added[0]
    hit = mem.search(sentences[40], user_id="alice", mode="vector")[0]
    assert hit.memory.id == record.id and hit.score is not None and hit.score > 0.2
