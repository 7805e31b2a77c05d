"""Undo tells the truth: a state machine over add / update / supersede / delete / delete_all /
undo sequences on a real SQLite store (``:memory:``, fake embedder, scripted model).

The model is the list of expected current records (id -> text). After every step the store's
current memories must equal it; after every undo, each change the result reports must be
what the store now holds (``restore``: the record is back as reported; ``remove``: it is
gone), and the records that became or stopped being current must be exactly those the
result names.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from remem.api import Memory
from remem.errors import ConflictError, NotFoundError
from remem.llm import ChatRequest, ScriptedModel
from remem.memory.results import ChangeResult
from tests.conftest import FakeClock
from tests.memory_support import existing_memories, make_store

USER = "u"
TEXTS = ["Likes jazz", "Has a cat", "Drinks tea", "Plays chess"]


def test_undo_of_a_supersession_reports_the_removed_record() -> None:
    """The reproduction: undoing Berlin -> Munich removes Munich; it must not say restore."""
    llm = ScriptedModel([
        {"inserts": [{"memory": {"content": "Lives in Berlin"}}]},
        {"updates": [{"id": 0, "memory": {"content": "Lives in Munich"}}]},
    ])
    mem = Memory(make_store("sqlite"), llm=llm, clock=FakeClock())
    mem.add("I live in Berlin", user_id=USER)
    moved = mem.add("I moved to Munich", user_id=USER)
    munich = moved.added[0]
    undone = mem.undo(moved.changes[1].event_id)
    reported = sorted((c.op, c.memory.text, c.memory.status) for c in undone.changes)
    assert reported == [("remove", "Lives in Munich", "current"),
                        ("restore", "Lives in Berlin", "current")]
    with pytest.raises(NotFoundError):
        mem.get(munich.id)
    assert [h.memory.text for h in mem.search(user_id=USER)] == ["Lives in Berlin"]


class UndoMachine(RuleBasedStateMachine):
    """Random edit sequences, and undo of any event seen so far."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.decision: dict[str, Any] = {}
        self.mem = Memory(make_store("sqlite"), llm=ScriptedModel(default=self._answer),
                          clock=self.clock)
        #: the expected current records, id -> text
        self.model: dict[str, str] = {}
        self.events: list[str] = []
        self.cities = 0

    # the scripted model: supersede the chosen record if the prompt shows it, else insert
    def _answer(self, request: ChatRequest) -> dict[str, Any]:
        target, content = self.decision["target"], self.decision["content"]
        for shown in existing_memories(request):
            if shown["memory"]["content"] == self.model[target]:
                self.decision["superseded"] = True
                return {"updates": [{"id": shown["id"], "memory": {"content": content}}]}
        self.decision["superseded"] = False
        return {"inserts": [{"memory": {"content": content}}]}

    def _tick(self) -> None:
        self.clock.advance(1)

    def _note(self, result: ChangeResult | Any) -> None:
        self.events += [c.event_id for c in result.changes]

    def _by_text(self) -> list[str]:
        """The current ids in the order of their texts (unique while current): ids hold a
        random part, so sorting the ids themselves would order them differently on each
        replay of the same steps, which hypothesis reports as a flaky strategy."""
        return sorted(self.model, key=self.model.__getitem__)

    @staticmethod
    def _pick(data: st.DataObject, choices: list[str]) -> str:
        """One of ``choices``, drawn with the same shape however many there are: a replay
        whose state differs (it should not) then fails on its own assertion, not inside
        hypothesis's data generation."""
        return choices[data.draw(st.integers(0, 63)) % len(choices)]

    def _store_current(self) -> dict[str, str]:
        page = self.mem.get_all(user_id=USER, limit=1000)
        return {m.id: m.text for m in page.memories}

    @rule(text=st.sampled_from(TEXTS))
    def add(self, text: str) -> None:
        self._tick()
        result = self.mem.add(text, user_id=USER, infer=False)
        self._note(result)
        if text in self.model.values():
            assert result.changes == () and result.skipped[0].reason == "duplicate"
        else:
            assert [c.op for c in result.changes] == ["add"]
            self.model[result.changes[0].memory.id] = text

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        self._tick()
        target = self._pick(data, self._by_text())
        self.cities += 1
        content = f"Edited note {self.cities}"
        result = self.mem.update(target, content)
        self._note(result)
        assert [c.op for c in result.changes] == ["update"]
        self.model[target] = content

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def supersede(self, data: st.DataObject) -> None:
        self._tick()
        target = self._pick(data, self._by_text())
        self.cities += 1
        content = f"Lives in City {self.cities}"
        self.decision = {"target": target, "content": content}
        result = self.mem.add(f"I moved to City {self.cities}", user_id=USER)
        self._note(result)
        added = [c.memory for c in result.changes if c.op == "add"]
        assert [m.text for m in added] == [content]
        if self.decision["superseded"]:
            assert [(c.op, c.memory.id) for c in result.changes if c.op != "add"] == [
                ("invalidate", target)]
            del self.model[target]
        self.model[added[0].id] = content

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), hard=st.booleans())
    def delete(self, data: st.DataObject, hard: bool) -> None:
        self._tick()
        target = self._pick(data, self._by_text())
        result = self.mem.delete(target, hard=hard)
        self._note(result)
        assert [c.op for c in result.changes] == ["delete" if hard else "invalidate"]
        del self.model[target]

    @rule(hard=st.booleans())
    def delete_all(self, hard: bool) -> None:
        self._tick()
        result = self.mem.delete_all(user_id=USER, hard=hard)
        self._note(result)
        if not hard:
            assert sorted(c.memory.id for c in result.changes) == sorted(self.model)
        self.model.clear()

    @precondition(lambda self: bool(self.events))
    @rule(data=st.data())
    def undo(self, data: st.DataObject) -> None:
        # the latest events half the time: undoable more often than any old one
        latest = data.draw(st.booleans())
        self._undo(self._pick(data, self.events[-2:] if latest else self.events))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), half=st.sampled_from([-1, -2]))
    def supersede_then_undo(self, data: st.DataObject, half: int) -> None:
        """The reported case, often: undo either half of a supersession at once."""
        self.supersede(data)
        self._undo(self.events[half])

    def _undo(self, event_id: str) -> None:
        self._tick()
        before = self._store_current()
        try:
            result = self.mem.undo(event_id)
        except (ConflictError, NotFoundError) as exc:
            assert self._store_current() == before  # a refused undo changes nothing
            event(f"undo refused: {type(exc).__name__}")
            return
        event("undo: " + (" + ".join(sorted({c.op for c in result.changes})) or "nothing"))
        self._note(result)
        after = self._store_current()
        for change in result.changes:
            assert change.op in ("restore", "remove"), change.op
            memory = change.memory
            if change.op == "remove":
                with pytest.raises(NotFoundError):
                    self.mem.get(memory.id)
                assert memory.id not in after
            else:
                stored = self.mem.get(memory.id)
                assert (stored.text, stored.status, stored.version) == (
                    memory.text, memory.status, memory.version)
        # exactly the records the result names changed, as it says
        became = {c.memory.id for c in result.changes
                  if c.op == "restore" and c.memory.status == "current"}
        left = {c.memory.id for c in result.changes
                if c.op == "remove" or c.memory.status != "current"}
        assert set(after) - set(before) <= became
        assert set(before) - set(after) <= left
        for memory_id in became:
            assert memory_id in after
        for memory_id in left:
            assert memory_id not in after
        for change in result.changes:
            if change.op == "restore" and change.memory.status == "current":
                self.model[change.memory.id] = change.memory.text
            else:
                self.model.pop(change.memory.id, None)

    @invariant()
    def store_matches_the_model(self) -> None:
        assert self._store_current() == self.model

    @invariant()
    def no_duplicate_current_texts(self) -> None:
        texts = [re.sub(r"\s+", " ", t).lower() for t in self.model.values()]
        assert len(texts) == len(set(texts))

    def teardown(self) -> None:
        self.mem.close()


UndoMachine.TestCase.settings = settings(
    max_examples=500, stateful_step_count=12, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_undo_state_machine = UndoMachine.TestCase
