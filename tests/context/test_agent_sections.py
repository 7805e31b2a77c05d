"""Core memory blocks and memory files as context sections: whole items, priorities, budgets,
on a real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import FakeEmbedder
from remem.api import Memory
from remem.blocks import Blocks
from remem.context import register_section, unregister_section
from remem.context.agent_sections import BlocksSection, MemoryFilesSection
from remem.files import StoreFileBackend


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "ctx.db", embedder=FakeEmbedder()) as memory:
        yield memory


def _setup(mem: Memory) -> tuple[BlocksSection, MemoryFilesSection]:
    blocks = Blocks(StoreFileBackend(mem.store, ("blocks",)))
    blocks.create("b-human", label="human", value="Name: Ada. Prefers short answers.",
                  limit=200)
    blocks.create("b-persona", label="persona", value="A travel assistant.", limit=200,
                  read_only=True)
    blocks.attach("a1", "b-persona")
    blocks.attach("a1", "b-human")
    files = StoreFileBackend(mem.store, ("memories",))
    files.write("/memories/user/alice/AGENTS.md", "Alice flies from Berlin.")
    files.write("/memories/agent/a1/AGENTS.md", "Always quote prices in euros.")
    mem.add("Alice drinks green tea", user_id="alice", agent_id="a1", infer=False)
    return BlocksSection(blocks), MemoryFilesSection(files)


def test_blocks_and_files_come_first_as_whole_items(mem: Memory) -> None:
    blocks, files = _setup(mem)
    result = mem.context("tea", user_id="alice", agent_id="a1",
                         sections=[blocks, files, "memories"])
    text = result.to_string()
    assert text.index("<persona") < text.index("<human") < text.index("## user")
    assert text.index("## user (/memories/user/alice/AGENTS.md)") < text.index("## agent")
    assert text.index("euros") < text.index("Alice drinks green tea")
    assert 'read_only="true"' in text and 'chars="33/200"' in text
    assert {s.name: s.kept for s in result.sections} == {
        "blocks": 2, "memory_files": 2, "memories": 1}
    # a tight budget drops the lowest priority (memories) first, then the files, whole
    tight = mem.context("tea", user_id="alice", agent_id="a1",
                        sections=[blocks, files, "memories"],
                        budget_tokens=result.tokens - 1)
    assert tight.tokens < result.tokens
    assert [d.section for d in tight.dropped][:1] == ["memories"]
    assert "Always quote prices in euros." in tight.to_string()
    assert asyncio.run(mem.acontext("tea", user_id="alice", agent_id="a1",
                                    sections=[blocks, files, "memories"])).to_string() == text


def test_absent_without_an_agent_or_files_and_registrable(mem: Memory) -> None:
    blocks, files = _setup(mem)
    alone = mem.context("tea", user_id="bob", sections=[blocks, files, "memories"])
    assert {s.name: s.kept for s in alone.sections}.get("blocks", 0) == 0
    assert "<human" not in alone.to_string() and "Berlin" not in alone.to_string()
    register_section(blocks)
    try:
        default = mem.context("tea", user_id="alice", agent_id="a1")
        assert "<human" in default.to_string()
    finally:
        assert unregister_section("blocks")
