"""Reproductions of the input-bounds defects of issue 16, kept as tests: every input path
refuses what could not be read back (deep values, huge filters, far TTLs, unreachable thread
ids) with a typed error naming the limit, before anything is written; embedder failures and
bad vectors are EmbeddingErrors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.embed import FakeEmbedder
from remem.errors import (
    EmbeddingError,
    FilterError,
    InvalidInputError,
    InvalidValueError,
)
from remem.memory.requests import AddRequest, GetRequest, UpdateRequest
from remem.requests import MAX_JSON_DEPTH
from remem.server import ServerConfig, create_app
from remem.store import IndexConfig, PutOp, SQLiteStore
from remem.store.filters import MAX_CONDITIONS
from remem.store.types import MAX_VALUE_DEPTH
from remem.threads import ThreadStore
from remem.threads.requests import CreateThreadRequest, ForkRequest, ListThreadsRequest


def nested(levels: int) -> dict[str, Any]:
    """``{"a": {"a": ...}}``: ``levels`` objects deep (the outer one is level 1)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    with SQLiteStore(":memory:") as opened:
        yield opened


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    token = app.state.remem.keys.create("acme")[0]
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c
    app.state.remem.close()


# -- one nesting limit ------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [MAX_VALUE_DEPTH + 1, 300, 1_500, 100_000])
def test_store_refuses_values_nested_past_the_limit(store: SQLiteStore, levels: int) -> None:
    # before: 256-970 levels were stored and could not be read back over HTTP; 1,500+ raised
    # a raw RecursionError
    with pytest.raises(InvalidValueError, match=rf"^value\.a\.a.*: nested deeper than "
                                                rf"{MAX_VALUE_DEPTH} levels"):
        store.put(("ns",), "k", nested(levels))
    assert store.get(("ns",), "k") is None


def test_store_keeps_values_at_the_limit(store: SQLiteStore) -> None:
    store.put(("ns",), "k", nested(MAX_VALUE_DEPTH))
    item = store.get(("ns",), "k")
    assert item is not None and item.value == nested(MAX_VALUE_DEPTH)


def test_a_value_that_contains_itself_is_a_nesting_error(store: SQLiteStore) -> None:
    value: dict[str, Any] = {"list": []}
    value["list"].append(value)
    with pytest.raises(InvalidValueError, match="nested deeper than"):
        store.put(("ns",), "k", value)


def test_the_path_names_lists_and_keys(store: SQLiteStore) -> None:
    value = {"x": [nested(MAX_VALUE_DEPTH)]}
    with pytest.raises(InvalidValueError, match=r"^value\.x\[0\]\.a"):
        store.put(("ns",), "k", value)


def test_http_store_put_refuses_deep_values_and_reads_back_what_it_took(
        client: TestClient) -> None:
    r = client.put("/v1/store/items", json={"namespace": ["deep"], "key": "k",
                                           "value": nested(300)})
    assert r.status_code == 422, r.text
    assert f"nested deeper than {MAX_VALUE_DEPTH} levels" in r.json()["message"]
    r = client.get("/v1/store/items", params={"namespace": ["deep"], "key": "k"})
    assert r.status_code == 404
    ok = client.put("/v1/store/items", json={"namespace": ["deep"], "key": "k",
                                            "value": nested(MAX_VALUE_DEPTH)})
    assert ok.status_code == 200, ok.text
    r = client.get("/v1/store/items", params={"namespace": ["deep"], "key": "k"})
    assert r.status_code == 200 and r.json()["value"] == nested(MAX_VALUE_DEPTH)


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 300, 1_500])
def test_memory_metadata_past_the_limit_is_refused_before_writing(store: SQLiteStore,
                                                                 levels: int) -> None:
    memory = Memory(store)
    with pytest.raises(InvalidInputError, match=rf"metadata\.a\.a.*: nested deeper than "
                                                rf"{MAX_JSON_DEPTH} levels"):
        memory.add("I like tea", user_id="u", infer=False, metadata=nested(levels))
    assert memory.get_all(user_id="u").memories == ()


