"""The same bad input gets the same answer on SQLite and PostgreSQL, and never a 5xx (issue
32, items 5 and 9): NUL characters (which PostgreSQL's ``text`` and ``jsonb`` cannot hold),
profile values that are not text (``NaN``, ``1e400``, ``true``), unknown fields of chat
messages. A 503 means only that the database failed: data PostgreSQL refuses is a 422 on
every family (the store, the graph, threads, jobs), and a refused connection stays a 503."""

from __future__ import annotations

import json
import secrets
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from remem._postgres import database_error, is_refused_data
from remem.background.storage import PostgresJobStorage
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError, InvalidValueError, StoreError
from remem.graph import Graph, PostgresGraphStorage, SQLiteGraphStorage
from remem.llm import ScriptedModel
from remem.server import ServerConfig, create_app
from remem.server.errors import classify
from remem.store import open_store
from remem.store.postgres import PostgresStore
from remem.threads import ThreadStore
from tests.graph.scripts import E, answer

JSON = {"content-type": "application/json"}
NUL_REFUSED = "contains the NUL character"

#: (name, method, path, body as JSON text): bad input every backend must refuse alike
BAD_INPUTS: list[tuple[str, str, str, str]] = [
    ("memory text", "POST", "/v1/memories",
     json.dumps({"messages": "tea\u0000time", "user_id": "u", "infer": False})),
    ("memory metadata key", "POST", "/v1/memories",
     json.dumps({"messages": "x", "metadata": {"k\u0000": 1}, "user_id": "u",
                 "infer": False})),
    ("message metadata", "POST", "/v1/memories",
     json.dumps({"messages": [{"role": "user", "content": "hi", "metadata": {"a": "\u0000"}}],
                 "user_id": "u", "infer": False})),
    ("unknown message field", "POST", "/v1/memories",
     json.dumps({"messages": [{"role": "user", "content": "hi", "colour": "red"}],
                 "user_id": "u", "infer": False})),
    ("unknown tool call field", "POST", "/v1/threads",
     json.dumps({"messages": [{"role": "assistant", "content": "", "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"},
          "index": 0}]}]})),
    ("search query", "POST", "/v1/memories/search",
     json.dumps({"query": "tea\u0000", "user_id": "u"})),
    ("graph episode", "POST", "/v1/graph/episodes",
     json.dumps({"text": "Ada\u0000 joined Acme", "user_id": "u"})),
    ("graph episode messages", "POST", "/v1/graph/episodes",
     json.dumps({"messages": [{"role": "user", "content": "Ada\u0000"}], "user_id": "u"})),
    ("profile value NUL", "PATCH", "/v1/graph/profile",
     json.dumps({"user_id": "u", "patch": [{"op": "add", "path": "/work/company",
                                            "value": "Ac\u0000me"}]})),
    # JSON allows neither NaN nor 1e400 as finite numbers; Python's parser reads them as
    # nan and inf, which were stored as the strings "nan" and "inf"
    ("profile value NaN", "PATCH", "/v1/graph/profile",
     '{"user_id": "u", "patch": [{"op": "add", "path": "/work/company", "value": NaN}]}'),
    ("profile value 1e400", "PATCH", "/v1/graph/profile",
     '{"user_id": "u", "patch": [{"op": "add", "path": "/work/company", "value": 1e400}]}'),
    ("profile value true", "PATCH", "/v1/graph/profile",
     '{"user_id": "u", "patch": [{"op": "add", "path": "/work/company", "value": true}]}'),
    ("thread metadata", "POST", "/v1/threads", json.dumps({"metadata": {"a": "x\u0000"}})),
    ("thread message", "POST", "/v1/threads", json.dumps({"messages": "x\u0000y"})),
    ("store value", "PUT", "/v1/store/items",
     json.dumps({"namespace": ["notes"], "key": "k", "value": {"t": "x\u0000"}})),
    ("store value key", "PUT", "/v1/store/items",
     json.dumps({"namespace": ["notes"], "key": "k", "value": {"t\u0000": 1}})),
    ("episode", "POST", "/v1/episodes",
     json.dumps({"situation": "a\u0000", "action": "b"})),
    ("prompt", "POST", "/v1/prompts", json.dumps({"name": "p", "text": "Hi\u0000"})),
]


def _extract(request: Any) -> dict[str, Any]:
    return answer([E("Ada")], [])(request)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path
           ) -> Iterator[tuple[str, TestClient, ScriptedModel]]:
    db = request.getfixturevalue("pg_database") if request.param == "postgres" \
        else str(tmp_path / "server.db")
    model = ScriptedModel(default=_extract)
    app = create_app(ServerConfig(db=db, embedder=FakeEmbedder(), llm=model, mcp=False,
                                  auth=False))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield str(request.param), client, model
    app.state.remem.close()


