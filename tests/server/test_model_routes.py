"""Every route that calls the server's chat model documents the 502 it answers when the model
fails (issue 32, item 9: ``POST /v1/prompts/{name}/optimize`` answered an undocumented
``502 llm_failed``), and answers it: the schema and the server agree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.errors import LLMConnectionError
from remem.llm import ScriptedModel
from remem.server import ServerConfig, create_app

#: (method, path template, a request that reaches the model, with the path filled in)
MODEL_ROUTES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("post", "/v1/memories", "/v1/memories",
     {"messages": "I moved to Berlin.", "user_id": "u"}),
    ("post", "/v1/graph/episodes", "/v1/graph/episodes",
     {"text": "Ada joined Acme.", "user_id": "u"}),
    ("post", "/v1/prompts/{name}/optimize", "/v1/prompts/qa/optimize",
     {"trajectories": [{"messages": "What is 2+2?", "feedback": 0.1}]}),
    ("post", "/v1/episodes/extract", "/v1/episodes/extract",
     {"messages": "user: book a table\nassistant: booked for 8pm"}),
    ("post", "/v1/threads/{thread_id}/compact", "/v1/threads/{thread}/compact",
     {"policy": {"keep_tokens": 0}}),
    ("post", "/v1/memories/flush", "/v1/memories/flush", {"thread_id": "t1"}),
]


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(ServerConfig(
        db=tmp_path / "server.db", mcp=False, auth=False,
        llm=ScriptedModel(default=LLMConnectionError("the provider is down"))))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    app.state.remem.close()


def test_model_routes_document_502(failing: TestClient) -> None:
    paths = failing.app.openapi()["paths"]  # type: ignore[attr-defined]
    for method, template, _, _ in MODEL_ROUTES:
        responses = paths[template][method]["responses"]
        assert "502" in responses, template
        assert "`llm_failed`" in responses["502"]["description"], template
    # a route that calls no model does not claim it may answer 502
    assert "502" not in paths["/v1/memories/list"]["post"]["responses"]


@pytest.mark.parametrize(("method", "template", "path", "body"),
                         [r for r in MODEL_ROUTES if r[1] != "/v1/memories/flush"])
def test_a_failing_model_is_a_documented_502(failing: TestClient, method: str, template: str,
                                              path: str, body: dict[str, Any]) -> None:
    client = failing
    if "{thread}" in path:
        turns = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " * 50}
                 for n in range(8)]
        thread = client.post("/v1/threads", json={"messages": turns}).json()
        path = path.format(thread=thread["thread_id"])
    if "/prompts/" in path:
        assert client.post("/v1/prompts", json={"name": "qa", "text": "Answer {question}"}
                           ).status_code in (200, 201)
    response = client.request(method, path, json=body)
    assert response.status_code == 502, response.text
    assert response.json()["error"] == "llm_failed"
    assert "error id" in response.json()["message"]
    documented = client.app.openapi()["paths"][template][method]  # type: ignore[attr-defined]
    assert str(response.status_code) in documented["responses"]
