"""Properties of memory edits that must hold for every sequence of operations: never two
current copies of one fact, history always ends in the stored state, and ``as_of`` answers
what was current at each past moment."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import ConflictError
from remem.memory.records import normalize_text
from remem.store import IndexConfig, InMemoryStore, KeywordConfig
from tests.conftest import FakeClock

VOCAB = ["Likes tea", "likes tea.", "Lives in Berlin", "Lives in Paris", "Has a cat",
         "HAS A CAT!", "Works at Acme"]

operations = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, len(VOCAB) - 1)),
    st.tuples(st.just("update"), st.integers(0, 9), st.integers(0, len(VOCAB) - 1)),
    st.tuples(st.just("delete"), st.integers(0, 9)),
    st.tuples(st.just("undo"), st.integers(0, 9)),
), min_size=1, max_size=12)


def current(mem: Memory) -> dict[str, str]:
    return {h.memory.id: h.memory.text for h in mem.search(user_id="u", limit=100)}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_any_sequence_of_edits_keeps_the_invariants(ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    store = InMemoryStore(index=IndexConfig(FakeEmbedder(32), fields=("text",)),
                          keyword=KeywordConfig(fields=("text",)))
    mem = Memory(store, clock=clock)
    model: dict[str, str] = {}         # what should be current: id -> text
    snapshots: list[tuple[float, dict[str, str]]] = []
    events: list[str] = []
    undone = False
    for op in ops:
        clock.advance(1)
        if op[0] == "add":
            text = VOCAB[op[1]]
            result = mem.add(text, user_id="u", infer=False)
            same = [i for i, t in model.items() if normalize_text(t) == normalize_text(text)]
            if same:
                assert result.changes == () and result.skipped[0].existing_id == same[0]
            else:
                model[result.added[0].id] = text
                events.append(result.changes[0].event_id)
        elif op[0] in ("update", "delete") and model:
            target = sorted(model)[op[1] % len(model)]
            if op[0] == "delete":
                result = mem.delete(target)
                del model[target]
                events.append(result.changes[0].event_id)
                continue
            text = VOCAB[op[2]]
            others = [i for i, t in model.items()
                      if i != target and normalize_text(t) == normalize_text(text)]
            if normalize_text(text) == normalize_text(model[target]):
                assert mem.update(target, text).skipped[0].reason == "unchanged"
            elif others:
                try:
                    mem.update(target, text)
                except ConflictError as exc:
                    assert others[0] in str(exc)
                else:
                    raise AssertionError("an update made a second current copy")
            else:
                result = mem.update(target, text)
                model[target] = text
                events.append(result.changes[0].event_id)
        elif op[0] == "undo" and events:
            event_id = events[op[1] % len(events)]
            try:
                mem.undo(event_id)
            except ConflictError:
                pass  # changed since, or would duplicate a current memory: refused whole
            else:
                undone = True
            model = current(mem)
        stored = current(mem)
        if not undone:
            assert stored == model
        texts = [normalize_text(t) for t in stored.values()]
        assert len(texts) == len(set(texts)), stored
        snapshots.append((clock.now, stored))
    if undone:
        return  # undoing an add removes the record, so the past is rewritten on purpose
    for when, expected in snapshots:
        past = {h.memory.id: h.memory.text for h in mem.search(user_id="u", limit=100,
                                                                 as_of=when)}
        assert past == expected
    for hit in mem.search(user_id="u", limit=100, include_invalid=True):
        history = mem.history(hit.memory.id)
        assert history and history[-1].after is not None
        assert history[-1].after["version"] == hit.memory.version
        assert history[-1].after["content_hash"] == hit.memory.content_hash
