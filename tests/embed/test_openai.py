"""OpenAIEmbedder against the loopback server: headers, settings, batching, retries, errors.

The shared behaviour of all embedders is in ``tests/conformance/test_embedders.py``; this file
covers what is specific to the HTTP client and to the server's wire format.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import numpy as np
import pytest

from remem.embed.openai import DEFAULT_BASE_URL, OpenAIEmbedder
from remem.errors import ConfigError, EmbeddingError, InvalidInputError, UsageError
from remem.testing import LoopbackServer, drop_data, reverse_data

KEY = "sk-test-0123456789abcdef"
DIMS = 16
Make = Callable[..., OpenAIEmbedder]

_ENV = ["REMEM_EMBED_BASE_URL", "REMEM_EMBED_API_KEY", "REMEM_EMBED_MODEL", "OPENAI_BASE_URL",
        "OPENAI_API_KEY"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # a developer's real key or base URL must never leak into these tests
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(dims=DIMS, api_key=KEY) as running:
        yield running


@pytest.fixture
def make(server: LoopbackServer) -> Iterator[Make]:
    """Embedders pointed at the loopback server (fast retries), closed after the test."""
    made: list[OpenAIEmbedder] = []

    def factory(model: str | None = "text-embedding-3-small", **kwargs: Any) -> OpenAIEmbedder:
        kwargs.setdefault("base_url", server.url)
        kwargs.setdefault("api_key", KEY)
        kwargs.setdefault("retry_backoff", 0.001)
        embedder = OpenAIEmbedder(model, **kwargs)
        made.append(embedder)
        return embedder

    yield factory
    for embedder in made:
        embedder.close()


# -- requests on the wire -----------------------------------------------------------------------


def test_request_carries_bearer_key_model_and_inputs(server: LoopbackServer, make: Make) -> None:
    embedder = make(headers={"OpenAI-Organization": "org-1"})
    vectors = embedder.embed_documents(["hello world", "我喜欢喝茶"])
    assert np.allclose(vectors, server.vectors_for(["hello world", "我喜欢喝茶"]), atol=1e-6)
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["openai-organization"] == "org-1"
    assert request.headers["user-agent"].startswith("remem/")
    assert request.body == {"model": "text-embedding-3-small",
                            "input": ["hello world", "我喜欢喝茶"], "encoding_format": "float"}


def test_no_key_sends_no_authorization_header(make: Make) -> None:
    with LoopbackServer(dims=DIMS) as local:  # like Ollama: no key needed
        embedder = make(base_url=local.url, api_key=None)
        assert embedder.embed_documents(["x"]).shape == (1, DIMS)
        assert "authorization" not in local.requests[0].headers


def test_empty_key_sends_none_even_with_a_key_in_the_env(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-meant-for-openai-only")
    with LoopbackServer(dims=DIMS) as local, OpenAIEmbedder("m", base_url=local.url,
                                                            api_key="") as embedder:
        embedder.embed_documents(["x"])
        assert "authorization" not in local.requests[0].headers


def test_azure_style_url_keeps_its_query(server: LoopbackServer, make: Make) -> None:
    embedder = make(base_url=server.url + "?api-version=2024-02-01")
    embedder.embed_documents(["x"])
    assert (server.requests[0].path, server.requests[0].query) == ("/v1/embeddings",
                                                                   "api-version=2024-02-01")


def test_model_name_and_repr_hide_the_key(make: Make) -> None:
    embedder = make()
    assert embedder.model == "openai:text-embedding-3-small"
    assert KEY not in repr(embedder)


# -- settings from the environment ------------------------------------------------------------


def test_settings_come_from_remem_env_vars(server: LoopbackServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBED_MODEL", "nomic-embed-text")
    monkeypatch.setenv("REMEM_EMBED_BASE_URL", server.url)
    monkeypatch.setenv("REMEM_EMBED_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # loses to REMEM_*
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loses")
    with OpenAIEmbedder() as embedder:
        embedder.embed_documents(["x"])
        assert embedder.model == "openai:nomic-embed-text"
        assert embedder.base_url == server.url
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.requests[0].body["model"] == "nomic-embed-text"


def test_openai_env_vars_are_the_fallback(server: LoopbackServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIEmbedder("m") as embedder:
        embedder.embed_documents(["x"])
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_arguments_beat_env_and_default_url_is_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    assert OpenAIEmbedder("m").base_url == DEFAULT_BASE_URL == "https://api.openai.com/v1"
    monkeypatch.setenv("REMEM_EMBED_MODEL", "env-model")
    monkeypatch.setenv("REMEM_EMBED_BASE_URL", "http://127.0.0.1:9/v1")
    embedder = OpenAIEmbedder("arg-model", base_url="http://localhost:11434/v1")
    assert (embedder.model, embedder.base_url) == ("openai:arg-model",
                                                   "http://localhost:11434/v1")


def test_missing_model_names_the_argument_and_env_var() -> None:
    with pytest.raises(ConfigError, match=r"model=.*REMEM_EMBED_MODEL"):
        OpenAIEmbedder()


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"batch_size": 0}, "batch_size"),
    ({"dims": 0}, "dims"),
    ({"request_dimensions": True}, "request_dimensions"),
    ({"max_retries": -1}, "max_retries"),
    ({"timeout": 0}, "timeout"),
    ({"base_url": "localhost:11434/v1"}, "base_url"),
    ({"base_url": "http://[::1"}, "base_url"),
    ({"encoding_format": "int8"}, "encoding_format"),
])
def test_invalid_settings_raise_config_error(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        OpenAIEmbedder("m", **kwargs)


# -- batching, ordering, encodings, dims ------------------------------------------------------


def test_long_inputs_are_split_into_batches(server: LoopbackServer, make: Make) -> None:
    texts = [f"text number {i}" for i in range(10)]
    vectors = make(batch_size=4).embed_documents(texts)
    assert [len(r.body["input"]) for r in server.requests] == [4, 4, 2]
    assert np.allclose(vectors, server.vectors_for(texts), atol=1e-6)


def test_rows_are_reordered_by_index(server: LoopbackServer, make: Make) -> None:
    texts = ["alpha", "beta", "gamma"]
    server.enqueue(transform=reverse_data)
    vectors = make().embed_documents(texts)
    assert server.pending == 0
    assert np.allclose(vectors, server.vectors_for(texts), atol=1e-6)


def test_vectors_are_normalised_to_unit_float32(server: LoopbackServer, make: Make) -> None:
    def scale(body: Any) -> Any:  # providers do not all return unit vectors
        for item in body["data"]:
            item["embedding"] = [2.5 * x for x in item["embedding"]]
        return body

    server.enqueue(transform=scale)
    vectors = make().embed_documents(["alpha", "beta"])
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, server.vectors_for(["alpha", "beta"]), atol=1e-6)


def test_base64_encoding_gives_the_same_vectors(server: LoopbackServer, make: Make) -> None:
    texts = ["alpha beta", "记忆"]
    vectors = make(encoding_format="base64").embed_documents(texts)
    assert server.requests[0].body["encoding_format"] == "base64"
    assert np.allclose(vectors, server.vectors_for(texts), atol=1e-6)


def test_dims_probe_happens_once_and_only_when_needed(server: LoopbackServer,
                                                      make: Make) -> None:
    probed = make()
    assert probed.dims == DIMS
    assert probed.dims == DIMS
    assert len(server.requests) == 1
    learned = make()
    learned.embed_documents(["x"])  # the first answer tells the length: no probe
    assert learned.dims == DIMS
    assert len(server.requests) == 2
    assert make(dims=DIMS).dims == DIMS
    assert len(server.requests) == 2


def test_concurrent_threads_share_one_probe_and_one_client(server: LoopbackServer,
                                                           make: Make) -> None:
    embedder = make()
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(embedder.dims)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [DIMS] * 8
    assert len(server.requests) == 1
    texts = [[f"thread {i} text {j}" for j in range(5)] for i in range(8)]
    out: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        out[i] = embedder.embed_documents(texts[i])

    workers = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for i in range(8):
        assert np.allclose(out[i], server.vectors_for(texts[i]), atol=1e-6)


def test_request_dimensions_sends_the_dimensions_field(server: LoopbackServer,
                                                       make: Make) -> None:
    vectors = make(dims=8, request_dimensions=True).embed_queries(["short vectors"])
    assert server.requests[0].body["dimensions"] == 8
    assert vectors.shape == (1, 8)
    assert np.allclose(vectors, server.vectors_for(["short vectors"], dimensions=8), atol=1e-6)


def test_configured_dims_that_do_not_match_raise(make: Make) -> None:
    with pytest.raises(EmbeddingError, match=r"expected 32-dimensional vectors.*got 16"):
        make(dims=32).embed_documents(["x"])


def test_prefixes_are_applied_to_the_text_sent(server: LoopbackServer, make: Make) -> None:
    embedder = make(query_prefix="search_query: ", document_prefix="search_document: ")
    documents = embedder.embed_documents(["tea"])
    queries = embedder.embed_queries(["tea"])
    assert [r.body["input"] for r in server.requests] == [["search_document: tea"],
                                                          ["search_query: tea"]]
    assert np.allclose(documents, server.vectors_for(["search_document: tea"]), atol=1e-6)
    assert np.allclose(queries, server.vectors_for(["search_query: tea"]), atol=1e-6)


def test_empty_inputs_make_no_request_and_empty_strings_are_zero(server: LoopbackServer,
                                                                 make: Make) -> None:
    embedder = make(dims=DIMS)
    assert embedder.embed_documents([]).shape == (0, DIMS)
    assert np.array_equal(embedder.embed_queries(["", ""]), np.zeros((2, DIMS), np.float32))
    assert server.requests == []
    vectors = embedder.embed_documents(["", "tea"])
    assert server.requests[0].body["input"] == ["tea"]  # OpenAI answers 400 to ""
    assert not vectors[0].any() and np.isclose(np.linalg.norm(vectors[1]), 1.0)


def test_a_bare_string_is_refused(make: Make) -> None:
    with pytest.raises(InvalidInputError, match=r"wrap a single text as \[text\]"):
        make().embed_documents("hello")
    with pytest.raises(InvalidInputError, match="text 1 must be a string"):
        make().embed_documents(["ok", 3])  # type: ignore[list-item]


# -- retries ----------------------------------------------------------------------------------


def test_429_is_retried_after_retry_after_seconds(server: LoopbackServer, make: Make) -> None:
    server.enqueue(429, headers={"Retry-After": "0"})
    server.enqueue(429, headers={"Retry-After": "0.05"})
    embedder = make(retry_backoff=30.0)  # would hang if Retry-After were ignored
    started = time.monotonic()
    vectors = embedder.embed_documents(["x"])
    assert 0.05 <= time.monotonic() - started < 5
    assert len(server.requests) == 3 == embedder.requests_sent
    assert np.allclose(vectors, server.vectors_for(["x"]), atol=1e-6)


def test_retry_after_as_an_http_date(server: LoopbackServer, make: Make) -> None:
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=1), usegmt=True)
    server.enqueue(503, headers={"Retry-After": past})
    make(retry_backoff=30.0).embed_documents(["x"])
    assert len(server.requests) == 2


def test_retry_after_ms_is_honoured(server: LoopbackServer, make: Make) -> None:
    server.enqueue(429, headers={"retry-after-ms": "1", "Retry-After": "30"})
    make(retry_backoff=30.0).embed_documents(["x"])
    assert len(server.requests) == 2


def test_5xx_until_retries_run_out(server: LoopbackServer, make: Make) -> None:
    for _ in range(3):
        server.enqueue(500)
    with pytest.raises(EmbeddingError) as caught:
        make(max_retries=2).embed_documents(["x"])
    message = str(caught.value)
    assert "after 3 attempt(s)" in message and "HTTP 500" in message
    assert "The server had an error" in message  # the provider's own message
    assert len(server.requests) == 3


def test_dropped_connection_is_retried(server: LoopbackServer, make: Make) -> None:
    server.enqueue(disconnect=True)
    vectors = make().embed_documents(["x"])
    assert len(server.requests) == 2
    assert np.allclose(vectors, server.vectors_for(["x"]), atol=1e-6)


def test_unreachable_server(make: Make) -> None:
    with LoopbackServer() as gone:
        url = gone.url
    with pytest.raises(EmbeddingError, match=r"after 2 attempt\(s\).*connection failed"):
        make(base_url=url, max_retries=1).embed_documents(["x"])


def test_timeout(server: LoopbackServer, make: Make) -> None:
    server.enqueue(delay=1.0)
    with pytest.raises(EmbeddingError, match=r"timed out after 0.05s"):
        make(timeout=0.05, max_retries=0).embed_documents(["x"])


# -- errors that are not retried ------------------------------------------------------------


def test_401_says_check_the_key_and_never_shows_it(server: LoopbackServer, make: Make) -> None:
    wrong = "sk-wrong-key-abcdefghijklmnop"
    # some servers echo the key they got: the message must still not contain it
    server.enqueue(401, body={"error": {"message": f"bad key {wrong}"}})
    with pytest.raises(EmbeddingError) as caught:
        make(api_key=wrong).embed_documents(["x"])
    message = str(caught.value)
    assert "HTTP 401" in message and "check it" in message and "REMEM_EMBED_API_KEY" in message
    assert wrong not in message and "bad key ***" in message
    assert len(server.requests) == 1


def test_wrong_key_refused_by_the_server(server: LoopbackServer, make: Make) -> None:
    with pytest.raises(EmbeddingError, match="HTTP 401: Incorrect API key provided"):
        make(api_key="sk-not-the-right-one").embed_documents(["x"])


def test_missing_key_is_named_as_the_cause(make: Make) -> None:
    with pytest.raises(EmbeddingError, match="No API key was sent"):
        make(api_key=None).embed_documents(["x"])


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_4xx_fail_at_once(server: LoopbackServer, make: Make, status: int) -> None:
    server.enqueue(status, body={"error": {"message": f"provider says {status}"}})
    with pytest.raises(EmbeddingError, match=f"HTTP {status}: provider says {status}"):
        make().embed_documents(["x"])
    assert len(server.requests) == 1


def test_unknown_model_and_ollama_style_errors(make: Make) -> None:
    with LoopbackServer(dims=DIMS, models={"nomic-embed-text"}) as strict:
        with pytest.raises(EmbeddingError, match=r"model `missing` does not exist.*base_url"):
            make("missing", base_url=strict.url).embed_documents(["x"])
        strict.enqueue(400, body={"error": 'model "x" not found, try pulling it first'})
        with pytest.raises(EmbeddingError, match="try pulling it first"):
            make("nomic-embed-text", base_url=strict.url).embed_documents(["x"])


# -- malformed responses ----------------------------------------------------------------------


def _set_first_embedding(value: object) -> Callable[[Any], Any]:
    def transform(body: Any) -> Any:
        body["data"][0]["embedding"] = value
        return body
    return transform


@pytest.mark.parametrize(("reply", "fragment"), [
    ({"transform": drop_data(1)}, "expected 3 embeddings .one per input., got 2"),
    ({"body": "<html>gateway</html>"}, "body is not JSON: <html>gateway</html>"),
    ({"body": {"object": "list"}}, "'data' list"),
    ({"transform": _set_first_embedding([1.0, 2.0])}, r"same length, got lengths \[2, 16\]"),
    ({"transform": _set_first_embedding("!!notbase64")}, "not base64"),
    ({"transform": _set_first_embedding(["a"])}, "list of numbers"),
    ({"transform": lambda b: {**b, "data": [b["data"][0]] * 3}}, "index 0 appears twice"),
])
def test_malformed_responses_raise(server: LoopbackServer, make: Make, reply: dict[str, Any],
                                   fragment: str) -> None:
    server.enqueue(**reply)
    with pytest.raises(EmbeddingError, match=fragment):
        make().embed_documents(["a", "b", "c"])


def test_closed_embedder_refuses_work(make: Make) -> None:
    embedder = make()
    with embedder:
        embedder.embed_documents(["x"])
    with pytest.raises(UsageError, match="closed"):
        embedder.embed_documents(["x"])


# -- the loopback server speaks OpenAI's format ------------------------------------------------


def test_server_wire_format(server: LoopbackServer) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=server.url, headers=auth) as client:
        single = client.post("/embeddings", json={"model": "m", "input": "one text"}).json()
        assert single["object"] == "list" and single["model"] == "m"
        assert single["data"][0]["object"] == "embedding" and single["data"][0]["index"] == 0
        assert single["usage"] == {"prompt_tokens": 2, "total_tokens": 2}
        packed = client.post("/embeddings", json={"model": "m", "input": ["one text"],
                                                  "encoding_format": "base64",
                                                  "dimensions": 4}).json()
        vector = np.frombuffer(base64.b64decode(packed["data"][0]["embedding"]), "<f4")
        assert np.allclose(vector, server.vectors_for(["one text"], dimensions=4)[0])
        for bad in [{"model": "m", "input": ""}, {"model": "m", "input": []},
                    {"input": ["x"]}, {"model": "m", "input": [[1, 2]]},
                    {"model": "m", "input": "x", "dimensions": DIMS + 1},
                    {"model": "m", "input": "x", "encoding_format": "int8"}]:
            assert client.post("/embeddings", json=bad).status_code == 400, bad
        assert client.post("/chat/nothing", json={}).status_code == 404
        assert client.get("/embeddings").status_code == 405
        assert client.post("/embeddings", json={"model": "m", "input": "x"},
                           headers={"Authorization": "Bearer nope"}).status_code == 401
    assert server.requests[0].body == {"model": "m", "input": "one text"}


def test_prefixes_are_part_of_the_model_name() -> None:
    plain = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="")
    prefixed = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="",
                              document_prefix="passage: ")
    other = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="",
                           document_prefix="search_document: ")
    assert plain.model == "openai:m"
    assert prefixed.model.startswith("openai:m+prefix:")
    assert len({plain.model, prefixed.model, other.model}) == 3
    for embedder in (plain, prefixed, other):
        embedder.close()
