"""The Memory facade: sync and async, scopes, edits by id, history, undo, export/import."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, ConflictError, InvalidInputError, NotFoundError
from remem.messages import Message
from tests.conftest import FakeClock
from tests.memory_support import make_store, rule_model


@pytest.fixture
def mem(clock: FakeClock) -> Memory:
    return Memory(make_store("sqlite"), llm=rule_model(), clock=clock)


def test_open_infer_false_is_searchable_at_once(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder()) as mem:
        added = mem.add("Alice drinks green tea", user_id="alice", infer=False,
                        metadata={"topic": "drinks"})
        record = added.added[0]
        assert added.usage.calls == 0 and added.write_attempts == 1
        hits = mem.search("green tea", user_id="alice")
        assert [h.memory.id for h in hits] == [record.id]
        assert set(hits[0].details) == {"keyword", "vector"}
        assert mem.get(record.id) == record.evolve(created_at=mem.get(record.id).created_at,
                                                   updated_at=mem.get(record.id).updated_at)
        assert mem.search(user_id="alice", filters={"metadata.topic": "food"}).hits == ()
        json.dumps(added.to_dict()), json.dumps(hits.to_dict())  # plain JSON
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder()) as again:  # persisted
        assert again.get(record.id).text == "Alice drinks green tea"


def test_infer_without_a_model_names_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                 "REMEM_LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    mem = Memory(make_store("memory"))
    with pytest.raises(ConfigError) as info:
        mem.add("I live in Berlin", user_id="alice")
    message = str(info.value)
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                 "REMEM_LLM_API_KEY", "infer=False"):
        assert name in message
    assert mem.search(user_id="alice").hits == ()


def test_messages_as_dicts_and_message_values(mem: Memory) -> None:
    result = mem.add([{"role": "system", "content": "be nice"},
                      {"role": "user", "content": [{"type": "text", "text": "I work at Acme"}]},
                      {"role": "assistant", "content": "Noted!"},
                      Message.user("I live in Oslo")], user_id="alice", thread_id="t9")
    assert sorted(r.text for r in result.added) == ["Lives in Oslo", "Works at Acme"]
    source = result.added[0].source
    assert source.thread_id == "t9" and len(source.message_ids) == 4
    with pytest.raises(InvalidInputError, match=r"messages\[0\]"):
        mem.add([42], user_id="alice")  # type: ignore[list-item]


def test_scopes(mem: Memory) -> None:
    mem.add("user fact", user_id="u1", infer=False)
    mem.add("agent fact", user_id="u1", agent_id="a1", infer=False)
    mem.add("thread fact", thread_id="t1", infer=False)
    mem.add("custom fact", namespace=("org", "acme"), infer=False)
    assert sorted(h.memory.text for h in mem.search(user_id="u1")) == ["agent fact",
                                                                        "user fact"]
    assert [h.memory.text for h in mem.search(user_id="u1", agent_id="a1")] == ["agent fact"]
    assert [h.memory.namespace for h in mem.search(thread_id="t1")] == [
        ("memories", "thread", "t1")]
    assert [h.memory.text for h in mem.search(namespace=("org",))] == ["custom fact"]
    with pytest.raises(InvalidInputError, match="no scope given"):
        mem.add("x", infer=False)
    with pytest.raises(InvalidInputError, match="reserves"):
        mem.add("x", namespace=("_remem", "ids"), infer=False)


def test_namespace_template_names_the_missing_placeholder(clock: FakeClock) -> None:
    mem = Memory(make_store("memory"), namespace=("tenants", "{agent_id}", "{user_id}"),
                 clock=clock)
    with pytest.raises(InvalidInputError, match="needs agent_id, which was not given"):
        mem.add("x", user_id="u1", infer=False)
    mem.add("x", user_id="u1", agent_id="bot", infer=False)
    assert mem.search(user_id="u1", agent_id="bot")[0].memory.namespace == (
        "tenants", "bot", "u1")


def test_update_in_place_with_version_check(mem: Memory, clock: FakeClock) -> None:
    record = mem.add("Has a cat", user_id="alice", infer=False).added[0]
    clock.advance(1)
    changed = mem.update(record.id, "Has two cats", version=1, reason="typo")
    after = changed.changes[0].memory
    assert (after.id, after.version, after.text) == (record.id, 2, "Has two cats")
    with pytest.raises(ConflictError, match="version 2, not 1"):
        mem.update(record.id, "Has three cats", version=1)
    assert mem.update(record.id, "has two cats.").skipped[0].reason == "unchanged"
    events = mem.history(record.id)
    assert [e.op for e in events] == ["add", "update"]
    assert events[1].before is not None and events[1].before["content"] == "Has a cat"
    assert events[1].reason == "typo"
    with pytest.raises(NotFoundError, match="no memory with id"):
        mem.update("mem_missing", "x")


def test_undo_restores_before_and_refuses_out_of_order(mem: Memory) -> None:
    record = mem.add("Has a cat", user_id="alice", infer=False).added[0]
    first = mem.update(record.id, "Has a dog").changes[0].event_id
    mem.update(record.id, "Has a fish")
    with pytest.raises(ConflictError, match="undo the later events first"):
        mem.undo(first)
    last = mem.history(record.id)[-1].id
    undone = mem.undo(last)
    assert undone.changes[0].op == "restore"
    assert mem.get(record.id).text == "Has a dog" and mem.get(record.id).version == 4
    mem.undo(first)
    assert mem.get(record.id).text == "Has a cat"
    assert [e.op for e in mem.history(record.id)] == ["add", "update", "update", "restore",
                                                      "restore"]
    with pytest.raises(NotFoundError, match="no event"):
        mem.undo("evt_missing")


def test_undo_of_a_supersession_restores_the_old_fact(mem: Memory) -> None:
    berlin = mem.add("I live in Berlin", user_id="alice").added[0]
    moved = mem.add("I moved to Rome", user_id="alice")
    mem.undo(moved.changes[1].event_id)  # the add half: both halves are undone
    assert [h.memory.text for h in mem.search(user_id="alice")] == ["Lives in Berlin"]
    assert mem.get(berlin.id).status == "current"


def test_delete_soft_then_hard(mem: Memory, clock: FakeClock) -> None:
    record = mem.add("Has a cat", user_id="alice", infer=False).added[0]
    clock.advance(10)
    mem.delete(record.id, reason="user asked")
    assert mem.search(user_id="alice").hits == ()
    assert mem.search(user_id="alice", as_of=clock.now - 1)[0].memory.id == record.id
    assert mem.delete(record.id).skipped[0].reason == "already invalid"
    mem.delete(record.id, hard=True)
    with pytest.raises(NotFoundError):
        mem.get(record.id)
    assert [e.op for e in mem.history(record.id)] == ["add", "invalidate", "delete"]


def test_export_import_round_trip(mem: Memory, tmp_path: Path) -> None:
    mem.add("I live in Berlin", user_id="alice")
    moved = mem.add("I moved to Rome", user_id="alice")
    mem.add("Bob likes jazz", user_id="bob", infer=False)
    path = tmp_path / "memories.jsonl"
    lines = mem.export(path)
    assert lines == 3 + 4  # three records; events: add, invalidate + add, add
    copy = Memory(make_store("memory"))
    assert copy.import_(path) == lines
    assert copy.import_(path) == lines  # idempotent
    new = moved.added[0]
    assert copy.get(new.id).to_dict() == mem.get(new.id).to_dict()
    assert [e.to_dict() for e in copy.history(new.supersedes or "")] == [
        e.to_dict() for e in mem.history(new.supersedes or "")]
    assert sorted(h.memory.text for h in copy.search(query="Rome", user_id="alice")) == [
        "Lives in Rome"]
    only_bob = tmp_path / "bob.jsonl"
    assert mem.export(only_bob, namespace=("memories", "user", "bob")) == 2


def test_bad_import_lines_name_the_line(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="line 2"):
        mem.import_(["", "{\"what\": 1}"])


def scenario(mem: Memory) -> list[Any]:
    """The same steps through the sync API (the async twin is below)."""
    a = mem.add("I live in Berlin", user_id="u")
    b = mem.add("I moved to Rome", user_id="u")
    memory_id = b.added[0].id
    mem.update(memory_id, "Lives in Rome, Italy")
    hits = mem.search("Rome", user_id="u")
    events = mem.history(memory_id)
    mem.undo(events[-1].id)
    mem.delete(memory_id)
    return [len(a.changes), [c.op for c in b.changes], [h.memory.text for h in hits],
            [e.op for e in mem.history(memory_id)], mem.get(memory_id).status]


async def ascenario(mem: Memory) -> list[Any]:
    a = await mem.aadd("I live in Berlin", user_id="u")
    b = await mem.aadd("I moved to Rome", user_id="u")
    memory_id = b.added[0].id
    await mem.aupdate(memory_id, "Lives in Rome, Italy")
    hits = await mem.asearch("Rome", user_id="u")
    events = await mem.ahistory(memory_id)
    await mem.aundo(events[-1].id)
    await mem.adelete(memory_id)
    return [len(a.changes), [c.op for c in b.changes], [h.memory.text for h in hits],
            [e.op for e in await mem.ahistory(memory_id)], (await mem.aget(memory_id)).status]


def test_async_twins_behave_like_the_sync_methods(clock: FakeClock) -> None:
    sync = scenario(Memory(make_store("sqlite"), llm=rule_model(), clock=clock))
    async_ = asyncio.run(ascenario(Memory(make_store("sqlite"), llm=rule_model(),
                                          clock=clock)))
    assert sync == async_
    assert sync[1] == ["invalidate", "add"] and sync[-1] == "invalid"


def test_in_place_edits_keep_what_was_said_for_as_of(mem: Memory, clock: FakeClock,
                                                     tmp_path: Path) -> None:
    record = mem.add("Works at Acme", user_id="alice", infer=False).added[0]
    said_at = clock.now
    clock.advance(100)
    mem.update(record.id, "Works at Initech")
    assert mem.get(record.id).valid_at == clock.now
    then = mem.search(user_id="alice", as_of=said_at)
    assert [(h.memory.id, h.memory.text) for h in then] == [(record.id, "Works at Acme")]
    assert [h.memory.text for h in mem.search(user_id="alice")] == ["Works at Initech"]
    assert [h.memory.text for h in mem.search(user_id="alice", include_invalid=True)] == [
        "Works at Initech"]  # the archived version is not a second memory
    path = tmp_path / "m.jsonl"
    mem.export(path)
    copy = Memory(make_store("memory"))
    copy.import_(path)
    assert [h.memory.text for h in copy.search(user_id="alice", as_of=said_at)] == [
        "Works at Acme"]
    mem.delete(record.id, hard=True)
    assert mem.search(user_id="alice", as_of=said_at).hits == ()


def test_a_store_default_ttl_never_expires_history(clock: FakeClock) -> None:
    from remem.store import IndexConfig, InMemoryStore, KeywordConfig, TTLConfig

    store = InMemoryStore(index=IndexConfig(FakeEmbedder(16), fields=("text",)),
                          keyword=KeywordConfig(fields=("text",)),
                          ttl=TTLConfig(default_ttl=60), clock=clock)
    mem = Memory(store, clock=clock)
    record = mem.add("Short-lived note", user_id="u", infer=False).added[0]
    clock.advance(3600)
    assert mem.search(user_id="u").hits == ()  # the memory itself follows the store's TTL
    assert [e.op for e in mem.history(record.id)] == ["add"]  # its history stays
