"""``/v1/files`` and ``/v1/blocks`` over HTTP: tenant isolation, 4xx for bad input, etags."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[TestClient, TestClient]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    acme = app.state.remem.keys.create("acme")[0]
    other = app.state.remem.keys.create("other")[0]
    with TestClient(app, headers={"Authorization": f"Bearer {acme}"}) as a, \
            TestClient(app, headers={"Authorization": f"Bearer {other}"}) as b:
        yield a, b
    app.state.remem.close()


def test_file_round_trip_with_etags_and_history(clients: tuple[TestClient, TestClient]) -> None:
    acme, _ = clients
    written = acme.post("/v1/files/write", json={"path": "/n/a.md", "content": "one two"})
    assert written.status_code == 200, written.text
    etag = written.json()["etag"]
    edited = acme.post("/v1/files/edit", json={"path": "/n/a.md", "old_string": "two",
                                               "new_string": "three", "etag": etag})
    assert edited.status_code == 200
    stale = acme.post("/v1/files/write", json={"path": "/n/a.md", "content": "x",
                                               "etag": etag})
    assert stale.status_code == 409 and "changed since" in stale.text
    read = acme.post("/v1/files/read", json={"path": "/n/a.md"}).json()
    assert read["content"] == "one three"
    history = acme.get("/v1/files/history", params={"path": "/n/a.md"}).json()
    assert [e["op"] for e in history] == ["write", "edit"]
    assert history[0]["actor"] == "api:acme"
    assert acme.post("/v1/files/undo", json={"path": "/n/a.md"}).json()["etag"] == etag
    listed = acme.post("/v1/files/ls", json={"path": "/n"}).json()
    assert [e["path"] for e in listed] == ["/n/a.md"]


def test_tenants_and_trees_do_not_see_each_other(clients: tuple[TestClient, TestClient]
                                                 ) -> None:
    acme, other = clients
    acme.post("/v1/files/write", json={"path": "/secret.md", "content": "acme only"})
    assert other.post("/v1/files/read", json={"path": "/secret.md"}).status_code == 404
    assert acme.post("/v1/files/read", params={"tree": "t2"},
                     json={"path": "/secret.md"}).status_code == 404
    assert other.post("/v1/files/grep", json={"pattern": "acme"}).json() == []


@pytest.mark.parametrize(("route", "body", "status", "words"), [
    ("/v1/files/read", {"path": "/../etc/passwd"}, 422, "'..' segment"),
    ("/v1/files/write", {"path": "a\\b", "content": "x"}, 422, "backslash"),
    ("/v1/files/write", {"path": "/\u2215etc", "content": "x"}, 422, "looks like"),
    ("/v1/files/read", {"path": "/nope.md"}, 404, "no file at"),
    ("/v1/files/edit", {"path": "/nope.md", "old_string": "a", "new_string": "b"}, 404,
     "no file at"),
    ("/v1/files/read", {"path": 3}, 422, "path"),
    ("/v1/files/glob", {"pattern": "../*"}, 422, "'..'"),
])
def test_bad_input_is_4xx_with_the_rule(clients: tuple[TestClient, TestClient], route: str,
                                        body: dict[str, object], status: int,
                                        words: str) -> None:
    acme, _ = clients
    response = acme.post(route, json=body)
    assert response.status_code == status and words in response.text, response.text


def test_blocks_over_http(clients: tuple[TestClient, TestClient]) -> None:
    from remem.blocks import Blocks
    from remem.files import StoreFileBackend

    acme, _ = clients
    state = acme.app.state.remem  # type: ignore[attr-defined]
    principal = type("P", (), {"tenant": "acme"})()
    blocks = Blocks(StoreFileBackend(state.store_for(principal), ("blocks",)))
    blocks.create("h", label="human", limit=20)
    blocks.attach("agent-1", "h")
    ok = acme.post("/v1/blocks/append", params={"agent_id": "agent-1"},
                   json={"label": "human", "content": "likes tea"})
    assert ok.status_code == 200 and ok.json()["value"] == "likes tea"
    over = acme.post("/v1/blocks/append", params={"agent_id": "agent-1"},
                     json={"label": "human", "content": "x" * 30})
    assert over.status_code == 422 and "memory_rethink" in over.text
    rendered = acme.get("/v1/blocks/render", params={"agent_id": "agent-1"}).json()
    assert '<human chars="9/20">' in rendered["text"]
