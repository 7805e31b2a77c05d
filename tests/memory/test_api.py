"""The Memory facade: sync and async, scopes, edits by id, history, undo, export/import,
requests as values, get_all, delete_all and the search options."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import (
    ConfigError,
    ConflictError,
    IndexConfigError,
    InvalidInputError,
    NotFoundError,
)
from remem.memory.requests import ExportRequest, UndoRequest
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
    with pytest.raises(ConfigError) as info:  # asked to extract, with no model to do it
        mem.add("I live in Berlin", user_id="alice", infer=True)
    message = str(info.value)
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                 "REMEM_LLM_API_KEY", "infer=False"):
        assert name in message
    assert mem.search(user_id="alice").hits == ()
    # left to the default, the same add stores the text as given and says so
    stored = mem.add("I live in Berlin", user_id="alice")
    assert stored.inferred is False
    assert [hit.memory.text for hit in mem.search(user_id="alice")] == ["I live in Berlin"]


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


# -- requests as values, get_all, delete_all, search options -----------------------------------


def test_methods_run_request_values(mem: Memory) -> None:
    from remem.errors import UsageError
    from remem.memory.requests import MemoryRequest, SearchRequest

    mem.add("Alice drinks green tea", user_id="alice", infer=False)
    request = SearchRequest(query="tea", user_id="alice")
    assert mem.run(request).to_dict() == mem.search("tea", user_id="alice").to_dict()
    assert asyncio.run(mem.arun(request)).to_dict() == mem.run(request).to_dict()
    with pytest.raises(InvalidInputError, match="limit"):
        mem.search("tea", user_id="alice", limit=0)
    with pytest.raises(InvalidInputError, match="recency_weight"):
        mem.search("tea", user_id="alice", recency_half_life=60, recency_weight=2)
    with pytest.raises(UsageError, match="cannot run"):
        mem.run(MemoryRequest())


def test_get_all_pages_newest_first(mem: Memory, clock: FakeClock) -> None:
    for n in range(5):
        mem.add(f"note {n}", user_id="alice", infer=False)
    mem.add("agent note", user_id="alice", agent_id="bot", infer=False)
    mem.add("bob's note", user_id="bob", infer=False)
    first = mem.get_all(user_id="alice", limit=4)
    assert [r.text for r in first] == ["agent note", "note 4", "note 3", "note 2"]
    assert first.next_offset == 4
    last = mem.get_all(user_id="alice", limit=4, offset=first.next_offset)
    assert [r.text for r in last] == ["note 1", "note 0"] and last.next_offset is None
    assert [r.text for r in mem.get_all(user_id="alice", agent_id="bot")] == ["agent note"]
    assert [r.text for r in mem.get_all(user_id="alice", filters={"text": "note 3"})] == [
        "note 3"]
    mem.delete(first[1].id)
    assert len(mem.get_all(user_id="alice")) == 5
    assert len(mem.get_all(user_id="alice", include_invalid=True)) == 6
    with pytest.raises(InvalidInputError, match="get_all needs a scope"):
        mem.get_all()


def test_delete_all_is_one_undoable_call(mem: Memory) -> None:
    kept = mem.add("Bob likes jazz", user_id="bob", infer=False).added[0]
    for text in ("Likes tea", "Likes cats"):
        mem.add(text, user_id="alice", infer=False)
    mem.add("Prefers short answers", user_id="alice", agent_id="bot", infer=False)
    gone = mem.delete_all(user_id="alice", reason="user asked")
    assert sorted(c.memory.text for c in gone.changes) == [
        "Likes cats", "Likes tea", "Prefers short answers"]
    assert {c.op for c in gone.changes} == {"invalidate"}
    assert mem.search(user_id="alice").hits == () and mem.get(kept.id).status == "current"
    events = [mem.history(c.memory.id)[-1] for c in gone.changes]
    assert len({e.change_id for e in events}) == 1 and events[0].reason == "user asked"
    # undoing any one event brings the whole call back, in both namespaces
    back = mem.undo(gone.changes[-1].event_id)
    assert sorted(c.memory.text for c in back.changes) == [
        "Likes cats", "Likes tea", "Prefers short answers"]
    assert len(mem.get_all(user_id="alice")) == 3
    again = mem.undo(gone.changes[0].event_id)  # nothing left to undo: each is skipped
    assert again.changes == () and {s.reason for s in again.skipped} == {"changed since"}
    with pytest.raises(InvalidInputError, match="delete_all needs a scope"):
        mem.delete_all()


def test_undoing_delete_all_skips_what_changed_since(mem: Memory) -> None:
    tea = mem.add("Likes tea", user_id="alice", infer=False).added[0]
    cats = mem.add("Likes cats", user_id="alice", infer=False).added[0]
    gone = mem.delete_all(user_id="alice")
    by_id = {c.memory.id: c.event_id for c in gone.changes}
    mem.undo(by_id[tea.id])  # brings back both
    mem.delete(tea.id, hard=True)  # then one is deleted for good
    mem.delete(cats.id)  # the other is invalid again, and said anew under a new id
    anew = mem.add("Likes cats", user_id="alice", infer=False).added[0]
    back = mem.undo(by_id[cats.id])
    assert back.changes == ()
    assert sorted((s.reason, s.existing_id) for s in back.skipped) == [
        ("changed since", tea.id), ("duplicate", anew.id)]


def test_hard_delete_all_and_its_undo(mem: Memory) -> None:
    old = mem.add("I live in Berlin", user_id="alice").added[0]
    mem.add("I moved to Rome", user_id="alice")
    gone = mem.delete_all(user_id="alice", hard=True)
    assert sorted((c.op, c.memory.text) for c in gone.changes) == [
        ("delete", "Lives in Berlin"), ("delete", "Lives in Rome")]  # invalid ones too
    assert mem.get_all(user_id="alice", include_invalid=True).memories == ()
    with pytest.raises(NotFoundError):
        mem.get(old.id)
    back = asyncio.run(mem.aundo(gone.changes[0].event_id))
    assert len(back.changes) == 2
    assert [r.text for r in mem.get_all(user_id="alice")] == ["Lives in Rome"]
    assert mem.get(old.id).status == "invalid"


def test_search_pages_have_no_duplicates_or_gaps(mem: Memory) -> None:
    for n in range(30):
        mem.add(f"tea note {n} " + "tea " * (n % 4), user_id="alice", infer=False)
    whole = [h.memory.id for h in mem.search("tea", user_id="alice", limit=35)]
    pages = [h.memory.id for offset in range(0, 35, 7)
             for h in mem.search("tea", user_id="alice", limit=7, offset=offset)]
    assert len(whole) == 30 and pages == whole
    listing = [h.memory.id for h in mem.search(user_id="alice", limit=30)]
    paged = [h.memory.id for offset in range(0, 30, 8)
             for h in mem.search(user_id="alice", limit=8, offset=offset)]
    assert paged == listing


def test_a_limit_over_100_grows_the_candidate_pool(mem: Memory) -> None:
    from remem.memory.requests import ImportRequest

    copy = Memory(make_store("memory"))
    for n in range(150):
        copy.add(f"note {n} about tea", user_id="alice", infer=False)
    lines = copy.run(ExportRequest())
    mem.run(ImportRequest(lines=list(lines.lines)))
    hits = mem.search("tea", user_id="alice", limit=300)
    assert len(hits) == 150 and len({h.memory.id for h in hits}) == 150
    assert len(mem.search("tea", user_id="alice", limit=100, offset=120)) == 30


def test_min_score_drops_unrelated_hits(mem: Memory) -> None:
    mem.add("Alice drinks green tea", user_id="alice", infer=False)
    unrelated = mem.search("zzz", user_id="alice")
    assert len(unrelated) == 1 and unrelated[0].score is not None  # vectors always answer
    assert mem.search("zzz", user_id="alice", min_score=0.6).hits == ()
    assert len(mem.search("green tea", user_id="alice", min_score=0.6)) == 1


def test_recency_weighs_newer_memories_up(mem: Memory) -> None:
    day = 86_400.0
    now = time.time()  # recency is measured from the store's clock
    old = mem.add(Message.user("tea at home", created_at=now - 60 * day), user_id="alice",
                  infer=False).added[0]
    new = mem.add(Message.user("tea at work", created_at=now), user_id="alice",
                  infer=False).added[0]
    plain = mem.search("tea", user_id="alice", mode="keyword")
    assert plain[0].score == plain[1].score and "recency" not in plain[0].details
    recent = mem.search("tea", user_id="alice", mode="keyword", recency_half_life=7 * day,
                        recency_weight=0.5)
    assert [h.memory.id for h in recent] == [new.id, old.id]
    assert recent[0].details["recency"].rank == 1
    assert recent[0].score is not None and recent[1].score is not None
    assert recent[0].score > recent[1].score


def test_mmr_and_signal_details(mem: Memory) -> None:
    from remem.errors import UnsupportedError
    from remem.store.types import SignalScore

    for text in ("green tea", "green tea please", "black coffee", "tea and cake"):
        mem.add(text, user_id="alice", infer=False)
    plain = mem.search("green tea", user_id="alice")
    assert all(isinstance(s, SignalScore) for h in plain for s in h.details.values())
    assert plain.to_dict()["hits"][0]["details"]["keyword"] == {
        "rank": 1, "score": plain[0].details["keyword"].score}
    relevance_only = mem.search("green tea", user_id="alice", mmr=1.0)
    assert [h.memory.id for h in relevance_only] == [h.memory.id for h in plain]
    diverse = mem.search("green tea", user_id="alice", mmr=0.3)
    assert sorted(h.memory.id for h in diverse) == sorted(h.memory.id for h in plain)
    keyword_only = Memory.open(":memory:", embedder=False)
    keyword_only.add("green tea", user_id="alice", infer=False)
    with pytest.raises(UnsupportedError, match="mmr"):
        keyword_only.search("tea", user_id="alice", mmr=0.5)


def test_export_a_scope_and_refuse_bookkeeping_on_import(mem: Memory) -> None:
    mem.add("Alice drinks tea", user_id="alice", infer=False)
    mem.add("Bob likes jazz", user_id="bob", infer=False)
    lines = mem.run(ExportRequest(user_id="bob")).lines
    assert len(lines) == 2 and all("alice" not in line for line in lines)
    assert mem.export(io.StringIO(), namespace=["memories", "user"]) == 4
    record = json.loads(lines[0] if "memory" in json.loads(lines[0]) else lines[1])
    record["namespace"] = ["_remem", "ids"]
    with pytest.raises(InvalidInputError, match=r"line 1.*reserves"):
        mem.import_([json.dumps(record)])


def test_infer_false_stores_one_memory_per_user_message_by_default(mem: Memory) -> None:
    """Reproduction: a conversation stored as is became one memory of every line
    ('I like jazz\\nNoted, you like jazz.')."""
    talk = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": "I like jazz"},
            {"role": "assistant", "content": "Noted, you like jazz."},
            {"role": "user", "content": "I play the piano"},
            {"role": "assistant", "content": "Nice!"}]
    added = mem.add(talk, user_id="alice", infer=False)
    assert [r.text for r in added.added] == ["I like jazz", "I play the piano"]
    turns = mem.add(talk, user_id="bob", infer=False, split="turns")
    assert [r.text for r in turns.added] == ["I like jazz\nNoted, you like jazz.",
                                             "I play the piano\nNice!"]
    whole = mem.add(talk, user_id="carol", infer=False, split="none")
    assert [r.text for r in whole.added] == [
        "I like jazz\nNoted, you like jazz.\nI play the piano\nNice!"]
    again = mem.add([{"role": "user", "content": "I like jazz"},
                     {"role": "user", "content": "i like jazz."}], user_id="dave", infer=False)
    assert [r.text for r in again.added] == ["I like jazz"]
    assert [s.reason for s in again.skipped] == ["duplicate"]
    with pytest.raises(InvalidInputError, match=r"split='user_messages'.*no user message"):
        mem.add([{"role": "assistant", "content": "Hello"}], user_id="erin", infer=False)
    assert [r.text for r in mem.add([{"role": "assistant", "content": "Hello"}],
                                    user_id="erin", infer=False, split="turns").added] == [
        "Hello"]
    with pytest.raises(InvalidInputError, match="split"):
        mem.add("x", user_id="alice", infer=False, split="sentences")  # type: ignore[arg-type]


def test_a_long_text_is_one_memory_embedded_in_sentence_chunks(tmp_path: Path) -> None:
    from remem.memory.chunks import CHUNK_CHARS, chunk_text

    # sentences that share no word, so a vector of the whole text matches none of them well
    sentences = [f"Harbor{i} lemur{i} kiwi{i} lantern{i} meadow{i} violin{i} comet{i}."
                 for i in range(350)]
    text = " ".join(sentences)
    assert len(text) > 20_000
    embedder = FakeEmbedder()
    with Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.add("A short note about tea", user_id="alice", infer=False)
        record = mem.add(text, user_id="alice", infer=False).added[0]
        assert record.text == text  # one record, the text whole
        chunks = chunk_text(text)
        assert len(chunks) > 20 and "".join(chunks) == text
        assert all(len(c) <= CHUNK_CHARS and c.endswith(". ") for c in chunks[:-1])
        query = sentences[250]
        hit = mem.search(query, user_id="alice", mode="vector")[0]
        assert hit.memory.id == record.id
        # scored by its best chunk (one vector per chunk), not by one vector of the whole text
        (asked,), (whole,) = embedder.embed_queries([query]), embedder.embed_documents([text])
        best = float((embedder.embed_documents(chunks) @ asked).max())
        assert hit.score == pytest.approx(best, abs=1e-4) and best > float(whole @ asked)
        # the chunks go with the record through export and import
        out = io.StringIO()
        mem.export(out, user_id="alice")
    with Memory.open(tmp_path / "copy.db", embedder=FakeEmbedder()) as copy:
        copy.import_(out.getvalue().splitlines())
        assert copy.search(query, user_id="alice", mode="vector")[0].memory.id == record.id


def test_open_without_an_embedder_refuses_a_file_with_vectors(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    with Memory.open(path, embedder=FakeEmbedder()) as mem:
        mem.add("Alice drinks green tea", user_id="alice", infer=False)
    with pytest.raises(IndexConfigError, match="fake"):
        Memory.open(path, embedder=False)
    with Memory.open(path, embedder=FakeEmbedder()) as mem:  # the same embedder still opens it
        assert len(mem.search("tea", user_id="alice")) == 1


def test_the_actor_belongs_to_whoever_runs_the_requests(clock: FakeClock) -> None:
    """``Memory(actor=...)`` records its methods' changes as that actor; one request may name
    its own (``run(UpdateRequest.of(..., actor=...))``); the default is ``"user"``."""
    store = make_store("sqlite")
    agent = Memory(store, clock=clock, actor="agent")
    record = agent.add("Has a cat", user_id="alice", infer=False).added[0]
    agent.update(record.id, "Has two cats")
    Memory(store, clock=clock).delete(record.id)
    agent.run(UndoRequest.of(event_id=agent.history(record.id)[-1].id, actor="reviewer"))
    assert [(e.op, e.actor) for e in agent.history(record.id)] == [
        ("add", "agent"), ("update", "agent"), ("invalidate", "user"), ("restore", "reviewer")]


def test_open_passes_store_options_to_the_store(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(),
                     store_options={"ann": False, "vector_cache_bytes": 4096}) as mem:
        assert mem.store._ann_config is None  # type: ignore[attr-defined]
        assert mem.store._parts.budget == 4096  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="store_options cannot set index"):
        Memory.open(tmp_path / "n.db", store_options={"index": None})
