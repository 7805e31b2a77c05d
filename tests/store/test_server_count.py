"""``POST /v1/store/count``: the store's count over HTTP, per tenant, bad input a 422 that
names the field."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app


@pytest.fixture(scope="module")
def client() -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    with tempfile.TemporaryDirectory(prefix="remem-count-") as directory:
        app = create_app(ServerConfig(db=os.path.join(directory, "count.db"),
                                      embedder=FakeEmbedder(), mcp=False))
        with TestClient(app) as http:
            keys = app.state.remem.keys
            a = {"Authorization": f"Bearer {keys.create('alpha')[0]}"}
            b = {"Authorization": f"Bearer {keys.create('beta')[0]}"}
            for i in range(5):
                put = http.put("/v1/store/items", headers=a, json={
                    "namespace": ["notes", f"u{i % 2}"], "key": f"k{i}",
                    "value": {"n": i}, "event_at": 1_000 + i})
                assert put.status_code == 200, put.text
            yield http, a, b


def _count(http: TestClient, who: dict[str, str], **body: object) -> int:
    answer = http.post("/v1/store/count", headers=who, json=body)
    assert answer.status_code == 200, answer.text
    count = answer.json()["count"]
    assert isinstance(count, int)
    return count


def test_count_matches_the_store(client: tuple[TestClient, dict[str, str],
                                               dict[str, str]]) -> None:
    http, a, b = client
    assert _count(http, a) == 5
    assert _count(http, a, namespace_prefix=["notes", "u0"]) == 3
    assert _count(http, a, filter={"n": {"$gte": 3}}) == 2
    assert _count(http, a, event_after=1_001, event_before=1_003) == 2
    assert _count(http, b) == 0  # another tenant's items are not there
    assert _count(http, b, namespace_prefix=["tenants", "alpha"]) == 0


def test_bad_input_is_a_422_naming_the_field(client: tuple[TestClient, dict[str, str],
                                                           dict[str, str]]) -> None:
    http, a, _ = client
    for body, field in (({"filter": {"n": {"$between": [1, 2]}}}, "$between"),
                        ({"namespace_prefix": "notes"}, "namespace_prefix"),
                        ({"limit": 3}, "limit")):
        answer = http.post("/v1/store/count", headers=a, json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert field in answer.text, (body, answer.text)
