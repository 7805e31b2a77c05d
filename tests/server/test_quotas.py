"""Storage quotas per tenant (items and bytes of values) and per-tenant metrics behind the
operator's token. Real SQLite files, the deterministic fake embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from remem.embed import FakeEmbedder
from remem.errors import ConfigError
from remem.server import ServerConfig, create_app
from remem.server.quotas import (
    FRESH_SECONDS,
    Quota,
    QuotaExceededError,
    QuotaStore,
    TenantUsage,
    measure,
    value_bytes,
)
from remem.store import DeleteOp, InMemoryStore, PutOp, open_store

METRICS_TOKEN = "metrics-token-0123456789"


def _app(tmp_path: Path, **config: Any) -> Any:
    return create_app(ServerConfig(db=str(tmp_path / "quota.db"), embedder=FakeEmbedder(),
                                   mcp=False, **config))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    """A server with 3 items per tenant, and keys of two tenants."""
    app = _app(tmp_path, quota_items=3, metrics_token=METRICS_TOKEN)
    acme, _ = app.state.remem.keys.create("acme")
    beta, _ = app.state.remem.keys.create("beta")
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {acme}"}, {"Authorization": f"Bearer {beta}"}
    app.state.remem.close()


def _add(client: TestClient, headers: dict[str, str], text: str) -> Any:
    return client.post("/v1/memories", headers=headers,
                       json={"messages": text, "user_id": "u", "infer": False})


def _listed(client: TestClient, headers: dict[str, str]) -> list[str]:
    r = client.post("/v1/memories/list", headers=headers, json={"user_id": "u"})
    assert r.status_code == 200
    return [m["text"] for m in r.json()["memories"]]


def test_a_write_past_the_item_quota_is_413_and_writes_nothing(served: Any) -> None:
    client, acme, beta = served
    ids = [_add(client, acme, f"fact {i} about tea").json()["changes"][0]["memory"]["id"]
           for i in range(3)]
    r = _add(client, acme, "one fact too many")
    assert r.status_code == 413
    body = r.json()
    assert body["error"] == "quota_exceeded" and body["field"] == "quota.items"
    assert "quota of 3 items" in body["message"] and "--quota-items" in body["message"]
    assert "hard=true" in body["message"]  # the fix
    assert "Retry-After" not in r.headers  # waiting frees nothing
    assert "one fact too many" not in _listed(client, acme)
    # the quota is per tenant: another tenant still writes
    assert _add(client, beta, "beta's fact").status_code == 200
    # an invalidation is allowed at the quota; a hard delete frees room for a new memory
    assert client.delete(f"/v1/memories/{ids[0]}", headers=acme).status_code == 200
    assert _add(client, acme, "still too many").status_code == 413
    hard = client.delete(f"/v1/memories/{ids[0]}?hard=true", headers=acme)
    assert hard.status_code == 200
    assert _add(client, acme, "room again").status_code == 200
    # undoing the hard delete would bring the memory back past the quota: refused, and the
    # memory stays deleted (nothing half-restored)
    undo = client.post(f"/v1/events/{hard.json()['changes'][0]['event_id']}/undo",
                       headers=acme)
    assert undo.status_code == 413 and undo.json()["error"] == "quota_exceeded"
    assert client.get(f"/v1/memories/{ids[0]}", headers=acme).status_code == 404
    assert sorted(_listed(client, acme)) == ["fact 1 about tea", "fact 2 about tea",
                                             "room again"]


def test_raw_store_items_count_and_the_byte_quota_holds(tmp_path: Path) -> None:
    app = _app(tmp_path, quota_bytes=200)
    token, _ = app.state.remem.keys.create("acme")
    h = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        def put(key: str, text: str) -> Any:
            return client.put("/v1/store/items", headers=h,
                              json={"namespace": ["notes"], "key": key, "value": {"t": text}})

        assert put("a", "x" * 80).status_code == 200
        assert put("b", "y" * 80).status_code == 200  # 2 x 88 bytes = 176
        r = put("c", "z" * 30)
        assert r.status_code == 413 and r.json()["field"] == "quota.bytes"
        assert "--quota-bytes" in r.json()["message"]
        assert client.get("/v1/store/items", headers=h,
                          params={"namespace": "notes", "key": "c"}).status_code == 404
        assert put("a", "x" * 10).status_code == 200  # a smaller value always fits
        assert put("c", "z" * 30).status_code == 200  # and makes room
        assert put("b", "y" * 200).status_code == 413  # a larger one is checked
    app.state.remem.close()


def test_a_refusal_recounts_what_other_writers_removed(tmp_path: Path) -> None:
    """The count is refreshed before refusing: room freed by another process is seen."""
    db = str(tmp_path / "shared.db")
    with open_store(db) as inner:
        now = [0.0]
        store = QuotaStore(inner, ("tenants", "t"), Quota(max_items=2, recount_seconds=3600),
                           tenant="t", clock=lambda: now[0])
        store.put(("n",), "a", {"v": 1})
        store.put(("n",), "b", {"v": 2})
        with pytest.raises(QuotaExceededError) as refused:
            store.put(("n",), "c", {"v": 3})
        assert (refused.value.quota, refused.value.limit, refused.value.usage) == ("items", 2, 2)
        with open_store(db) as other:  # another process deletes one
            other.delete(("tenants", "t", "n"), "a")
        with pytest.raises(QuotaExceededError):  # a count under a second old is trusted
            store.put(("n",), "c", {"v": 3})
        now[0] += FRESH_SECONDS
        store.put(("n",), "c", {"v": 3})
        assert store.usage() == TenantUsage(2, 2 * value_bytes({"v": 1}))
        # bookkeeping (history, ids, locks) is not counted and never refused
        store.put(("_remem", "locks", "n"), "ticket", {"v": 4})
        assert store.usage(fresh=True).items == 2


_keys = st.sampled_from(["a", "b", "c", "d"])
_ops = st.one_of(
    st.builds(lambda ns, k, n: PutOp((ns,), k, {"t": "x" * n}),
              st.sampled_from(["n", "m", "_remem"]), _keys, st.integers(0, 40)),
    st.builds(lambda ns, k: DeleteOp((ns,), k), st.sampled_from(["n", "m", "_remem"]), _keys),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_ops, min_size=1, max_size=6), min_size=1, max_size=8))
def test_the_running_count_equals_a_fresh_count(batches: list[list[Any]]) -> None:
    """Each batch's growth, computed before it runs, keeps the running usage exact."""
    store = QuotaStore(InMemoryStore(), ("tenants", "t"), Quota(max_items=10**6),
                       tenant="t", clock=lambda: 0.0)
    for ops in batches:
        store.batch(ops)
        assert store.usage() == measure(store.iter_items(()))


