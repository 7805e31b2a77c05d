"""Issue 32, item 3: each family's records are reachable only through that family's API.

A real server app with a file policy (deny ``/secrets/**``, ask before writes to
``/memories/**``), seeded through the families' own APIs, then attacked through every raw store
surface: ``/v1/store`` with a write key, the MCP ``list_namespaces`` tool, and ``remem store``
on the server's database. Every bypass the issue reported (and the poisons that broke a
tenant's reads) must be refused with a 4xx naming the family's API; the family APIs keep
working; an admin key can still read for repair. SQLite, and one PostgreSQL run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client as McpClient

from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.files.permissions import Policy, rules
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.routes_approvals import approvals_for
from remem.server.routes_files import set_file_policy
from remem.server.state import Principal, ServerState
from remem.store.reserved import GOVERNED, ROOTS

POLICY = [{"effect": "deny", "paths": "/secrets/**"},
          {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit", "delete"]}]
SECRET = "password hunter2"


@dataclass
class World:
    """The server, its keys as clients, and what the families' APIs created."""

    state: ServerState
    agent: TestClient
    human: TestClient
    admin: TestClient
    memory_id: str
    event_id: str
    approval_id: str
    db: str

    def admin_item(self, namespace: list[str], key: str) -> dict[str, Any]:
        got = self.admin.get("/v1/store/items", params={"namespace": namespace, "key": key})
        assert got.status_code == 200, got.text
        value: dict[str, Any] = got.json()["value"]
        return value

    def admin_find(self, prefix: list[str], needle: str) -> tuple[list[str], str]:
        found = self.admin.post("/v1/store/search", json={"namespace_prefix": prefix,
                                                          "limit": 1000})
        assert found.status_code == 200, found.text
        for item in found.json()["items"]:
            if needle in item["key"]:
                return item["namespace"], item["key"]
        raise AssertionError(f"no {needle!r} under {prefix}: {found.text}")


def _ok(response: Any) -> Any:
    assert response.status_code < 300, response.text
    return response.json()


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[World]:
    yield from _world(str(tmp_path / "attacked.db"))


def _world(db: str) -> Iterator[World]:
    app = create_app(ServerConfig(db=db, embedder=FakeEmbedder(), mcp=False,
                                  key_cache_seconds=0))
    state: ServerState = app.state.remem
    set_file_policy(state, Policy(rules(POLICY), "allow"))
    agent_key, human_key = state.keys.create("acme")[0], state.keys.create("acme")[0]
    admin_key = state.keys.create("ops", admin=True)[0]
    # the application seeds a secret behind the policy's back, through the files family
    approvals_for(state.store_for(Principal("acme"))).files.write("/secrets/key.txt", SECRET)
    with TestClient(app, headers={"Authorization": f"Bearer {agent_key}"}) as agent, \
            TestClient(app, headers={"Authorization": f"Bearer {human_key}"}) as human, \
            TestClient(app, headers={"Authorization": f"Bearer {admin_key}",
                                     "X-Remem-Tenant": "acme"}) as admin:
        added = _ok(agent.post("/v1/memories", json={"messages": "I drink green tea",
                                                     "user_id": "u", "infer": False}))
        change = added["changes"][0]
        _ok(agent.post("/v1/files/write", json={"path": "/notes/a.md", "content": "notes"}))
        asked = agent.post("/v1/files/write", json={"path": "/memories/alice.md",
                                                    "content": "Alice likes tea"})
        assert asked.status_code == 202, asked.text
        _ok(agent.post("/v1/blocks", json={"id": "persona", "label": "persona",
                                           "value": "I am careful.", "read_only": True}))
        _ok(agent.put("/v1/agents/ag/blocks/persona"))
        _ok(agent.post("/v1/prompts", json={"name": "greet", "text": "Hello {name}"}))
        _ok(agent.post("/v1/episodes", json={"situation": "s", "action": "a"}))
        _ok(agent.post("/v1/threads", json={"thread_id": "t1"}))
        _ok(agent.post("/v1/threads/t1/messages",
                       json={"messages": [{"role": "user", "content": "hello there"}]}))
        yield World(state, agent, human, admin, change["memory"]["id"], change["event_id"],
                    asked.json()["approval_id"], db)
    state.close()


