"""Approving with edits (issue 32, item 9): ``edited_arguments`` are checked against what the
parked operation takes before the approval is claimed (an unknown key is refused naming it,
the path cannot change, a value of the wrong type names its field), and an etag that is not
one, or that the file never had, is refused as malformed or unknown instead of failing later
as "changed since the approval". A refused approve leaves the approval pending."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.errors import ApprovalEditError
from remem.files import StoreFileBackend
from remem.files.approvals import Approvals
from remem.files.local import LocalFileBackend
from remem.files.permissions import GuardedFiles, Interrupt, Policy, rules
from remem.server import ServerConfig, create_app
from remem.server.routes_approvals import approvals_for
from remem.server.state import Principal
from remem.store import open_store

ASK = Policy(rules([{"effect": "ask", "paths": "/notes/**"}]))


@pytest.fixture
def approvals() -> Iterator[Approvals]:
    store = open_store(":memory:")
    yield Approvals(StoreFileBackend(store, ("approvals", "default")),
                    StoreFileBackend(store, ("files", "default")))
    store.close()


def _guarded(approvals: Approvals) -> GuardedFiles:
    return GuardedFiles(approvals.files, ASK, approvals, scope="agent")


def _parked(result: object) -> str:
    assert isinstance(result, Interrupt)
    return result.approval_id


def test_unknown_keys_are_refused_naming_them(approvals: Approvals) -> None:
    parked = _parked(_guarded(approvals).write("/notes/a.md", "draft"))
    with pytest.raises(ApprovalEditError, match=r"colour, size.*takes content, etag"):
        approvals.approve(parked, arguments={"content": "final", "colour": "red", "size": 1})
    assert approvals.get(parked).status == "pending"
    done = approvals.approve(parked, arguments={"content": "final"})
    assert done.status == "done" and approvals.files.read("/notes/a.md").content == "final"


def test_the_path_cannot_be_edited(approvals: Approvals) -> None:
    parked = _parked(_guarded(approvals).write("/notes/a.md", "draft"))
    with pytest.raises(ApprovalEditError, match=r"cannot change the path.*'/notes/b.md'"):
        approvals.approve(parked, arguments={"path": "/notes/b.md"})
    assert approvals.files.stat("/notes/b.md") is None
    assert approvals.get(parked).status == "pending"
    # naming the same path is no change
    assert approvals.approve(parked, arguments={"path": "/notes/a.md"}).status == "done"


def test_values_of_the_wrong_type_name_their_field(approvals: Approvals) -> None:
    approvals.files.write("/notes/a.md", "one two")
    parked = _parked(_guarded(approvals).edit("/notes/a.md", "one", "1"))
    with pytest.raises(ApprovalEditError, match=r"edited_arguments\.replace_all"):
        approvals.approve(parked, arguments={"replace_all": "yes"})
    with pytest.raises(ApprovalEditError, match=r"content.*takes old, new, replace_all, etag"):
        approvals.approve(parked, arguments={"content": "x"})
    assert approvals.approve(parked, arguments={"new": "uno"}).status == "done"
    assert approvals.files.read("/notes/a.md").content == "uno two"


def test_a_malformed_etag_is_refused_as_malformed(approvals: Approvals) -> None:
    approvals.files.write("/notes/a.md", "v1")
    parked = _parked(_guarded(approvals).write("/notes/a.md", "v2", etag="not-an-etag"))
    with pytest.raises(ApprovalEditError, match=r"malformed.*20 hexadecimal digits"):
        approvals.approve(parked)
    assert approvals.get(parked).status == "pending"
    with pytest.raises(ApprovalEditError, match="malformed"):
        approvals.approve(parked, arguments={"etag": "XYZ"})
    done = approvals.approve(parked, arguments={"etag": None})
    assert done.status == "done" and approvals.files.read("/notes/a.md").content == "v2"


def test_an_etag_the_file_never_had_is_refused_as_unknown(approvals: Approvals) -> None:
    first = approvals.files.write("/notes/a.md", "v1")
    approvals.files.write("/notes/a.md", "v2")
    current = approvals.files.stat("/notes/a.md")
    assert current is not None and first.etag is not None
    parked = _parked(_guarded(approvals).write("/notes/a.md", "v3", etag="0" * 20))
    with pytest.raises(ApprovalEditError, match=f"unknown.*current etag is {current.etag}"):
        approvals.approve(parked)
    # an etag the file did have (an earlier version) is no bogus etag: the change is not
    # made because the file changed since, as before
    stale = _parked(_guarded(approvals).write("/notes/a.md", "v3", etag=first.etag))
    outcome = approvals.approve(stale)
    assert outcome.status == "failed" and "changed since the approval" in outcome.reason
    assert approvals.files.read("/notes/a.md").content == "v2"


def test_without_history_only_the_current_etag_is_known(tmp_path: Path) -> None:
    store = open_store(":memory:")
    files = LocalFileBackend(tmp_path / "disk")
    files.write("/notes/a.md", "v1")
    approvals = Approvals(StoreFileBackend(store, ("approvals", "default")), files)
    parked = _parked(GuardedFiles(files, ASK, approvals).write("/notes/a.md", "v2",
                                                              etag="0" * 20))
    outcome = approvals.approve(parked)  # cannot tell it was never the file's: fails later
    assert outcome.status == "failed" and "changed since" in outcome.reason
    store.close()


def test_over_http_a_refused_edit_is_a_422_naming_the_key(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=str(tmp_path / "srv.db"), embedder=FakeEmbedder(),
                                  mcp=False))
    state = app.state.remem
    key = state.keys.create("acme")[0]
    approvals = approvals_for(state.store_for(Principal("acme")), "default")
    parked = _parked(GuardedFiles(approvals.files, ASK, approvals).write("/notes/a.md", "x"))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as http:
        refused = http.post(f"/v1/approvals/{parked}/approve",
                            json={"edited_arguments": {"contents": "typo"}})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"] == "invalid_input"
        assert "contents" in refused.json()["message"]
        moved = http.post(f"/v1/approvals/{parked}/approve",
                          json={"edited_arguments": {"path": "/notes/elsewhere.md"}})
        assert moved.status_code == 422 and "path" in moved.json()["message"]
        ok = http.post(f"/v1/approvals/{parked}/approve",
                       json={"edited_arguments": {"content": "fixed"}})
        assert ok.status_code == 200 and ok.json()["status"] == "done"
    state.close()
