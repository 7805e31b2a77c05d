"""The approvals pages: operations parked by an ``ask`` rule wait here; approving runs one
once, rejecting keeps it from running; the key that asked cannot approve; CSRF, writing
keys and the tenant are checked."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from remem.files.permissions import Policy, Rule
from remem.files.store import StoreFileBackend
from remem.server.routes_files import guarded_files, set_file_policy
from remem.server.state import Principal
from tests.ui_support import Server, csrf_of, login, server


@pytest.fixture
def srv() -> Iterator[Server]:
    with server() as running:
        set_file_policy(running.state, Policy((Rule("ask", "/plans/**",
                                                    frozenset({"write"})),)))
        yield running


def _park(srv: Server, path: str, content: str, key_id: str | None = None) -> str:
    guarded = guarded_files(srv.state, Principal("acme", key_id=key_id), "default",
                            actor="agent")
    parked = guarded.write(path, content)
    return str(parked.approval_id)


def test_waiting_approvals_are_listed_escaped(srv: Server) -> None:
    approval = _park(srv, "/plans/a.md", "<script>alert(1)</script>")
    browser = srv.logged_in("acme")
    listing = browser.get("/ui/approvals")
    assert listing.status_code == 200
    assert re.findall(r'class="approval-link" href="[^"]+">([^<]+)</a>', listing.text) == \
        [approval]
    page = browser.get(f"/ui/approvals/{approval}")
    assert 'id="approve-form"' in page.text and 'id="reject-form"' in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<script>alert" not in page.text


def test_approve_runs_it_once_and_not_for_the_key_that_asked(srv: Server) -> None:
    token = srv.key("acme")
    agent_key_id = token[3:15]
    approval = _park(srv, "/plans/b.md", "the plan", key_id=agent_key_id)
    files = StoreFileBackend(srv.state.store_for(Principal("acme")), ("files", "default"))
    asker = srv.browser()
    login(asker, token)
    page = asker.get(f"/ui/approvals/{approval}")
    refused = asker.post(f"/ui/approvals/{approval}/approve",
                         data={"csrf_token": csrf_of(page.text)})
    assert refused.status_code == 403 and files.stat("/plans/b.md") is None
    human = srv.logged_in("acme")
    page = human.get(f"/ui/approvals/{approval}")
    assert human.post(f"/ui/approvals/{approval}/approve", data={}).status_code == 403
    done = human.post(f"/ui/approvals/{approval}/approve",
                      data={"csrf_token": csrf_of(page.text)}, follow_redirects=False)
    assert done.status_code == 303
    assert files.read("/plans/b.md").content == "the plan"
    after = human.get(done.headers["location"])
    assert 'id="approval-status" class="status-done">done' in after.text
    assert 'id="approve-form"' not in after.text
    again = human.post(f"/ui/approvals/{approval}/approve",
                       data={"csrf_token": csrf_of(page.text)})
    assert again.status_code == 409  # an approval resolves once


def test_reject_and_who_may_resolve(srv: Server) -> None:
    approval = _park(srv, "/plans/c.md", "never")
    reader = srv.logged_in("acme", read_only=True)
    page = reader.get(f"/ui/approvals/{approval}")
    assert 'id="approve-form"' not in page.text
    assert reader.post(f"/ui/approvals/{approval}/reject",
                       data={"csrf_token": csrf_of(page.text)}).status_code == 403
    foreign = srv.logged_in("zeta")
    foreign_page = foreign.get("/ui/approvals")
    assert 'id="empty"' in foreign_page.text
    assert foreign.get(f"/ui/approvals/{approval}").status_code == 404
    assert foreign.post(f"/ui/approvals/{approval}/reject",
                        data={"csrf_token": csrf_of(foreign_page.text)}).status_code == 404
    human = srv.logged_in("acme")
    page = human.get(f"/ui/approvals/{approval}")
    done = human.post(f"/ui/approvals/{approval}/reject",
                      data={"csrf_token": csrf_of(page.text), "reason": "not <now>"})
    assert done.status_code == 200 and "rejected" in done.text
    assert "not &lt;now&gt;" in done.text
    files = StoreFileBackend(srv.state.store_for(Principal("acme")), ("files", "default"))
    assert files.stat("/plans/c.md") is None
