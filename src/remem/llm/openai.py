"""A chat client for any server speaking OpenAI's ``POST {base_url}/chat/completions``.

That covers OpenAI, Azure OpenAI (``https://NAME.openai.azure.com/openai/deployments/DEPLOY``
with ``?api-version=...`` kept), Ollama (``http://localhost:11434/v1``), vLLM, LM Studio and
llama.cpp's server. Plain httpx, no SDK.

Structured output (:class:`~remem.llm.ResponseFormat`) is sent according to
``structured_mode``: ``"json_schema"`` (OpenAI's ``response_format`` with the schema),
``"json_object"`` (JSON mode; the schema goes in the system message) or ``"prompt"`` (the schema
in the system message only). With ``structured_fallback`` (the default), a server that rejects
the response format with HTTP 400/422 gets the same request again one mode down, and the client
remembers the mode that worked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from remem._http import Failure
from remem.errors import ConfigError, StructuredOutputError
from remem.llm.base import ChatRequest, ChatResponse, FinishReason, ResponseFormat, Usage
from remem.llm.http_base import HTTPChatModel, endpoint
from remem.llm.structured import _with_instruction, parse_json_answer, schema_instruction
from remem.messages.convert_openai import from_openai_message, to_openai

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIChatModel", "StructuredMode"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
#: OpenAI's own API host: requests to it need a key
OPENAI_HOST = "api.openai.com"

StructuredMode = Literal["json_schema", "json_object", "prompt"]
_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "prompt")
_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length",
                                    "tool_calls": "tool_calls", "function_call": "tool_calls",
                                    "content_filter": "content_filter", "eos": "stop"}
# how servers say they do not support a response format
_FORMAT_MARKERS = ("response_format", "json_schema", "json_object", "response format",
                   "grammar", "guided")
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class OpenAIChatModel(HTTPChatModel):
    """A :class:`~remem.llm.ChatModel` over an OpenAI-compatible chat-completions endpoint.

    ``base_url`` defaults to ``REMEM_LLM_BASE_URL``, then ``OPENAI_BASE_URL``, then
    :data:`DEFAULT_OPENAI_BASE_URL`. ``api_key`` defaults to ``REMEM_LLM_API_KEY``, then
    ``OPENAI_API_KEY`` (local servers need none; ``api_key=""`` sends none). A base URL on
    ``*.azure.com`` sends the key as Azure's ``api-key`` header. ``max_tokens_param`` is the
    request field for :attr:`ChatRequest.max_tokens` (``"max_completion_tokens"`` for OpenAI's
    reasoning models). See :class:`~remem.llm.http_base.HTTPChatModel` for the shared settings.
    """

    _provider = "openai"
    _key_env = ("REMEM_LLM_API_KEY", "OPENAI_API_KEY")

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 3, retry_backoff: float = 0.5,
                 max_backoff: float = 20.0, max_concurrency: int = 8,
                 context_window: int | None = None,
                 structured_mode: StructuredMode = "json_schema",
                 structured_fallback: bool = True,
                 max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
                 headers: Mapping[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None,
                 async_transport: httpx.AsyncBaseTransport | None = None) -> None:
        if structured_mode not in _MODES:
            raise ConfigError(f"OpenAIChatModel structured_mode must be one of "
                              f"{', '.join(_MODES)}, got {structured_mode!r}")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ConfigError("OpenAIChatModel max_tokens_param must be 'max_tokens' or "
                              f"'max_completion_tokens', got {max_tokens_param!r}")
        base_url = (base_url or os.environ.get("REMEM_LLM_BASE_URL")
                    or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL)
        url = endpoint("OpenAIChatModel", base_url, DEFAULT_OPENAI_BASE_URL)
        if api_key is None:
            api_key = os.environ.get("REMEM_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        # append to the path so Azure-style URLs keep their ?api-version=... query
        super().__init__(model, url=url.copy_with(path=url.path.rstrip("/") + "/chat/completions"),
                         base_url=base_url, api_key=api_key, timeout=timeout,
                         max_retries=max_retries, retry_backoff=retry_backoff,
                         max_backoff=max_backoff, max_concurrency=max_concurrency,
                         context_window=context_window, headers=headers, transport=transport,
                         async_transport=async_transport)
        self._structured_mode: StructuredMode = structured_mode
        self._structured_fallback = structured_fallback
        self._max_tokens_param = max_tokens_param
        self._azure = (url.host or "").endswith(".azure.com")

    @property
    def structured_mode(self) -> StructuredMode:
        """The mode structured requests start with (it moves down after a fallback)."""
        return self._structured_mode

    # -- hooks -----------------------------------------------------------------------------------

    def _check_ready(self) -> None:
        # OpenAI answers every keyless request with 401: fail before sending (and retrying)
        if not self._api_key and self._url.host == OPENAI_HOST:
            raise ConfigError(
                f"OpenAIChatModel({self.model!r}) talks to {OPENAI_HOST}, which needs an "
                "API key, and none is set: pass api_key= or set REMEM_LLM_API_KEY or "
                "OPENAI_API_KEY. For a local server that needs none (Ollama, vLLM...), "
                "set base_url= (or REMEM_LLM_BASE_URL) to it")

    def _auth_headers(self) -> dict[str, str]:
        if not self._api_key:
            return {}
        if self._azure:
            return {"api-key": self._api_key}
        return {"Authorization": f"Bearer {self._api_key}"}

    def _mode(self) -> str:
        return self._structured_mode

    def _remember_mode(self, mode: str) -> None:
        if mode in _MODES:
            self._structured_mode = mode

    def _fallback(self, mode: str, failure: Failure) -> str | None:
        response = failure.response
        if (not self._structured_fallback or response is None or mode not in _MODES
                or mode == "prompt" or response.status_code not in (400, 422, 501)):
            return None
        text = response.text.lower()
        if not any(marker in text for marker in _FORMAT_MARKERS):
            return None
        return _MODES[_MODES.index(mode) + 1]

    def _payload(self, request: ChatRequest, mode: str) -> dict[str, Any]:
        messages = request.messages
        fmt = request.response_format
        if fmt is not None and mode != "json_schema":
            instruction = schema_instruction(fmt)
            if not any(m.role == "system" and instruction in m.text for m in messages):
                messages = _with_instruction(messages, instruction)
        payload: dict[str, Any] = {"model": self._model, "messages": to_openai(messages)}
        if request.tools:
            payload["tools"] = [{"type": "function", "function": {
                "name": tool.name, "description": tool.description,
                "parameters": dict(tool.parameters)}} for tool in request.tools]
        if request.tool_choice is not None:
            choice = request.tool_choice
            payload["tool_choice"] = (choice if choice in ("auto", "none", "required") else
                                      {"type": "function", "function": {"name": choice}})
        if fmt is not None and mode == "json_schema":
            payload["response_format"] = _json_schema_format(fmt)
        elif fmt is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        if request.max_tokens is not None:
            payload[self._max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.stop:
            payload["stop"] = list(request.stop)
        return payload

    def _parse(self, body: Any, request: ChatRequest, mode: str) -> ChatResponse:
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body[
                "choices"]:
            raise ValueError("expected an object with a non-empty 'choices' list")
        choice = body["choices"][0]
        raw_message = choice["message"]
        if not isinstance(raw_message, dict):
            raise TypeError("choices[0].message is not an object")
        # some servers omit the role, or send an empty tool_calls list
        raw_message = {**raw_message, "role": "assistant"}
        if isinstance(raw_message.get("tool_calls"), list):
            raw_message["tool_calls"] = [_repair_arguments(c) for c in raw_message["tool_calls"]]
        # a provider's answer gains fields over time (audio, annotations, reasoning): read
        # what remem keeps, drop the rest
        message = from_openai_message(raw_message, "choices[0].message", extra="ignore")
        finish = _FINISH.get(str(choice.get("finish_reason")), "other")
        if message.tool_calls and finish == "stop":  # Ollama answers tool calls with "stop"
            finish = "tool_calls"
        usage_body = body.get("usage")
        usage = Usage()
        if isinstance(usage_body, dict) and isinstance(usage_body.get("prompt_tokens"), int):
            usage = Usage(1, usage_body["prompt_tokens"],
                          int(usage_body.get("completion_tokens") or 0))
        return ChatResponse(message=message, usage=usage, model=str(body.get("model")
                                                                      or self._model),
                            finish_reason=finish, raw=body)


def _repair_arguments(call: Any) -> Any:
    """Local models write tool arguments with fences, trailing commas or Python literals; read
    them tolerantly (what still cannot be read fails with the field named)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if not isinstance(arguments, str) or not arguments.strip():
        return call
    try:
        json.loads(arguments)
        return call
    except ValueError:
        pass
    try:
        value = parse_json_answer(arguments)
    except StructuredOutputError:
        return call
    if not isinstance(value, dict):
        return call
    return {**call, "function": {**function, "arguments": value}}


def _json_schema_format(fmt: ResponseFormat) -> dict[str, Any]:
    # OpenAI wants the name to match ^[a-zA-Z0-9_-]{1,64}$
    name = _NAME.sub("_", fmt.name)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {
        "name": name, "schema": dict(fmt.schema), "strict": fmt.strict}}