def test_memory_metadata_at_the_limit_is_kept_with_its_history(store: SQLiteStore) -> None:
    memory = Memory(store)
    added = memory.add("I like tea", user_id="u", infer=False, metadata=nested(MAX_JSON_DEPTH))
    memory_id = added.changes[0].memory.id
    memory.update(memory_id, metadata=nested(MAX_JSON_DEPTH), content="I like green tea")
    assert memory.get(memory_id).metadata == nested(MAX_JSON_DEPTH)
    assert len(memory.history(memory_id)) == 2


def test_update_content_and_http_metadata_are_bounded(client: TestClient) -> None:
    with pytest.raises(InvalidInputError, match=rf"^invalid UpdateRequest: content\.a\.a.*"
                                                rf"nested deeper than {MAX_JSON_DEPTH}"):
        UpdateRequest.of(memory_id="m", content=nested(MAX_JSON_DEPTH + 1))
    # before: 950 levels answered 400 although the memory was stored
    r = client.post("/v1/memories", json={"messages": "tea", "user_id": "deep", "infer": False,
                                          "metadata": nested(300)})
    assert r.status_code == 422, r.text
    assert "metadata.a.a" in r.json()["message"]
    listed = client.post("/v1/memories/list", json={"user_id": "deep"})
    assert listed.status_code == 200 and listed.json()["memories"] == []


def test_thread_metadata_and_state_are_bounded() -> None:
    with pytest.raises(InvalidInputError, match=r"metadata\.a\[0\]"):
        CreateThreadRequest.of(metadata={"a": [nested(MAX_JSON_DEPTH)]})
    with ThreadStore(":memory:") as threads, pytest.raises(InvalidInputError, match="state"):
        thread = threads.create()
        threads.update_state(thread.id, nested(MAX_JSON_DEPTH + 1))


def test_json_fields_hold_only_json() -> None:
    with pytest.raises(InvalidInputError, match=r"metadata is not JSON.*surrogate"):
        AddRequest.of(messages="x", user_id="u", metadata={"a": "\ud800"})
    with pytest.raises(InvalidInputError, match=r"content is not JSON"):
        UpdateRequest.of(memory_id="m", content={"a": float("nan")})


# -- filters ----------------------------------------------------------------------------------


@pytest.mark.parametrize("filter", [
    {"$or": [{"a": i} for i in range(500)]},
    {f"k{i}": i for i in range(500)},
    {"$or": [{} for _ in range(500)]},
], ids=["or-500", "dict-500", "or-of-empty-500"])
def test_large_filters_are_filter_errors_before_sql(store: SQLiteStore,
                                                    filter: dict[str, Any]) -> None:
    # before: SQLite's "Expression tree is too large", a StoreError naming the database file
    with pytest.raises(FilterError, match=rf"the limit is {MAX_CONDITIONS}"):
        store.search(("ns",), filter=filter)


def test_large_filters_are_422_over_http(client: TestClient) -> None:
    big = {"$or": [{"a": i} for i in range(500)]}
    for path, body in (("/v1/store/search", {"namespace_prefix": [], "filter": big}),
                       ("/v1/memories/search", {"user_id": "u", "filters": big}),
                       ("/v1/threads/list", {"filter": {f"k{i}": i for i in range(1000)}})):
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, r.text)
        assert f"the limit is {MAX_CONDITIONS}" in r.json()["message"], path


def test_thread_list_filters_are_bounded_in_python() -> None:
    with ThreadStore(":memory:") as threads, pytest.raises(FilterError, match="conditions"):
        threads.run(ListThreadsRequest(filter={f"k{i}": i for i in range(1000)}))


# -- TTL ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ttl", [3e11, 1e300, 10**400])
def test_ttls_past_year_9999_are_refused(store: SQLiteStore, ttl: float) -> None:
    # before: 3e11 made get/search/iter_items raise "year 11533 is out of range"; 1e300 an
    # OverflowError
    with pytest.raises(InvalidInputError, match=r"ttl must be at most 1e\+10 seconds"):
        store.put(("ns",), "k", {"a": 1}, ttl=ttl)
    store.put(("ns",), "ok", {"a": 1}, ttl=1e10)
    assert [i.key for i in store.search(("ns",))] == ["ok"]
    assert [i.key for i in store.iter_items(("ns",))] == ["ok"]


