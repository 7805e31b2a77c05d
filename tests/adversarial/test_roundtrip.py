"""The property of issue 16: whatever the server acknowledges (2xx) is readable back through
the read routes, unchanged; whatever it refuses is a 4xx, never a 5xx, and leaves nothing
behind. Checked for raw store items and for memories with hypothesis-made values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from remem.server import ServerConfig, create_app

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
labels = st.text(min_size=1, max_size=12)


@pytest.fixture(scope="module")
def http() -> Iterator[TestClient]:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    with TestClient(app) as client:
        yield client
    app.state.remem.close()


def _same(a: Any, b: Any) -> bool:
    """JSON equality that tells 1 from 1.0 from True only as JSON does (not at all for
    1 and 1.0)."""
    return a == b and type(a is True) is type(b is True)


@SETTINGS
@given(namespace=st.lists(labels, min_size=1, max_size=4), key=st.text(min_size=1, max_size=30),
       value=objects)
def test_acknowledged_items_read_back(http: TestClient, namespace: list[str], key: str,
                                      value: dict[str, Any]) -> None:
    put = http.put("/v1/store/items", json={"namespace": namespace, "key": key,
                                            "value": value})
    got = http.get("/v1/store/items", params={"namespace": namespace, "key": key})
    assert put.status_code < 500 and got.status_code < 500, (put.text, got.text)
    event(f"put answered {put.status_code}")
    if put.status_code != 200:
        assert got.status_code in (404, 422), got.text
        return
    assert got.status_code == 200, got.text
    assert _same(got.json()["value"], value)
    found = http.post("/v1/store/search", json={"namespace_prefix": namespace, "limit": 1000})
    assert found.status_code == 200, found.text
    assert any(hit["key"] == key and hit["namespace"] == namespace
               for hit in found.json()["items"]), found.text
    spaces = http.get("/v1/store/namespaces", params={"prefix": namespace, "limit": 1000})
    assert spaces.status_code == 200 and namespace in spaces.json()["namespaces"], spaces.text


@SETTINGS
@given(text=st.text(min_size=1, max_size=200), metadata=objects,
       user=st.text(min_size=1, max_size=20))
def test_acknowledged_memories_read_back(http: TestClient, text: str,
                                         metadata: dict[str, Any], user: str) -> None:
    added = http.post("/v1/memories", json={"messages": text, "user_id": user,
                                            "infer": False, "metadata": metadata})
    assert added.status_code < 500, added.text
    event(f"add answered {added.status_code}")
    if added.status_code != 200:
        return
    changes = added.json()["changes"]
    if not changes or changes[0]["op"] != "add":  # the same text again: nothing new
        return
    memory = changes[0]["memory"]
    got = http.get(f"/v1/memories/{memory['id']}")
    assert got.status_code == 200, got.text
    assert got.json()["content"] == memory["content"] and got.json()["text"] == text.strip()
    assert _same(got.json()["metadata"], metadata)
    listed = http.post("/v1/memories/list", json={"user_id": user, "limit": 1000})
    assert listed.status_code == 200, listed.text
    assert memory["id"] in [m["id"] for m in listed.json()["memories"]]
    history = http.get(f"/v1/memories/{memory['id']}/history")
    assert history.status_code == 200 and history.json()["events"][0]["op"] == "add"
    exported = http.post("/v1/memories/export", json={"user_id": user})
    assert exported.status_code == 200 and memory["id"] in exported.text, exported.text
