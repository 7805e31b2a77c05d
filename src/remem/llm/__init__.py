"""Chat models: one protocol (:class:`ChatModel`) over plain request and response values.

Clients for OpenAI-compatible endpoints (:class:`OpenAIChatModel`) and Anthropic's Messages API
(:class:`AnthropicChatModel`) speak HTTP through httpx (no vendor SDK); :func:`model_from_env`
builds one from ``REMEM_LLM_*`` variables; :class:`ScriptedModel` answers from a queue for tests.
:func:`generate` / :func:`agenerate` ask any of them for output valid against a pydantic model.
See docs/llm.md.

The HTTP clients (and :func:`model_from_env`, which builds them) are imported on first use
(PEP 562): ``httpx`` costs start-up time a caller that never talks to a model should not pay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from remem.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    FinishReason,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
    Usage,
    UsageLedger,
    as_messages,
)
from remem.llm.scripted import Script, ScriptedModel, tool_call
from remem.llm.structured import (
    Structured,
    agenerate,
    generate,
    parse_json_answer,
    schema_instruction,
)

if TYPE_CHECKING:
    from remem.llm.anthropic import AnthropicChatModel
    from remem.llm.config import model_from_env, require_model
    from remem.llm.http_base import HTTPChatModel
    from remem.llm.openai import OpenAIChatModel

#: names imported on first use -> their module
_LAZY = {"AnthropicChatModel": "remem.llm.anthropic", "HTTPChatModel": "remem.llm.http_base",
         "OpenAIChatModel": "remem.llm.openai", "model_from_env": "remem.llm.config",
         "require_model": "remem.llm.config"}

__all__ = [
    "AnthropicChatModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "HTTPChatModel",
    "OpenAIChatModel",
    "ResponseFormat",
    "Script",
    "ScriptedModel",
    "Structured",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "UsageLedger",
    "agenerate",
    "as_messages",
    "generate",
    "model_from_env",
    "parse_json_answer",
    "require_model",
    "schema_instruction",
    "tool_call",
]


def __getattr__(name: str) -> Any:
    """A name of :data:`_LAZY`, imported when first read."""
    if name not in _LAZY:
        raise AttributeError(f"module 'remem.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