@pytest.mark.parametrize("field", ["event_at", "updated_at", "created_at", "expires_at"])
def test_timestamps_past_year_9999_are_refused(store: SQLiteStore, field: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"{field} must be epoch seconds within "
                                                "years 1-9999"):
        store.batch([PutOp(("ns",), "k", {"a": 1}, **{field: 1e12})])
    assert store.get(("ns",), "k") is None


def test_an_import_near_year_9999_keeps_its_expiry_readable(store: SQLiteStore) -> None:
    store.batch([PutOp(("ns",), "k", {"a": 1}, ttl=1e10, updated_at=253_402_000_000.0,
                       created_at=253_402_000_000.0)])
    item = store.get(("ns",), "k", refresh_ttl=False)
    assert item is not None and item.expires_at is not None
    assert item.expires_at.year == 9999


# -- thread ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["x/y", "/", "..", "."])
def test_new_thread_ids_every_route_can_reach(bad: str, client: TestClient) -> None:
    # before: "x/y" was created (201) and then every route answered 404
    with pytest.raises(InvalidInputError, match="thread_id"):
        CreateThreadRequest.of(thread_id=bad)
    with pytest.raises(InvalidInputError, match="new_thread_id"):
        ForkRequest.of(thread_id="t", new_thread_id=bad)
    r = client.post("/v1/threads", json={"thread_id": bad})
    assert r.status_code == 422, r.text
    created = client.post("/v1/threads", json={"thread_id": "x:y"})
    assert created.status_code in (200, 201) or "already" in created.text
    assert client.get("/v1/threads/x:y").status_code == 200


# -- typed Python API errors --------------------------------------------------------------------


def test_a_lone_surrogate_in_added_text_is_invalid_input(store: SQLiteStore) -> None:
    # before: UnicodeEncodeError from the store
    memory = Memory(store)
    with pytest.raises(InvalidInputError, match=r"messages: message 0 contains a lone "
                                                "surrogate"):
        memory.add("hello \ud800 there", user_id="u", infer=False)


def test_a_blank_memory_id_is_called_blank() -> None:
    with pytest.raises(InvalidInputError, match="memory_id: is blank"):
        GetRequest.of(memory_id=" ")


class _Embedder(FakeEmbedder):
    def __init__(self, fault: str) -> None:
        super().__init__(8)
        self.fault = fault

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fault == "raise":
            raise ConnectionError("the model server went away")
        vectors = super().embed_documents(texts).copy()
        if self.fault == "zero":
            vectors[-1] = 0
        else:
            vectors[-1, 0] = np.nan if self.fault == "nan" else np.inf
        return vectors


def test_an_embedder_failure_is_an_embedding_error_with_its_cause() -> None:
    with SQLiteStore(":memory:", index=IndexConfig(_Embedder("raise"), fields=("text",))) as s:
        with pytest.raises(EmbeddingError, match="ConnectionError: the model server") as info:
            s.put(("ns",), "k", {"text": "tea"})
        assert isinstance(info.value.__cause__, ConnectionError)
        assert s.get(("ns",), "k") is None


@pytest.mark.parametrize(("fault", "what"), [("nan", "NaN or infinite values"),
                                           ("inf", "NaN or infinite values"),
                                           ("zero", "an all-zero vector")])
def test_non_finite_and_zero_vectors_are_refused(fault: str, what: str) -> None:
    # before: stored silently, and searches then scored nan (or 0 for the zero vector)
    with SQLiteStore(":memory:", index=IndexConfig(_Embedder(fault), fields=("text",))) as s:
        with pytest.raises(EmbeddingError, match=rf"{what} for text 1 of 2 \('coffee'\)"):
            s.batch([PutOp(("ns",), "a", {"text": "tea"}),
                     PutOp(("ns",), "b", {"text": "coffee"})])
        assert s.search(("ns",)) == []


# -- JSONL import -------------------------------------------------------------------------------


