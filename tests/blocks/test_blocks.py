"""Core memory blocks: limits, read-only, sharing between agents, history, rendering."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from remem.blocks import Blocks
from remem.errors import (
    BlockLimitError,
    EditError,
    FileConflictError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyError,
)
from remem.files import InMemoryFileBackend, StoreFileBackend
from remem.store import SQLiteStore


@pytest.fixture
def blocks() -> Blocks:
    blocks = Blocks(InMemoryFileBackend())
    blocks.create("human-alice", label="human", value="Name: Alice", limit=60,
                  description="What I know about the user")
    blocks.create("persona", label="persona", value="I am a travel agent.", read_only=True)
    blocks.create("team", label="team", value="Team: travel", limit=200)
    for agent in ("planner", "booker"):
        blocks.attach(agent, "persona")
        blocks.attach(agent, "team")
    blocks.attach("planner", "human-alice")
    return blocks


def test_append_replace_and_rethink(blocks: Blocks) -> None:
    blocks.append("planner", "human", "Vegetarian.")
    assert blocks.get("human-alice").value == "Name: Alice\nVegetarian."
    blocks.replace("planner", "human", "Vegetarian.", "Vegan.")
    assert blocks.get("human-alice").value == "Name: Alice\nVegan."
    blocks.rethink("planner", "human", "Alice, vegan, lives in Berlin.")
    assert blocks.get("human-alice").value == "Alice, vegan, lives in Berlin."
    ops = [e.op for e in blocks.history("human-alice")]
    assert ops == ["write"] * 4  # create + three edits, each in history
    assert blocks.history("human-alice")[-1].actor == "agent"
    restored = blocks.undo("human-alice")
    assert restored is not None and restored.value == "Name: Alice\nVegan."


def test_over_limit_edits_are_refused_with_a_fix(blocks: Blocks) -> None:
    with pytest.raises(BlockLimitError) as caught:
        blocks.append("planner", "human", "x" * 60)
    message = str(caught.value)
    assert "72 characters long, 12 over its limit of 60" in message
    assert "memory_rethink" in message and "shorten the text by at least 12" in message
    with pytest.raises(BlockLimitError):
        blocks.rethink("planner", "human", "y" * 61)
    assert blocks.get("human-alice").value == "Name: Alice"  # nothing changed


def test_read_only_blocks_refuse_agent_edits(blocks: Blocks) -> None:
    for edit in (lambda: blocks.append("planner", "persona", "more"),
                 lambda: blocks.replace("planner", "persona", "travel", "hotel"),
                 lambda: blocks.rethink("planner", "persona", "new")):
        with pytest.raises(ReadOnlyError, match="read-only"):
            edit()
    # the application may still change it
    assert blocks.update("persona", value="I am a hotel agent.").value == "I am a hotel agent."


def test_a_shared_block_edited_by_one_agent_is_seen_by_the_other(blocks: Blocks) -> None:
    blocks.append("booker", "team", "Budget: 500 EUR")
    assert "Budget: 500 EUR" in blocks.render("planner").text
    assert [b.label for b in blocks.blocks_of("booker")] == ["persona", "team"]
    with pytest.raises(NotFoundError, match="the blocks are: persona, team"):
        blocks.append("booker", "human", "x")  # not attached to booker


def test_replace_needs_a_unique_exact_match(blocks: Blocks) -> None:
    with pytest.raises(EditError, match="does not occur"):
        blocks.replace("planner", "human", "Bob", "Carol")
    blocks.rethink("planner", "human", "tea tea")
    with pytest.raises(EditError, match="occurs 2 times"):
        blocks.replace("planner", "human", "tea", "coffee")


def test_rendering_shows_size_limit_and_read_only(blocks: Blocks) -> None:
    text = blocks.render("planner").text
    assert text.startswith("# Core memory\n<persona")
    assert '<human chars="11/60" description="What I know about the user">' in text
    assert 'read_only="true"' in text
    small = blocks.render("planner", budget=25)
    assert small.tokens <= 25 and [o.source for o in small.overflow][-1] == "human-alice"


def test_bad_names_limits_and_duplicate_labels(blocks: Blocks) -> None:
    with pytest.raises(InvalidInputError, match="label must be"):
        blocks.create("x", label="bad label")
    with pytest.raises(InvalidInputError, match="limit must be"):
        blocks.create("x", label="x", limit=0)
    with pytest.raises(BlockLimitError):
        blocks.create("x", label="x", value="toolong", limit=3)
    with pytest.raises(FileConflictError):
        blocks.create("team", label="team")
    blocks.create("human-bob", label="human")
    with pytest.raises(InvalidInputError, match="already has a block labelled 'human'"):
        blocks.attach("planner", "human-bob")
    stale = blocks.get("team").etag
    blocks.update("team", value="changed")
    with pytest.raises(FileConflictError):
        blocks.update("team", value="again", etag=stale)


def test_concurrent_appends_to_a_shared_block_both_land(tmp_path: Path) -> None:
    stores = [SQLiteStore(tmp_path / "blocks.db") for _ in range(2)]
    try:
        first, second = (Blocks(StoreFileBackend(s, ("blocks",))) for s in stores)
        first.create("team", label="team", limit=2000)
        first.attach("a", "team")
        first.attach("b", "team")
        barrier = threading.Barrier(2)
        errors: list[Exception] = []

        def agent(blocks: Blocks, name: str) -> None:
            barrier.wait()
            for n in range(5):
                try:
                    blocks.append(name, "team", f"{name}{n}")
                except Exception as exc:  # a lost race twice in a row: reported, not lost
                    errors.append(exc)

        threads = [threading.Thread(target=agent, args=(b, n))
                   for b, n in ((first, "a"), (second, "b"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        lines = second.get("team").value.splitlines()
        acknowledged = 10 - len(errors)
        assert all(isinstance(e, FileConflictError) for e in errors)
        assert len(lines) == acknowledged and len(set(lines)) == acknowledged
    finally:
        for store in stores:
            store.close()
