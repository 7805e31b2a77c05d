"""Tool parameters read from a request model: the JSON schema an LLM tool (or an MCP tool)
takes is the request's own, so a field added to a request reaches the tools with its type,
bounds, default and description.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from remem.requests import Request

__all__ = ["request_properties", "request_schema"]


def request_properties(model: type[Request], names: Sequence[str] | None = None, *,
                       exclude: Sequence[str] = (),
                       defaults: Mapping[str, Any] | None = None
                       ) -> dict[str, dict[str, Any]]:
    """The JSON schema of each of ``model``'s fields (``names``, default all, minus
    ``exclude``), in declaration order, without pydantic's titles; ``defaults`` replaces the
    default of a field a surface fixes differently (and says so)."""
    schema = model.model_json_schema()
    if "$defs" in schema:  # nested models would need their $defs carried along
        raise TypeError(f"{model.__name__} has nested models ({sorted(schema['$defs'])}); "
                        "tool schemas take flat requests")
    wanted = list(model.model_fields) if names is None else list(names)
    unknown = [name for name in [*wanted, *(defaults or {})] if name not in model.model_fields]
    if unknown:
        raise TypeError(f"{model.__name__} has no field(s) {', '.join(unknown)}")
    properties: dict[str, dict[str, Any]] = {}
    for name in wanted:
        if name in exclude:
            continue
        prop = {k: v for k, v in schema["properties"][name].items() if k != "title"}
        if defaults and name in defaults:
            prop["default"] = defaults[name]
        properties[name] = prop
    return properties


def request_schema(model: type[Request], names: Sequence[str] | None = None, *,
                   exclude: Sequence[str] = (),
                   defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An object schema of ``model``'s fields (see :func:`request_properties`) with its
    required ones; no other property is allowed."""
    properties = request_properties(model, names, exclude=exclude, defaults=defaults)
    required = [name for name in properties if model.model_fields[name].is_required()]
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}
