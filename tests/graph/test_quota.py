"""Graph rows (episodes, entities, facts) count in a tenant's storage quota: over HTTP on a
real SQLite file with the scripted model as the server's LLM, and on an in-memory store
(whose graphs no recount reads)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import QuotaExceededError
from remem.llm import ChatRequest, ScriptedModel
from remem.server import ServerConfig, create_app
from remem.server.quotas import Quota, QuotaStore
from remem.store import InMemoryStore
from tests.graph.scripts import E, F, answer

ACME = answer([E("Ada"), E("Acme", "organization"), E("Berlin", "place")],
              [F("Ada", "works_at", "Acme", "Ada works at Acme"),
               F("Acme", "located_in", "Berlin", "Acme is based in Berlin")])
GLOBEX = answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                [F("Ada", "works_at", "Globex", "Ada works at Globex",
                   contradicts=["Ada works at Acme"])])
#: what the first episode adds: 1 episode, 3 entities, 2 facts
FIRST_ROWS = 6


class Model:
    """The server's model, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: ChatRequest) -> dict[str, Any]:
        self.calls += 1
        episode = request.messages[-1].text.split("Episode:", 1)[1]
        return (GLOBEX if "Globex" in episode else ACME)(request)


def _served(tmp_path: Path, items: int) -> Iterator[tuple[TestClient, dict[str, str],
                                                            dict[str, str], Model]]:
    model = Model()
    app = create_app(ServerConfig(db=tmp_path / "quota.db", embedder=FakeEmbedder(),
                                  llm=ScriptedModel(default=model), mcp=False,
                                  quota_items=items))
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    acme, beta = ({"Authorization": f"Bearer {k}"} for k in keys)
    with TestClient(app) as client:
        yield client, acme, beta, model
    app.state.remem.close()


@pytest.fixture
def at_quota(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str],
                                               Model]]:
    """A server whose tenants may keep as many items as the first episode adds."""
    yield from _served(tmp_path, FIRST_ROWS)


def _ingest(client: TestClient, headers: dict[str, str], text: str) -> Any:
    return client.post("/v1/graph/episodes", headers=headers,
                       json={"user_id": "ada", "text": text, "event_at": 1.7e9})


def _facts(client: TestClient, headers: dict[str, str]) -> list[str]:
    r = client.post("/v1/graph/search", headers=headers,
                    json={"user_id": "ada", "query": "Ada works", "limit": 50})
    assert r.status_code == 200
    return sorted(h["fact"]["fact"] for h in r.json()["hits"])


def test_a_full_tenant_is_refused_before_the_model_call(at_quota: Any) -> None:
    client, acme, beta, model = at_quota
    assert _ingest(client, acme, "Ada joined Acme; Acme is in Berlin.").status_code == 200
    assert model.calls == 1
    r = _ingest(client, acme, "Ada moved to Globex.")
    assert r.status_code == 413
    body = r.json()
    assert body["error"] == "quota_exceeded" and body["field"] == "quota.items"
    assert f"quota of {FIRST_ROWS} items" in body["message"]
    assert "--quota-items" in body["message"] and "graph episode" in body["message"]
    assert model.calls == 1  # the episode alone did not fit: no call was paid for
    assert _facts(client, acme) == ["Acme is based in Berlin", "Ada works at Acme"]
    # graph rows and memories share the quota: the graph filled it for memories too
    memory = client.post("/v1/memories", headers=acme,
                         json={"messages": "tea", "user_id": "u", "infer": False})
    assert memory.status_code == 413
    # the quota is per tenant
    assert _ingest(client, beta, "Ada joined Acme; Acme is in Berlin.").status_code == 200


def test_an_episode_adding_too_much_writes_nothing(tmp_path: Path) -> None:
    """The episode alone fits (the model is called), what it adds does not: the write
    transaction is rolled back (no episode, no entity, no fact, no invalidation)."""
    for client, acme, _, model in _served(tmp_path, FIRST_ROWS + 2):
        assert _ingest(client, acme, "Ada joined Acme; Acme is in Berlin.").status_code == 200
        r = _ingest(client, acme, "Ada moved to Globex.")
        assert r.status_code == 413 and r.json()["field"] == "quota.items"
        assert f"holds {FIRST_ROWS} items" in r.json()["message"]
        assert "adds 3" in r.json()["message"]  # 1 episode, 1 entity, 1 fact
        assert model.calls == 2
        assert _facts(client, acme) == ["Acme is based in Berlin", "Ada works at Acme"]
        page = client.post("/v1/graph/entity", headers=acme,
                           json={"user_id": "ada", "entity": "Ada"}).json()
        assert [f["invalid_at"] for f in page["current"]] == [None]  # Acme not ended
        missing = client.post("/v1/graph/entity", headers=acme,
                              json={"user_id": "ada", "entity": "Globex"})
        assert missing.status_code == 404


def test_graphs_of_an_in_memory_store_count_as_written() -> None:
    """No recount reads an in-memory store's graphs (each has its own database): their rows
    are added as they are written, and recounts keep them."""
    quota = Quota(max_items=FIRST_ROWS + 1, recount_seconds=0)  # recount at every check
    store = QuotaStore(InMemoryStore(), ("tenant",), quota, tenant="tenant")
    model = Model()
    with Memory(store, llm=ScriptedModel(default=model)) as mem:
        mem.graph(user_id="ada").ingest("Ada joined Acme; Acme is in Berlin.", event_at=1.7e9)
        assert store.usage().items == FIRST_ROWS
        with pytest.raises(QuotaExceededError, match="quota of 7 items") as raised:
            mem.graph(user_id="bob").ingest("Ada joined Acme; Acme is in Berlin.",
                                            event_at=1.7e9)
        assert raised.value.quota == "items" and raised.value.after == 2 * FIRST_ROWS
        assert model.calls == 2  # the episode alone fitted
        assert mem.graph(user_id="bob").episodes() == []
        assert store.usage().items == FIRST_ROWS
