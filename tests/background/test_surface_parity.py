"""Every surface of a background operation is built from its one row of
:data:`~remem.background.operation_table.JOB_OPERATIONS`: the submit, flush, cancel, job and
budget routes (by the router builder), ``remem.Client``'s ``submit``, ``flush``, ``cancel``,
``job`` and ``jobs`` (by :meth:`~remem.operations.Operation.call`) and the ``submit_memories``
MCP tool (by the registrar). For every row, the tests check that:

* the table has one row per background request (``flush`` and ``cancel`` share theirs), and
  the server serves exactly the rows' routes, with the operation ids, summaries,
  descriptions and tags the rows say;
* its route takes the request (path, query parameters or body, each field's schema) and
  answers with the row's result model (tests/surfaces/rows.py);
* the Client's call of each row follows the row and reads the answer with its result model,
  which gives back the Python result it was made from;
* the Client's (and Memory's) method of a row and its async twin take the request's
  parameters with its defaults;
* the row that declares a tool is ``submit_memories``, served when the server has a model.

The answers themselves, through a real server, are checked in ``test_surfaces.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

import remem.background.requests as module
from remem.api import Memory
from remem.background import STATUSES, QueueStats
from remem.background.budgets import StoredBudget
from remem.background.forgetting import Budget
from remem.background.jobs import Job
from remem.background.operation_table import CANCEL, FLUSH, JOB_OPERATIONS, SUBMIT
from remem.background.requests import (
    BudgetScope,
    CancelJobRequest,
    CancelResult,
    FlushResult,
    GetJobRequest,
    JobStatsRequest,
    ListBudgetsRequest,
    ListJobsRequest,
    RetryJobRequest,
    SetBudgetRequest,
    SubmitRequest,
    SubmitResult,
    ThreadJobsRequest,
)
from remem.client import Client
from remem.operations import Operation, row_of
from remem.requests import Request
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.transport import Call
from tests.memory_support import rule_model
from tests.surfaces.rows import (
    check_call_follows_the_row,
    check_route_is_the_request,
    check_routes_are_the_rows,
    parameters,
)

IDS = [row.route.name for row in JOB_OPERATIONS]
JOB_ID = "job:1/2"  # quoted in the path

#: a request of each row: defaults, and every field set
SAMPLES: list[tuple[Operation, Request]] = [
    (SUBMIT, SubmitRequest.of(messages="hi", thread_id="t1")),
    (SUBMIT, SubmitRequest.of(messages=[{"role": "user", "content": "hi"}], thread_id="t1",
                              user_id="ada", delay=5.0, metadata={"k": 1})),
    (FLUSH, ThreadJobsRequest.of(thread_id="t1")),
    (FLUSH, ThreadJobsRequest.of(thread_id="t1", namespace=["a", "b"])),
    (CANCEL, ThreadJobsRequest.of(thread_id="t1", user_id="ada", agent_id="bot")),
    *[(row, row.request.of(**fields)) for row in JOB_OPERATIONS for fields in {
        ListJobsRequest: [{}, {"status": "dead", "kind": "memory.extract", "thread_id": "t",
                               "limit": 7}],
        JobStatsRequest: [{}], GetJobRequest: [{"job_id": JOB_ID}],
        RetryJobRequest: [{"job_id": JOB_ID}], CancelJobRequest: [{"job_id": JOB_ID}],
        SetBudgetRequest: [{"user_id": "ada", "max_memories": 10},
                           {"namespace": ["a"], "max_tokens": 99, "policy": "lru",
                            "half_life": 60.0, "consolidate_first": False}],
        ListBudgetsRequest: [{}],
        BudgetScope: [{"user_id": "ada"}, {"namespace": ["a", "b"]}],
    }.get(row.request, [])],
]


@pytest.fixture(scope="module")
def openapi() -> Iterator[dict[str, Any]]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    yield app.openapi()
    app.state.remem.close()


def test_the_table_covers_every_background_request() -> None:
    declared = {value for value in vars(module).values() if isinstance(value, type)
                and issubclass(value, Request) and not value.__name__.startswith("_")}
    requests = [row.request for row in JOB_OPERATIONS]
    assert set(requests) == declared - {Request}
    # one row each, but flush and cancel: the same request, named rows
    assert sorted(r.__name__ for r in requests if requests.count(r) > 1) == [
        "ThreadJobsRequest"] * 2
    assert (FLUSH.request, CANCEL.request) == (ThreadJobsRequest, ThreadJobsRequest)
    assert {row for row, _ in SAMPLES} == set(JOB_OPERATIONS)
    assert [row.route.name for row in JOB_OPERATIONS if row.calls_model] == ["flush_memories"]


def test_every_background_route_is_a_row(openapi: dict[str, Any]) -> None:
    """The server serves the rows' routes and no other job route, each named, described and
    tagged as its row says (the operation ids clients were generated with stay the same)."""
    served = {(path, method.upper()) for path, item in openapi["paths"].items()
              for method, route in item.items() if "jobs" in route["tags"]}
    check_routes_are_the_rows(openapi, JOB_OPERATIONS, served, "jobs")


def test_flush_and_list_answer_one_component(openapi: dict[str, Any]) -> None:
    """FlushOut (read as a FlushResult) and JobsOut (a list) are one OpenAPI component."""
    refs = {openapi["paths"][row.route.path][row.route.method.lower()]["responses"]["200"][
        "content"]["application/json"]["schema"]["$ref"] for row in (FLUSH, _row(ListJobsRequest))}
    assert refs == {"#/components/schemas/JobsOut"}
    assert "FlushOut" not in openapi["components"]["schemas"]


@pytest.mark.parametrize("row", JOB_OPERATIONS, ids=IDS)
def test_http_route_is_the_request(row: Operation, openapi: dict[str, Any]) -> None:
    check_route_is_the_request(row, openapi)


class _Recorder(Client):
    """A Client that keeps the call it would send."""

    def _send(self, call: Call[Any]) -> Any:
        self.sent = call
        return None


@pytest.mark.parametrize(("row", "sample"), SAMPLES,
                         ids=[f"{row.route.name}-{n}" for n, (row, _) in enumerate(SAMPLES)])
def test_the_clients_call_follows_the_row(row: Operation, sample: Request) -> None:
    if row.python is None:  # no Client method: the row's call is the one client side
        call = row.call(sample)
    else:
        client = _Recorder("http://test", api_key="rk_x")
        getattr(client, row.python)(**sample.model_dump(mode="json"))
        call = client.sent
    check_call_follows_the_row(row, sample, call)


def _row(request: type[Request]) -> Operation:
    return row_of(JOB_OPERATIONS, request)


JOB = Job("job_1", "memory.extract", {"messages": [{"role": "user", "content": "hi"}]},
          "done", run_after=1.5e9, created_at=1.5e9, updated_at=1.5e9 + 1, attempts=1,
          thread_id="t1", finished_at=1.5e9 + 2, result={"messages": 1})
BUDGET = StoredBudget(("acme", "ada"), Budget(max_memories=10, policy="lru"),
                      updated_at=1.7e9)
#: a row, what the server's handler returns for it, and what the client reads (the same,
#: but for a job: its JSON)
RESULTS: list[tuple[Operation, Any, Any]] = [
    (SUBMIT, SubmitResult("job_1", "queued", 1.5e9, 2, True), None),
    (FLUSH, FlushResult((JOB.to_dict(),)), None),
    (CANCEL, CancelResult(("job_1", "job_2")), None),
    (_row(ListJobsRequest), [JOB], [JOB.to_dict()]),
    (_row(JobStatsRequest), QueueStats({**dict.fromkeys(STATUSES, 0), "dead": 2}, 3.5), None),
    (_row(GetJobRequest), JOB, JOB.to_dict()),
    (_row(RetryJobRequest), JOB, JOB.to_dict()),
    (_row(CancelJobRequest), JOB, JOB.to_dict()),
    (_row(SetBudgetRequest), BUDGET, None),
    (_row(ListBudgetsRequest), [BUDGET], None),
    (_row(BudgetScope), True, None),
]


@pytest.mark.parametrize(("row", "served", "read"), RESULTS,
                         ids=[row.route.name for row, _, _ in RESULTS])
def test_the_answer_reads_back_as_the_python_result(row: Operation, served: Any,
                                                    read: Any) -> None:
    """What the client reads (``row.read`` of the answer's JSON) is the Python result the
    server answered with (a job: its JSON, typed ``JobJson``)."""
    assert {r for r, _, _ in RESULTS} == set(JOB_OPERATIONS)
    assert row.read(row.answer(served).model_dump(mode="json")) == (
        served if read is None else read)


def _expected(row: Operation) -> dict[str, Any]:
    return {name: (PydanticUndefined if info.is_required() else info.default)
            for name, info in row.request.model_fields.items()}


PYTHON_ROWS = [row for row in JOB_OPERATIONS if row.python is not None]


@pytest.mark.parametrize("row", PYTHON_ROWS, ids=[row.route.name for row in PYTHON_ROWS])
def test_python_methods_take_the_request(row: Operation) -> None:
    """Client's method of a row (and its async twin, and Memory's, where there are) takes
    the request's parameters with its defaults."""
    assert row.python is not None
    methods = [getattr(owner, name) for owner in (Client, Memory)
               for name in (row.python, "a" + row.python) if hasattr(owner, name)]
    assert getattr(Client, row.python) in methods
    for method in methods:
        assert parameters(method) == _expected(row), method.__qualname__


@pytest.mark.parametrize("llm", [True, False], ids=["with-model", "without-model"])
def test_the_rows_tool_is_the_submit_tool(llm: bool) -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, llm=rule_model() if llm else None))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"))

    async def listed() -> dict[str, Any]:
        async with McpClient(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = asyncio.run(listed())
    app.state.remem.close()
    assert [row.tool.name for row in JOB_OPERATIONS if row.tool] == ["submit_memories"]
    assert SUBMIT.tool is not None and not SUBMIT.tool.on_request and SUBMIT.writes
    assert (SUBMIT.tool.name in tools) is llm  # extraction needs the server's model
    if llm:
        tool = tools[SUBMIT.tool.name]
        assert tool.description == SUBMIT.tool.description
        assert set(tool.input_schema.get("properties", {})) == set(SubmitRequest.model_fields)
