"""The CLI commands, the MCP tools and the agent tools are built from the memory requests
(the Python and HTTP surfaces are checked in ``tests/surfaces/test_parity.py``).

The rows are the src operation tables (:data:`TABLE`): each says which command and which MCP
tool its request is. What a surface does differently is data here, keyed by the row's request,
with the reason (:data:`CLI_DIFFERENCES`, :data:`NOT_ON`). The tests check that:

* every command's parameters are exactly its request's fields plus the session options and
  its own extras, with the request's defaults, bounds and descriptions
  (:func:`test_cli_command_is_the_request`);
* every MCP tool's input schema is its request's JSON schema minus the fields the server
  fixes (:func:`test_mcp_tool_is_the_request`);
* ``search_memory``'s schema is ``SearchRequest``'s for the offered fields, and every field
  of ``SearchRequest`` is either offered or listed as not offered
  (:func:`test_agent_search_tool_is_the_request`);
* the same request gives the same JSON from ``Memory.run``, ``remem <command> --json`` and
  the MCP tool (:func:`test_cli_json_is_the_python_json`,
  :func:`test_mcp_json_is_the_python_json`);
* a field added to a request appears on the CLI and MCP surfaces with no other edit
  (:func:`test_a_new_field_reaches_every_surface`), and a field of a type the CLI cannot
  spell fails loudly.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import click
import pytest
from click.testing import CliRunner
from mcp import Client
from pydantic import Field

from remem.api import Memory
from remem.cli import cli
from remem.cli.common import format_namespace
from remem.cli.context import CLI_EXCLUDED as CONTEXT_CLI_EXCLUDED
from remem.cli.memory import ID_OPTIONS, SESSION_OPTIONS
from remem.cli.options import (
    CLI_NAMES,
    RequestCommand,
    option_name,
    request_command,
    request_params,
)
from remem.context import ContextRequest
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.embed import FakeEmbedder
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    MemoryRequest,
    SearchRequest,
)
from remem.memory.wire import RESULT_MODELS
from remem.operations import Operation
from remem.server import ServerConfig, create_app
from remem.server.mcp import (
    CONTEXT_TOOL,
    FORGET_TOOL,
    MCP_TOOLS,
    SERVER_FIXED,
    McpTool,
    build_mcp,
    tool_defaults,
)
from remem.server.state import Principal, ServerState
from remem.tools import MemoryTools
from remem.tools.memory import SEARCH_PARAMETERS
from tests.memory_support import rule_model

#: every row the memory commands and tools are built from
TABLE: tuple[Operation, ...] = (*MEMORY_OPERATIONS, *CONTEXT_OPERATIONS)


@dataclass(frozen=True)
class CliDifference:
    """What a command does beside its request's fields: parameters it adds (``extra``),
    defaults it gives differently (``defaults``), fields it does not offer (``omitted``), and
    why."""

    extra: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    omitted: tuple[str, ...] = ()
    why: str = ""


CLI_DIFFERENCES: dict[type[MemoryRequest[Any]], CliDifference] = {
    AddRequest: CliDifference(defaults={"messages": "-"},
                              why="TEXT omitted (or '-') reads stdin"),
    DeleteAllRequest: CliDifference(extra=("yes",),
                                    why="forget asks before it wipes a scope unless --yes"),
    ExportRequest: CliDifference(extra=("path",), why="export streams into PATH"),
    ContextRequest: CliDifference(
        omitted=CONTEXT_CLI_EXCLUDED,
        why="a token counter is a Python object: the CLI counts with the offline estimate"),
}

NOT_ON: dict[type[MemoryRequest[Any]], str] = {
    ExportRequest: "no MCP tool: an MCP client has no file to write into and an agent no use "
                   "for a dump of a scope",
    ImportRequest: "no command built from it: remem import streams a file of any size "
                   "(Memory.import_), where ImportRequest holds its lines in memory; no MCP "
                   "tool: importing dumps is no agent's job",
}
"""Why a row has no command or no MCP tool."""


def _tool(row: Operation) -> str | None:
    return row.tool.name if row.tool else None


def row_of(request: type[MemoryRequest[Any]]) -> Operation:
    return next(row for row in TABLE if row.request is request)


#: SearchRequest fields search_memory does not offer the model, and why
TOOLS_NOT_OFFERED = {
    "user_id": "the scope is fixed when the tools are built",
    "agent_id": "the scope is fixed when the tools are built",
    "thread_id": "the scope is fixed when the tools are built",
    "namespace": "the scope is fixed when the tools are built",
    "mode": "the ranking is the application's (search_options=)",
    "min_score": "the ranking is the application's (search_options=)",
    "recency_half_life": "the ranking is the application's (search_options=)",
    "recency_weight": "the ranking is the application's (search_options=)",
    "mmr": "the ranking is the application's (search_options=)",
    "stages": "the ranking is the application's (search_options=)",
}


def test_the_table_covers_every_memory_request() -> None:
    import remem.memory.requests as module

    declared = {getattr(module, name) for name in module.__all__
                if isinstance(getattr(module, name), type)
                and issubclass(getattr(module, name), MemoryRequest)
                and getattr(module, name) is not MemoryRequest}
    assert {row.request for row in TABLE} == declared | {ContextRequest}
    assert {row.request for row in TABLE if None in (row.command, row.tool)} == set(NOT_ON)
    assert all(difference.why for difference in CLI_DIFFERENCES.values())
    tools = {tool.name: tool.model for tool in (*MCP_TOOLS, FORGET_TOOL, CONTEXT_TOOL)}
    assert tools == {row.tool.name: row.request for row in TABLE if row.tool}


# -- CLI ---------------------------------------------------------------------------------------


def _shown_default(info: Any) -> Any:
    """The default a command shows for a field: the request's, or none when that is empty
    (the request's default applies when the option is left out), or none for a required
    field (the parameter is required)."""
    if info.is_required():
        return None
    default = info.get_default(call_default_factory=True)
    return None if default in (None, "", [], ()) else default


COMMANDS = tuple(row for row in TABLE if row.command)


@pytest.mark.parametrize("row", COMMANDS, ids=[row.command or "" for row in COMMANDS])
def test_cli_command_is_the_request(row: Operation) -> None:
    command = cli.commands[row.command or ""]
    assert isinstance(command, RequestCommand) and command.model is row.request
    difference = CLI_DIFFERENCES.get(row.request, CliDifference())
    params = {param.name: param for param in command.params}
    fields = {n: f for n, f in row.request.model_fields.items()
              if n not in difference.omitted}
    ids = ID_OPTIONS if row.command != "context" else ()  # context prints no ids
    assert set(params) == {*fields, *SESSION_OPTIONS, *ids, *difference.extra}
    for name, info in fields.items():
        param = params[name]
        want = difference.defaults.get(name, _shown_default(info))
        assert param.default == want, name
        assert param.required == (info.is_required() and name not in difference.defaults), \
            name
        if isinstance(param, click.Argument):
            assert CLI_NAMES[name].argument, name
            continue
        assert isinstance(param, click.Option) and param.help, name
        assert option_name(name) in param.opts
        # the help is the field's description, first words unchanged
        words = (info.description or "").split()[:2]
        assert param.help.lower().startswith(" ".join(words).lower()), name
        bounds = {type(m).__name__: m for m in info.metadata}
        if isinstance(param.type, click.IntRange | click.FloatRange) and "Le" in bounds:
            assert param.type.max == bounds["Le"].le, name


def test_search_options_reach_the_cli() -> None:
    """The ranking options the issue found missing from the CLI."""
    options = {opt for param in cli.commands["search"].params
               for opt in getattr(param, "opts", ())}
    assert {"--offset", "--min-score", "--recency-half-life", "--recency-weight", "--mmr",
            "--mode", "--thread"} <= options


# -- MCP ---------------------------------------------------------------------------------------


def _plain(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _state(*, llm: bool) -> ServerState:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                  llm=rule_model() if llm else None))
    state: ServerState = app.state.remem
    return state


def _tools(state: ServerState) -> dict[str, Any]:
    server = build_mcp(state, lambda ctx: Principal("acme"), tools=(*MCP_TOOLS, FORGET_TOOL),
                       context=True)

    async def listed() -> dict[str, Any]:
        async with Client(server) as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    return asyncio.run(listed())


@pytest.mark.parametrize("llm", [True, False], ids=["with-llm", "without-llm"])
def test_mcp_tool_is_the_request(llm: bool) -> None:
    state = _state(llm=llm)
    listed = _tools(state)
    overrides = tool_defaults(state)
    assert overrides == {}  # infer unset means auto on every surface (docs/mcp.md)
    for row in TABLE:
        if row.tool is None:
            continue
        schema = row.request.model_json_schema()
        want = {name: _plain(prop) for name, prop in schema["properties"].items()
                if name not in SERVER_FIXED}
        for name, default in overrides.items():
            if name in want:
                want[name]["default"] = default
        got = listed[row.tool.name].input_schema
        assert _plain(got["properties"]) == want, row.tool.name
        assert sorted(got.get("required", [])) == sorted(
            n for n in schema.get("required", []) if n not in SERVER_FIXED), row.tool.name
        assert listed[row.tool.name].description == row.tool.description
    state.close()


# -- agent tools -------------------------------------------------------------------------------


def test_agent_search_tool_is_the_request() -> None:
    fields = set(SearchRequest.model_fields)
    assert set(SEARCH_PARAMETERS) | set(TOOLS_NOT_OFFERED) == fields, (
        "a new SearchRequest field: offer it in SEARCH_PARAMETERS or say why not here")
    assert not set(SEARCH_PARAMETERS) & set(TOOLS_NOT_OFFERED)
    tools = MemoryTools(Memory.open(":memory:", embedder=FakeEmbedder()), user_id="alice",
                        search_limit=7)
    schema = SearchRequest.model_json_schema()
    want = {name: _plain(schema["properties"][name]) for name in SEARCH_PARAMETERS}
    want["limit"]["default"] = 7  # search_limit=: the application's default page
    assert tools.search_spec().parameters == {
        "type": "object", "properties": want, "required": [], "additionalProperties": False}
    tools.memory.close()


# -- the same JSON -----------------------------------------------------------------------------


def _argv(request: MemoryRequest[Any]) -> list[str]:
    """``request`` as ``remem`` command-line arguments (the fields that differ from the
    defaults), spelled by the CLI's own table."""
    argv: list[str] = []
    for name, info in type(request).model_fields.items():
        value = getattr(request, name)
        if value == info.get_default(call_default_factory=True):
            continue
        spelled = option_name(name)
        if isinstance(value, bool):
            argv.append(spelled if value else "--no-" + spelled[2:])
            continue
        if name == "namespace":
            text = format_namespace(value)
        elif isinstance(value, dict):
            text = json.dumps(value)
        else:
            text = str(value)
        argv += [text] if CLI_NAMES.get(name, None) and CLI_NAMES[name].argument else [
            spelled, text]
    return argv


READS: tuple[Any, ...] = (
    lambda ids: SearchRequest(query="tea", user_id="alice"),
    lambda ids: SearchRequest(query="tea", user_id="alice", limit=1, offset=1),
    # relevance 1.0 holds both words, the other tea memory less than half the query's weight
    lambda ids: SearchRequest(query="oolong tea", user_id="alice", min_score=0.9,
                              mode="keyword"),
    lambda ids: SearchRequest(query="tea", namespace=["memories", "user", "alice"], mmr=0.5,
                              filters={"kind": "preference"}, include_invalid=True),
    lambda ids: SearchRequest(user_id="alice", as_of=ids["at"]),
    lambda ids: GetRequest(memory_id=ids["memory"]),
    lambda ids: GetAllRequest(user_id="alice", limit=2),
    lambda ids: HistoryRequest(memory_id=ids["memory"]),
)
"""Read-only requests the same-JSON tests run on every surface (same data, same answer)."""


def _fill(memory: Memory) -> dict[str, Any]:
    first = memory.add("Alice drinks green tea", user_id="alice", infer=False,
                       kind="preference").changes[0].memory
    memory.add("Alice drinks black tea at night", user_id="alice", infer=False)
    memory.add("Alice lives in Porto", user_id="alice", infer=False)
    memory.update(first.id, "Alice drinks oolong tea", reason="she switched")
    return {"memory": first.id, "at": first.valid_at + 0.001}


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    db = str(tmp_path / "parity.db")
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        ids = _fill(memory)
    yield db, ids


def _json(request: MemoryRequest[Any], result: Any) -> Any:
    return RESULT_MODELS[type(request)].of(result).model_dump(mode="json", by_alias=True)


def test_cli_json_is_the_python_json(filled: tuple[str, dict[str, Any]]) -> None:
    db, ids = filled
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        expected = [_json(r, memory.run(r)) for r in (make(ids) for make in READS)]
    # the examples did something: pages, thresholds and filters each changed the answer
    sizes = [len(e.get("hits", e.get("memories", e.get("events", [e])))) for e in expected]
    assert sizes == [3, 1, 1, 1, 1, 1, 2, 2]
    for make, want in zip(READS, expected, strict=True):
        request = make(ids)
        command = row_of(type(request)).command
        argv = [command or "", *_argv(request), "--json", "--db", db, "--embedder", "fake"]
        result = CliRunner().invoke(cli, argv, prog_name="remem")
        assert result.exit_code == 0, (argv, result.output)
        assert json.loads(result.stdout) == want, argv
        if isinstance(request, SearchRequest) and request.query:  # the facade's own method
            with Memory.open(db, embedder=FakeEmbedder()) as memory:
                assert memory.search(**request.arguments()).to_dict() == want


def test_mcp_json_is_the_python_json() -> None:
    state = _state(llm=False)
    who = Principal("acme")
    memory = state.memory_for(who)
    ids = _fill(memory)
    server = build_mcp(state, lambda ctx: who)
    tool_of = {row.request: _tool(row) for row in TABLE}

    async def answers() -> list[Any]:
        got = []
        async with Client(server) as client:
            for make in READS:
                request = make(ids)
                arguments = request.model_dump(mode="json", exclude_defaults=True)
                reply = await client.call_tool(tool_of[type(request)] or "", arguments)
                assert not reply.is_error, reply
                got.append(json.loads(reply.content[0].text))
        return got

    got = asyncio.run(answers())
    want = [_json(r, memory.run(r)) for r in (make(ids) for make in READS)]
    assert got == want
    state.close()


# -- one edit: a field added to a request ------------------------------------------------------


class BoostedSearch(SearchRequest):
    """A search with one more parameter, as a future SearchRequest might have."""

    boost: Annotated[float, Field(ge=0, le=10)] = Field(1.0, description="how much to boost")


def test_a_new_field_reaches_every_surface() -> None:
    seen: list[BoostedSearch] = []

    @request_command(BoostedSearch, name="search")
    def command(request: BoostedSearch) -> None:
        seen.append(request)

    runner = CliRunner()
    assert runner.invoke(command, ["tea", "--boost", "2.5", "--user", "u"]).exit_code == 0
    assert seen[-1].boost == 2.5 and seen[-1].query == "tea"
    assert runner.invoke(command, []).exit_code == 0 and seen[-1].boost == 1.0
    refused = runner.invoke(command, ["--boost", "11"])
    assert refused.exit_code == 2 and "Invalid value for '--boost'" in refused.output
    assert "How much to boost.  [default: 1.0; 0<=x<=10]" in runner.invoke(
        command, ["--help"], terminal_width=200).output

    state = _state(llm=False)
    server = build_mcp(state, lambda ctx: Principal("acme"),
                       tools=[McpTool("boosted_search", BoostedSearch, False, "Search.")])

    async def call() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            schema = next(t for t in (await client.list_tools()).tools
                          if t.name == "boosted_search").input_schema
            bad = await client.call_tool("boosted_search", {"boost": 20})
            good = await client.call_tool("boosted_search", {"query": "tea", "boost": 2})
            return schema, bad, good

    schema, bad, good = asyncio.run(call())
    assert _plain(schema["properties"]["boost"]) == {
        "default": 1.0, "description": "how much to boost", "maximum": 10, "minimum": 0,
        "type": "number"}
    assert bad.is_error and "boost: Input should be less than or equal to 10" in (
        bad.content[0].text)
    assert json.loads(good.content[0].text)["hits"] == []
    state.close()


def test_a_field_the_cli_cannot_spell_fails_loudly() -> None:
    class TaggedSearch(SearchRequest):
        tags: frozenset[int] = Field(default_factory=frozenset, description="tags")

    with pytest.raises(TypeError, match="no option type for field 'tags'"):
        request_params(TaggedSearch)
