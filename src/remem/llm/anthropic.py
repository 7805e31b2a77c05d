"""A chat client for Anthropic's Messages API (``POST {base_url}/v1/messages``), over httpx.

Structured output (:class:`~remem.llm.ResponseFormat`) is a forced tool call by default
(``structured_mode="tool"``): the schema becomes the input schema of a tool the model must call,
and the call's input comes back as the answer's text, so callers see JSON text as with any other
client. ``structured_mode="prompt"`` puts the schema in the system prompt instead (for
Anthropic-compatible servers without tool support).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from remem.errors import ConfigError
from remem.llm.base import ChatRequest, ChatResponse, FinishReason, Usage
from remem.llm.http_base import HTTPChatModel, endpoint
from remem.llm.structured import _with_instruction, schema_instruction
from remem.messages.convert_anthropic import from_anthropic, to_anthropic
from remem.messages.types import Message

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_BASE_URL", "AnthropicChatModel"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: the ``anthropic-version`` header sent with every request
ANTHROPIC_VERSION = "2023-06-01"

_FINISH: dict[str, FinishReason] = {"end_turn": "stop", "stop_sequence": "stop",
                                    "max_tokens": "length", "tool_use": "tool_calls",
                                    "refusal": "content_filter"}
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class AnthropicChatModel(HTTPChatModel):
    """A :class:`~remem.llm.ChatModel` over Anthropic's Messages API.

    ``base_url`` defaults to ``REMEM_LLM_BASE_URL``, then ``ANTHROPIC_BASE_URL``, then
    :data:`DEFAULT_ANTHROPIC_BASE_URL`; ``/v1/messages`` is appended (``/messages`` when the URL
    already ends in ``/v1``). ``api_key`` defaults to ``REMEM_LLM_API_KEY``, then
    ``ANTHROPIC_API_KEY``. ``default_max_tokens`` fills :attr:`ChatRequest.max_tokens` when it is
    ``None`` (the API requires a value). See :class:`~remem.llm.http_base.HTTPChatModel` for the
    shared settings.
    """

    _provider = "anthropic"
    _key_env = ("REMEM_LLM_API_KEY", "ANTHROPIC_API_KEY")

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 3, retry_backoff: float = 0.5,
                 max_backoff: float = 20.0, max_concurrency: int = 8,
                 context_window: int | None = None,
                 structured_mode: Literal["tool", "prompt"] = "tool",
                 default_max_tokens: int = 4096,
                 headers: Mapping[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None,
                 async_transport: httpx.AsyncBaseTransport | None = None) -> None:
        if structured_mode not in ("tool", "prompt"):
            raise ConfigError("AnthropicChatModel structured_mode must be 'tool' or 'prompt', "
                              f"got {structured_mode!r}")
        if not isinstance(default_max_tokens, int) or default_max_tokens < 1:
            raise ConfigError("AnthropicChatModel default_max_tokens must be a positive "
                              f"integer, got {default_max_tokens!r}")
        base_url = (base_url or os.environ.get("REMEM_LLM_BASE_URL")
                    or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL)
        url = endpoint("AnthropicChatModel", base_url, DEFAULT_ANTHROPIC_BASE_URL)
        path = url.path.rstrip("/")
        path += "/messages" if path.endswith("/v1") else "/v1/messages"
        if api_key is None:
            api_key = os.environ.get("REMEM_LLM_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
        super().__init__(model, url=url.copy_with(path=path), base_url=base_url,
                         api_key=api_key, timeout=timeout, max_retries=max_retries,
                         retry_backoff=retry_backoff, max_backoff=max_backoff,
                         max_concurrency=max_concurrency, context_window=context_window,
                         headers=headers, transport=transport, async_transport=async_transport)
        self._structured_mode = structured_mode
        self._default_max_tokens = default_max_tokens

    def _auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _mode(self) -> str:
        return self._structured_mode

    def _payload(self, request: ChatRequest, mode: str) -> dict[str, Any]:
        messages = request.messages
        fmt = request.response_format
        if fmt is not None and mode == "prompt":
            instruction = schema_instruction(fmt)
            if not any(m.role == "system" and instruction in m.text for m in messages):
                messages = _with_instruction(messages, instruction)
        system, wire = to_anthropic(messages)
        payload: dict[str, Any] = {
            "model": self._model, "messages": wire,
            "max_tokens": request.max_tokens or self._default_max_tokens}
        if system:
            payload["system"] = system
        tools = [{"name": tool.name, "description": tool.description,
                  "input_schema": dict(tool.parameters)} for tool in request.tools]
        choice = request.tool_choice
        if fmt is not None and mode == "tool":
            name = _format_tool_name(fmt.name)
            tools.append({"name": name,
                          "description": f"Give the answer as a {fmt.name} JSON object.",
                          "input_schema": dict(fmt.schema)})
            payload["tool_choice"] = {"type": "tool", "name": name}
        elif choice is not None:
            payload["tool_choice"] = (
                {"type": "auto"} if choice == "auto" else {"type": "none"} if choice == "none"
                else {"type": "any"} if choice == "required" else {"type": "tool", "name": choice})
        if tools:
            payload["tools"] = tools
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.stop:
            payload["stop_sequences"] = list(request.stop)
        return payload

    def _parse(self, body: Any, request: ChatRequest, mode: str) -> ChatResponse:
        if not isinstance(body, dict) or body.get("type") == "error":
            raise ValueError("expected a message object")
        content = body["content"]
        if not isinstance(content, list):
            raise TypeError("'content' is not a list of blocks")
        [message] = from_anthropic([{"role": "assistant", "content": content}])
        finish = _FINISH.get(str(body.get("stop_reason")), "other")
        fmt = request.response_format
        if fmt is not None and mode == "tool":
            message, finish = _structured_answer(message, _format_tool_name(fmt.name), finish)
        usage_body = body.get("usage")
        usage = Usage()
        if isinstance(usage_body, dict) and isinstance(usage_body.get("input_tokens"), int):
            # cached prompt tokens are input too (billed differently, still sent)
            usage = Usage(1, usage_body["input_tokens"]
                          + int(usage_body.get("cache_creation_input_tokens") or 0)
                          + int(usage_body.get("cache_read_input_tokens") or 0),
                          int(usage_body.get("output_tokens") or 0))
        return ChatResponse(message=message, usage=usage, model=str(body.get("model")
                                                                      or self._model),
                            finish_reason=finish, raw=body)


def _format_tool_name(name: str) -> str:
    return _NAME.sub("_", name)[:64] or "answer"


def _structured_answer(message: Message, tool: str, finish: FinishReason
                       ) -> tuple[Message, FinishReason]:
    """The forced tool call's input becomes the answer's text (JSON), as other clients give."""
    for call in message.tool_calls:
        if call.name == tool:
            text = json.dumps(call.arguments, ensure_ascii=False)
            return Message.assistant(text, id=message.id), (
                "stop" if finish == "tool_calls" else finish)
    return message, finish
