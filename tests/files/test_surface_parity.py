"""Every surface of a file or approval operation is built from its one row of
:data:`~remem.files.operation_table.FILE_OPERATIONS` or ``APPROVAL_OPERATIONS``: the
``/v1/files`` and ``/v1/approvals`` routes (by the router builder), the MCP file tools (by
the registrar) and the agent file tools' names (``FILE_TOOLS``). For every row, the tests
check that:

* the tables have one row per request, and the server serves exactly the rows' routes;
* its route takes the request (path, query or body, each field's schema; the file tree and
  who acts are the table's context, not the request's) and answers with the row's result
  model (tests/surfaces/rows.py);
* the call :meth:`~remem.operations.Operation.call` builds follows the row and, sent to the
  server, answers what the row's result model reads back (there is no ``client.files``: this
  is the one client side);
* the Python method the row names (``FileBackend``'s, ``Approvals``') takes the request's
  parameters (the Python names from before the requests kept);
* the rows with a tool are the MCP file tools and the agent tools, taking the request's
  fields.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

from remem.files import approvals as a
from remem.files import requests as r
from remem.files.approvals import Approval, Approvals
from remem.files.base import FileBackend
from remem.files.operation_table import APPROVAL_OPERATIONS, FILE_OPERATIONS
from remem.files.permissions import Policy, Rule
from remem.files.types import FileEvent, FileInfo, FileRead, GrepMatch
from remem.operations import Operation, row_of
from remem.requests import Request
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.routes_files import set_file_policy
from remem.server.state import Principal
from remem.tools.files import FILE_TOOLS
from tests.surfaces.rows import check_call_follows_the_row, check_route_is_the_request, parameters

ROWS = (*FILE_OPERATIONS, *APPROVAL_OPERATIONS)
# the query parameters of the tables' context: which file tree, and who acts
CONTEXT = ("tree", "user_id", "agent_id")
# the Python names of the requests' fields where they differ (the methods predate them)
RENAMED = {"old": "old_string", "new": "new_string", "arguments": "edited_arguments"}
# grep's text is `text` in Python, `pattern` in the request (as glob's pattern)
RENAMED_FOR = {r.GrepRequest: {"text": "pattern"}}
# undo's body is an LsRequest's, as it always was: its path defaults to "/" (a 422 there)
REQUIRED_IN_PYTHON = {r.UndoFileRequest: {"path"}}


def test_one_row_per_request() -> None:
    requests = [row.request for row in ROWS]
    assert len(requests) == len(set(requests)) == 12
    assert {row.route.name for row in FILE_OPERATIONS} == {
        "ls", "read", "write", "edit", "glob", "grep", "history", "undo"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.request.__name__)
def test_http_route_is_the_request(openapi: dict[str, Any], row: Operation) -> None:
    check_route_is_the_request(row, openapi, context=CONTEXT)
    params = openapi["paths"][row.route.path][row.route.method.lower()]["parameters"]
    context = [p["name"] for p in params if p["name"] in CONTEXT]
    assert context == (["tree", "user_id", "agent_id"] if row in FILE_OPERATIONS else ["tree"])


def test_every_file_and_approval_route_is_a_row(openapi: dict[str, Any]) -> None:
    served = {(method.upper(), path) for path, ops in openapi["paths"].items()
              if path.startswith(("/v1/files", "/v1/approvals")) for method in ops}
    assert served == {(row.route.method, row.route.path) for row in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.request.__name__)
def test_python_methods_take_the_request(row: Operation) -> None:
    owner = FileBackend if row in FILE_OPERATIONS else Approvals
    assert row.python is not None
    renamed = {**RENAMED, **RENAMED_FOR.get(row.request, {})}
    taken = {renamed.get(name, name): default
             for name, default in parameters(getattr(owner, row.python)).items()}
    wanted = {name: PydanticUndefined if info.is_required()
              or name in REQUIRED_IN_PYTHON.get(row.request, ()) else info.default
              for name, info in row.request.model_fields.items()}
    # what only Python passes besides (the actor, the approver, grep's limit) is left over
    assert {k: v for k, v in taken.items() if k in wanted} == wanted


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TestClient, TestClient]]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    state = app.state.remem
    set_file_policy(state, Policy((Rule("ask", "/ask/**", frozenset({"write"})),)))
    agent, human = (state.keys.create("acme")[0] for _ in range(2))
    with TestClient(app, headers={"Authorization": f"Bearer {agent}"}) as asks, \
            TestClient(app, headers={"Authorization": f"Bearer {human}"}) as approves:
        yield asks, approves
    state.close()


def _send(client: TestClient, request: Request) -> Any:
    """Send ``request`` as its row says; the answer as the row's result model reads it."""
    row = row_of(ROWS, type(request))
    call = row.call(request)
    check_call_follows_the_row(row, request, call)
    return call.read(client.request(call.method, call.path, params=dict(call.params),
                                    json=call.json))