def _answers(client: TestClient) -> dict[str, tuple[int, str, str]]:
    out = {}
    for name, method, path, body in BAD_INPUTS:
        response = client.request(method, path, content=body, headers=JSON)
        data = response.json()
        out[name] = (response.status_code, data["error"], data["message"])
    return out


_SEEN: dict[str, dict[str, tuple[int, str, str]]] = {}


def test_bad_input_is_a_422_naming_the_field_never_a_5xx(
        served: tuple[str, TestClient, ScriptedModel]) -> None:
    backend, client, model = served
    answers = _answers(client)
    _SEEN[backend] = answers
    assert {name: status for name, (status, _, _) in answers.items()} == {
        name: 422 for name, *_ in BAD_INPUTS}
    for name, (_, _, message) in answers.items():
        if "NaN" in name or "1e400" in name:
            assert "is not a finite number" in message, (name, message)
        elif "true" in name:
            assert "true is not a profile value" in message, (name, message)
        elif "unknown" in name:
            assert "unknown field" in message and "refused, not dropped" in message, message
        else:
            assert NUL_REFUSED in message, (name, message)
    assert model.requests == []  # refused before the model was called
    # nothing was written by any of them
    listed = client.post("/v1/memories/list", json={"user_id": "u"}).json()
    assert listed["memories"] == []
    assert client.get("/v1/store/items", params={"namespace": "notes", "key": "k"}
                      ).status_code == 404
    assert client.post("/v1/graph/profile", json={"user_id": "u"}).json() == {"topics": {}}
    if len(_SEEN) == 2:  # both backends ran: word for word the same answers
        assert _SEEN["sqlite"] == _SEEN["postgres"]


def test_each_bad_input_on_postgres_is_never_a_5xx(pg_database: str) -> None:
    """Every probe, one at a time on a fresh server over PostgreSQL (no 503 'retry later')."""
    app = create_app(ServerConfig(db=pg_database, embedder=FakeEmbedder(),
                                  llm=ScriptedModel(default=_extract), mcp=False, auth=False))
    with TestClient(app, raise_server_exceptions=False) as client:
        for name, method, path, body in BAD_INPUTS:
            response = client.request(method, path, content=body, headers=JSON)
            assert response.status_code < 500, (name, response.text)
            assert response.headers.get("retry-after") is None, name
    app.state.remem.close()


# -- the driver's errors, classified ----------------------------------------------------------


def _pg_error(dsn: str, query: str, params: list[Any] | None = None) -> psycopg.Error:
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            conn.execute(query, params)
        except psycopg.Error as exc:
            return exc
    raise AssertionError(f"{query} did not fail")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_data_errors_are_the_callers_and_connection_errors_the_databases(
        pg_database: str) -> None:
    refused = {
        "NUL in a parameter (psycopg refuses it)": _pg_error(pg_database, "SELECT %s",
                                                             ["a\x00b"]),
        "NUL made by the server": _pg_error(pg_database, "SELECT 'a' || chr(0)"),
        "NUL in jsonb": _pg_error(pg_database, "SELECT %s::jsonb", ['{"a": "\\u0000"}']),
        "a number out of range": _pg_error(pg_database, "SELECT 2147483647::int + 1"),
    }
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS probe_btree (s text PRIMARY KEY)")
    refused["an index row past the btree limit"] = _pg_error(
        pg_database, "INSERT INTO probe_btree VALUES (%s)", [secrets.token_hex(20_000)])
    for name, exc in refused.items():
        assert is_refused_data(exc), name
        error = database_error(exc, "db.example:5432/x (schema remem)")
        assert type(error) is InvalidInputError, name
        status, kind, message = classify(error, "probe")
        assert (status, kind) == (422, "invalid_input"), name
        assert "db.example" not in message and "nothing was written" in message, message

    try:
        psycopg.connect(f"postgresql://127.0.0.1:{_closed_port()}/x", connect_timeout=2)
    except psycopg.OperationalError as exc:
        unreachable = exc
    assert not is_refused_data(unreachable)
    error = database_error(unreachable, "schema remem")
    assert type(error) is StoreError
    assert classify(error, "probe")[:2] == (503, "store_unavailable")


def test_the_store_does_not_retry_refused_data(pg_database: str) -> None:
    """A statement PostgreSQL refuses for its data (54000 is an OperationalError to psycopg,
    which the store retries for dropped connections) fails at once, typed."""
    store = PostgresStore.open(pg_database, schema="probe_refused", connect_timeout=30)
    try:
        with pytest.raises(InvalidInputError, match="null character not permitted"):
            store._transact(lambda conn: conn.execute("SELECT 'a' || chr(0)").fetchall(),
                            writes=False)
        with pytest.raises(InvalidInputError, match="unsupported Unicode escape"):
            store._transact(lambda conn: conn.execute(
                "SELECT %s::jsonb", ['{"a": "\\u0000"}']).fetchall(), writes=True)
    finally:
        store.close()


