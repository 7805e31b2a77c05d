"""Core memory blocks over HTTP: the application creates, attaches, shares, changes and
deletes blocks; agents edit them by label; a read-only block is a 403 for the agent's edits
and the Python API sees exactly what HTTP wrote (same layout)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.routes_blocks import blocks_for
from remem.server.state import Principal, ServerState


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TestClient, TestClient, TestClient, ServerState]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state: ServerState = app.state.remem
    acme, other = state.keys.create("acme")[0], state.keys.create("other")[0]
    reader = state.keys.create("acme", read_only=True)[0]
    with TestClient(app, headers={"Authorization": f"Bearer {acme}"}) as a, \
            TestClient(app, headers={"Authorization": f"Bearer {other}"}) as o, \
            TestClient(app, headers={"Authorization": f"Bearer {reader}"}) as r:
        yield a, o, r, state
    state.close()


def test_create_attach_share_edit_and_render(served: Any) -> None:
    acme, other, reader, state = served
    made = acme.post("/v1/blocks", json={"id": "human-alice", "label": "human",
                                         "value": "Name: Alice", "limit": 100,
                                         "description": "What I know about Alice"})
    assert made.status_code == 201, made.text
    assert made.json()["label"] == "human" and made.json()["chars"] == 11
    assert acme.post("/v1/blocks", json={"id": "human-alice", "label": "human"}
                     ).status_code == 409
    for agent in ("travel", "support"):  # one block, two agents: shared
        r = acme.put(f"/v1/agents/{agent}/blocks/human-alice")
        assert r.status_code == 200 and r.json()["blocks"] == ["human-alice"]
    edit = acme.post("/v1/blocks/append", params={"agent_id": "travel"},
                     json={"label": "human", "content": "Vegetarian."})
    assert edit.status_code == 200, edit.text
    seen = acme.get("/v1/agents/support/blocks").json()["blocks"]
    assert [b["value"] for b in seen] == ["Name: Alice\nVegetarian."]  # shared
    rendered = acme.get("/v1/blocks/render", params={"agent_id": "support"}).json()
    assert "Vegetarian." in rendered["text"] and 'chars="23/100"' in rendered["text"]
    # the Python API on the tenant's store sees the same blocks
    blocks = blocks_for(state.store_for(Principal("acme")))
    assert blocks.by_label("support", "human").value == "Name: Alice\nVegetarian."
    assert [e["actor"] for e in acme.get("/v1/blocks/human-alice/history").json()] == [
        "api:acme", "api:acme"]
    # another tenant sees none of it; a read-only key may read, not change
    assert other.get("/v1/blocks/human-alice").status_code == 404
    assert other.get("/v1/blocks").json() == {"blocks": []}
    assert reader.get("/v1/blocks/human-alice").status_code == 200
    assert reader.post("/v1/blocks", json={"id": "x", "label": "x"}).status_code == 403
    assert reader.put("/v1/agents/a/blocks/human-alice").status_code == 403
    # detach: the agent no longer sees it; the block and the other agent keep it
    assert acme.delete("/v1/agents/travel/blocks/human-alice").json()["blocks"] == []
    assert acme.get("/v1/agents/travel/blocks").json() == {"blocks": []}
    assert len(acme.get("/v1/agents/support/blocks").json()["blocks"]) == 1


def test_read_only_blocks_and_refusals(served: Any) -> None:
    acme, _, _, _ = served
    assert acme.post("/v1/blocks", json={"id": "persona", "label": "persona",
                                         "value": "I am a travel agent.",
                                         "read_only": True}).status_code == 201
    acme.put("/v1/agents/ro-agent/blocks/persona")
    for route, body in (("append", {"label": "persona", "content": "x"}),
                        ("replace", {"label": "persona", "old_content": "travel",
                                     "new_content": "rogue"}),
                        ("rethink", {"label": "persona", "new_memory": "rogue"})):
        r = acme.post(f"/v1/blocks/{route}", params={"agent_id": "ro-agent"}, json=body)
        assert r.status_code == 403, (route, r.text)
        assert r.json()["error"] == "read_only" and "read-only" in r.json()["message"]
    # the application may still change it (etag-checked)
    etag = acme.get("/v1/blocks/persona").json()["etag"]
    changed = acme.patch("/v1/blocks/persona", json={"value": "I plan trips.", "etag": etag})
    assert changed.status_code == 200 and changed.json()["value"] == "I plan trips."
    stale = acme.patch("/v1/blocks/persona", json={"value": "again", "etag": etag})
    assert stale.status_code == 409
    # over the limit: 422 naming the overflow; bad input names the field
    acme.post("/v1/blocks", json={"id": "tiny", "label": "notes", "limit": 10})
    acme.put("/v1/agents/ro-agent/blocks/tiny")
    over = acme.post("/v1/blocks/append", params={"agent_id": "ro-agent"},
                     json={"label": "notes", "content": "far too long for ten"})
    assert over.status_code == 422 and "over its limit" in over.json()["message"]
    for bad, field in (({"id": "bad id", "label": "x"}, "id"),
                       ({"id": "ok", "label": "x", "limit": 0}, "limit"),
                       ({"id": "ok", "label": "x", "colour": 1}, "colour")):
        r = acme.post("/v1/blocks", json=bad)
        assert r.status_code == 422 and field in r.text, (bad, r.text)
    assert acme.put("/v1/agents/ro-agent/blocks/nope").status_code == 404
    clash = acme.post("/v1/blocks", json={"id": "persona2", "label": "persona"})
    assert clash.status_code == 201
    same_label = acme.put("/v1/agents/ro-agent/blocks/persona2")
    assert same_label.status_code == 422 and "already has a block" in same_label.text
    assert acme.delete("/v1/blocks/persona2").json() == {"deleted": "persona2"}
    assert acme.get("/v1/blocks/persona2").status_code == 404
    assert acme.delete("/v1/blocks/persona2").status_code == 404
