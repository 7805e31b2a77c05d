"""Every surface of a prompt or episode operation is built from its one request declaration.

* ``client.prompts`` / ``client.episodes`` methods (and async twins) take the request's
  parameters with its defaults, less what the server sets (``author``), and have the names and
  signatures of :class:`~remem.procedural.PromptRegistry` / :class:`~remem.episodic.EpisodeStore`
  (less ``author``, the model, a token counter or a filter, which cannot travel);
* the HTTP route's body (or path and query) is the request's JSON schema;
* the same requests run on an embedded registry (``run`` and ``arun``) and through a
  ``Client`` against a real server give the same JSON, times and authors aside.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.client import Client
from remem.embed import FakeEmbedder
from remem.episodic import EpisodeStore
from remem.episodic.remote import RemoteEpisodes
from remem.episodic.requests import (
    AddEpisodeRequest,
    EpisodeRequest,
    ExtractEpisodesRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
    SubmitExtractionRequest,
    episode_json,
)
from remem.llm import ChatRequest, ScriptedModel
from remem.procedural import PromptRegistry
from remem.procedural.remote import RemotePrompts
from remem.procedural.requests import (
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    OptimizePromptRequest,
    PromptDiffRequest,
    PromptHistoryRequest,
    PromptRequest,
    RollbackPromptRequest,
    SubmitOptimizationRequest,
    UpdatePromptRequest,
    prompt_json,
)
from remem.server import ServerConfig, create_app
from remem.store import SQLiteStore
from remem.testing.server import ThreadedServer

#: request -> (remote method, the embedded method it mirrors (None: the optimizer's), the
#: parameters the remote method leaves out, and why)
PROMPT_METHODS: dict[type[PromptRequest[Any]], tuple[str, str | None]] = {
    ListPromptsRequest: ("list", "list"),
    GetPromptRequest: ("get", "get"),
    PromptHistoryRequest: ("history", "history"),
    PromptDiffRequest: ("diff", "diff"),
    CreatePromptRequest: ("create", "create"),
    UpdatePromptRequest: ("update", "update"),
    RollbackPromptRequest: ("rollback", "rollback"),
    OptimizePromptRequest: ("optimize", None),
}
EPISODE_METHODS: dict[type[EpisodeRequest[Any]], str] = {
    ListEpisodesRequest: "list",
    SelectExamplesRequest: "select_examples",
    ExtractEpisodesRequest: "extract",
}
#: the server records the caller's key as the author
SERVER_SETS = {"author"}


def _params(fn: Callable[..., Any]) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if name != "self"}


def _request_params(request: type[Any]) -> dict[str, Any]:
    return {name: (inspect.Parameter.empty if field.is_required() else field.default)
            for name, field in request.model_fields.items() if name not in SERVER_SETS}


@pytest.mark.parametrize("request_type", list(PROMPT_METHODS), ids=lambda r: r.__name__)
def test_prompt_methods_take_the_request(request_type: type[Any]) -> None:
    remote_name, local_name = PROMPT_METHODS[request_type]
    want = _request_params(request_type)
    for fn in (getattr(RemotePrompts, remote_name), getattr(RemotePrompts, "a" + remote_name)):
        assert _params(fn) == want, fn.__name__
    if local_name is not None:  # the embedded registry's: the same, plus author
        local = _params(getattr(PromptRegistry, local_name))
        # update(trajectories=...) records an optimizer's sources: Python only (optimize
        # with commit=True records them on a server)
        local_only = SERVER_SETS | {"trajectories"}
        assert {k: v for k, v in local.items() if k not in local_only} == want
        assert _params(getattr(PromptRegistry, "a" + local_name)) == local


@pytest.mark.parametrize("request_type", list(EPISODE_METHODS), ids=lambda r: r.__name__)
def test_episode_methods_take_the_request(request_type: type[Any]) -> None:
    name = EPISODE_METHODS[request_type]
    want = _request_params(request_type)
    for fn in (getattr(RemoteEpisodes, name), getattr(RemoteEpisodes, "a" + name)):
        assert _params(fn) == want, fn.__name__
    local = _params(getattr(EpisodeStore, name))
    # what cannot travel: the model (the server's), a filter and a token counter
    local = {k: v for k, v in local.items() if k not in {"model", "filter", "counter",
                                                         "instructions"}}
    assert local == want


def test_submit_methods_take_the_requests() -> None:
    for fn, request in ((RemotePrompts.submit_optimization, SubmitOptimizationRequest),
                        (RemotePrompts.asubmit_optimization, SubmitOptimizationRequest),
                        (RemoteEpisodes.submit_extraction, SubmitExtractionRequest),
                        (RemoteEpisodes.asubmit_extraction, SubmitExtractionRequest)):
        assert _params(fn) == _request_params(request), fn.__name__


def test_add_episode_takes_an_episode_like_the_store() -> None:
    assert list(_params(RemoteEpisodes.add)) == list(_params(EpisodeStore.add)) == ["episode"]
    assert set(AddEpisodeRequest.model_fields) == {
        "situation", "action", "thought", "result", "thread_id", "metadata"}


def _body_schema(openapi: dict[str, Any], path: str) -> dict[str, Any]:
    content = openapi["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    ref = content["schema"]["$ref"].rsplit("/", 1)[-1]
    schema: dict[str, Any] = openapi["components"]["schemas"][ref]
    return schema


def test_http_bodies_are_the_requests(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "o.db", mcp=False))
    openapi = app.openapi()
    bodies = {"/v1/prompts": (CreatePromptRequest, set()),
              "/v1/prompts/{name}": (UpdatePromptRequest, {"name"}),
              "/v1/prompts/{name}/rollback": (RollbackPromptRequest, {"name"}),
              "/v1/prompts/{name}/optimize": (OptimizePromptRequest, {"name"}),
              "/v1/episodes": (AddEpisodeRequest, set()),
              "/v1/episodes/list": (ListEpisodesRequest, set()),
              "/v1/episodes/select": (SelectExamplesRequest, set()),
              "/v1/episodes/extract": (ExtractEpisodesRequest, set()),
              "/v1/prompts/{name}/optimize/submit": (SubmitOptimizationRequest, {"name"}),
              "/v1/episodes/extract/submit": (SubmitExtractionRequest, set())}
    for path, (request, in_path) in bodies.items():
        schema = _body_schema(openapi, path)
        assert set(schema["properties"]) == set(request.model_fields) - in_path, path
        assert set(schema.get("required", [])) == {
            n for n, f in request.model_fields.items() if f.is_required()} - in_path, path
    queries = {"/v1/prompts/{name}": ("get", {"name", "version"}),
               "/v1/prompts/{name}/diff": ("get", {"name", "old", "new"}),
               "/v1/prompts/{name}/history": ("get", {"name"})}
    for path, (method, names) in queries.items():
        got = {p["name"] for p in openapi["paths"][path][method].get("parameters", [])}
        assert got == names, path
    app.state.remem.close()


def answer(request: ChatRequest) -> dict[str, Any]:
    if request.operation == "episodes.extract":
        return {"episodes": [{"situation": "asked for 3 km in miles", "action": "said 1.86"}]}
    return {"reasoning": "shorter", "prompt": "Answer {question} in a sentence."}


def _prompt_requests() -> list[PromptRequest[Any]]:
    trajectories = [{"messages": "2+2?", "feedback": "too long"}]
    return [CreatePromptRequest.of(name="qa", text="Answer {question}."),
            UpdatePromptRequest.of(name="qa", text="Answer {question} kindly.", reason="tone"),
            GetPromptRequest.of(name="qa"), GetPromptRequest.of(name="qa", version=1),
            PromptHistoryRequest.of(name="qa"), PromptDiffRequest.of(name="qa", old=1),
            RollbackPromptRequest.of(name="qa", version=1),
            OptimizePromptRequest.of(name="qa", trajectories=trajectories,
                                     strategy="prompt_memory"),
            OptimizePromptRequest.of(name="qa", trajectories=trajectories,
                                     strategy="prompt_memory", commit=True),
            ListPromptsRequest()]


def _episode_requests() -> list[EpisodeRequest[Any]]:
    return [AddEpisodeRequest.of(situation="user wants tea", action="suggested oolong",
                                 metadata={"n": 1}),
            ExtractEpisodesRequest.of(messages="3 km in miles?", thread_id="th"),
            ListEpisodesRequest.of(limit=10),
            SelectExamplesRequest.of(query="recommend tea", k=2)]


_VOLATILE = {"created_at", "author", "id"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.fixture(params=["sqlite", "postgres"])
def server_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A server on a SQLite file or a fresh PostgreSQL database (tests/pg_fixtures)."""
    db = (str(tmp_path / "s.db") if request.param == "sqlite"
          else request.getfixturevalue("pg_database"))
    app = create_app(ServerConfig(db=db, embedder=FakeEmbedder(), mcp=False,
                                  llm=ScriptedModel(default=answer)))
    key = app.state.remem.keys.create("acme")[0]
    with ThreadedServer(app) as server:
        yield server.url, key
    app.state.remem.close()


