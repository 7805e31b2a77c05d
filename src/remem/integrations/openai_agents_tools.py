"""remem's agent tools as OpenAI Agents SDK ``FunctionTool``s, strict schemas accepted.

>>> from remem import FakeEmbedder, Memory
>>> from remem.tools import MemoryTools
>>> from remem.integrations.openai_agents_tools import function_tools
>>> memory = Memory.open(":memory:", embedder=FakeEmbedder())
>>> [tool.name for tool in function_tools(MemoryTools(memory, user_id="alice"))]
['manage_memory', 'search_memory']

Each tool's parameters are :func:`~remem.tools.export.strict_parameters` of the remem tool's
own (the SDK's strict-schema check refuses free-form objects such as ``search_memory``'s
``filters``, which therefore travels as a JSON string), and a call runs the remem tool's
``aexecute``: the answer, or the error worded for the model, is the tool's output. Needs the
``openai-agents`` package (``pip install openai-agents``).
"""

from __future__ import annotations

import json
from typing import Any

from remem.errors import ToolError
from remem.messages import ToolCall
from remem.tools.export import Toolset, strict_parameters

__all__ = ["function_tools"]


def function_tools(toolset: Toolset, *, strict: bool = True) -> list[Any]:
    """``toolset``'s tools as ``agents.FunctionTool`` objects (strict schemas by default)."""
    from agents import FunctionTool

    tools = []
    for spec in toolset.specs():
        converted = strict_parameters(spec.parameters) if strict else None
        tools.append(FunctionTool(
            name=spec.name, description=spec.description,
            params_json_schema=converted.schema if converted else dict(spec.parameters),
            on_invoke_tool=_invoker(toolset, spec.name, converted),
            strict_json_schema=strict))
    return tools


def _invoker(toolset: Toolset, name: str, converted: Any) -> Any:
    async def invoke(context: Any, arguments: str) -> str:
        call_id = str(getattr(context, "tool_call_id", "") or "call")
        try:
            sent = json.loads(arguments or "{}")
            if not isinstance(sent, dict):
                raise ToolError(f"{name} takes a JSON object of arguments, got {arguments!r}")
            own = converted.arguments(sent) if converted is not None else sent
        except (ValueError, ToolError) as exc:
            return f"Error in {name}: {exc}"
        answer = await toolset.aexecute(ToolCall(id=call_id, name=name, arguments=own))
        return answer.text
    return invoke
