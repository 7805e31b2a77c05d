"""The server's file permission policy over HTTP and MCP: a client cannot bypass a ``deny``
or an ``ask`` (searches leave denied files out, ``ask`` parks an approval that
``GET /v1/approvals`` lists and only another key may approve), and the policy comes from the
``REMEM_FILE_POLICY`` file ``remem serve`` is started with."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from remem.embed import FakeEmbedder
from remem.errors import ConfigError
from remem.files.permissions import Policy, load_policy, rules
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.routes_files import FILE_POLICY_ENV, file_policy, set_file_policy
from remem.server.state import Principal, ServerState

SPEC = {"default": "allow", "rules": [
    {"effect": "deny", "paths": "/secrets/**"},
    {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit", "delete"]},
    {"effect": "deny", "paths": "/readonly/**", "operations": ["write", "edit", "delete"],
     "scope": "acme"},
]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient, TestClient, ServerState]]:
    app = create_app(ServerConfig(db=str(tmp_path / "p.db"), embedder=FakeEmbedder(),
                                  mcp=False, key_cache_seconds=0))
    state: ServerState = app.state.remem
    set_file_policy(state, Policy(rules(SPEC["rules"]), "allow"))
    agent, human, other = (state.keys.create(t)[0] for t in ("acme", "acme", "other"))
    with TestClient(app, headers={"Authorization": f"Bearer {agent}"}) as a, \
            TestClient(app, headers={"Authorization": f"Bearer {human}"}) as h, \
            TestClient(app, headers={"Authorization": f"Bearer {other}"}) as o:
        yield a, h, o, state
    state.close()


def test_deny_is_403_and_searches_leave_denied_files_out(served: Any) -> None:
    agent, _, _, state = served
    # the application seeds a secret behind the policy's back, straight into the store
    from remem.server.routes_approvals import approvals_for

    approvals_for(state.store_for(Principal("acme"))).files.write("/secrets/key.txt",
                                                                  "password hunter2")
    assert agent.post("/v1/files/write", json={"path": "/notes/a.md",
                                               "content": "hunter2 is not here"}).status_code == 200
    for path, body in (("/v1/files/read", {"path": "/secrets/key.txt"}),
                       ("/v1/files/write", {"path": "/secrets/new.txt", "content": "x"}),
                       ("/v1/files/ls", {"path": "/secrets"})):
        r = agent.post(path, json=body)
        assert r.status_code == 403, (path, r.text)
        assert r.json()["error"] == "permission_denied" and "denied" in r.json()["message"]
    hist = agent.get("/v1/files/history", params={"path": "/secrets/key.txt"})
    assert hist.status_code == 403
    grep = agent.post("/v1/files/grep", json={"pattern": "hunter2", "path": "/"}).json()
    assert [m["path"] for m in grep] == ["/notes/a.md"]  # the secret's line is not shown
    glob = agent.post("/v1/files/glob", json={"pattern": "**"}).json()
    assert [i["path"] for i in glob] == ["/notes/a.md"]
    listed = agent.post("/v1/files/ls", json={"path": "/"}).json()
    assert "/secrets/key.txt" not in json.dumps(listed)
    # the scope of a rule is the caller's tenant: acme may not write /readonly, other may
    assert agent.post("/v1/files/write", json={"path": "/readonly/x", "content": "1"}
                      ).status_code == 403


def test_ask_parks_an_approval_only_another_key_may_approve(served: Any) -> None:
    agent, human, other, _ = served
    assert other.post("/v1/files/write", json={"path": "/readonly/x", "content": "1"}
                      ).status_code == 200
    asked = agent.post("/v1/files/write", json={"path": "/memories/alice.md",
                                                "content": "Alice likes tea"})
    assert asked.status_code == 202, asked.text
    parked = asked.json()
    assert parked["status"] == "needs_approval" and parked["path"] == "/memories/alice.md"
    assert agent.post("/v1/files/read", json={"path": "/memories/alice.md"}
                      ).status_code == 404  # nothing written
    listed = human.get("/v1/approvals").json()["approvals"]
    assert [a["id"] for a in listed] == [parked["approval_id"]]
    assert other.get("/v1/approvals").json()["approvals"] == []  # another tenant's
    self_approve = agent.post(f"/v1/approvals/{parked['approval_id']}/approve")
    assert self_approve.status_code == 403 and "another key" in self_approve.json()["message"]
    done = human.post(f"/v1/approvals/{parked['approval_id']}/approve",
                      json={"edited_arguments": {"content": "Alice likes green tea"}})
    assert done.status_code == 200 and done.json()["status"] == "done", done.text
    assert agent.post("/v1/files/read", json={"path": "/memories/alice.md"}
                      ).json()["content"] == "Alice likes green tea"
    # edits, deletes and undos of /memories ask too: none bypasses the rule
    for path, body in (("/v1/files/edit", {"path": "/memories/alice.md",
                                           "old_string": "green", "new_string": "black"}),
                       ("/v1/files/undo", {"path": "/memories/alice.md"})):
        r = agent.post(path, json=body)
        assert r.status_code == 202 and r.json()["status"] == "needs_approval", (path, r.text)
    assert agent.post("/v1/files/read", json={"path": "/memories/alice.md"}
                      ).json()["content"] == "Alice likes green tea"
    assert len(human.get("/v1/approvals").json()["approvals"]) == 2


def test_mcp_file_tools_obey_the_policy(served: Any) -> None:
    _, _, _, state = served
    who = Principal(tenant="acme", key_id="agent-key")

    async def script() -> dict[str, Any]:
        server = build_mcp(state, lambda ctx: who, files=True)
        async with Client(server) as client:
            return {
                "denied": await client.call_tool("read_file", {"path": "/secrets/k"}),
                "asked": await client.call_tool("write_file", {"path": "/memories/m.md",
                                                               "content": "x"}),
                "allowed": await client.call_tool("write_file", {"path": "/notes/n.md",
                                                                 "content": "y"}),
            }

    seen = asyncio.run(script())
    assert seen["denied"].is_error and "denied" in seen["denied"].content[0].text
    asked = json.loads(seen["asked"].content[0].text)["result"]
    assert asked["status"] == "needs_approval"
    assert not seen["allowed"].is_error
    from remem.server.routes_approvals import approvals_for

    approvals = approvals_for(state.store_for(who))
    [pending] = approvals.pending()
    assert pending.id == asked["approval_id"] and pending.requested_by == "agent-key"
    assert approvals.files.stat("/memories/m.md") is None


def test_policy_from_the_environment_and_bad_files(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "policy.json"
    good.write_text(json.dumps(SPEC))
    assert load_policy(good).decide("read", "/secrets/a") == "deny"
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    state = app.state.remem
    try:
        monkeypatch.setenv(FILE_POLICY_ENV, str(good))
        key = state.keys.create("acme")[0]
        with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
            assert client.post("/v1/files/read", json={"path": "/secrets/a"}
                               ).status_code == 403
            bad = tmp_path / "bad.json"
            for text, needle in (("{", "not valid JSON"),
                                 (json.dumps({"rules": [{"effect": "maybe"}]}), "effect"),
                                 (json.dumps({"rules": [{"effect": "deny", "ops": []}]}),
                                  "ops"),
                                 (json.dumps({"default": "yes"}), "default")):
                bad.write_text(text)
                with pytest.raises(ConfigError, match=needle) as raised:
                    load_policy(bad)
                assert "bad.json" in str(raised.value)
            monkeypatch.setenv(FILE_POLICY_ENV, str(tmp_path / "missing.json"))
            closed = client.post("/v1/files/read", json={"path": "/notes/a"})
            assert closed.status_code == 400 and FILE_POLICY_ENV in closed.text  # fails closed
            assert "missing.json" not in closed.text  # the server's paths stay in its log
            monkeypatch.delenv(FILE_POLICY_ENV)
            assert file_policy(state) == Policy()  # no policy: everything allowed
    finally:
        state.close()


def test_serve_refuses_a_file_policy_that_does_not_exist(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from remem.cli import cli

    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "x.db"),
                                      "--file-policy", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "--file-policy" in result.output and "does not exist" in result.output


AGENT_SPEC = {"default": "allow", "rules": [
    {"effect": "allow", "paths": "/memories/**", "operations": ["write", "edit"],
     "agent": "writer"},
    {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit"]},
    {"effect": "deny", "paths": "/payroll/**", "user": "bob"},
]}


def test_rules_naming_an_agent_or_user_match_the_request_over_http_and_mcp(
        tmp_path: Path) -> None:
    """``agent_id`` / ``user_id`` on a file route, and the ``X-Remem-Agent-Id`` /
    ``X-Remem-User-Id`` headers of an MCP connection, are who the rules see."""
    import contextlib

    import httpx
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from remem.testing.server import ThreadedServer

    app = create_app(ServerConfig(db=str(tmp_path / "a.db"), embedder=FakeEmbedder()),
                     mcp_tools={"files": True})
    state: ServerState = app.state.remem
    set_file_policy(state, Policy(rules(AGENT_SPEC["rules"])))
    key = state.keys.create("acme")[0]
    auth = {"Authorization": f"Bearer {key}"}
    body = {"path": "/memories/plan.md", "content": "Ship Friday"}

    async def mcp_calls(url: str, headers: dict[str, str]) -> list[Any]:
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={**auth, **headers}, timeout=60))
            client = await stack.enter_async_context(
                Client(streamable_http_client(url + "/mcp", http_client=http)))
            return [await client.call_tool("write_file", body),
                    await client.call_tool("read_file", {"path": "/payroll/2026.md"})]

    try:
        with ThreadedServer(app) as server, httpx.Client(base_url=server.url,
                                                         headers=auth) as http:
            as_writer = http.post("/v1/files/write", params={"agent_id": "writer"}, json=body)
            assert as_writer.status_code == 200, as_writer.text
            as_helper = http.post("/v1/files/write", params={"agent_id": "helper"}, json=body)
            assert as_helper.status_code == 202 and as_helper.json()["status"] == \
                "needs_approval"
            assert http.post("/v1/files/write", json=body).status_code == 202  # no agent
            denied = http.post("/v1/files/read", params={"user_id": "bob"},
                               json={"path": "/payroll/2026.md"})
            assert denied.status_code == 403 and '"user": "bob"' in denied.json()["message"]
            bad = http.post("/v1/files/ls", params={"agent_id": "a\nb"}, json={})
            assert bad.status_code == 422 and "agent_id" in bad.text
            twice = http.post("/v1/files/ls?agent_id=a&agent_id=b", json={})
            assert twice.status_code == 422
            listed = http.get("/v1/approvals").json()["approvals"]  # oldest first
            assert [a["scope"] for a in listed] == ["org acme, agent helper", "org acme"]

            writer = asyncio.run(mcp_calls(server.url, {"X-Remem-Agent-Id": "writer",
                                                        "X-Remem-User-Id": "bob"}))
            other = asyncio.run(mcp_calls(server.url, {"X-Remem-Agent-Id": "helper"}))
        assert not writer[0].is_error, writer[0].content[0].text
        assert json.loads(writer[0].content[0].text)["result"]["path"] == "/memories/plan.md"
        assert writer[1].is_error and "rule 2" in writer[1].content[0].text  # bob: denied
        assert json.loads(other[0].content[0].text)["result"]["status"] == "needs_approval"
        assert not other[1].is_error or "rule" not in other[1].content[0].text
    finally:
        state.close()


def test_remem_mcp_and_serve_refuse_a_bad_policy_file_at_start(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from remem.cli import cli

    bad = tmp_path / "policy.json"
    bad.write_text(json.dumps({"rules": [{"effect": "allow", "agent": ""}]}))
    for command in (["mcp", "--files"], ["serve"]):
        result = CliRunner().invoke(cli, [*command, "--db", str(tmp_path / "x.db"),
                                          "--file-policy", str(bad)])
        assert result.exit_code == 2, result.output
        for needle in ("--file-policy", "policy.json", "rule 0", "agent", "'writer'"):
            assert needle in result.output, (command, needle, result.output)
