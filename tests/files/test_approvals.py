"""Approvals from the CLI and over HTTP: a write a rule says to ``ask`` about is parked, then a
human lists it, approves it (with edited arguments) or rejects it; it runs once or never, in
the caller's tenant only, and a pending approval outlives the process that parked it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.files import StoreFileBackend
from remem.files.permissions import (
    ApproveRequest,
    GuardedFiles,
    Interrupt,
    ListApprovalsRequest,
    Policy,
    RejectRequest,
    rules,
)
from remem.server import ServerConfig, create_app
from remem.server.routes_approvals import approvals_for
from remem.server.state import Principal, ServerState
from remem.store import open_store
from remem.store.base import BaseStore

POLICY = Policy(rules([{"effect": "ask", "paths": "/memories/**",
                        "operations": ["write", "edit", "delete"]}]))


def _park(store: BaseStore, path: str, content: str, tree: str = "default") -> Interrupt:
    """A write the policy parks, on the server's layout of ``store`` (a tenant's)."""
    approvals = approvals_for(store, tree)
    guarded = GuardedFiles(approvals.files, POLICY, approvals, scope="agent")
    parked = guarded.write(path, content)
    assert isinstance(parked, Interrupt)
    return parked


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[TestClient, ServerState, dict[str, dict[str, str]]]]:
    app = create_app(ServerConfig(db=str(tmp_path / "srv.db"), embedder=FakeEmbedder(),
                                  mcp=False, key_cache_seconds=0))
    state: ServerState = app.state.remem
    with TestClient(app) as client:
        keys = state.keys
        heads = {name: {"Authorization": f"Bearer {keys.create(tenant, read_only=ro)[0]}"}
                 for name, tenant, ro in (("a", "alpha", False), ("b", "beta", False),
                                          ("ro", "alpha", True))}
        yield client, state, heads
    state.close()


def test_http_list_approve_with_edits_then_resolve_once(server: Any) -> None:
    client, state, h = server
    parked = _park(state.store_for(Principal("alpha")), "/memories/a.md", "Alice likes tea")
    listed = client.get("/v1/approvals", headers=h["a"]).json()["approvals"]
    assert [(a["id"], a["operation"], a["path"], a["status"]) for a in listed] == [
        (parked.approval_id, "write", "/memories/a.md", "pending")]
    assert client.post("/v1/files/read", json={"path": "/memories/a.md"},
                       headers=h["a"]).status_code == 404  # nothing written yet
    r = client.post(f"/v1/approvals/{parked.approval_id}/approve", headers=h["a"],
                    json={"edited_arguments": {"content": "Alice likes green tea"}})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "done"
    assert r.json()["arguments"]["content"] == "Alice likes green tea"
    read = client.post("/v1/files/read", json={"path": "/memories/a.md"}, headers=h["a"])
    assert read.json()["content"] == "Alice likes green tea"
    again = client.post(f"/v1/approvals/{parked.approval_id}/approve", headers=h["a"])
    assert again.status_code == 409 and "already done" in again.json()["message"]
    history = client.get("/v1/files/history", params={"path": "/memories/a.md"},
                         headers=h["a"]).json()
    assert len(history) == 1  # ran exactly once
    assert client.get("/v1/approvals", headers=h["a"]).json() == {"approvals": []}
    done = client.get("/v1/approvals", params={"status": "done"}, headers=h["a"]).json()
    assert [a["id"] for a in done["approvals"]] == [parked.approval_id]


def test_http_reject_never_runs(server: Any) -> None:
    client, state, h = server
    parked = _park(state.store_for(Principal("alpha")), "/memories/b.md", "wrong")
    r = client.post(f"/v1/approvals/{parked.approval_id}/reject", headers=h["a"],
                    json={"reason": "not true"})
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    assert r.json()["reason"] == "not true"
    late = client.post(f"/v1/approvals/{parked.approval_id}/approve", headers=h["a"])
    assert late.status_code == 409 and "already rejected" in late.json()["message"]
    assert client.post("/v1/files/read", json={"path": "/memories/b.md"},
                       headers=h["a"]).status_code == 404


def test_http_bad_input_is_4xx_naming_the_field(server: Any) -> None:
    client, state, h = server
    parked = _park(state.store_for(Principal("alpha")), "/memories/c.md", "x")
    cases = [
        client.get("/v1/approvals", params={"status": "maybe"}, headers=h["a"]),
        client.post("/v1/approvals/not-an-id/approve", headers=h["a"]),
        client.post(f"/v1/approvals/{parked.approval_id}/approve", headers=h["a"],
                    json={"edited_arguments": "not an object"}),
        client.post(f"/v1/approvals/{parked.approval_id}/reject", headers=h["a"],
                    json={"reason": "x" * 3000}),
        client.post(f"/v1/approvals/{parked.approval_id}/approve", headers=h["a"],
                    json={"edits": {}}),
    ]
    for r, field in zip(cases, ["status", "approval_id", "edited_arguments", "reason",
                                "edits"], strict=True):
        assert r.status_code == 422, (field, r.text)
        assert field in r.text, (field, r.text)
    missing = client.post("/v1/approvals/apr_0000/approve", headers=h["a"])
    assert missing.status_code == 404
    # the parked approval is untouched by all of it
    assert client.get("/v1/approvals", headers=h["a"]).json()["approvals"][0]["status"] == (
        "pending")


def test_http_tenants_and_read_only_keys(server: Any) -> None:
    client, state, h = server
    parked = _park(state.store_for(Principal("alpha")), "/memories/d.md", "alpha secret")
    assert client.get("/v1/approvals", params={"status": "all"},
                      headers=h["b"]).json() == {"approvals": []}
    for action in ("approve", "reject"):
        theirs = client.post(f"/v1/approvals/{parked.approval_id}/{action}", headers=h["b"])
        nowhere = client.post(f"/v1/approvals/apr_ffff0000/{action}", headers=h["b"])
        assert theirs.status_code == nowhere.status_code == 404
        assert theirs.json()["message"].replace(parked.approval_id, "ID") == (
            nowhere.json()["message"].replace("apr_ffff0000", "ID"))
        ro = client.post(f"/v1/approvals/{parked.approval_id}/{action}", headers=h["ro"])
        assert ro.status_code == 403
    listed = client.get("/v1/approvals", headers=h["ro"]).json()["approvals"]
    assert [a["status"] for a in listed] == ["pending"]  # a reader may list


def _cli(*argv: str) -> Any:
    return CliRunner().invoke(cli, list(argv), prog_name="remem")


def test_cli_flow_across_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    with open_store(db) as store:  # an agent parks two writes, then its process ends
        # the default tree of remem files, remem ui and /v1/files
        approvals_store = StoreFileBackend(store, ("approvals", "default"))
        files = StoreFileBackend(store, ("files", "default"))
        from remem.files.permissions import Approvals

        approvals = Approvals(approvals_store, files)
        guarded = GuardedFiles(files, POLICY, approvals)
        first = guarded.write("/memories/x.md", "Bob is 30")
        second = guarded.write("/memories/y.md", "Bob hates tea")
        assert isinstance(first, Interrupt) and isinstance(second, Interrupt)
    listed = _cli("approvals", "ls", "--db", db)
    assert listed.exit_code == 0, listed.output
    assert [a["id"] for a in json.loads(listed.stdout)] == [first.approval_id,
                                                            second.approval_id]
    shown = _cli("approvals", "show", first.approval_id, "--db", db)
    assert json.loads(shown.stdout)["arguments"]["content"] == "Bob is 30"
    approved = _cli("approvals", "approve", first.approval_id, "--db", db,
                    "--edited-arguments", '{"content": "Bob is 31"}')
    assert approved.exit_code == 0, approved.output
    assert json.loads(approved.stdout)["status"] == "done"
    rejected = _cli("approvals", "reject", second.approval_id, "--reason", "false", "--db", db)
    assert json.loads(rejected.stdout)["status"] == "rejected"
    again = _cli("approvals", "approve", first.approval_id, "--db", db)
    assert again.exit_code != 0 and "already done" in again.output
    read = _cli("files", "read", "/memories/x.md", "--db", db)
    assert read.stdout.strip() == "Bob is 31"
    assert _cli("files", "read", "/memories/y.md", "--db", db).exit_code != 0
    everything = _cli("approvals", "ls", "--status", "all", "--db", db)
    assert [a["status"] for a in json.loads(everything.stdout)] == ["done", "rejected"]
    bad = _cli("approvals", "ls", "--status", "maybe", "--db", db)
    assert bad.exit_code == 2 and "--status" in bad.output
    bad = _cli("approvals", "approve", first.approval_id, "--edited-arguments", "[1]",
               "--db", db)
    assert bad.exit_code == 2 and "--edited-arguments" in bad.output


def test_cli_tenant_sees_what_the_server_keeps(server: Any, tmp_path: Path) -> None:
    client, state, h = server
    parked = _park(state.store_for(Principal("alpha")), "/memories/t.md", "via server")
    db = str(tmp_path / "srv.db")
    mine = _cli("approvals", "ls", "--db", db, "--tenant", "alpha")
    assert [a["id"] for a in json.loads(mine.stdout)] == [parked.approval_id]
    assert json.loads(_cli("approvals", "ls", "--db", db, "--tenant", "beta").stdout) == []
    assert json.loads(_cli("approvals", "ls", "--db", db).stdout) == []
    done = _cli("approvals", "approve", parked.approval_id, "--db", db, "--tenant", "alpha")
    assert json.loads(done.stdout)["status"] == "done"
    read = client.post("/v1/files/read", json={"path": "/memories/t.md"}, headers=h["a"])
    assert read.json()["content"] == "via server"


def test_request_values_validate() -> None:
    with pytest.raises(InvalidInputError, match="status"):
        ListApprovalsRequest.of(status="maybe")
    with pytest.raises(InvalidInputError, match="edited_arguments"):
        ApproveRequest.of(edited_arguments=[1])
    assert RejectRequest.of().reason == ""


def test_http_and_cli_recover_finish_a_claimed_approval_once(server: Any,
                                                             tmp_path: Path) -> None:
    client, state, h = server
    store = state.store_for(Principal("alpha"))
    first = _park(store, "/memories/r1.md", "one")
    second = _park(store, "/memories/r2.md", "two")
    approvals = approvals_for(store)
    approvals.claim(first.approval_id)  # a resolver that died after claiming
    approvals.claim(second.approval_id)
    assert client.post("/v1/approvals/recover", headers=h["a"]).json() == {
        "approvals": []}  # claimed just now: maybe still being resolved
    r = client.post("/v1/approvals/recover", headers=h["a"], json={"stale_after": 0})
    assert r.status_code == 200, r.text
    assert [(a["id"], a["status"]) for a in r.json()["approvals"]] == [
        (first.approval_id, "done"), (second.approval_id, "done")]
    assert client.post("/v1/approvals/recover", headers=h["ro"]).status_code == 403
    bad = client.post("/v1/approvals/recover", headers=h["a"], json={"stale_after": -1})
    assert bad.status_code == 422 and "stale_after" in bad.text
    third = _park(store, "/memories/r3.md", "three")
    approvals.claim(third.approval_id)
    db = str(tmp_path / "srv.db")
    out = _cli("approvals", "recover", "--stale-after", "0", "--db", db, "--tenant", "alpha")
    assert out.exit_code == 0, out.output
    assert [(a["id"], a["status"]) for a in json.loads(out.stdout)] == [
        (third.approval_id, "done")]
    read = client.post("/v1/files/read", json={"path": "/memories/r3.md"}, headers=h["a"])
    assert read.json()["content"] == "three"
