"""The Memory and ThreadStore facades refuse blocking calls on a running event loop and name
the async twin; the twins work there."""

from __future__ import annotations

import asyncio

import pytest

from remem import FakeEmbedder, Memory
from remem.errors import UsageError
from remem.threads import ThreadStore


def test_memory_sync_call_on_a_loop_names_its_async_twin() -> None:
    with Memory.open(":memory:", embedder=FakeEmbedder()) as mem:
        async def main() -> None:
            with pytest.raises(UsageError, match=r"Memory\.search\(\).*`await \.\.\.\.asearch\("):
                mem.search("tea", user_id="alice")
            with pytest.raises(UsageError, match=r"`await \.\.\.\.aadd\("):
                mem.add("Alice drinks tea", user_id="alice", infer=False)
            await mem.aadd("Alice drinks tea", user_id="alice", infer=False)
            found = await mem.asearch("tea", user_id="alice")
            assert [h.memory.text for h in found] == ["Alice drinks tea"]

        asyncio.run(main())
        assert len(mem.search("tea", user_id="alice")) == 1  # off the loop it works


def test_thread_store_sync_call_on_a_loop_names_its_async_twin() -> None:
    with ThreadStore(":memory:") as threads:
        async def main() -> None:
            with pytest.raises(UsageError, match=r"`await \.\.\.\.acreate\("):
                threads.create("t1")
            await threads.acreate("t1")
            with pytest.raises(UsageError, match=r"`await \.\.\.\.alist_threads\("):
                threads.list_threads()
            assert [t.thread_id for t in await threads.alist_threads()] == ["t1"]

        asyncio.run(main())
        assert threads.exists("t1")
