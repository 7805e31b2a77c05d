"""Consolidation: 1,000 memories with 100 planted near-duplicate clusters, a scripted model that
answers correctly; every cluster merged, nothing unrelated touched, one LLM call per cluster."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.background.consolidation import CONSOLIDATE, clusters
from remem.llm import ChatRequest, ScriptedModel
from remem.memory.flow import run_sync
from remem.memory.manager import NewMemory
from remem.memory.records import MemoryRecord
from tests.conftest import FakeClock
from tests.memory_support import make_store

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "du", "fo", "gi", "ha",
             "ju", "pe", "qui", "ro", "su", "ti", "zo"]
WORDS = ["".join(p) for p in itertools.product(SYLLABLES, repeat=3)]  # 8,000 distinct words
CLUSTERS, UNRELATED = 100, 700


def planted() -> tuple[list[str], dict[str, int]]:
    """1,000 texts: 100 clusters of 3 near-duplicates and 700 unrelated notes; the cluster of
    each planted text."""
    texts, cluster_of = [], {}
    words = iter(WORDS)
    for k in range(CLUSTERS):
        a, b, c = next(words), next(words), next(words)
        base = f"user enjoys {a} with {b} in {c}"
        for text in (base, base + " every day", "really " + base):
            texts.append(text)
            cluster_of[text] = k
    for _ in range(UNRELATED):
        texts.append(f"note {next(words)} mentions {next(words)} and {next(words)}")
    return texts, cluster_of


def correct_model(cluster_of: dict[str, int]) -> ScriptedModel:
    """Merges a cluster when its memories all come from one planted cluster (keeping the
    longest text, which holds every detail), keeps anything else apart."""
    def answer(request: ChatRequest) -> dict[str, Any]:
        lines = re.findall(r"^\[(\d+)\] (.*)$", request.messages[-1].text, re.M)
        texts = {int(n): json.loads(text) for n, text in lines}
        groups = {n: cluster_of.get(t, -1 - n) for n, t in texts.items()}
        biggest = max(set(groups.values()), key=list(groups.values()).count)
        members = [n for n, g in groups.items() if g == biggest and g >= 0]
        if len(members) < 2:
            return {"merge": False, "content": "", "keep": [], "reason": "different things"}
        keep = [n for n in texts if n not in members]
        merged = "user really enjoys " + texts[members[0]].removeprefix("really ").removeprefix(
            "user enjoys ").removesuffix(" every day") + " every day"
        return {"merge": True, "content": merged, "keep": keep, "reason": "same preference"}

    return ScriptedModel(default=answer)


@pytest.fixture(params=["memory", "file"])
def setup(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
          ) -> Iterator[tuple[Memory, ScriptedModel, dict[str, int]]]:
    texts, cluster_of = planted()
    model = correct_model(cluster_of)
    with Memory(make_store(request.param, tmp_path), llm=model, clock=clock,
                owns_store=True) as mem:
        ns = mem.namespace_of(user_id="ada")
        run_sync(mem.formation.store_flow(ns, [NewMemory(t) for t in texts]), mem.store)
        yield mem, model, cluster_of


def test_planted_clusters_are_merged_and_nothing_else(
        setup: tuple[Memory, ScriptedModel, dict[str, int]]) -> None:
    mem, model, cluster_of = setup
    job = mem.background.consolidate(user_id="ada")
    [done] = mem.background.run_due()
    assert done.id == job.id and done.kind == CONSOLIDATE and done.status == "done"
    report = done.result
    assert report is not None
    assert (report["memories"], report["clusters"], report["merged"],
            report["invalidated"]) == (1000, CLUSTERS, CLUSTERS, 2 * CLUSTERS)
    assert len(model.requests) == report["usage"]["llm_calls"] == CLUSTERS
    current = mem.get_all(user_id="ada", limit=1000).memories
    assert len(current) == 1000 - 2 * CLUSTERS
    texts = {r.text for r in current}
    assert all(t.startswith("note ") for t in texts if t not in cluster_of and
               not t.startswith("user really enjoys"))
    assert sum(t.startswith("note ") for t in texts) == UNRELATED  # no unrelated one touched
    assert sum(t.startswith("user really enjoys") for t in texts) == CLUSTERS
    # provenance: the merged ones are invalidated, not deleted, and say where they went
    gone = mem.get_all(user_id="ada", limit=1000, include_invalid=True).memories
    invalid = [r for r in gone if r.invalid_at is not None]
    assert len(invalid) == 2 * CLUSTERS
    [event] = [e for e in mem.history(invalid[0].id) if e.op == "invalidate"]
    keeper = event.reason.split("merged into ", 1)[1].split(":", 1)[0]
    assert mem.get(keeper).text.startswith("user really enjoys")
    assert event.actor == "consolidation"
    # a second run finds nothing to do, and asks the model nothing
    mem.background.consolidate(user_id="ada")
    [again] = mem.background.run_due()
    assert again.result is not None and again.result["clusters"] == 0
    assert len(model.requests) == CLUSTERS
    # undoing any event of a merge undoes the whole merge: both sources come back and the
    # keeper says what it said before
    merged_text = mem.get(keeper).text
    sources = [r.id for r in invalid if any(
        e.op == "invalidate" and f"merged into {keeper}" in e.reason for e in mem.history(r.id))]
    assert len(sources) == 2
    undone = mem.undo(event.id)
    assert {c.memory.id for c in undone.changes} == {keeper, *sources}
    assert len(mem.get_all(user_id="ada", limit=1000).memories) == 1000 - 2 * CLUSTERS + 2
    assert all(mem.get(i).invalid_at is None for i in sources)
    assert mem.get(keeper).text != merged_text


def test_schedules_run_one_at_a_time_and_repeat(tmp_path: Path, clock: FakeClock) -> None:
    model = ScriptedModel(default={"merge": True, "content": "Drinks tea", "keep": [],
                                   "reason": "same"})
    with Memory(make_store("file", tmp_path), llm=model, clock=clock, owns_store=True) as mem:
        mem.add("Drinks tea", user_id="bo", infer=False)
        first = mem.background.consolidate(user_id="bo", interval=3600, delay=60)
        again = mem.background.consolidate(user_id="bo", interval=3600, delay=60)
        assert again.id == first.id  # one pending run per namespace
        assert mem.background.run_due() == []
        clock.advance(60)
        [ran] = mem.background.run_due()
        assert ran.id == first.id and ran.result is not None and ran.result["clusters"] == 0
        [next_run] = mem.background.queue.list_jobs(status="queued")
        assert next_run.kind == CONSOLIDATE and next_run.run_after == clock.now + 3600


def test_clusters_are_pure_and_respect_seeds() -> None:
    def rec(n: int, text: str, at: float = 0.0) -> MemoryRecord:
        return MemoryRecord(id=f"m{n}", namespace=("ns",), content=text, created_at=at)

    records = [rec(1, "Likes green tea"), rec(2, "likes green tea"),
               rec(3, "Likes green tea a lot"), rec(4, "Owns a red bike"), rec(5, "Zebra")]
    assert [[r.id for r in c] for c in clusters(records)] == [["m1", "m2", "m3"]]
    assert clusters(records, seeds={"m4"}) == []
    linked = clusters(records, links=[("m4", "m5")])
    assert [[r.id for r in c] for c in linked] == [["m1", "m2", "m3"], ["m4", "m5"]]
    assert [len(c) for c in clusters(records, max_size=2)] == [2]
