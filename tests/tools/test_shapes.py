"""Every remem toolset in every shape a provider or framework takes: chat completions,
Responses (plain and strict), Anthropic, and the OpenAI Agents SDK's FunctionTool with its
strict-schema check, run by the SDK's own Runner and ScriptedModel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.strict_schema import ensure_strict_json_schema
from agents.testing import ScriptedModel, assistant_message, function_call
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, TypeAdapter

from remem import FakeEmbedder, Memory
from remem.errors import ToolError, UsageError
from remem.files import InMemoryFileBackend
from remem.integrations.openai_agents_tools import function_tools
from remem.threads import ThreadStore
from remem.tools import ArchivalTools, BlockTools, ConversationTools, FileTools, MemoryTools
from remem.tools.export import (
    Toolset,
    strict_parameters,
    to_anthropic_tool,
    to_openai_tool,
    to_responses_tool,
)

set_tracing_disabled(True)  # traces would be exported to OpenAI


class Trip(BaseModel):
    """A user schema with optional and nested fields."""

    city: str
    days: int | None = None
    tags: list[str] = []


def _toolsets(tmp_path: Path) -> dict[str, Toolset]:
    memory = Memory.open(":memory:", embedder=FakeEmbedder())
    threads = ThreadStore(str(tmp_path / "threads.db"))
    from remem.blocks import Blocks

    return {
        "memory": MemoryTools(memory, user_id="alice"),
        "memory_schema": MemoryTools(memory, user_id="alice", schema=Trip),
        "files": FileTools(InMemoryFileBackend()),
        "blocks": BlockTools(Blocks(InMemoryFileBackend()), "agent-1"),
        "archival": ArchivalTools(memory, user_id="alice"),
        "conversation": ConversationTools(threads, owner="alice"),
    }


def test_every_toolset_in_every_shape_is_accepted_by_the_providers_own_types(
        tmp_path: Path) -> None:
    for name, toolset in _toolsets(tmp_path).items():
        for spec in toolset.specs():
            TypeAdapter(ChatCompletionToolParam).validate_python(to_openai_tool(spec))
            TypeAdapter(ToolParam).validate_python(to_anthropic_tool(spec))
            for strict in (False, True):
                shaped = to_responses_tool(spec, strict=strict)
                TypeAdapter(FunctionToolParam).validate_python(shaped)
                assert shaped["strict"] is strict
            strict_schema = strict_parameters(spec.parameters).schema
            # the SDK's own check, refusing objects open to undeclared keys: unchanged
            checked = ensure_strict_json_schema(json.loads(json.dumps(strict_schema)),
                                                _reject_open_objects=True)
            assert checked == strict_schema, (name, spec.name)


def test_strict_arguments_come_back_as_the_tool_s_own() -> None:
    search = MemoryTools(Memory.open(":memory:", embedder=FakeEmbedder()),
                         user_id="alice").search_spec()
    strict = strict_parameters(search.parameters)
    assert strict.json_fields == {"filters"}
    assert set(strict.schema["required"]) == set(strict.schema["properties"])
    sent = {"query": "tea", "filters": '{"kind": "fact"}', "limit": None, "offset": None,
            "as_of": None, "include_invalid": None}
    # null for a field that takes no null means "not given"; as_of takes null itself
    assert strict.arguments(sent) == {"query": "tea", "filters": {"kind": "fact"},
                                      "as_of": None}
    with pytest.raises(ToolError, match="filters must be a JSON object"):
        strict.arguments({**sent, "filters": "[1, 2]"})


def test_nested_optional_fields_are_stripped_of_strict_nulls() -> None:
    tools = MemoryTools(Memory.open(":memory:", embedder=FakeEmbedder()), user_id="a",
                        schema=Trip)
    strict = strict_parameters(tools.manage_spec().parameters)
    content = {"city": "Rome", "days": None, "tags": None}
    back = strict.arguments({"action": "create", "content": content, "id": None})
    assert back == {"action": "create", "content": {"city": "Rome", "days": None}}


def test_an_open_object_below_the_top_cannot_be_made_strict() -> None:
    with pytest.raises(UsageError, match=r"parameters\.options\.x is an object open to any keys"):
        strict_parameters({"type": "object", "properties": {"options": {
            "type": "object", "properties": {"x": {"type": "object"}}}}})


def test_function_tools_run_under_the_sdk_s_runner(tmp_path: Path) -> None:
    memory = Memory.open(str(tmp_path / "memory.db"), embedder=FakeEmbedder())
    tools = function_tools(MemoryTools(memory, user_id="alice"))
    assert all(tool.strict_json_schema for tool in tools)
    model = ScriptedModel([
        [function_call("manage_memory", {"action": "create", "content": "Drinks oolong",
                                         "id": None}, call_id="c1")],
        [function_call("search_memory", {"query": "oolong", "filters": '{"kind": "fact"}',
                                         "limit": 3, "offset": None, "as_of": None,
                                         "include_invalid": None}, call_id="c2")],
        [assistant_message("You drink oolong.")],
    ])
    agent = Agent(name="helper", instructions="Remember.", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, "I drink oolong; what do I drink?"))
    assert result.final_output == "You drink oolong."
    outputs = [item.output for item in result.new_items if hasattr(item, "output")]
    assert json.loads(outputs[0])["status"] == "created"
    assert [hit["content"] for hit in json.loads(outputs[1])["memories"]] == ["Drinks oolong"]
    assert [hit.memory.text for hit in memory.search("oolong", user_id="alice")] == [
        "Drinks oolong"]


def test_a_bad_argument_string_is_an_error_for_the_model_not_a_crash() -> None:
    tool = function_tools(MemoryTools(Memory.open(":memory:", embedder=FakeEmbedder()),
                                      user_id="alice"))[1]
    answer: Any = asyncio.run(tool.on_invoke_tool(None, json.dumps({  # type: ignore[arg-type]
        "query": "x", "filters": "not json", "limit": None, "offset": None, "as_of": None,
        "include_invalid": None})))
    assert answer.startswith("Error in search_memory: filters must be a JSON object")


def test_toolsets_offer_the_responses_shape_themselves(tmp_path: Path) -> None:
    for toolset in _toolsets(tmp_path).values():
        offered = toolset.responses_tools(strict=True)  # type: ignore[attr-defined]
        assert offered == [to_responses_tool(spec, strict=True) for spec in toolset.specs()]
        assert isinstance(toolset, Toolset)
