"""The HTTP API's contract: validation names the field, bodies are size-limited, invalid
JSON is a 400, no traceback ever leaks, and health, readiness, metrics and docs answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                  max_body_bytes=4096))
    token = app.state.remem.keys.create("acme")[0]
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c
    app.state.remem.close()


@pytest.mark.parametrize(("method", "path", "kwargs", "field", "words"), [
    ("PUT", "/v1/store/items", {"json": {"namespace": [], "key": "k", "value": {}}},
     "body.namespace", "at least 1"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a", "b\x00"], "key": "k", "value": {}}},
     "body.namespace.1", "pattern"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "", "value": {}}},
     "body.key", "at least 1"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "k", "value": [1]}},
     "body.value", "dictionary"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {},
                                         "ttl": -1}}, "body.ttl", "greater than 0"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {},
                                         "index": 0}}, "body.index", "dotted field paths"),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "k"}},
     "body.value", "required"),
    ("POST", "/v1/store/search", {"json": {"limit": 0}}, "body.limit", "greater than"),
    ("POST", "/v1/store/search", {"json": {"mode": "psychic"}}, "body.mode", "auto"),
    ("POST", "/v1/store/search", {"json": {"limit": "10"}}, "body.limit", "integer"),
    ("POST", "/v1/store/search", {"json": {"tenant": "x"}}, "body.tenant", "not permitted"),
    ("GET", "/v1/store/items", {"params": {"key": "k"}}, "query.namespace", "required"),
    ("GET", "/v1/store/namespaces", {"params": {"max_depth": "deep"}}, "query.max_depth",
     "integer"),
    ("POST", "/v1/memories", {"json": {"user_id": "u"}}, "body.messages", "required"),
    ("POST", "/v1/memories/search", {"json": {"as_of": "yesterday"}}, "body.as_of", "number"),
    ("DELETE", "/v1/memories/m1", {"params": {"version": 0}}, "query.version", "greater"),
    ("DELETE", "/v1/memories/m1", {"params": {"hard": "maybe"}}, "query.hard", "boolean"),
    ("DELETE", "/v1/memories/m1", {"params": {"actor": "me"}}, "query.actor", "not permitted"),
    ("POST", "/v1/memories/search", {"json": {"offset": -1}}, "body.offset", "greater"),
    ("POST", "/v1/memories/search", {"json": {"mmr": 2}}, "body.mmr", "less than"),
    ("POST", "/v1/memories/search", {"json": {"min_score": "0.5"}}, "body.min_score",
     "number"),
    ("POST", "/v1/memories/search", {"json": {"min_score": 1.5}}, "body.min_score",
     "less than or equal to 1"),
    ("POST", "/v1/memories/list", {"json": {"limit": 5}}, "body", "needs a scope"),
    ("POST", "/v1/memories/delete", {"json": {"hard": True}}, "body", "never deletes"),
    ("POST", "/v1/memories/import", {"json": {"lines": "{}"}}, "body.lines", "list"),
    ("POST", "/v1/memories/export", {"json": {"namespace": ["a\x00"]}}, "body.namespace.0",
     "pattern"),
    ("PATCH", "/v1/memories/m1", {"json": {"memory_id": "m2"}}, "body.memory_id",
     "not permitted"),
])
def test_validation_errors_name_the_field(client: TestClient, method: str, path: str,
                                          kwargs: dict[str, Any], field: str,
                                          words: str) -> None:
    r = client.request(method, path, **kwargs)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "validation_error" and body["field"] == field
    assert words in body["message"] and body["message"].startswith(field)


@pytest.mark.parametrize(("body", "fragment"), [
    ({"filter": {"$nope": 1}}, "unknown logical operator '$nope'"),
    ({"filter": {"n": {"$gt": [1]}}}, "$gt"),
    ({"namespace_prefix": ["*"]}, "'*'"),
    ({"query": "x", "mode": "keyword", "offset": 90, "limit": 20}, None),
])
def test_library_rules_are_422_with_the_library_message(client: TestClient, body: Any,
                                                        fragment: str | None) -> None:
    r = client.post("/v1/store/search", json=body)
    if fragment is None:  # a valid request
        assert r.status_code == 200
        return
    assert r.status_code == 422 and r.json()["error"] == "invalid_input"
    assert fragment in r.json()["message"]


def test_value_rules_from_the_store(client: TestClient) -> None:
    r = client.put("/v1/store/items", json={"namespace": ["a"], "key": "k",
                                            "value": {"n": 2**70}})
    assert r.status_code == 422 and "64-bit" in r.json()["message"]


def test_a_one_value_query_parameter_given_twice_is_422_naming_it(client: TestClient) -> None:
    repeated = client.get("/v1/jobs?thread_id=a&thread_id=b")
    assert repeated.status_code == 422
    assert repeated.json()["field"] == "query.thread_id"
    assert "pass thread_id once" in repeated.json()["message"]
    assert client.get("/v1/jobs?thread_id=a").status_code == 200
    # a parameter that takes a list may repeat
    assert client.delete("/v1/budgets?namespace=a&namespace=b").status_code == 200


def test_invalid_json_is_400(client: TestClient) -> None:
    r = client.post("/v1/store/search", content=b'{"limit": ',
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_json" and r.json()["field"] == "body"


def test_deeply_nested_json_is_4xx_not_500(client: TestClient) -> None:
    depth = 2000  # fits the 4 KiB limit, deeper than the JSON parser's recursion allows
    r = client.put("/v1/store/items", content=(b'{"namespace":["a"],"key":"k","value":'
                                               + b'{"a":' * depth + b"1" + b"}" * depth + b"}"),
                   headers={"Content-Type": "application/json"})
    assert 400 <= r.status_code < 500 and "traceback" not in r.text.lower()


def test_oversized_bodies_get_413_declared_or_streamed(client: TestClient) -> None:
    big = {"namespace": ["a"], "key": "k", "value": {"text": "x" * 5000}}
    r = client.put("/v1/store/items", json=big)
    assert r.status_code == 413 and r.json()["error"] == "too_large"
    assert "4096 bytes" in r.json()["message"] and "--max-body-bytes" in r.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"namespace": ["a"], "key": "k", "value": {"text": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}}'

    r = client.put("/v1/store/items", content=chunks(),
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "too_large"
    assert client.get("/v1/store/items", params={"namespace": ["a"], "key": "k"}
                      ).status_code == 404


def test_unknown_routes_and_methods_are_json_4xx(client: TestClient) -> None:
    assert client.get("/v1/nope").status_code == 404
    r = client.post("/v1/store/namespaces")
    assert r.status_code == 405 and r.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("OPTIONS", "/v1/memories/m1", "DELETE, GET, PATCH"),  # three routes serve this path
    ("OPTIONS", "/v1/store/items", "DELETE, GET, PUT"),
    ("PUT", "/v1/memories/search", "POST"),  # the literal path, not {memory_id}
    ("PUT", "/v1/memories/list", "POST"),
    ("PATCH", "/healthz", "GET"),
])
def test_405_lists_every_method_of_the_path(client: TestClient, method: str, path: str,
                                            allow: str) -> None:
    r = client.request(method, path)
    assert r.status_code == 405
    assert r.headers["allow"] == allow


def test_without_an_llm_an_add_stores_as_given_unless_infer_is_asked(
        client: TestClient) -> None:
    """infer left out: stored as given on a server without a chat model (the answer says
    so); infer: true is a 400 naming the fix; infer: false stores as given."""
    r = client.post("/v1/memories", json={"messages": "I like tea", "user_id": "u"})
    assert r.status_code == 200, r.text
    assert r.json()["inferred"] is False
    assert r.json()["changes"][0]["memory"]["text"] == "I like tea"
    r = client.post("/v1/memories", json={"messages": "I like tea", "user_id": "u",
                                          "infer": True})
    assert r.status_code == 400 and r.json()["error"] == "unsupported"
    assert "infer" in r.json()["message"] and "REMEM_LLM_MODEL" in r.json()["message"]
    r = client.post("/v1/memories", json={"messages": [{"role": "user", "content": "tea"}],
                                          "user_id": "u", "infer": False})
    assert r.status_code == 200 and r.json()["changes"][0]["memory"]["text"] == "tea"
    assert r.json()["inferred"] is False


def test_unexpected_errors_are_500_without_a_traceback() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
    app.state.remem.close()
    assert r.status_code == 500 and r.json()["error"] == "internal"
    assert "secret" not in r.text and "Traceback" not in r.text


def test_health_readiness_metrics_and_docs(client: TestClient) -> None:
    from importlib.metadata import version

    assert client.get("/healthz", headers={"Authorization": ""}).json() == {
        "status": "ok", "version": version("remem")}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["backend"] == "SQLiteStore"
    assert ready["vector_search"] is True and ready["llm"] is False
    client.post("/v1/store/search", json={})
    text = client.get("/metrics").text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    search = (("method", "POST"), ("route", "/v1/store/search"))
    assert samples[("remem_http_requests_total", (*search, ("status", "200")))] >= 1
    assert samples[("remem_http_request_duration_seconds_bucket",
                    (("le", "+Inf"), *search))] >= 1
    assert "# TYPE remem_http_requests_in_flight gauge" in text
    assert "tenant" not in text  # /metrics needs no key: it names no tenant
    schema = client.get("/openapi.json").json()
    assert schema["info"]["title"] == "remem" and "/v1/memories/search" in schema["paths"]
    assert set(schema["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader"}
    # one class name per component: two models of one name get module-qualified names
    # (remem__context__wire__ItemOut) that generated clients would carry
    assert [n for n in schema["components"]["schemas"] if "__" in n] == []
    assert "swagger" in client.get("/docs").text.lower()


def test_no_auth_mode_serves_the_databases_own_data() -> None:
    """Without keys every request works on the database's own data (no tenant prefix), as
    Memory.open and the CLI do (the operator's view of the file); the server's keys stay out
    of reach."""
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    with TestClient(app) as c:
        assert c.put("/v1/store/items", json={"namespace": ["n"], "key": "k",
                                              "value": {}}).status_code == 200
        refused = c.put("/v1/store/items", json={"namespace": ["_remem_server", "api_keys"],
                                                 "key": "k", "value": {}})
        assert refused.status_code == 403 and "reserved_namespace" in refused.text
    store = app.state.remem.store
    assert store.get(("n",), "k") is not None
    assert store.get(("tenants", "local", "n"), "k") is None
    app.state.remem.close()


def test_memory_routes_run_the_request_values(client: TestClient) -> None:
    """The new routes end to end: list, search pages, export, delete_all, undo, import."""
    for n in range(3):
        r = client.post("/v1/memories", json={"messages": f"note {n} tea", "user_id": "pages",
                                              "infer": False, "actor": "spoofed"})
        assert r.status_code == 200
    memory_id = r.json()["changes"][0]["memory"]["id"]
    history = client.get(f"/v1/memories/{memory_id}/history").json()["events"]
    assert history[0]["actor"].startswith("key:")  # the caller's key, whatever the body says
    page = client.post("/v1/memories/list", json={"user_id": "pages", "limit": 2}).json()
    assert [m["text"] for m in page["memories"]] == ["note 2 tea", "note 1 tea"]
    assert page["next_offset"] == 2 and page["memories"][0]["created_at"].endswith("+00:00")
    r = client.post("/v1/memories/search", json={"query": "tea", "user_id": "pages",
                                                 "limit": 300, "offset": 1})
    assert r.status_code == 200 and len(r.json()["hits"]) == 2
    exported = client.post("/v1/memories/export", json={"user_id": "pages"}).json()
    assert exported["count"] == len(exported["lines"]) == 6
    gone = client.post("/v1/memories/delete", json={"user_id": "pages", "hard": True}).json()
    assert len(gone["changes"]) == 3 and {c["op"] for c in gone["changes"]} == {"delete"}
    r = client.post(f"/v1/events/{gone['changes'][0]['event_id']}/undo")
    assert len(r.json()["changes"]) == 3
    client.post("/v1/memories/delete", json={"user_id": "pages", "hard": True})
    # this server takes 4 KiB bodies: one line per request
    counts = [client.post("/v1/memories/import", json={"lines": [line]}).json()
              for line in exported["lines"]]
    assert counts == [{"count": 1}] * 6
    assert len(client.post("/v1/memories/list", json={"user_id": "pages"}).json()[
        "memories"]) == 3
    r = client.delete(f"/v1/memories/{memory_id}", params={"reason": "typo", "version": 1})
    assert r.status_code == 200 and r.json()["changes"][0]["memory"]["status"] == "invalid"
    events = client.get(f"/v1/memories/{memory_id}/history").json()["events"]
    assert events[-1]["reason"] == "typo"


def test_every_memory_route_declares_its_answer(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path, operations in paths.items():
        if path.startswith(("/v1/memories", "/v1/events")):
            for verb, operation in operations.items():
                answer = operation["responses"]["200"]["content"]["application/json"]
                assert "$ref" in answer["schema"], (verb, path)


def test_the_rebinding_guard_answers_are_in_the_openapi_schema() -> None:
    """On loopback every operation documents the guard's 421 (foreign Host) and 403 (foreign
    Origin), and the answers have the documented error body; a server bound elsewhere with
    keys has no guard and documents none."""
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    with TestClient(app) as c:
        schema = c.get("/openapi.json").json()
        operations = [op for item in schema["paths"].values() for op in item.values()]
        assert len(operations) > 20
        for op in operations:
            assert "421" in op["responses"] and "403" in op["responses"]
            assert "rebinding" in op["responses"]["421"]["description"]
        assert schema["paths"]["/v1/memories"]["post"]["responses"]["421"]["content"][
            "application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        r = c.get("/healthz", headers={"Host": "evil.example"})
        assert r.status_code == 421 and r.json()["error"] == "misdirected"
        assert set(r.json()) == {"error", "message", "field", "details"}
    guarded_nowhere = create_app(ServerConfig(db=":memory:", mcp=False, host="0.0.0.0"))
    paths = guarded_nowhere.openapi()["paths"]
    assert all("421" not in op["responses"] for item in paths.values() for op in item.values())
    guarded_nowhere.state.remem.close()
    app.state.remem.close()


def test_root_points_to_the_inspector_and_the_docs(client: TestClient) -> None:
    """``GET /`` was a bare 404 ({"error": "not_found"}); now a page linking /ui and /docs."""
    from importlib.metadata import version

    page = client.get("/", headers={"Authorization": ""})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for link in ('href="/ui"', 'href="/docs"', 'href="/healthz"'):
        assert link in page.text
    assert f"remem {version('remem')}" in page.text
    assert "/" not in client.get("/openapi.json").json()["paths"]  # a page, not an API route
