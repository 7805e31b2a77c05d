"""Blocking store methods refuse to run on an event loop's thread and name the async twin;
the async twins work there (every backend)."""

from __future__ import annotations

import asyncio

import pytest

from remem.errors import UsageError
from remem.store import BaseStore


@pytest.mark.parametrize(("call", "twin"), [
    (lambda s: s.get(("a",), "k"), "aget"),
    (lambda s: s.put(("a",), "k", {"text": "x"}), "aput"),
    (lambda s: s.delete(("a",), "k"), "adelete"),
    (lambda s: s.search(("a",)), "asearch"),
    (lambda s: s.list_namespaces(), "alist_namespaces"),
    (lambda s: s.batch([]), "abatch"),
])
def test_sync_call_inside_a_running_loop_names_the_async_twin(store: BaseStore, call: object,
                                                              twin: str) -> None:
    async def main() -> None:
        with pytest.raises(UsageError, match=rf"`await \.\.\.\.{twin}\("):
            call(store)  # type: ignore[operator]
        await store.aput(("a",), "k", {"text": "x"})  # the twin works on the loop
        got = await store.aget(("a",), "k")
        assert got is not None and got.value == {"text": "x"}

    asyncio.run(main())
    assert store.get(("a",), "k") is not None  # and the sync call works off the loop