def test_same_json_everywhere(tmp_path: Path, server_url: tuple[str, str]) -> None:
    url, key = server_url
    seen: dict[str, list[Any]] = {}
    for label in ("run", "arun"):
        store = SQLiteStore(tmp_path / f"{label}.db", index=None)
        store.setup()
        prompts, episodes = PromptRegistry(store), EpisodeStore(store)
        model = ScriptedModel(default=answer)
        out = []
        for request in _prompt_requests():
            result = (prompts.run(request, model) if label == "run"
                      else asyncio.run(prompts.arun(request, model)))
            out.append(prompt_json(request, result))
        for episode_request in _episode_requests():
            found = (episodes.run(episode_request, model) if label == "run"
                     else asyncio.run(episodes.arun(episode_request, model)))
            out.append(episode_json(episode_request, found))
        seen[label] = out
        store.close()
    with Client(url, api_key=key) as client:
        out = [prompt_json(r, client.prompts.run(r)) for r in _prompt_requests()]
        out += [episode_json(r, client.episodes.run(r)) for r in _episode_requests()]
        seen["client"] = out
    assert _stable(seen["run"]) == _stable(seen["arun"]) == _stable(seen["client"])
    optimized = seen["client"][8]
    assert optimized["committed_version"] == 4 and optimized["calls"] == 1


def test_every_procedural_route_declares_its_answer(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "o.db", mcp=False))
    paths = app.openapi()["paths"]
    routes = [(p, ops) for p, ops in paths.items() if p.startswith(("/v1/prompts",
                                                                    "/v1/episodes"))]
    assert len(routes) == 12
    for path, operations in routes:
        for verb, operation in operations.items():
            answer = operation["responses"]["200"]["content"]["application/json"]
            assert "$ref" in answer["schema"], (verb, path)
    app.state.remem.close()
