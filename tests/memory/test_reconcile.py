"""Reconciliation rules, each on the scripted model (tests/memory_support.py), on the
in-process and SQLite backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from remem.api import Memory
from remem.errors import NotFoundError, StructuredOutputError
from remem.llm import ChatRequest, ScriptedModel
from remem.memory import MemoryManager
from tests.conftest import FakeClock
from tests.memory_support import existing_memories, make_store, rule_model

ALICE = {"user_id": "alice"}


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def memory(backend: str, model: ScriptedModel, clock: FakeClock, tmp_path: Path,
           **options: Any) -> Memory:
    return Memory(make_store(backend, tmp_path), llm=model, clock=clock, **options)


def current(mem: Memory) -> list[str]:
    return sorted(hit.memory.text for hit in mem.search(user_id="alice", limit=100))


def test_exact_same_input_again_makes_no_llm_call_and_no_change(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = rule_model()
    mem = memory(backend, model, clock, tmp_path)
    first = mem.add("I live in Berlin", **ALICE)
    assert first.usage.calls == 1 and [c.op for c in first.changes] == ["add"]
    again = mem.add("I live in Berlin.", **ALICE)  # same after normalisation
    assert again.usage.calls == 0 and again.changes == ()
    assert again.skipped[0].reason == "duplicate input"
    assert again.skipped[0].existing_id == first.changes[0].memory.id
    assert len(model.requests) == 1
    assert current(mem) == ["Lives in Berlin"]


def test_text_equal_to_a_stored_memory_makes_no_llm_call(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = rule_model()
    mem = memory(backend, model, clock, tmp_path)
    stored = mem.add("Likes green tea", infer=False, **ALICE)
    result = mem.add("likes green tea!", **ALICE)
    assert result.usage.calls == 0 and not result.changes
    assert result.skipped[0].existing_id == stored.changes[0].memory.id
    assert model.requests == []


def test_same_fact_via_infer_false_twice_is_one_memory(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    mem = memory(backend, rule_model(), clock, tmp_path)
    mem.add("Alice has a cat named Miso", infer=False, **ALICE)
    second = mem.add("alice has a cat named miso", infer=False, **ALICE)
    assert second.changes == () and second.skipped[0].reason == "duplicate"
    assert current(mem) == ["Alice has a cat named Miso"]


@pytest.mark.parametrize("answer", [
    {"inserts": [], "updates": [], "deletes": []},               # the model sees the duplicate
    {"inserts": [{"memory": {"content": "lives in berlin."}}]},  # it re-inserts it verbatim
    {"updates": [{"id": 0, "memory": {"content": "Lives in Berlin, Germany"}}]},  # rewords it
])
def test_rephrased_duplicate_never_becomes_a_second_current_copy(
        backend: str, clock: FakeClock, tmp_path: Path, answer: dict[str, Any]) -> None:
    model = ScriptedModel([{"inserts": [{"memory": {"content": "Lives in Berlin"}}]}, answer])
    mem = memory(backend, model, clock, tmp_path)
    mem.add("I live in Berlin", **ALICE)
    clock.advance(60)
    result = mem.add("My home is in Berlin, as I said", **ALICE)
    assert result.usage.calls == 1
    shown = existing_memories(model.requests[1])
    assert [m["memory"]["content"] for m in shown] == ["Lives in Berlin"]
    texts = current(mem)
    assert len(texts) == 1 and texts[0].startswith("Lives in Berlin")


def test_updated_fact_invalidates_the_old_memory_and_keeps_both_in_history(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    mem = memory(backend, rule_model(), clock, tmp_path)
    berlin = mem.add("I live in Berlin", **ALICE).changes[0].memory
    t_berlin = clock.now
    clock.advance(3600)
    moved = mem.add("I moved to Munich", **ALICE)
    assert [c.op for c in moved.changes] == ["invalidate", "add"]
    old, new = mem.get(berlin.id), moved.added[0]
    assert old.invalid_at == clock.now and old.superseded_by == new.id
    assert new.valid_at == clock.now and new.supersedes == berlin.id
    assert new.text == "Lives in Munich"
    assert current(mem) == ["Lives in Munich"]
    # temporal questions still work
    then = mem.search("where does alice live", user_id="alice", as_of=t_berlin + 1)
    assert [h.memory.text for h in then] == ["Lives in Berlin"]
    assert [e.op for e in mem.history(berlin.id)] == ["add", "invalidate"]
    assert [e.op for e in mem.history(new.id)] == ["add"]
    everything = mem.search(user_id="alice", include_invalid=True)
    assert sorted(h.memory.status for h in everything) == ["current", "invalid"]


def test_unrelated_facts_are_never_merged(backend: str, clock: FakeClock,
                                          tmp_path: Path) -> None:
    mem = memory(backend, rule_model(), clock, tmp_path)
    tea = mem.add("Likes green tea", **ALICE).changes[0].memory
    result = mem.add([{"role": "user", "content": "I work at Acme"},
                      {"role": "user", "content": "I live in Lisbon"}], **ALICE)
    assert [c.op for c in result.changes] == ["add", "add"]
    assert current(mem) == ["Likes green tea", "Lives in Lisbon", "Works at Acme"]
    assert mem.get(tea.id).version == 1
    assert [e.op for e in mem.history(tea.id)] == ["add"]


def test_two_facts_decided_into_one_update_target_are_rejected_and_retried(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    # the model first tries to change one memory twice (a merge in disguise); it is told so
    model = ScriptedModel([
        {"inserts": [{"memory": {"content": "Likes green tea"}}]},
        {"updates": [{"id": 0, "memory": {"content": "Likes green tea"}},
                     {"id": 0, "memory": {"content": "Likes tea and lives in Oslo"}}]},
        {"inserts": [{"memory": {"content": "Lives in Oslo"}}]},
    ])
    mem = memory(backend, model, clock, tmp_path)
    mem.add("I like green tea", **ALICE)
    result = mem.add("I live in Oslo", **ALICE)
    assert result.usage.calls == 2
    assert "updates[1].id = 0 is already in updates" in result.rejected[0]
    assert current(mem) == ["Likes green tea", "Lives in Oslo"]
    assert "already in updates" in model.requests[2].messages[-1].text


def test_delete_invalidates_by_default(backend: str, clock: FakeClock,
                                       tmp_path: Path) -> None:
    mem = memory(backend, rule_model(), clock, tmp_path)
    cat = mem.add("Has a cat", **ALICE).changes[0].memory
    clock.advance(10)
    result = mem.add("forget Has a cat", **ALICE)
    assert [c.op for c in result.changes] == ["invalidate"]
    assert mem.get(cat.id).invalid_at == clock.now
    assert current(mem) == []
    assert [h.memory.text for h in mem.search(user_id="alice", as_of=clock.now - 5)] == [
        "Has a cat"]


def test_hard_delete_is_an_option_and_undo_brings_it_back(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    mem = memory(backend, rule_model(), clock, tmp_path, hard_delete=True)
    cat = mem.add("Has a cat", **ALICE).changes[0].memory
    result = mem.add("forget Has a cat", **ALICE)
    assert [c.op for c in result.changes] == ["delete"]
    with pytest.raises(NotFoundError, match="deleted for good"):
        mem.get(cat.id)
    events = mem.history(cat.id)
    assert [e.op for e in events] == ["add", "delete"]
    mem.undo(events[-1].id)
    assert mem.get(cat.id).status == "current" and current(mem) == ["Has a cat"]


def test_exact_and_lexical_candidates_come_before_embedding_neighbours(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = ScriptedModel(default={"inserts": []})
    mem = memory(backend, model, clock, tmp_path)
    # many memories that share words with the input, so the vector signal is crowded
    for n in range(30):
        mem.add(f"Alice's friend number {n} works at Initech", infer=False, **ALICE)
    mem.add("Works at Initrode", infer=False, **ALICE)
    mem.formation.search_limit = 2
    mem.formation.max_candidates = 3
    mem.add(["Works at Initrode", "and my friend works at Initech"], **ALICE)
    shown = existing_memories(model.requests[0])
    assert shown[0] == {"id": 0, "type": "Fact",
                        "memory": {"content": "Works at Initrode", "kind": "fact"}}


def test_an_invented_id_is_rejected_reported_and_retried(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = ScriptedModel([
        {"inserts": [{"memory": {"content": "Lives in Berlin"}}]},
        {"updates": [{"id": 7, "memory": {"content": "Lives in Rome"}}]},
        {"updates": [{"id": 0, "memory": {"content": "Lives in Rome"}}]},
    ])
    mem = memory(backend, model, clock, tmp_path)
    mem.add("I live in Berlin", **ALICE)
    result = mem.add("I moved to Rome", **ALICE)
    assert result.usage.calls == 2
    assert result.rejected == ("updates[0].id = 7 is not an existing memory "
                               "(valid ids are 0 to 0)",)
    assert current(mem) == ["Lives in Rome"]


def test_an_id_invented_twice_is_a_typed_error_and_changes_nothing(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = ScriptedModel([{"deletes": [{"id": "mem_made_up"}]}] * 2)
    mem = memory(backend, model, clock, tmp_path)
    mem.add("Has a dog", infer=False, **ALICE)
    with pytest.raises(StructuredOutputError, match="mem_made_up") as info:
        mem.add("I have a dog named Rex", **ALICE)
    assert "mem_made_up" in info.value.raw
    assert current(mem) == ["Has a dog"]


def test_prose_around_json_is_recovered(backend: str, clock: FakeClock,
                                        tmp_path: Path) -> None:
    model = ScriptedModel(['<think>hmm</think>Sure! Here you go:\n```json\n'
                           '{"inserts": [{"memory": {"content": "Plays chess"}}]}\n```'])
    mem = memory(backend, model, clock, tmp_path)
    assert mem.add("I play chess", **ALICE).added[0].text == "Plays chess"


def test_schema_violations_are_retried_then_a_typed_error(
        backend: str, clock: FakeClock, tmp_path: Path) -> None:
    model = ScriptedModel([{"inserts": [{"memory": {"text": "wrong field"}}]},
                           {"inserts": "not a list"}])
    mem = memory(backend, model, clock, tmp_path)
    with pytest.raises(StructuredOutputError):
        mem.add("I play chess", **ALICE)
    assert len(model.requests) == 2
    assert current(mem) == []


def test_disabled_deletes_cannot_be_asked_for(clock: FakeClock, tmp_path: Path) -> None:
    model = ScriptedModel([{"deletes": [{"id": 0}]}, {"inserts": []}])
    manager = MemoryManager(model, enable_deletes=False)
    assert "deletes" not in manager.response_model.model_fields
    mem = Memory(make_store("memory"), manager=manager, clock=clock)
    mem.add("Has a dog", infer=False, **ALICE)
    result = mem.add("Forget about my dog please", **ALICE)
    assert result.usage.calls == 2 and result.changes == ()
    assert current(mem) == ["Has a dog"]


class Preference(BaseModel):
    """A user preference."""

    category: str
    value: str


def test_user_schemas_are_stored_as_validated_json(clock: FakeClock) -> None:
    model = ScriptedModel([{"inserts": [{"type": "Preference", "memory": {
        "category": "drink", "value": "green tea"}}]}])
    manager = MemoryManager(model, schemas=[Preference, _Note], instructions="Prefs only.")
    mem = Memory(make_store("memory"), manager=manager, clock=clock)
    record = mem.add("I love green tea", **ALICE).added[0]
    assert record.content == {"category": "drink", "value": "green tea"}
    assert record.schema == "Preference" and record.kind == "Preference"
    assert mem.search("tea", user_id="alice")[0].memory.id == record.id
    assert model.requests[0].messages[0].text.startswith("Prefs only.")


class _Note(BaseModel):
    text: str


def test_changes_seen_between_decision_and_write_are_decided_again(
        clock: FakeClock) -> None:
    store = make_store("memory")
    other = Memory(store, clock=clock)
    racing = {"done": False}

    def answer(request: ChatRequest) -> dict[str, Any]:
        if not racing["done"]:  # another writer stores a related fact meanwhile
            racing["done"] = True
            other.add("Lives in Paris", infer=False, **ALICE)
            return {"inserts": [{"memory": {"content": "Lives in Vienna"}}]}
        shown = existing_memories(request)
        assert [m["memory"]["content"] for m in shown] == ["Lives in Paris"]
        return {"updates": [{"id": 0, "memory": {"content": "Lives in Vienna"}}]}

    mem = Memory(store, llm=ScriptedModel(default=answer), clock=clock)
    result = mem.add("I live in Vienna", **ALICE)
    assert result.usage.calls == 2 and result.write_attempts == 2
    assert current(mem) == ["Lives in Vienna"]
    assert [c.op for c in result.changes] == ["invalidate", "add"]
