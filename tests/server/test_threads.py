"""How the server runs blocking work: at most ``store_threads`` requests of a process do store
work at once, and adds that wait on a chat model run beside them, never in their way."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from remem.embed import FakeEmbedder
from remem.errors import ConfigError
from remem.llm import ScriptedModel
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_answer


class Gauge:
    """Counts how many calls of a work function overlap."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def work(self, seconds: float) -> Callable[[], int]:
        def run() -> int:
            with self._lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            time.sleep(seconds)
            with self._lock:
                self.now -= 1
            return threading.get_ident()
        return run


@pytest.mark.parametrize("store_threads", [1, 3])
def test_store_work_runs_at_most_store_threads_at_once(store_threads: int) -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, store_threads=store_threads))
    state = app.state.remem
    store, llm = Gauge(), Gauge()

    async def main() -> None:
        await asyncio.gather(*(state.run(store.work(0.05)) for _ in range(8)),
                             *(state.run(llm.work(0.05), waits_on_llm=True) for _ in range(8)))

    asyncio.run(main())
    asyncio.run(main())  # a second event loop gets its own limiter, with the same bound
    state.close()
    assert store.peak == store_threads
    assert llm.peak > store_threads  # the LLM pool is not bounded by store_threads


def test_searches_are_not_held_up_by_an_add_waiting_on_the_model() -> None:
    released = threading.Event()
    thinking = threading.Semaphore(0)

    def slow_answer(request: Any) -> Any:
        thinking.release()
        released.wait(20)  # the model "thinks" until the searches are done
        return rule_answer(request)

    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                  llm=ScriptedModel(default=slow_answer), store_threads=1))
    token = app.state.remem.keys.create("acme")[0]
    headers = {"Authorization": f"Bearer {token}"}
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url,
                                                     headers=headers, timeout=30) as http:
        assert http.post("/v1/memories", json={"messages": "I drink tea", "user_id": "u",
                                               "infer": False}).status_code == 200
        adds: list[httpx.Response] = []
        waiting = [threading.Thread(target=lambda: adds.append(http.post(
            "/v1/memories", json={"messages": "I live in Paris", "user_id": "u"})))
            for _ in range(2)]
        for thread in waiting:
            thread.start()
        for _ in waiting:  # both adds are inside the model call
            assert thinking.acquire(timeout=20)
        started = time.monotonic()
        found = [http.post("/v1/memories/search", json={"query": "tea", "user_id": "u"})
                 for _ in range(3)]
        searched_in = time.monotonic() - started
        released.set()
        for thread in waiting:
            thread.join(30)
    app.state.remem.close()
    assert [r.status_code for r in found] == [200, 200, 200]
    assert found[0].json()["hits"][0]["memory"]["text"] == "I drink tea"
    # had the adds taken the one store thread, the searches would have waited for the model
    # (20 s); they ran beside it
    assert searched_in < 5
    assert [r.status_code for r in adds] == [200, 200]


@pytest.mark.parametrize("bad", [0, 257, 2.5, True])
def test_store_threads_is_validated(bad: Any) -> None:
    with pytest.raises(ConfigError, match="store_threads must be an integer from 1 to 256"):
        ServerConfig(db=":memory:", store_threads=bad)