def _attacks(world: World) -> list[tuple[str, str, list[str], str, dict[str, Any]]]:
    """(what, method, namespace, key, value) of every raw-store bypass and poison."""
    mem_ns = ["memories", "user", "u"]
    record = world.admin_item(mem_ns, world.memory_id)
    approval_ns, approval_key = world.admin_find(["approvals"], world.approval_id)
    approval = world.admin_item(approval_ns, approval_key)
    block_ns, block_key = world.admin_find(["blocks", "files"], "persona")
    block = world.admin_item(block_ns, block_key)
    file_record = {"path": "/memories/evil.md", "content": "no approval asked", "version": 1,
                   "modified_at": 0.0, "live": True, "name": "evil.md", "depth": 2}
    flipped = json.loads(block["content"]) | {"read_only": False}
    return [
        ("file under /memories (ask)", "PUT", ["files", "default", "files", "/memories"],
         "evil.md", file_record),
        ("file under /secrets (deny)", "PUT", ["files", "default", "files", "/secrets"],
         "key.txt", {**file_record, "path": "/secrets/key.txt", "content": "overwritten"}),
        ("new file under /secrets", "PUT", ["files", "default", "files", "/secrets"],
         "new.txt", {**file_record, "path": "/secrets/new.txt"}),
        ("approval requested_by rewrite", "PUT", approval_ns, approval_key,
         {**approval, "content": approval["content"].replace('"requested_by"',
                                                             '"requested_by": "x", "_"')}),
        ("bad approval", "PUT", approval_ns, "apr_forged.json", {"content": "{not json"}),
        ("block read_only flip", "PUT", block_ns, block_key,
         {**block, "content": json.dumps(flipped)}),
        ("bad block JSON", "PUT", block_ns, block_key, {**block, "content": "{not json"}),
        ("bad agent list", "PUT", [*block_ns, "/_agents"], "ag.json",
         {**block, "path": "/blocks/_agents/ag.json", "content": "[[["}),
        ("memory with valid_at 'yesterday'", "PUT", mem_ns, world.memory_id,
         {**record, "valid_at": "yesterday"}),
        ("forged memory", "PUT", mem_ns, "mem_forged", {**record, "id": "mem_forged"}),
        ("bad history event", "PUT", ["_remem", "history", *mem_ns], world.event_id,
         {"type": "history", "op": "bogus"}),
        ("bad head", "PUT", ["_remem", "heads"], json.dumps(mem_ns), {"type": "head", "n": "x"}),
        ("_remem ids", "PUT", ["_remem", "ids"], world.memory_id,
         {"type": "id", "namespace": ["elsewhere"]}),
        ("prompt head", "PUT", ["prompts", "head"], "greet", {"version": "x"}),
        ("episode", "PUT", ["episodes"], "ep_forged", {"situation": 1}),
        ("thread index", "PUT", ["threads", "_"], "m", {"text": "forged"}),
        ("graph", "PUT", ["graph", "user", "u"], "g", {"text": "forged"}),
        ("delete a memory", "DELETE", mem_ns, world.memory_id, {}),
        ("delete the secret", "DELETE", ["files", "default", "files", "/secrets"], "key.txt",
         {}),
        ("delete an approval", "DELETE", approval_ns, approval_key, {}),
        ("delete a head", "DELETE", ["_remem", "heads"], json.dumps(mem_ns), {}),
    ]


def _raw(client: TestClient, method: str, namespace: list[str], key: str,
         value: dict[str, Any]) -> Any:
    if method == "PUT":
        return client.put("/v1/store/items", json={"namespace": namespace, "key": key,
                                                   "value": value})
    return client.delete("/v1/store/items", params={"namespace": namespace, "key": key})


def _refused(response: Any, label: str) -> None:
    """A 403 ``reserved_namespace`` naming the family's API."""
    assert response.status_code == 403, response.text
    body = response.json()
    root = ROOTS[label]
    assert body["error"] == "reserved_namespace", body
    assert root.route in body["message"] and root.command in body["message"], body


def _snapshot(world: World) -> list[Any]:
    """Everything of the tenant, as an admin reads it raw."""
    found = world.admin.post("/v1/store/search", json={"limit": 1000})
    assert found.status_code == 200
    return sorted((json.dumps(i["namespace"]), i["key"], json.dumps(i["value"], sort_keys=True))
                  for i in found.json()["items"] if i["namespace"][0] != "_remem"
                  or i["namespace"][1] != "gates")


def _http_matrix(world: World) -> None:
    before = _snapshot(world)
    acknowledged = []
    for what, method, namespace, key, value in _attacks(world):
        for client in (world.agent, world.admin):  # nobody writes a family's root raw
            response = _raw(client, method, namespace, key, value)
            if response.status_code < 300:
                acknowledged.append(what)
            _refused(response, namespace[0])
    assert acknowledged == []
    assert _snapshot(world) == before  # nothing changed


