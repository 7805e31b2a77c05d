"""The prompts pages: the tenant's prompts, one prompt's versions with word diffs (a
rollback shows which version it restored), escaped, another tenant's key sees none."""

from __future__ import annotations

import re

from remem.procedural.prompts import PromptRegistry
from remem.server.state import Principal
from tests.ui_support import server


def test_prompt_versions_with_diffs_escaped_and_confined() -> None:
    with server() as srv:
        prompts = PromptRegistry(srv.state.store_for(Principal("acme")))
        prompts.create("greeter", "Greet {user} warmly.")
        prompts.update("greeter", "Greet {user} warmly, by name. <script>x()</script>",
                       reason="feedback <b>")
        prompts.rollback("greeter", 1)
        browser = srv.logged_in("acme")
        listing = browser.get("/ui/prompts")
        assert listing.status_code == 200
        assert re.findall(r'data-test="prompt" data-name="([^"]+)"', listing.text) == \
            ["greeter"]
        page = browser.get("/ui/prompts/greeter")
        assert page.status_code == 200
        assert '<blockquote id="prompt-text">Greet {user} warmly.</blockquote>' in page.text
        versions = re.findall(r'data-test="version" data-version="(\d+)" '
                              r'data-kind="(\w+)"', page.text)
        assert [v for v, _ in versions] == ["3", "2", "1"]
        assert "to v1" in page.text and "feedback &lt;b&gt;" in page.text
        assert "<del>warmly.</del><ins>warmly, by name. &lt;script&gt;x()&lt;/script&gt;</ins>" \
            in page.text
        assert "<script>x()" not in page.text
        foreign = srv.logged_in("zeta")
        assert 'id="empty"' in foreign.get("/ui/prompts").text
        assert foreign.get("/ui/prompts/greeter").status_code == 404
