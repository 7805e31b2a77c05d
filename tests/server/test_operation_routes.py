"""The router builder (:mod:`remem.server.operation_routes`) on a family of its own: a new
operation is a row and a handler, and its route takes each field where the row says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from remem.operations import McpToolRow, Operation, Route
from remem.requests import Label, Limit, Request
from remem.server import ServerConfig, create_app
from remem.server.operation_routes import add_operation_routes, part_model
from remem.server.state import Principal


class GetNoteRequest(Request):
    note_id: Label = Field(description="a note id")


class NoteStatsRequest(Request):
    pass


class ListNotesRequest(Request):
    limit: Limit = Field(10, description="most notes")


class EditNoteRequest(Request):
    note_id: Label = Field(description="a note id")
    text: str = Field(description="the new text")
    actor: str = Field("user", description="who")


class DropNoteRequest(Request):
    note_id: Label = Field(description="a note id")
    hard: bool = Field(False, description="remove it")
    actor: str = Field("user", description="who")


class EchoOut(BaseModel):
    """What the handler was given."""

    kind: str
    fields: dict[str, Any]

    @classmethod
    def of(cls, result: tuple[str, dict[str, Any]]) -> EchoOut:
        return cls(kind=result[0], fields=result[1])

    def value(self) -> tuple[str, dict[str, Any]]:
        return self.kind, self.fields


def _row(request: type[Request], method: Any, path: str, writes: bool = False,
         not_sent: tuple[str, ...] = ()) -> Operation:
    name = request.__name__.removesuffix("Request").lower()
    return Operation(request, EchoOut, writes=writes,
                     route=Route(method, path, name, f"{name} summary", f"{name} text",
                                 not_sent=not_sent),
                     tool=McpToolRow(name, "a tool"))


# templated paths before literal ones: the builder must still reach /v1/notes/stats
NOTES = (
    _row(GetNoteRequest, "GET", "/v1/notes/{note_id}"),
    _row(NoteStatsRequest, "GET", "/v1/notes/stats"),
    _row(ListNotesRequest, "POST", "/v1/notes/list"),
    _row(EditNoteRequest, "PATCH", "/v1/notes/{note_id}", writes=True),
    _row(DropNoteRequest, "DELETE", "/v1/notes/{note_id}", writes=True, not_sent=("actor",)),
)


async def _echo(http: Any, who: Principal, request: Request) -> Any:
    return type(request).__name__, request.model_dump()


@pytest.fixture
def app() -> Iterator[Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=True))
    router = APIRouter(tags=["notes"])
    add_operation_routes(router, NOTES, _echo)
    app.include_router(router)
    yield app
    app.state.remem.close()


def _client(app: Any, *, read_only: bool = False) -> TestClient:
    token = app.state.remem.keys.create("acme", read_only=read_only)[0]
    return TestClient(app, headers={"Authorization": f"Bearer {token}"})


def test_each_field_arrives_where_the_row_says(app: Any) -> None:
    http = _client(app)
    assert http.get("/v1/notes/stats").json() == {"kind": "NoteStatsRequest", "fields": {}}
    assert http.get("/v1/notes/n1").json()["fields"] == {"note_id": "n1"}
    assert http.post("/v1/notes/list", json={"limit": 5}).json()["fields"] == {"limit": 5}
    edited = http.patch("/v1/notes/n1", json={"text": "hi"}).json()
    assert edited == {"kind": "EditNoteRequest",
                      "fields": {"note_id": "n1", "text": "hi", "actor": "user"}}
    dropped = http.delete("/v1/notes/n1", params={"hard": "true"}).json()
    assert dropped["fields"] == {"note_id": "n1", "hard": True, "actor": "user"}


def test_what_a_route_does_not_take_is_refused(app: Any) -> None:
    http = _client(app)
    for response in (http.patch("/v1/notes/n1", json={"text": "hi", "note_id": "n2"}),
                     http.patch("/v1/notes/n1", json={"text": 5}),  # a body is strict
                     http.delete("/v1/notes/n1", params={"actor": "me"}),  # not sent
                     http.post("/v1/notes/list", json={"limit": "5"}),
                     http.get("/v1/notes/" + "n" * 257)):  # a Label's limit
        assert response.status_code == 422, response.request.url
        assert response.json()["error"] == "validation_error"


def test_a_read_only_key_cannot_write(app: Any) -> None:
    http = _client(app, read_only=True)
    assert http.get("/v1/notes/n1").status_code == 200
    assert http.patch("/v1/notes/n1", json={"text": "hi"}).status_code == 403
    assert http.delete("/v1/notes/n1").status_code == 403


def test_the_openapi_schema_follows_the_rows(app: Any) -> None:
    paths = {path: route for path, route in app.openapi()["paths"].items()
             if path.startswith("/v1/notes")}
    assert list(paths) == ["/v1/notes/stats", "/v1/notes/list", "/v1/notes/{note_id}"]
    get = paths["/v1/notes/{note_id}"]["get"]
    assert get["operationId"] == "getnote_v1_notes__note_id__get"
    assert (get["summary"], get["description"]) == ("getnote summary", "getnote text")
    assert get["parameters"][0]["description"] == "a note id"
    patch = paths["/v1/notes/{note_id}"]["patch"]
    body = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/EditnoteBody"  # named after the route
    delete = paths["/v1/notes/{note_id}"]["delete"]
    assert [p["name"] for p in delete["parameters"]] == ["note_id", "hard"]
    listing = paths["/v1/notes/list"]["post"]["requestBody"]["content"]["application/json"]
    assert listing["schema"]["$ref"] == "#/components/schemas/ListNotesRequest"


def test_the_row_says_where_each_field_travels() -> None:
    get, stats, listing, edit, drop = NOTES
    assert (get.path_fields, get.query_fields, get.body_fields) == (("note_id",), (), ())
    assert (listing.whole_body, listing.body_fields) == (True, ("limit",))
    assert (edit.whole_body, edit.body_fields) == (False, ("text", "actor"))
    assert (drop.query_fields, drop.body_fields) == (("hard",), ())
    assert part_model(stats) is None and part_model(get) is None


def test_a_row_naming_a_field_its_request_lacks_is_refused() -> None:
    with pytest.raises(TypeError, match="GetNoteRequest has no field id"):
        _row(GetNoteRequest, "GET", "/v1/notes/{id}")
    with pytest.raises(TypeError, match="has no field author"):
        _row(DropNoteRequest, "DELETE", "/v1/notes/{note_id}", not_sent=("author",))
