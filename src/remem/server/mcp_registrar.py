"""The MCP registrar: a request model becomes an MCP tool in one place.

Every tool of the MCP server is registered here (:func:`add_request_tool`), from an operation
row (:meth:`McpTool.of`) or from its name, request model, whether it writes and description:
the tool's parameters are the request's fields (their JSON schema, defaults and
descriptions) minus :data:`SERVER_FIXED` and the local fields; a call validates its arguments
into the request (a refusal is a tool error naming the field and fix), the family's handler
says what to run for the caller, and the server's runner runs it as the caller (refusing
writes for read-only keys). An argument the tool does not declare is an error, not dropped.

:mod:`remem.server.mcp` (the server) and the ``routes_*`` modules (each family's tools) import
this module; it imports neither.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from remem.errors import InvalidInputError
from remem.operations import Operation
from remem.requests import Request
from remem.server.state import Principal
from remem.tools.schema import request_properties

__all__ = ["SERVER_FIXED", "McpTool", "Runner", "ToolHandler", "Work", "add_request_tool",
           "forbid_unknown_arguments", "tool_signature"]

SERVER_FIXED: Mapping[str, Any] = {"actor": "mcp"}
"""Request fields the server sets itself (not tool parameters): history records ``mcp``."""

#: what a call runs for its caller, in a worker thread: its answer (JSON-ready)
Work = Callable[[Principal], Any]
#: what a call of a tool runs, decided from the validated request and the call's context
#: (its headers, over HTTP) before the caller is resolved
ToolHandler = Callable[[Any, Context | None], Work]


class Runner(Protocol):
    """The MCP server's way of acting for the caller of a call (``ctx``): resolve who it is,
    refuse a ``write`` for a read-only key, run ``fn`` in a worker thread, and turn remem's
    errors into tool errors."""

    async def __call__(self, ctx: Context | None, write: bool, fn: Work, *,
                       waits_on_llm: bool = False) -> Any:
        """``fn(who)``'s answer."""
        ...


@dataclass(frozen=True, slots=True)
class McpTool:
    """One MCP tool built from a request: its name, the request, whether it writes (refused
    for read-only keys) and what the model reads about it."""

    name: str
    model: type[Request]
    writes: bool
    description: str

    @classmethod
    def of(cls, operation: Operation) -> McpTool:
        """The tool of an operation row (which must declare one)."""
        if operation.tool is None:
            raise ValueError(f"{operation.request.__name__} has no MCP tool")
        return cls(operation.tool.name, operation.request, operation.writes,
                   operation.tool.description)


def _never(request: Any) -> bool:
    return False


def add_request_tool(server: MCPServer, run: Runner, tool: McpTool, handler: ToolHandler, *,
                     defaults: Mapping[str, Any] | None = None,
                     waits_on_llm: Callable[[Any], bool] = _never) -> None:
    """Serve ``tool`` on ``server``: a call validates its arguments into ``tool.model`` (with
    :data:`SERVER_FIXED`), asks ``handler`` what to run and runs it for the caller with
    ``run`` (``waits_on_llm(request)``: it waits on the server's chat model). ``defaults``:
    parameter defaults this server gives differently from the request's."""
    fixed = {k: v for k, v in SERVER_FIXED.items() if k in tool.model.model_fields}

    async def call(ctx: Context | None = None, **arguments: Any) -> Any:
        try:
            request = tool.model.of(**arguments, **fixed)
        except InvalidInputError as exc:
            raise ToolError(f"InvalidInputError: {exc}") from None
        work = handler(request, ctx)
        return await run(ctx, tool.writes, work, waits_on_llm=waits_on_llm(request))

    call.__name__ = tool.name
    call.__signature__ = tool_signature(tool.model, defaults or {})  # type: ignore[attr-defined]
    server.add_tool(call, name=tool.name, description=tool.description)
    forbid_unknown_arguments(server, tool.name)


def tool_signature(model: type[Request], defaults: Mapping[str, Any]) -> inspect.Signature:
    """A tool function's signature: ``ctx``, then one parameter per field of ``model`` whose
    JSON schema is the field's (the mcp package builds the input schema from it). Values are
    not converted on the way in: the request validates them, strictly, as over HTTP."""
    in_schema = model.model_json_schema().get("properties", {})
    local_only = [n for n in model.model_fields if n not in in_schema]  # Python objects
    properties = request_properties(model, exclude=[*SERVER_FIXED, *local_only],
                                    defaults={k: v for k, v in defaults.items()
                                              if k in model.model_fields})
    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=None,
                                annotation=Context | None)]
    for name, schema in properties.items():
        field = model.model_fields[name]
        default = (inspect.Parameter.empty if field.is_required()
                   else schema.get("default", field.get_default(call_default_factory=True)))
        annotation = Annotated[Any, WithJsonSchema(schema),
                               Field(description=field.description)]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))
    return inspect.Signature(params, return_annotation=dict[str, Any])


class _KnownArguments(BaseModel):
    """Mixed into a tool's argument model: an argument the tool does not declare is an error
    that names it and the arguments there are (the mcp package would drop it silently)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = {f.alias or name for name, f in cls.model_fields.items()}
            unknown = sorted(str(k) for k in data if k not in known)
            if unknown:
                raise PydanticCustomError(
                    "unknown_argument", "unknown argument {unknown}; this tool takes {known}",
                    {"unknown": ", ".join(map(repr, unknown)),
                     "known": ", ".join(sorted(known))})
        return data


def forbid_unknown_arguments(server: MCPServer, name: str) -> None:
    """Make tool ``name`` refuse arguments it does not declare (a misspelt ``user_id``
    would otherwise act on the wrong scope)."""
    tool = server._tool_manager.get_tool(name)  # no public way to reach a tool's arguments
    assert tool is not None
    base = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(base.__name__, (base, _KnownArguments),
                                      {"__module__": base.__module__})