def test_quota_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="--quota-items"):
        ServerConfig(db=":memory:", quota_items=0)
    with pytest.raises(ConfigError, match="--quota-bytes"):
        ServerConfig(db=":memory:", quota_bytes=-5)
    with pytest.raises(ConfigError, match="metrics_token"):
        ServerConfig(db=":memory:", metrics_token="short")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_tenant_metrics_need_the_metrics_token(served: Any) -> None:
    client, acme, beta = served
    _add(client, acme, "a fact")
    client.get("/v1/memories/mem_missing", headers=beta)
    public = client.get("/metrics").text
    assert "acme" not in public and "beta" not in public and "tenant" not in public
    assert client.get("/metrics/tenants").status_code == 401
    assert client.get("/metrics/tenants", headers=acme).status_code == 401  # a tenant key
    r = client.get("/metrics/tenants", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert r.status_code == 200
    samples = _samples(r.text)
    acme_ok = ("remem_tenant_http_requests_total",
               (("status_class", "2xx"), ("tenant", "acme")))
    beta_404 = ("remem_tenant_http_requests_total",
                (("status_class", "4xx"), ("tenant", "beta")))
    assert samples[acme_ok] >= 1 and samples[beta_404] == 1
    assert not any(name.startswith("remem_http_") for name, _ in samples)


def test_without_a_metrics_token_there_is_no_tenant_route(tmp_path: Path) -> None:
    app = _app(tmp_path)
    with TestClient(app) as client:
        assert client.get("/metrics/tenants").status_code == 404
        assert "/metrics/tenants" not in client.get("/openapi.json").json()["paths"]
    app.state.remem.close()


def test_the_client_raises_the_quota_error_the_server_names() -> None:
    import httpx

    from remem.errors import QuotaExceededError, UsageError
    from remem.transport import error_of

    answer = httpx.Response(413, json={"error": "quota_exceeded", "field": "quota.items",
                                       "message": "tenant 'acme' is at its quota of 3 items"})
    error = error_of(answer)
    assert isinstance(error, QuotaExceededError) and isinstance(error, UsageError)
    assert "quota of 3 items (HTTP 413)" in str(error)
