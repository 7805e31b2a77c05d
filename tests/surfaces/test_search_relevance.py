"""Relevance where people and programs read it: ``MemoryHit.relevance`` in Python, the
``relevance`` fields of the HTTP JSON (memories and the raw store) and the Client, ``min_score``
on that scale on every surface, and the relevance the CLI table shows.

The backends' side (the definition, page and candidate independence, the same value on every
backend) is ``tests/conformance/test_relevance.py``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from remem.api import Memory
from remem.cli import cli
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.memory.wire import HitOut
from remem.server import ServerConfig, create_app
from remem.store import IndexConfig, KeywordConfig, open_store
from remem.testing.server import ThreadedServer

QUERY = "where does Ann live?"
LISBON = "She relocated to Lisbon"  # no query word; cosine 0.752 with the query
CAT = "Ann has a cat"  # the query's one word found; cosine 0


#: the vectors of the examples' texts (4 dimensions)
DIRECTIONS: dict[str, list[float]] = {QUERY: [1.0, 0.0, 0.0, 0.0],
                                      LISBON: [0.752, math.sqrt(1 - 0.752 ** 2), 0.0, 0.0],
                                      CAT: [0.0, 0.0, 1.0, 0.0]}


class Directions(FakeEmbedder):
    """The fake embedder, except for the texts of :data:`DIRECTIONS`."""

    def __init__(self) -> None:
        super().__init__(4, model="directions-4")

    def _directed(self, texts: Sequence[str], fallback: npt.NDArray[np.float32]
                  ) -> npt.NDArray[np.float32]:
        rows = [DIRECTIONS.get(text) for text in texts]
        return np.array([row if row is not None else fallback[i]
                         for i, row in enumerate(rows)], dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._directed(texts, super().embed_documents(texts))

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._directed(texts, super().embed_queries(texts))


def _memory() -> Memory:
    store = open_store(":memory:", index=IndexConfig(Directions(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    return Memory(store)


def test_a_memory_found_by_meaning_alone_reads_as_its_cosine_not_0_or_0_5() -> None:
    mem = _memory()
    for text in (LISBON, CAT):
        mem.add(text, user_id="ann", infer=False)
    hits = {hit.memory.text: hit for hit in mem.search(QUERY, user_id="ann")}
    lisbon = hits[LISBON]
    assert set(lisbon.details) == {"vector"}  # found by meaning only
    # before: its fused score, 0.5 as the better vector candidate of two, 0.0 as the weaker
    assert lisbon.relevance == pytest.approx(0.752 / 2, abs=1e-6)
    assert lisbon.relevance_by_signal == pytest.approx({"keyword": 0.0, "vector": 0.752},
                                                       abs=1e-6)
    (vector,) = [h for h in mem.search(QUERY, user_id="ann", mode="vector")
                 if h.memory.text == LISBON]
    assert vector.relevance == pytest.approx(0.752, abs=1e-6)
    # min_score reads relevance: 0.4 drops the Lisbon memory (0.376), keeps the cat (0.5)
    kept = mem.search(QUERY, user_id="ann", min_score=0.4)
    assert [hit.memory.text for hit in kept] == [CAT]
    assert [hit.memory.text for hit in mem.search(QUERY, user_id="ann", min_score=0.37)] == \
        [hit.memory.text for hit in mem.search(QUERY, user_id="ann")]
    for bad in (1.5, -0.5, 1e6):
        with pytest.raises(InvalidInputError, match="min_score"):
            mem.search(QUERY, user_id="ann", min_score=bad)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    app = create_app(ServerConfig(db=":memory:", embedder=Directions(), mcp=False))
    token = app.state.remem.keys.create("acme")[0]
    with ThreadedServer(app) as server:
        with Client(server.url, api_key=token) as client:
            for text in (LISBON, CAT):
                client.add(text, user_id="ann", infer=False)
        yield server.url, token
    app.state.remem.close()


def _post(served: tuple[str, str], path: str, body: dict[str, Any]) -> httpx.Response:
    url, token = served
    return httpx.post(url + path, json=body, headers={"Authorization": f"Bearer {token}"})


def test_http_reports_relevance_and_filters_min_score_on_it(served: tuple[str, str]) -> None:
    answer = _post(served, "/v1/memories/search", {"query": QUERY, "user_id": "ann"})
    assert answer.status_code == 200, answer.text
    hits = {hit["memory"]["text"]: hit for hit in answer.json()["hits"]}
    lisbon = hits[LISBON]
    # the old fields as they were, the new ones beside them
    assert set(lisbon) >= {"memory", "score", "details", "relevance", "relevance_by_signal"}
    assert lisbon["details"]["vector"]["score"] == pytest.approx(0.752, abs=1e-6)
    assert lisbon["relevance"] == pytest.approx(0.376, abs=1e-6)
    assert lisbon["relevance_by_signal"] == pytest.approx({"keyword": 0.0, "vector": 0.752},
                                                          abs=1e-6)
    kept = _post(served, "/v1/memories/search", {"query": QUERY, "user_id": "ann",
                                                  "min_score": 0.4}).json()["hits"]
    assert [hit["memory"]["text"] for hit in kept] == [CAT]
    for bad in (1.5, -0.1):
        refused = _post(served, "/v1/memories/search", {"query": QUERY, "user_id": "ann",
                                                         "min_score": bad})
        assert refused.status_code == 422 and refused.json()["field"] == "body.min_score"
    # the raw store's search reports relevance too
    items = _post(served, "/v1/store/search", {"namespace_prefix": ["memories"],
                                                "query": QUERY}).json()["items"]
    by_text = {item["value"]["text"]: item for item in items}
    assert by_text[LISBON]["relevance"] == pytest.approx(0.376, abs=1e-6)
    assert by_text[LISBON]["relevance_by_signal"]["vector"] == pytest.approx(0.752, abs=1e-6)


def test_the_client_reads_relevance_and_sends_min_score(served: tuple[str, str]) -> None:
    url, token = served
    with Client(url, api_key=token) as client:
        hits = {hit.memory.text: hit for hit in client.search(QUERY, user_id="ann")}
        assert hits[LISBON].relevance == pytest.approx(0.376, abs=1e-6)
        assert hits[CAT].relevance_by_signal == {"keyword": 1.0, "vector": 0.0}
        assert [h.memory.text for h in client.search(QUERY, user_id="ann", min_score=0.4)] \
            == [CAT]
        with pytest.raises(InvalidInputError, match="min_score"):
            client.search(QUERY, user_id="ann", min_score=2.0)


def test_a_reply_from_before_relevance_still_parses() -> None:
    mem = _memory()
    mem.add(LISBON, user_id="ann", infer=False)
    reply = HitOut.of(mem.search(QUERY, user_id="ann")[0]).model_dump(mode="json")
    # no query word occurs in the scope: keywords have nothing to measure and are left out
    assert reply["relevance"] == pytest.approx(0.752, abs=1e-6)
    old = {k: v for k, v in reply.items() if k not in ("relevance", "relevance_by_signal")}
    hit = HitOut.model_validate(old).value()
    assert hit.score == reply["score"] and hit.relevance is None
    assert hit.relevance_by_signal == {} and set(hit.details) == {"vector"}


def test_the_cli_table_shows_relevance(tmp_path: Path) -> None:
    db = str(tmp_path / "mem.db")

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "--embedder", "fake", "--db", db],
                                    prog_name="remem", catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    for text in ("green tea in the morning", "black coffee at night"):
        run("add", text, "--user", "u", "--no-infer")
    hits = json.loads(run("search", "green tea", "--user", "u", "--json"))["hits"]
    assert hits[0]["score"] == 1.0 and hits[0]["relevance"] < 1.0
    table = run("search", "green tea", "--user", "u")
    assert "match" in table.splitlines()[0]  # the relevance column
    for hit in hits:
        assert f"{hit['relevance']:.3f}" in table
    assert "1.000" not in table  # the fused score of the best hit is not what is shown


def test_the_framework_memories_refuse_a_min_score_off_the_scale() -> None:
    from pydantic import ValidationError

    mem = _memory()
    autogen = pytest.importorskip("remem.integrations.autogen")
    llama = pytest.importorskip("remem.integrations.llama_index")
    adk = pytest.importorskip("remem.integrations.google_adk")
    for bad in (1.5, -0.1):
        with pytest.raises(InvalidInputError, match="min_score"):
            autogen.RememMemory(mem, user_id="ann", min_score=bad)
        with pytest.raises(InvalidInputError, match="min_score"):
            adk.RememMemoryService(mem, min_score=bad)
        with pytest.raises(ValidationError, match="min_score"):
            llama.RememMemoryBlock(memory=mem, user_id="ann", min_score=bad)
        with pytest.raises(ValidationError, match="min_score"):
            autogen.RememMemoryConfig(location="memory.db", user_id="ann", min_score=bad)
    assert autogen.RememMemory(mem, user_id="ann", min_score=0.5).min_score == 0.5