# -- every family refuses NUL alike, in Python --------------------------------------------------


Backend = Callable[[], str]


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_database"))
    return ":memory:" if request.param == "sqlite-memory" else str(tmp_path / "family.db")


def test_store_refuses_nul_in_values_and_keys_by_path(location: str) -> None:
    store = open_store(location)
    try:
        with pytest.raises(InvalidValueError, match=r"^value\.notes\[1\] contains the NUL "
                                                    r"character at position 2;"):
            store.put(("a",), "k", {"notes": ["ok", "no\x00"]})
        with pytest.raises(InvalidValueError, match=r"^value\.meta has the key 'x\\x00'"):
            store.put(("a",), "k", {"meta": {"x\x00": 1}})
        store.put(("a",), "k", {"escaped": "\\u0000"})  # a backslash and five characters
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"escaped": "\\u0000"}
    finally:
        store.close()


def test_graph_refuses_nul_before_the_model_and_in_its_own_tables(location: str) -> None:
    storage = PostgresGraphStorage(location) if location.startswith("postgresql") else \
        SQLiteGraphStorage(location)
    model = ScriptedModel(default=_extract)
    graph = Graph(storage, ("graph", "nul", secrets.token_hex(4)), model=model)
    try:
        with pytest.raises(InvalidInputError, match=r"^episode contains the NUL character"):
            graph.ingest("Ada\x00 joined Acme")
        with pytest.raises(InvalidInputError, match=r"^source_ids\[0\] contains the NUL"):
            graph.ingest("Ada joined Acme", source_ids=["s\x00"])
        assert model.requests == []
        with pytest.raises(InvalidInputError,
                           match=r"^invalid patch\[0\]: value contains the NUL"):
            graph.patch_profile([{"op": "add", "path": "/work/company", "value": "A\x00"}])
        # the tables refuse it too, whatever reaches them: here a model that answers with it
        echo = ScriptedModel(default=lambda request: answer([E("Ada\x00")], [])(request))
        with pytest.raises(InvalidInputError, match=r"a text for graph_\w+ \('Ada\\x00'\) "
                                                    r"cannot be stored: .*NUL character"):
            graph.ingest("Ada joined Acme", model=echo)
        assert len(echo.requests) == 1
        assert graph.find_entities("Ada") == [] and graph.profile().to_dict() == {}
    finally:
        graph.close()


@pytest.mark.parametrize("value", ["NaN", "1e400", "-1e400", "true", "[\"a\", false]"])
def test_profile_values_that_are_not_text_are_refused_by_name(location: str,
                                                               value: str) -> None:
    storage = PostgresGraphStorage(location) if location.startswith("postgresql") else \
        SQLiteGraphStorage(location)
    with Graph(storage, ("graph", "profile", secrets.token_hex(4))) as graph:
        patch = [{"op": "add", "path": "/work/company", "value": json.loads(value)}]
        with pytest.raises(InvalidInputError, match=r"value.*(not a finite number|is not "
                                                    r"a profile value)"):
            graph.patch_profile(patch)
        graph.patch_profile([{"op": "add", "path": "/basic_info/age", "value": 34}])
        assert graph.profile().to_dict() == {"basic_info": {"age": "34"}}


def test_threads_refuse_nul_before_writing(location: str) -> None:
    threads = ThreadStore(location)
    try:
        with pytest.raises(InvalidInputError, match=r"metadata\.a contains the NUL"):
            threads.create(metadata={"a": "\x00"})
        thread = threads.create(metadata={"a": "fine"})
        with pytest.raises(InvalidInputError, match=r"messages\[0\]\.content\[0\]\.text "
                                                    r"contains the NUL"):
            threads.append(thread.id, [{"role": "user", "content": "x\x00"}])
        with pytest.raises(InvalidInputError, match=r"state\.k contains the NUL"):
            threads.update_state(thread.id, {"k": "\x00"})
        assert threads.messages(thread.id) == []
    finally:
        threads.close()


def test_threads_and_jobs_map_refused_data_to_invalid_input(pg_database: str) -> None:
    """Their own tables' transactions classify PostgreSQL's errors as the store does."""
    jobs = PostgresJobStorage(pg_database, schema="probe_jobs")
    threads = ThreadStore(pg_database, schema="probe_threads")
    try:
        for transaction in (jobs.db.transaction, threads.db.transaction):
            with pytest.raises(InvalidInputError, match="null character not permitted"), \
                    transaction(True) as tx:
                tx.conn.execute("SELECT 'a' || chr(0)")
    finally:
        jobs.close()
        threads.close()