def _family_apis_still_work(world: World) -> None:
    agent, human = world.agent, world.human
    hits = _ok(agent.post("/v1/memories/search", json={"query": "tea", "user_id": "u"}))
    assert [h["memory"]["text"] for h in hits["hits"]] == ["I drink green tea"]
    assert _ok(agent.post("/v1/files/read", json={"path": "/notes/a.md"}))["content"] == "notes"
    assert agent.post("/v1/files/read", json={"path": "/secrets/key.txt"}).status_code == 403
    assert agent.post("/v1/files/read", json={"path": "/memories/evil.md"}
                      ).status_code == 404
    mine = agent.post(f"/v1/approvals/{world.approval_id}/approve")
    assert mine.status_code == 403 and "another key" in mine.json()["message"]
    done = _ok(human.post(f"/v1/approvals/{world.approval_id}/approve"))
    assert done["status"] == "done"
    assert _ok(agent.post("/v1/files/read", json={"path": "/memories/alice.md"})
               )["content"] == "Alice likes tea"
    block = _ok(agent.get("/v1/blocks/persona"))
    assert block["read_only"] is True and block["value"] == "I am careful."
    assert [b["id"] for b in _ok(agent.get("/v1/agents/ag/blocks"))["blocks"]] == ["persona"]
    assert _ok(agent.get("/v1/prompts/greet"))["text"] == "Hello {name}"
    history = _ok(agent.get(f"/v1/memories/{world.memory_id}/history"))
    assert [e["op"] for e in history["events"]] == ["add"]


def _reads(world: World) -> None:
    agent, admin = world.agent, world.admin
    secret = {"namespace": ["files", "default", "files", "/secrets"], "key": "key.txt"}
    for response, label in (
            (agent.get("/v1/store/items", params=secret), "files"),
            (agent.post("/v1/store/search", json={"namespace_prefix": ["files"]}), "files"),
            (agent.post("/v1/store/search", json={"namespace_prefix": ["approvals"],
                                                  "query": "memories"}), "approvals"),
            (agent.post("/v1/store/count", json={"namespace_prefix": ["approvals"]}),
             "approvals"),
            (agent.get("/v1/store/namespaces", params={"prefix": ["files", "*"]}), "files")):
        assert response.status_code == 403 and response.json()["error"] == "reserved_namespace"
        assert ROOTS[label].route in response.json()["message"]
        assert SECRET not in response.text
    everything = _ok(agent.post("/v1/store/search", json={"limit": 1000}))["items"]
    assert everything and not any(i["namespace"][0] in GOVERNED for i in everything)
    assert SECRET not in json.dumps(everything)
    ranked = _ok(agent.post("/v1/store/search", json={"query": "hunter2", "limit": 50}))
    assert ranked["items"] and SECRET not in json.dumps(ranked)  # vectors rank everything
    assert not any(i["namespace"][0] in GOVERNED for i in ranked["items"])
    for params in ({"limit": 1000}, {"prefix": ["*", "default"]}, {"max_depth": 1}):
        names = _ok(agent.get("/v1/store/namespaces", params=params))["namespaces"]
        assert not any(ns[0] in GOVERNED for ns in names), names
        assert "/secrets" not in json.dumps(names)
    total = _ok(admin.post("/v1/store/count", json={}))["count"]
    governed = sum(_ok(admin.post("/v1/store/count", json={"namespace_prefix": [label]})
                       )["count"] for label in GOVERNED)
    assert governed > 0
    assert _ok(agent.post("/v1/store/count", json={}))["count"] == total - governed
    # an admin key reads them for repair
    assert _ok(admin.get("/v1/store/items", params=secret))["value"]["content"] == SECRET
    names = _ok(admin.get("/v1/store/namespaces", params={"prefix": ["files"],
                                                          "limit": 1000}))["namespaces"]
    assert ["files", "default", "files", "/secrets"] in names


def test_every_raw_store_bypass_over_http_is_refused(sqlite_world: World) -> None:
    _http_matrix(sqlite_world)
    _reads(sqlite_world)
    _family_apis_still_work(sqlite_world)


def test_the_mcp_raw_store_tool_hides_governed_roots(sqlite_world: World) -> None:
    state = sqlite_world.state

    async def script(who: Principal) -> tuple[Any, Any, Any]:
        async with McpClient(build_mcp(state, lambda ctx: who)) as client:
            return (await client.call_tool("list_namespaces", {"limit": 1000}),
                    await client.call_tool("list_namespaces", {"prefix": ["files"]}),
                    await client.call_tool("list_namespaces", {"prefix": ["approvals", "*"]}))

    listed, files, approvals = asyncio.run(script(Principal("acme", key_id="agent")))
    names = json.loads(listed.content[0].text)["namespaces"]
    assert ["memories", "user", "u"] in names and ["blocks", "files", "/blocks"] in names
    assert not any(ns[0] in GOVERNED or ns[0] == "_remem" for ns in names), names
    for refused, route in ((files, ROOTS["files"].route), (approvals, ROOTS["approvals"].route)):
        assert refused.is_error
        text = refused.content[0].text
        assert "ReservedNamespaceError" in text and route in text and "admin" in text
    listed, files, _ = asyncio.run(script(Principal("acme", key_id="ops", admin=True)))
    assert ["files", "default", "files", "/secrets"] in json.loads(files.content[0].text)[
        "namespaces"]
    assert any(ns[0] == "approvals" for ns in json.loads(listed.content[0].text)["namespaces"])


