"""remem.Client against a real server on loopback: the Memory facade's methods, sync and
async, the same results as an embedded Memory, and remem's errors for server errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from remem.api import Memory
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, ConflictError, InvalidInputError, NotFoundError, UsageError
from remem.memory.history import HistoryEvent
from remem.memory.records import MemoryRecord
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_model


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str, str]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=rule_model(),
                                  mcp=False))
    keys = app.state.remem.keys
    token = keys.create("acme")[0]
    read_only = keys.create("acme", read_only=True)[0]
    with ThreadedServer(app) as server:
        yield server.url, token, read_only
    app.state.remem.close()


def _flow(mem: Memory | Client) -> list[object]:
    """The same script on an embedded memory and a client; what it observed."""
    seen: list[object] = []
    added = mem.add("I live in Paris", user_id="u1")
    seen.append([c.memory.text for c in added.changes])
    moved = mem.add("I moved to Berlin", user_id="u1")
    seen.append(sorted(c.op for c in moved.changes))
    current = mem.search("Berlin", user_id="u1")
    seen.append([h.memory.text for h in current])
    memory_id = current[0].memory.id
    record = mem.get(memory_id)
    seen.append((record.text, record.version, record.namespace))
    mem.update(memory_id, "Lives in Berlin-Mitte", reason="more precise")
    seen.append(mem.get(memory_id).text)
    history = mem.history(memory_id)
    seen.append([e.op for e in history])
    mem.undo(history[-1].id)
    seen.append(mem.get(memory_id).text)
    mem.delete(memory_id)
    seen.append(mem.search("Berlin", user_id="u1").memories)
    seen.append(len(mem.search(user_id="u1", include_invalid=True)))
    return seen


def test_client_behaves_like_the_embedded_memory(served: tuple[str, str, str]) -> None:
    url, token, _ = served
    embedded = Memory(Memory.open(":memory:", embedder=FakeEmbedder()).store, llm=rule_model())
    expected = _flow(embedded)
    assert expected[0] == ["Lives in Paris"] and expected[3][0] == "Lives in Berlin"
    with Client(url, api_key=token) as client:
        assert _flow(client) == expected


def test_results_are_the_facade_types(served: tuple[str, str, str]) -> None:
    url, token, _ = served
    with Client(url, token) as client:
        added = client.add("tea with lemon", user_id="types", infer=False,
                           metadata={"source": "test"})
        record = added.added[0]
        assert isinstance(record, MemoryRecord)
        assert record.metadata == {"source": "test"} and record.kind == "fact"
        assert added.namespace == ("memories", "user", "types")
        hit = client.search("lemon", user_id="types")[0]
        assert hit.memory.id == record.id and hit.score is not None and "keyword" in hit.details
        events = client.history(record.id)
        assert isinstance(events[0], HistoryEvent) and events[0].op == "add"


def test_async_methods(served: tuple[str, str, str]) -> None:
    url, token, _ = served

    async def run() -> list[str]:
        async with Client(url, token) as client:
            added = await client.aadd("I work at Acme", user_id="async")
            memory_id = added.added[0].id
            await client.aupdate(memory_id, "Works at Acme Corp")
            got = await client.aget(memory_id)
            found = await client.asearch("Acme", user_id="async")
            history = await client.ahistory(memory_id)
            await client.aundo(history[-1].id)
            await client.adelete(memory_id, hard=True)
            gone = await client.asearch("Acme", user_id="async", include_invalid=True)
            return [got.text, (found[0].memory.id == memory_id and "yes") or "no",
                    str(len(history)), str(len(gone))]

    assert asyncio.run(run()) == ["Works at Acme Corp", "yes", "2", "0"]


def test_server_errors_are_remem_errors(served: tuple[str, str, str]) -> None:
    url, token, read_only = served
    with Client(url, token) as client:
        with pytest.raises(NotFoundError, match="no memory with id"):
            client.get("mem_missing")
        memory_id = client.add("coffee", user_id="err", infer=False).added[0].id
        with pytest.raises(ConflictError):
            client.update(memory_id, "tea", version=7)
        with pytest.raises(InvalidInputError, match=r"SearchRequest: limit"):
            client.search("x", user_id="err", limit=0)  # refused before it is sent
        with pytest.raises(InvalidInputError, match="filter"):
            client.search("x", user_id="err", filters={"$nope": 1})
    with Client(url, read_only) as client, pytest.raises(UsageError, match="read-only"):
        client.add("x", user_id="err", infer=False)
    with Client(url, "rk_000000000000_" + "A" * 43) as client, \
            pytest.raises(ConfigError, match="invalid or revoked"):
        client.search("x")
    with pytest.raises(ConfigError, match="http"):
        Client("127.0.0.1:8000")


def test_core_imports_do_not_load_the_server_stack() -> None:
    import subprocess
    import sys

    code = ("import sys, remem, remem.client, remem.cli, remem.store.scoped; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'mcp', 'starlette') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"
