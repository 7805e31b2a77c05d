"""Tool definitions in the shapes providers expect, from one :class:`~remem.llm.ToolSpec`.

* :func:`to_openai_tool`: chat completions (``{"type": "function", "function": {...}}``);
* :func:`to_responses_tool`: OpenAI's Responses API (``{"type": "function", "name", ...}``),
  optionally strict;
* :func:`to_anthropic_tool`: Anthropic's Messages API (``{"name", "input_schema", ...}``);
* :func:`strict_parameters`: the same parameters as a schema OpenAI's strict mode accepts
  (and the OpenAI Agents SDK's ``FunctionTool(strict_json_schema=True)``), with the way back
  from what a model sends under it to the tool's own arguments.

Strict mode wants every property required and no object open to undeclared keys. So an
optional property becomes required and nullable (a ``null`` sent for it means "not given"
and is dropped again unless the property itself takes ``null``), and a free-form object
(``filters``) travels as a string holding JSON, decoded on the way back. A schema that needs
anything else (a free-form object below the top level) cannot be made strict, and
:func:`strict_parameters` says so rather than loosening it silently.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from remem.errors import ToolError, UsageError
from remem.llm.base import ToolSpec
from remem.messages import Message, ToolCall

__all__ = ["StrictParameters", "Toolset", "strict_parameters", "to_anthropic_tool",
           "to_openai_tool", "to_responses_tool"]


@runtime_checkable
class Toolset(Protocol):
    """What every remem tool class offers (``MemoryTools``, ``FileTools``, ``BlockTools``,
    ``ArchivalTools``, ``ConversationTools``): its definitions and a way to run a call. The
    framework shapes (OpenAI Agents ``FunctionTool``, LangChain tools) are built from it."""

    def specs(self) -> list[ToolSpec]:
        """The tool definitions."""
        ...

    def execute(self, call: ToolCall) -> Message:
        """Run a call; the answer (or the error, for the model) as a tool message."""
        ...

    async def aexecute(self, call: ToolCall) -> Message:
        """Async :meth:`execute`."""
        ...


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """An OpenAI chat-completions tool: ``{"type": "function", "function": {...}}``."""
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description,
        "parameters": dict(spec.parameters)}}


def to_responses_tool(spec: ToolSpec, *, strict: bool = False) -> dict[str, Any]:
    """An OpenAI Responses API function tool: ``{"type": "function", "name", "description",
    "parameters", "strict"}``; with ``strict`` the parameters are :func:`strict_parameters`'
    (decode the model's arguments with its :meth:`StrictParameters.arguments`)."""
    parameters = (strict_parameters(spec.parameters).schema if strict
                  else dict(spec.parameters))
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": parameters, "strict": strict}


def to_anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """An Anthropic Messages API tool: ``{"name", "description", "input_schema"}``."""
    return {"name": spec.name, "description": spec.description,
            "input_schema": dict(spec.parameters)}


@dataclass(frozen=True, slots=True)
class StrictParameters:
    """A tool's parameters as a strict schema (:attr:`schema`), and the way back.

    ``original`` is the tool's own parameter schema; ``json_fields`` the top-level properties
    that travel as JSON strings under the strict schema.
    """

    schema: dict[str, Any]
    original: Mapping[str, Any]
    json_fields: frozenset[str]

    def arguments(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        """What a model sent under :attr:`schema`, as the tool's own arguments: ``null`` for a
        property that was optional and takes no ``null`` is dropped (at any depth), and JSON
        strings are decoded (a :class:`~remem.errors.ToolError` for the model when one is
        not a JSON object)."""
        out: dict[str, Any] = _without_null(dict(sent), self.original, self.original)
        for name in self.json_fields:
            text = out.get(name)
            if isinstance(text, str):
                try:
                    decoded = json.loads(text)
                except ValueError:
                    decoded = None
                if not isinstance(decoded, dict):
                    raise ToolError(f"{name} must be a JSON object written as a string, e.g. "
                                    f"'{{\"kind\": \"fact\"}}'; got {text[:80]!r}")
                out[name] = decoded
        return out


def strict_parameters(parameters: Mapping[str, Any]) -> StrictParameters:
    """``parameters`` (an object schema) in the form OpenAI's strict mode accepts; see the
    module docstring. :class:`~remem.errors.UsageError` when it cannot be done without
    changing what the tool accepts."""
    if parameters.get("type") != "object":
        raise UsageError(f"a tool's parameters must be an object schema to be made strict, "
                         f"got type {parameters.get('type')!r}")
    schema = copy.deepcopy(dict(parameters))
    json_fields: set[str] = set()
    for name, prop in list(schema.get("properties", {}).items()):
        if _is_open_object(prop):
            json_fields.add(name)
            nullable = _takes_null(prop)
            described = prop.get("description", "")
            schema["properties"][name] = {
                "type": ["string", "null"] if nullable else "string",
                "description": (f"{described} (a JSON object written as a string)"
                                if described else "a JSON object written as a string")}
    defs = schema.get("$defs", {})
    for name, definition in list(defs.items()):
        defs[name] = _strict(definition, f"$defs.{name}")
    return StrictParameters(_strict(schema, "parameters"), copy.deepcopy(dict(parameters)),
                            frozenset(json_fields))


def _strict(node: Any, where: str) -> Any:
    """``node`` with every object closed and every property required (optional ones made
    nullable), recursively; defaults dropped (strict mode has none)."""
    if isinstance(node, list):
        return [_strict(each, where) for each in node]
    if not isinstance(node, dict):
        return node
    node = {key: value for key, value in node.items() if key not in ("default", "title")}
    if _is_open_object(node):
        raise UsageError(f"{where} is an object open to any keys, which OpenAI's strict mode "
                         "cannot express; give it declared properties or use strict=False")
    for key in ("anyOf", "oneOf", "allOf", "items", "prefixItems"):
        if key in node:
            node[key] = _strict(node[key], f"{where}.{key}")
    if "properties" in node:
        required = set(node.get("required", ()))
        properties = {}
        for name, prop in node["properties"].items():
            prop = _strict(prop, f"{where}.{name}")
            if name not in required and not _takes_null(prop):
                described = {"description": prop.pop("description")} if (
                    "description" in prop) else {}
                prop = {"anyOf": [prop, {"type": "null"}], **described}
            properties[name] = prop
        node["properties"] = properties
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def _is_open_object(node: Any) -> bool:
    """Whether ``node`` (or one branch of its ``anyOf``) is an object without declared
    properties that takes any keys."""
    if not isinstance(node, dict):
        return False
    if "anyOf" in node:
        return any(_is_open_object(branch) for branch in node["anyOf"])
    kinds = node.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    return is_object and not node.get("properties") and node.get(
        "additionalProperties", True) is not False


def _takes_null(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kinds = node.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    return any(_takes_null(branch) for branch in node.get("anyOf", ()))


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        found = root.get("$defs", {}).get(reference.removeprefix("#/$defs/"))
        if isinstance(found, Mapping):
            return found
    return node


def _without_null(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """``value`` with the nulls strict mode made the model send for optional properties
    removed, guided by the tool's own ``schema``."""
    schema = _resolve(schema, root)
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        required = set(schema.get("required", ()))
        out = {}
        for name, item in value.items():
            prop = schema["properties"].get(name, {})
            if item is None and name not in required and not _takes_null(
                    _resolve(prop, root)):
                continue
            out[name] = _without_null(item, prop, root)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_without_null(item, schema["items"], root) for item in value]
    for branch in schema.get("anyOf", ()):
        resolved = _resolve(branch, root)
        if isinstance(value, dict) and resolved.get("type") == "object":
            return _without_null(value, resolved, root)
    return value