def _park(client: TestClient, path: str) -> str:
    parked = client.post("/v1/files/write", json={"path": path, "content": "x"})
    assert parked.status_code == 202, parked.text  # not the row's answer: the approval's
    approval_id: str = parked.json()["approval_id"]
    return approval_id


def test_the_rows_calls_answer_what_their_models_read(served: tuple[TestClient, TestClient]
                                                      ) -> None:
    agent, human = served
    written = _send(agent, r.WriteFileRequest.of(path="/n/a.md", content="one two"))
    assert isinstance(written, FileInfo) and written.path == "/n/a.md"
    edited = _send(agent, r.EditFileRequest.of(path="/n/a.md", old_string="two",
                                               new_string="three", etag=written.etag))
    read = _send(agent, r.ReadFileRequest.of(path="/n/a.md"))
    assert isinstance(read, FileRead) and read.content == "one three"
    assert read.etag == edited.etag
    assert _send(agent, r.LsRequest.of(path="/n")) == [edited]
    assert _send(agent, r.GlobRequest.of(pattern="**/*.md")) == [edited]
    assert _send(agent, r.GrepRequest.of(pattern="three")) == [GrepMatch("/n/a.md", 1,
                                                                         "one three")]
    history = _send(agent, r.FileHistoryRequest.of(path="/n/a.md"))
    assert [e.op for e in history] == ["write", "edit"] and isinstance(history[0], FileEvent)
    undone = _send(agent, r.UndoFileRequest.of(path="/n/a.md"))
    assert undone is not None and undone.etag == written.etag
    _send(agent, r.WriteFileRequest.of(path="/n/new.md", content="x"))
    assert _send(agent, r.UndoFileRequest.of(path="/n/new.md")) is None  # absent again

    approve, reject = _park(agent, "/ask/a.md"), _park(agent, "/ask/b.md")
    pending = _send(human, a.ListApprovalsRequest.of())
    assert [p.id for p in pending] == [approve, reject] and isinstance(pending[0], Approval)
    done = _send(human, a.ApproveByIdRequest.of(approval_id=approve,
                                                edited_arguments={"content": "edited"}))
    assert (done.id, done.status) == (approve, "done")
    rejected = _send(human, a.RejectByIdRequest.of(approval_id=reject, reason="no"))
    assert (rejected.status, rejected.reason) == ("rejected", "no")
    assert _send(human, a.RecoverRequest.of(stale_after=0)) == []
    assert _send(human, r.ReadFileRequest.of(path="/ask/a.md")).content == "edited"


def test_the_file_tools_are_the_rows_with_a_tool() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), files=True)

    async def tools() -> dict[str, Any]:
        async with McpClient(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    try:
        found = asyncio.run(tools())
    finally:
        app.state.remem.close()
    rows = [row for row in ROWS if row.tool is not None]
    assert [row.tool.name for row in rows if row.tool] == list(FILE_TOOLS) == [
        "ls", "read_file", "write_file", "edit_file", "glob", "grep"]
    for row in rows:
        assert row.tool is not None and not row.tool.on_request
        tool = found[row.tool.name]
        assert tool.description == row.tool.description == FILE_TOOLS[row.tool.name][1]
        assert list(tool.input_schema["properties"]) == list(row.request.model_fields)
        assert FILE_TOOLS[row.tool.name][0] is row.request
