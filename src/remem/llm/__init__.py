"""Chat models: one protocol (:class:`ChatModel`) over plain request and response values.

Clients for OpenAI-compatible endpoints and Anthropic's Messages API speak HTTP through httpx
(no vendor SDK); :class:`ScriptedModel` answers from a queue for tests.
"""

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

__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "ResponseFormat",
    "Script",
    "ScriptedModel",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "UsageLedger",
    "as_messages",
    "tool_call",
]
