"""The files and core memory blocks pages: listing, reading with history diffs, the file
permission policy (denied files hidden, reads that would ask a human refused, nothing
parked), blocks with how full they are, another tenant's key sees none of it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from remem.blocks.store import Blocks
from remem.files.permissions import Policy, Rule
from remem.files.store import StoreFileBackend
from remem.server.routes_files import set_file_policy
from remem.server.state import Principal
from tests.ui_support import Server, server


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server() as running:
        store = running.state.store_for(Principal("acme"))
        files = StoreFileBackend(store, ("files", "default"))
        files.write("/notes/AGENTS.md", "line one\n<script>alert(1)</script>\n")
        files.edit("/notes/AGENTS.md", "line one", "line 1")
        files.write("/private/keys.md", "do not show 4711")
        files.write("/guarded/plan.md", "ask first")
        blocks = Blocks(StoreFileBackend(store, ("blocks",)))
        blocks.create("persona", label="persona", value="helpful <img src=x onerror=alert(1)>",
                      limit=100)
        blocks.update("persona", value="very helpful and brief")
        set_file_policy(running.state, Policy((
            Rule("deny", "/private/**", frozenset({"read"})),
            Rule("ask", "/guarded/**", frozenset({"read"})))))
        yield running


def test_files_list_read_and_history_escaped(srv: Server) -> None:
    browser = srv.logged_in("acme")
    root = browser.get("/ui/files")
    assert root.status_code == 200
    assert set(re.findall(r'class="file-link" href="[^"]+">([^<]+)</a>', root.text)) == \
        {"/notes/", "/private/", "/guarded/"}
    page = browser.get("/ui/files", params={"path": "/notes/AGENTS.md"})
    assert page.status_code == 200
    assert '<pre id="file-content" class="pre">line 1\n&lt;script&gt;alert(1)' in page.text
    assert "<del>one</del><ins>1</ins>" in page.text and "<script>alert" not in page.text


def test_file_policy_hides_denied_files_and_never_parks_an_approval(srv: Server) -> None:
    browser = srv.logged_in("acme")
    store = srv.state.store_for(Principal("acme"))
    before = [(i.namespace, i.key, i.updated_at) for i in store.iter_items(())]
    listing = browser.get("/ui/files", params={"path": "/private"})
    assert "keys.md" not in listing.text
    denied = browser.get("/ui/files", params={"path": "/private/keys.md"})
    assert denied.status_code == 403 and "4711" not in denied.text
    asked = browser.get("/ui/files", params={"path": "/guarded/plan.md"})
    assert asked.status_code == 403 and "ask first" not in asked.text
    # looking wrote nothing: no approval was parked for a human
    assert [(i.namespace, i.key, i.updated_at) for i in store.iter_items(())] == before


def test_blocks_list_and_history(srv: Server) -> None:
    browser = srv.logged_in("acme")
    listing = browser.get("/ui/blocks")
    assert listing.status_code == 200
    assert 'data-test="block" data-id="persona"' in listing.text
    assert 'class="fill-bar" data-width="22"' in listing.text  # 22 of 100 characters
    page = browser.get("/ui/blocks/persona")
    assert '<blockquote id="block-value">very helpful and brief</blockquote>' in page.text
    # the first value, and the word diff of the change
    assert "helpful &lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "<del>&lt;img</del><ins>and</ins>" in page.text
    assert re.search(r"<[^>]*\sonerror=", page.text) is None
    assert browser.get("/ui/blocks/nope").status_code == 404


def test_another_tenant_sees_no_files_or_blocks(srv: Server) -> None:
    browser = srv.logged_in("zeta")
    assert 'id="empty"' in browser.get("/ui/files").text
    assert browser.get("/ui/files", params={"path": "/notes/AGENTS.md"}).status_code in (
        200, 404)
    assert "line 1" not in browser.get("/ui/files",
                                       params={"path": "/notes/AGENTS.md"}).text
    assert 'id="empty"' in browser.get("/ui/blocks").text
    assert browser.get("/ui/blocks/persona").status_code == 404
