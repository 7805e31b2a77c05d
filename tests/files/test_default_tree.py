"""One file tree by default everywhere: what ``remem files write`` writes is what the inspector
(``remem ui``), ``/v1/files`` of a keyless server and the approvals see (``("files",
"default")``); files an earlier ``remem files`` kept under ``("files",)`` are moved there,
with their history, and the inspector says so until they are."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

from remem.cli import cli
from remem.cli.files import move_legacy_files
from remem.embed import FakeEmbedder
from remem.files.permissions import Policy, Rule
from remem.files.store import StoreFileBackend
from remem.server import ServerConfig, create_app
from remem.server.routes_files import set_file_policy
from remem.store import open_store
from remem.ui.app import build_local_app


def _run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_a_file_the_cli_writes_is_in_the_inspector_the_api_and_the_approvals(
        tmp_path: Path) -> None:
    db = str(tmp_path / "files.db")
    written = _run("files", "write", "/notes/plan.md", "tea at five", "--db", db)
    assert written.exit_code == 0, written.output
    with open_store(db) as store:  # where it went: the default tree
        assert StoreFileBackend(store, ("files", "default")).read("/notes/plan.md").content \
            == "tea at five"
        assert StoreFileBackend(store, ("files",)).ls("/") == []
    # the inspector of `remem ui` on the same file
    app, close = build_local_app(db, FakeEmbedder())
    try:
        page = TestClient(app, base_url="http://127.0.0.1").get(
            "/ui/files", params={"path": "/notes/plan.md"})
        assert page.status_code == 200 and "tea at five" in page.text
    finally:
        close()
    # a keyless server: /v1/files reads it, and an `ask` rule parks a change of it where
    # `remem approvals` (no options) finds it and applies it to the same file
    server = create_app(ServerConfig(db=db, auth=False, mcp=False, embedder=FakeEmbedder()))
    set_file_policy(server.state.remem, Policy((Rule("ask", "/notes/**",
                                                     frozenset({"write"})),)))
    try:
        with TestClient(server, base_url="http://127.0.0.1") as client:
            read = client.post("/v1/files/read", json={"path": "/notes/plan.md"})
            assert read.status_code == 200 and read.json()["content"] == "tea at five"
            parked = client.post("/v1/files/write", json={"path": "/notes/plan.md",
                                                          "content": "tea at six"})
            assert parked.status_code == 202, parked.text
    finally:
        server.state.remem.close()
    listed = json.loads(_run("approvals", "ls", "--db", db).stdout)
    assert [a["id"] for a in listed] == [parked.json()["approval_id"]]
    approved = _run("approvals", "approve", listed[0]["id"], "--db", db)
    assert json.loads(approved.stdout)["status"] == "done", approved.output
    assert _run("files", "read", "/notes/plan.md", "--db", db).stdout == "tea at six"


def test_files_at_the_old_namespace_move_to_the_default_tree_with_their_history(
        tmp_path: Path) -> None:
    db = str(tmp_path / "old.db")
    with open_store(db) as store:  # what `remem files` wrote before trees
        old = StoreFileBackend(store, ("files",))
        old.write("/a.md", "first")
        old.edit("/a.md", "first", "second")
        old.write("/dir/b.md", "bee")
        old.write("/clash.md", "old clash")
        StoreFileBackend(store, ("files", "default")).write("/clash.md", "new clash")
    # the inspector says where they are until they move
    app, close = build_local_app(db, FakeEmbedder())
    try:
        browser = TestClient(app, base_url="http://127.0.0.1")
        assert 'id="files-legacy"' not in browser.get("/ui/files").text  # the tree has one
    finally:
        close()
    listed = _run("files", "ls", "/", "--json", "--db", db)
    assert listed.exit_code == 0, listed.output
    assert "moved 2 file(s)" in listed.stderr
    assert sorted(e["path"] for e in json.loads(listed.stdout)) == ["/a.md", "/clash.md",
                                                                    "/dir"]
    history = json.loads(_run("files", "history", "/a.md", "--json", "--db", db).stdout)
    assert [e["op"] for e in history] == ["write", "edit"]
    # a file the tree already had is kept, and the old one stays where it was
    assert _run("files", "read", "/clash.md", "--db", db).stdout == "new clash"
    with open_store(db) as store:
        assert [e.path for e in StoreFileBackend(store, ("files",)).ls("/")] == ["/clash.md"]
        assert move_legacy_files(store) == 0  # nothing more to move
    again = _run("files", "ls", "/", "--db", db)
    assert "moved" not in again.stderr


def test_the_inspector_points_at_files_not_yet_moved(tmp_path: Path) -> None:
    db = str(tmp_path / "hint.db")
    with open_store(db) as store:
        StoreFileBackend(store, ("files",)).write("/a.md", "old")
    app, close = build_local_app(db, FakeEmbedder())
    try:
        page = TestClient(app, base_url="http://127.0.0.1").get("/ui/files")
        assert 'id="empty"' in page.text and 'id="files-legacy"' in page.text
    finally:
        close()
    _run("files", "ls", "--db", db)
    app, close = build_local_app(db, FakeEmbedder())
    try:
        page = TestClient(app, base_url="http://127.0.0.1").get("/ui/files")
        assert "/a.md" in page.text and 'id="files-legacy"' not in page.text
    finally:
        close()


def test_tree_namespace_and_tenant_options(tmp_path: Path) -> None:
    db = str(tmp_path / "opts.db")
    assert _run("files", "write", "/x.md", "in tree t2", "--tree", "t2", "--db", db).exit_code == 0
    assert _run("files", "write", "/x.md", "acme's", "--tenant", "acme", "--db", db
                ).exit_code == 0
    assert _run("files", "write", "/x.md", "elsewhere", "-n", "other", "--db", db
                ).exit_code == 0
    with open_store(db) as store:
        def content(namespace: tuple[str, ...]) -> str | None:
            return StoreFileBackend(store, namespace).read("/x.md").content
        assert content(("files", "t2")) == "in tree t2"
        assert content(("tenants", "acme", "files", "default")) == "acme's"
        assert content(("other",)) == "elsewhere"
    bad = _run("files", "ls", "--tenant", "not a name", "--db", db)
    assert bad.exit_code == 2 and "--tenant" in bad.output
