"""The inspector on PostgreSQL (the embedded server of tests/pg_fixtures.py): the same
pages answer through the same facade, tenants confined, undo reverts."""

from __future__ import annotations

import re

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from tests.ui_support import Server, csrf_of


def test_pages_search_history_undo_and_tenancy_on_postgres(pg_database: str) -> None:
    app = create_app(ServerConfig(db=pg_database, embedder=FakeEmbedder(), mcp=False,
                                  key_cache_seconds=0))
    srv = Server(app, app.state.remem)
    try:
        memory = srv.memory("acme")
        memory_id = memory.add("Ada drinks oolong tea", user_id="ada",
                               infer=False).changes[0].memory.id
        memory.update(memory_id, "Ada drinks green tea")
        srv.threads("acme").create("t1", messages=["hello", "tea please"])
        browser = srv.logged_in("acme")
        found = browser.get("/ui/memories", params={"q": "green tea"})
        assert found.status_code == 200 and "Ada drinks green tea" in found.text
        assert set(re.findall(r'data-signal="(\w+)"', found.text)) >= {"keyword", "relevance"}
        page = browser.get(f"/ui/memories/{memory_id}")
        assert "<del>oolong</del><ins>green</ins>" in page.text
        event = re.findall(r'data-event="([^"]+)" data-op="update"', page.text)[0]
        confirm = browser.get(f"/ui/memories/{memory_id}/undo/{event}")
        browser.post(f"/ui/memories/{memory_id}/undo/{event}",
                     data={"csrf_token": csrf_of(confirm.text)})
        assert memory.get(memory_id).text == "Ada drinks oolong tea"
        for url in ("/ui/namespaces", "/ui/threads", "/ui/threads/t1", "/ui/jobs",
                    "/ui/blocks", "/ui/files", "/ui/prompts", "/ui/approvals",
                    "/ui/dashboard"):
            assert browser.get(url).status_code == 200, url
        intruder = srv.logged_in("zeta")
        assert intruder.get(f"/ui/memories/{memory_id}").status_code == 404
        assert intruder.get("/ui/threads/t1").status_code == 404
        assert "Ada drinks" not in intruder.get("/ui/memories", params={"q": "tea"}).text
    finally:
        app.state.remem.close()
