"""The blocking store methods work on a thread whose event loop is running (a Jupyter cell, a
sync call inside an ``async def`` node): they hold the loop for the call and answer what they
answer off the loop; tasks waiting on the loop carry on afterwards (every backend)."""

from __future__ import annotations

import asyncio
from typing import Any

from remem.store import BaseStore, Item
from remem.store.types import CountOp, GetOp, PutOp


def _calls(store: BaseStore) -> dict[str, Any]:
    """Every friendly method and a batch, through the sync API; what each returned."""
    store.put(("docs", "a"), "tea", {"text": "green tea from Kyoto", "n": 1})
    store.put(("docs", "b"), "coffee", {"text": "espresso in Rome", "n": 2})
    put, got, counted = store.batch([PutOp(("docs", "a"), "mate", {"text": "mate", "n": 3}),
                                     GetOp(("docs", "a"), "mate"), CountOp(("docs",))])
    assert put is None and isinstance(got, Item)
    out: dict[str, Any] = {
        "get": store.get(("docs", "a"), "tea").value,  # type: ignore[union-attr]
        "batch": (got.value, counted),
        "search": [i.key for i in store.search(("docs",), filter={"n": {"$gte": 2}})],
        "query": [i.key for i in store.search(("docs",), query="espresso", limit=1)],
        "namespaces": store.list_namespaces(prefix=("docs",)),
        "count": store.count(("docs", "a")),
    }
    store.delete(("docs", "a"), "mate")
    out["after_delete"] = store.get(("docs", "a"), "mate")
    return out


WANT = {
    "get": {"text": "green tea from Kyoto", "n": 1},
    "batch": ({"text": "mate", "n": 3}, 3),
    "search": ["mate", "coffee"],
    "query": ["coffee"],
    "namespaces": [("docs", "a"), ("docs", "b")],
    "count": 2,
    "after_delete": None,
}


def test_sync_calls_inside_a_running_loop_answer_as_off_it(store: BaseStore) -> None:
    async def main() -> tuple[dict[str, Any], list[str]]:
        asyncio.get_running_loop()  # the condition under test: a loop runs on this thread
        ticks: list[str] = []

        async def other_task() -> None:
            await asyncio.sleep(0)
            ticks.append("ran")

        task = asyncio.create_task(other_task())
        answers = _calls(store)
        await task  # the loop was held for the calls, not lost
        return answers, ticks

    answers, ticks = asyncio.run(main())
    assert answers == WANT
    assert ticks == ["ran"]
    assert store.get(("docs", "a"), "tea") is not None  # and the store is still usable


def test_the_async_twins_agree_with_the_sync_calls_on_the_loop(store: BaseStore) -> None:
    async def main() -> tuple[Any, Any]:
        store.put(("k",), "1", {"text": "x"})
        twin = await store.aget(("k",), "1")
        return store.get(("k",), "1"), twin

    sync, twin = asyncio.run(main())
    assert sync is not None and twin is not None
    assert (sync.value, sync.updated_at) == (twin.value, twin.updated_at) == (
        {"text": "x"}, sync.updated_at)
