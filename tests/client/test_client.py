"""remem.Client against a real server on loopback: the Memory facade's methods, sync and
async, the same results as an embedded Memory, and remem's errors for server errors.
(Every operation's parameters and JSON are checked against Memory's in
tests/surfaces/test_parity.py.)"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from remem.api import Memory
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, ConflictError, InvalidInputError, NotFoundError, UsageError
from remem.memory.history import HistoryEvent
from remem.memory.records import MemoryRecord
from remem.memory.requests import ExportRequest, GetAllRequest
from remem.memory.results import MemoryPage
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_model


@pytest.fixture(scope="module")
def server_app() -> Iterator[tuple[FastAPI, str]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=rule_model(),
                                  mcp=False))
    with ThreadedServer(app) as server:
        yield app, server.url
    app.state.remem.close()


@pytest.fixture(scope="module")
def served(server_app: tuple[FastAPI, str]) -> tuple[str, str, str]:
    """The server's url, a key of the tenant "acme", and a read-only one."""
    app, url = server_app
    keys = app.state.remem.keys
    return url, keys.create("acme")[0], keys.create("acme", read_only=True)[0]


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


def test_lists_forgets_exports_and_imports(served: tuple[str, str, str],
                                           tmp_path: Path) -> None:
    url, token, _ = served
    with Client(url, token) as client:
        for text in ("Likes tea", "Likes cats", "Likes rain"):
            client.add(text, user_id="lister", infer=False)
        page = client.get_all(user_id="lister", limit=2)
        assert [r.text for r in page] == ["Likes rain", "Likes cats"] and page.next_offset == 2
        assert isinstance(page, MemoryPage) and page[0].created_at > 0
        assert [h.memory.text for h in client.search("tea cats", user_id="lister",
                                                     mode="keyword", limit=1, offset=1)] == [
            "Likes cats"]
        path = tmp_path / "lister.jsonl"
        assert client.export(path, user_id="lister") == 6  # 3 records, 3 events
        gone = client.delete_all(user_id="lister", reason="forget me")
        assert len(gone.changes) == 3 and client.get_all(user_id="lister").memories == ()
        history = client.history(gone.changes[0].memory.id)
        assert history[-1].actor.startswith("key:") and history[-1].reason == "forget me"
        assert len(client.undo(gone.changes[0].event_id).changes) == 3
        assert len(client.get_all(user_id="lister")) == 3
        client.delete_all(user_id="lister", hard=True)
        assert client.import_(path) == 6  # the hard-deleted records come back as exported
        assert sorted(r.text for r in client.get_all(user_id="lister")) == [
            "Likes cats", "Likes rain", "Likes tea"]


def test_import_is_split_under_the_body_limit(served: tuple[str, str, str]) -> None:
    url, token, _ = served
    source = Memory(Memory.open(":memory:", embedder=FakeEmbedder()).store)
    for n in range(40):
        source.add(f"note {n} " + "x" * 30_000, user_id="big", infer=False)
    lines = list(source.run(ExportRequest()).lines)
    assert sum(len(line) for line in lines) > 1 << 20  # over the server's body limit
    with Client(url, token) as client:
        assert client.import_(lines) == 80
        assert len(client.get_all(user_id="big")) == 40


def test_async_list_forget_export_import(served: tuple[str, str, str]) -> None:
    url, token, _ = served

    async def run() -> list[object]:
        async with Client(url, token) as client:
            await client.aadd("Likes jazz", user_id="async-all", infer=False)
            page = await client.aget_all(user_id="async-all")
            buffer = io.StringIO()
            exported = await client.aexport(buffer, user_id="async-all")
            gone = await client.adelete_all(user_id="async-all", hard=True)
            imported = await client.aimport(buffer.getvalue().splitlines())
            again = await client.arun(GetAllRequest(user_id="async-all"))
            return [[r.text for r in page], exported, len(gone.changes), imported,
                    [r.text for r in again]]

    assert asyncio.run(run()) == [["Likes jazz"], 2, 1, 2, ["Likes jazz"]]


def test_other_tenants_lists_deletes_and_exports_see_nothing(
        served: tuple[str, str, str], server_app: tuple[FastAPI, str]) -> None:
    url, token, _ = served
    with Client(url, token) as client:
        client.add("acme secret", user_id="shared-name", infer=False)
        exported = client.run(ExportRequest()).lines
        assert any("acme secret" in line for line in exported)
    other = server_app[0].state.remem.keys.create("globex")[0]
    with Client(url, other) as intruder:
        assert intruder.get_all(user_id="shared-name").memories == ()
        assert intruder.delete_all(user_id="shared-name").changes == ()
        assert intruder.run(ExportRequest()).lines == ()
        assert intruder.import_(exported) == len(exported)  # lands in its own tenant
    with Client(url, token) as client:
        assert [r.text for r in client.get_all(user_id="shared-name")] == ["acme secret"]


def test_an_admin_client_acts_for_the_tenant_it_names(
        server_app: tuple[FastAPI, str], served: tuple[str, str, str]) -> None:
    """``Client(tenant=...)`` sends ``X-Remem-Tenant``: an admin key then reads and writes the
    named tenant's memories; any other key naming a tenant is refused, typed."""
    from remem.errors import PermissionDeniedError

    app, url = server_app
    _, token, _ = served
    admin = app.state.remem.keys.create("ops", admin=True)[0]
    with Client(url, token) as acme:
        acme.add("acme keeps its ledger in the vault", user_id="adm", infer=False)
    with Client(url, admin, tenant="acme") as as_acme, Client(url, admin) as own:
        assert [h.memory.text for h in as_acme.search("ledger vault", user_id="adm")] == [
            "acme keeps its ledger in the vault"]
        as_acme.add("written by ops for acme", user_id="adm", infer=False)
        assert own.search("ledger vault", user_id="adm").memories == []
    with Client(url, token) as acme:
        assert "written by ops for acme" in [m.text for m in
                                             acme.get_all(user_id="adm").memories]
    with Client(url, token, tenant="ops") as plain, \
            pytest.raises(PermissionDeniedError, match="only an admin key"):
        plain.search("x", user_id="adm")
    with pytest.raises(ConfigError, match="tenant"):
        Client(url, admin, tenant=" ")
