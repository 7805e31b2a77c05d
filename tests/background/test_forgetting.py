"""Bounded growth: a budget enforced by consolidation first, then the lowest retention scores;
pinned memories never evicted; every eviction in history and undoable."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.api import Memory
from remem.background.forgetting import FORGET, Budget, retention_score
from remem.errors import InvalidInputError
from remem.llm import ScriptedModel
from remem.memory.records import MemoryRecord
from tests.conftest import FakeClock
from tests.memory_support import make_store

DAY = 86400.0


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_budget_evicts_the_least_worth_keeping(kind: str, tmp_path: Path,
                                                 clock: FakeClock) -> None:
    model = ScriptedModel(default={"merge": True, "content": "Drinks green tea daily",
                                   "keep": [], "reason": "same habit"})
    with Memory(make_store(kind, tmp_path), llm=model, clock=clock, owns_store=True) as mem:
        mem.add("Drinks green tea", user_id="ada", infer=False)
        mem.add("Drinks green tea daily", user_id="ada", infer=False)  # a repeat: merged
        clock.advance(10 * DAY)
        mem.add("Owns a bike", user_id="ada", infer=False, metadata={"importance": 0.1})
        mem.add("Allergic to peanuts", user_id="ada", infer=False,
                metadata={"importance": 0.0, "pinned": True})
        mem.add("Met Bo in Rome", user_id="ada", infer=False, metadata={"importance": 0.9})
        clock.advance(DAY)
        mem.add("Plays chess", user_id="ada", infer=False)
        job = mem.background.enforce_budget(Budget(max_memories=3), user_id="ada")
        [done] = mem.background.run_due()
        assert done.id == job.id and done.kind == FORGET and done.status == "done"
        report = done.result
        assert report is not None
        assert (report["before"], report["after"], report["merged"]) == (6, 3, 1)
        texts = sorted(r.text for r in mem.get_all(user_id="ada").memories)
        # the merge freed one place; then the lowest scores went: the unimportant bike, then
        # the old tea habit; the pinned peanut allergy stays although its importance is 0
        assert texts == ["Allergic to peanuts", "Met Bo in Rome", "Plays chess"]
        evicted = report["evicted"]
        assert [mem.get(i).text for i in evicted] == ["Owns a bike", "Drinks green tea daily"]
        assert evicted and all(mem.get(i).invalid_at is not None for i in evicted)
        [event] = [e for e in mem.history(evicted[0]) if e.op == "invalidate"]
        assert event.actor == "forgetting" and "retention score" in event.reason
        mem.undo(event.id)  # undoable
        assert mem.get(evicted[0]).invalid_at is None
        assert len(model.requests) == 1  # one cluster, one call


def test_under_budget_nothing_happens(clock: FakeClock) -> None:
    with Memory(make_store("memory"), llm=ScriptedModel(), clock=clock,
                owns_store=True) as mem:
        mem.add("One thing", user_id="ada", infer=False)
        mem.background.enforce_budget(Budget(max_memories=5, max_tokens=100), user_id="ada")
        [done] = mem.background.run_due()
        assert done.result is not None and done.result["evicted"] == []
        assert done.result["merged"] == 0


def test_a_token_budget(clock: FakeClock) -> None:
    with Memory(make_store("memory"), clock=clock, owns_store=True) as mem:
        for n in range(5):
            mem.add(f"memory number {n} " + "word " * 20, user_id="ada", infer=False)
            clock.advance(DAY)
        mem.background.enforce_budget(Budget(max_tokens=60, consolidate_first=False),
                                      user_id="ada")
        [done] = mem.background.run_due()
        report = done.result
        assert report is not None and report["tokens_after"] <= 60 < report["tokens_before"]
        kept = [r.text for r in mem.get_all(user_id="ada").memories]
        assert all("number 4" in t or "number 3" in t for t in kept)  # the newest stay


def test_bad_budgets_name_the_field() -> None:
    with pytest.raises(InvalidInputError, match="max_memories or max_tokens"):
        Budget()
    with pytest.raises(InvalidInputError, match="max_tokens"):
        Budget(max_tokens=-1)
    with pytest.raises(InvalidInputError, match="half_life"):
        Budget(max_memories=1, half_life=0)


@settings(max_examples=100, deadline=None)
@given(importance=st.floats(0, 1), age=st.floats(0, 3650 * DAY), uses=st.integers(0, 10**6),
       more=st.floats(0, 1))
def test_the_score_is_bounded_and_monotonic(importance: float, age: float, uses: int,
                                            more: float) -> None:
    budget = Budget(max_memories=1)

    def score(imp: float, a: float, u: int) -> float:
        record = MemoryRecord(id="m", namespace=("n",), content="x", created_at=0.0,
                              updated_at=0.0, metadata={"importance": imp, "uses": u})
        return retention_score(record, a, budget)

    base = score(importance, age, uses)
    assert 0.0 <= base <= 1.0
    assert score(min(1.0, importance + more), age, uses) >= base  # more important
    assert score(importance, max(0.0, age - more * DAY), uses) >= base  # more recent
    assert score(importance, age, uses + 1) >= base  # used more
