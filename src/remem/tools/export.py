"""Tool definitions in the shapes providers expect, from one :class:`~remem.llm.ToolSpec`."""

from __future__ import annotations

from typing import Any

from remem.llm.base import ToolSpec

__all__ = ["to_anthropic_tool", "to_openai_tool"]


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """An OpenAI chat-completions tool: ``{"type": "function", "function": {...}}``."""
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description,
        "parameters": dict(spec.parameters)}}


def to_anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """An Anthropic Messages API tool: ``{"name", "description", "input_schema"}``."""
    return {"name": spec.name, "description": spec.description,
            "input_schema": dict(spec.parameters)}