@pytest.mark.parametrize(("levels", "message"), [
    (MAX_VALUE_DEPTH + 1, f"line 2: value.a.a.*nested deeper than {MAX_VALUE_DEPTH} levels"),
    (100_000, f"line 2: nested too deeply to read; values nest at most {MAX_VALUE_DEPTH}"),
])
def test_import_refuses_deep_lines_naming_them(store: SQLiteStore, levels: int,
                                               message: str) -> None:
    import json

    from remem.errors import ImportFormatError
    from remem.store.jsonl import import_jsonl

    ok = json.dumps({"namespace": ["ns"], "key": "ok", "value": {"a": 1}})
    deep = ('{"namespace": ["ns"], "key": "deep", "value": ' + '{"a": ' * levels + "1"
            + "}" * levels + "}")
    with pytest.raises(ImportFormatError, match=message):
        import_jsonl(store, [ok, deep])
    assert store.search(("ns",)) == []


def test_import_refuses_ttls_past_year_9999(store: SQLiteStore) -> None:
    import json

    from remem.errors import ImportFormatError
    from remem.store.jsonl import import_jsonl

    line = json.dumps({"namespace": ["ns"], "key": "k", "value": {}, "ttl": 3e11})
    with pytest.raises(ImportFormatError, match="line 1: ttl must be at most"):
        import_jsonl(store, [line])


def test_message_metadata_and_tool_arguments_are_bounded() -> None:
    from remem.messages import Message

    # before: 3,000 levels of message metadata raised a raw PydanticSerializationError, and
    # 100 levels were stored though HTTP could not encode them back
    with ThreadStore(":memory:") as threads:
        thread = threads.create()
        for levels in (MAX_JSON_DEPTH + 1, 3_000):
            with pytest.raises(InvalidInputError, match=r"messages\[0\]\.metadata\.a\.a.*"
                                                        rf"nested deeper than {MAX_JSON_DEPTH}"):
                threads.append(thread.id, [Message.user("hi", metadata=nested(levels))])
        deep_args = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
        call = {"id": "c1", "type": "function",
                "function": {"name": "f", "arguments": deep_args}}
        with pytest.raises(InvalidInputError, match=r"messages\[1\]\.tool_calls\[0\]\."
                                                    r"arguments\.a"):
            threads.append(thread.id, [{"role": "user", "content": "hi"},
                                       {"role": "assistant", "content": None,
                                        "tool_calls": [call]}])
        assert threads.messages(thread.id) == []
        threads.append(thread.id, [Message.user("hi", metadata=nested(MAX_JSON_DEPTH))])
        assert threads.messages(thread.id)[0].metadata == nested(MAX_JSON_DEPTH)


def test_json_at_the_limit_reads_back_over_http(client: TestClient) -> None:
    deep = nested(MAX_JSON_DEPTH)
    added = client.post("/v1/memories", json={"messages": "deep tea", "user_id": "edge",
                                              "infer": False, "metadata": deep})
    assert added.status_code == 200, added.text
    memory_id = added.json()["changes"][0]["memory"]["id"]
    patched = client.patch(f"/v1/memories/{memory_id}", json={"metadata": deep,
                                                              "content": "deep green tea"})
    assert patched.status_code == 200, patched.text
    assert client.get(f"/v1/memories/{memory_id}").json()["metadata"] == deep
    history = client.get(f"/v1/memories/{memory_id}/history")
    assert history.status_code == 200 and len(history.json()["events"]) == 2
    hits = client.post("/v1/memories/search", json={"user_id": "edge", "query": "tea"})
    assert hits.status_code == 200 and hits.json()["hits"][0]["memory"]["metadata"] == deep
    made = client.post("/v1/threads", json={"thread_id": "edge", "metadata": deep,
                                            "messages": [{"role": "user", "content": "hi"}]})
    assert made.status_code in (200, 201), made.text
    state = client.post("/v1/threads/edge/state", json={"state": deep})
    assert state.status_code == 200, state.text
    assert client.get("/v1/threads/edge").json()["metadata"] == deep
    assert client.get("/v1/threads/edge/checkpoint").status_code == 200


def test_cli_json_argument_nested_past_the_parser_is_a_clear_error() -> None:
    from click.testing import CliRunner

    from remem.cli import cli

    deep = '{"a":' * 5000 + "1" + "}" * 5000
    result = CliRunner().invoke(cli, ["search", "--db", ":memory:", "--embedder", "fake",
                                      "--user", "u", "--filter", deep])
    assert result.exit_code == 2, result.output
    assert "nested deeper than remem accepts" in result.output
    assert "Traceback" not in result.output