def test_the_cli_refuses_every_family_root_of_a_server_database(sqlite_world: World,
                                                                tmp_path: Path) -> None:
    world = sqlite_world
    attacks = _attacks(world)
    before = _snapshot(world)

    def store(*args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(cli, ["store", "--db", world.db, "--embedder", "fake",
                                        *args], input=input, catch_exceptions=False)

    for what, method, namespace, key, value in attacks:
        where = json.dumps(["tenants", "acme", *namespace])
        result = (store("put", where, key, json.dumps(value)) if method == "PUT"
                  else store("delete", where, key))
        assert result.exit_code == 1, (what, result.stdout, result.stderr)
        assert result.stderr.startswith("error: ") and "of tenant 'acme'" in result.stderr
        assert ROOTS[namespace[0]].command in result.stderr, (what, result.stderr)
    lines = "".join(json.dumps({"namespace": ["tenants", "acme", *ns], "key": key,
                                "value": value}) + "\n"
                    for _, method, ns, key, value in attacks if method == "PUT")
    imported = store("import", "-", input=lines)
    assert imported.exit_code == 1 and "--restore" in imported.stderr
    for bare in (["tenants", "acme"], ["_remem_server", "api_keys"]):
        assert store("put", json.dumps(bare), "k", "{}").exit_code == 1
    assert _snapshot(world) == before
    # what the CLI still does: read everything, and restore a whole export as it was
    secret = store("--json", "get", json.dumps(["tenants", "acme", "files", "default", "files",
                                                "/secrets"]), "key.txt")
    assert json.loads(secret.stdout)["value"]["content"] == SECRET
    assert ["tenants", "acme", "_remem", "heads"] in json.loads(
        store("--json", "namespaces", "--all", "--limit", "1000").stdout)
    assert not any(ns[2:3] == ["_remem"] for ns in json.loads(
        store("--json", "namespaces", "--limit", "1000").stdout))
    backup = tmp_path / "backup.jsonl"
    assert store("export", "tenants.acme", "-o", str(backup)).exit_code == 0
    copy = str(tmp_path / "copy.db")
    restored = CliRunner().invoke(cli, ["store", "--db", copy, "--embedder", "fake", "--json",
                                        "import", "--restore", str(backup)])
    assert restored.exit_code == 0, restored.stderr
    assert json.loads(restored.stdout)["imported"] == len(backup.read_text().splitlines()) > 10


def test_the_guard_holds_on_postgresql(pg_database: str) -> None:
    for world in _world(pg_database):
        _http_matrix(world)
        _reads(world)
        _family_apis_still_work(world)


def test_a_keyless_server_guards_the_raw_store_too(tmp_path: Path) -> None:
    """Without API keys (loopback only) the local tenant is no admin: the policy's files
    stay behind ``/v1/files``, and no family root is written raw."""
    app = create_app(ServerConfig(db=str(tmp_path / "keyless.db"), auth=False, mcp=False))
    state: ServerState = app.state.remem
    set_file_policy(state, Policy(rules(POLICY), "allow"))
    approvals_for(state.store_for(Principal("local"))).files.write("/secrets/key.txt", SECRET)
    with TestClient(app) as http:
        secret = {"namespace": ["files", "default", "files", "/secrets"], "key": "key.txt"}
        for response in (http.get("/v1/store/items", params=secret),
                         http.put("/v1/store/items", json={**secret, "value": {"x": 1}}),
                         http.put("/v1/store/items", json={"namespace": ["_remem", "heads"],
                                                           "key": "k", "value": {"n": 1}})):
            assert response.status_code == 403, response.text
            assert response.json()["error"] == "reserved_namespace"
        found = _ok(http.post("/v1/store/search", json={"limit": 1000}))["items"]
        assert SECRET not in json.dumps(found)
        assert not any(i["namespace"][0] in GOVERNED for i in found)
        assert http.post("/v1/files/read", json={"path": "/secrets/key.txt"}).status_code == 403
    state.close()
