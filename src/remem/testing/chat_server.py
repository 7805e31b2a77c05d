"""Chat routes for :class:`~remem.testing.LoopbackServer`: OpenAI's ``POST /v1/chat/completions``
and Anthropic's ``POST /v1/messages``, answering from a scripted queue in each wire format.

Script answers provider-neutrally on ``server.chat`` and point either client at ``server.url``::

    with LoopbackServer() as server:
        server.chat.add("Hello!", {"name": "Ada"}, tool_call("get_weather", {"city": "Paris"}))
        model = OpenAIChatModel("gpt-test", base_url=server.url, api_key="sk-test")
        model.complete(ChatRequest((Message.user("hi"),))).text  # 'Hello!'

An answer is a string (text), a dict or list (answered as JSON text, or as the forced tool
call's input when Anthropic's client asks for structured output), an assistant
:class:`~remem.messages.Message` (text and tool calls), a :class:`ChatReply` (adds finish reason
and usage), or a function of the :class:`ChatCall` returning one of those. HTTP-level failures
(429 with ``Retry-After``, 5xx, malformed bodies, hang-ups) are scripted with
``server.enqueue(...)`` as for embeddings; they come in each provider's error shape.

Run it on its own for demos (``remem chat`` against a fake provider)::

    python -m remem.testing --port 8765 --default "I am a loopback model."
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from remem.messages.convert_anthropic import anthropic_blocks, from_anthropic
from remem.messages.convert_openai import from_openai, openai_tool_call
from remem.messages.types import Message, new_id

if TYPE_CHECKING:
    from remem.testing.openai_server import LoopbackServer, RecordedRequest

__all__ = [
    "CHAT_ROUTES",
    "ChatAnswer",
    "ChatCall",
    "ChatQueue",
    "ChatReply",
    "anthropic_error",
    "anthropic_messages_route",
    "chat_completions_route",
    "check_bearer",
    "check_openai_request",
    "openai_error",
]

Provider = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A scripted answer with control over what the wire says besides the message.

    ``finish_reason`` is remem's vocabulary (``stop``, ``length``, ``tool_calls``...), mapped to
    each provider's own; ``usage`` is ``(input_tokens, output_tokens)`` or ``None`` to count
    words; ``omit_usage`` leaves usage out of the body (as some local servers do).
    """

    message: Message | str
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    omit_usage: bool = False


@dataclass(frozen=True, slots=True)
class ChatCall:
    """What a scripted function answer receives: the provider, the parsed request body, and
    the request's messages converted back to :class:`Message` values."""

    provider: Provider
    body: Mapping[str, Any]
    messages: tuple[Message, ...]


#: a scripted chat answer (see the module docstring)
ChatAnswer = str | dict[str, Any] | list[Any] | Message | ChatReply | Callable[[ChatCall], Any]


class ChatQueue:
    """Thread-safe queue of scripted chat answers, shared by both chat routes.

    ``default`` answers when the queue is empty; without it the route answers HTTP 400 saying
    no answer was scripted (so a test never passes on an answer it did not script).
    ``rejected_formats`` lists OpenAI ``response_format`` types to refuse with HTTP 400 the way
    servers without structured output do (``{"json_schema"}``, ``{"json_schema", "json_object"}``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ChatAnswer] = deque()
        self.default: ChatAnswer | None = None
        self.rejected_formats: set[str] = set()

    def add(self, *answers: ChatAnswer) -> None:
        """Queue answers, used in order by whichever chat route is called next."""
        with self._lock:
            self._queue.extend(answers)

    @property
    def pending(self) -> int:
        """Answers not used yet."""
        with self._lock:
            return len(self._queue)

    def clear(self) -> None:
        """Drop unused answers, the default and the rejected formats."""
        with self._lock:
            self._queue.clear()
        self.default = None
        self.rejected_formats = set()

    def _next(self) -> ChatAnswer | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.default


# -- error bodies -------------------------------------------------------------------------------


def openai_error(status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None) -> tuple[int, Any]:
    """An OpenAI-style error answer: ``{"error": {"message", "type", "param", "code"}}``."""
    return status, {"error": {"message": message, "type": type, "param": param, "code": code}}


_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def anthropic_error(status: int, message: str, *, type: str | None = None) -> tuple[int, Any]:
    """An Anthropic-style error answer: ``{"type": "error", "error": {"type", "message"}}``."""
    kind = type or _ANTHROPIC_TYPES.get(status, "api_error")
    return status, {"type": "error", "error": {"type": kind, "message": message}}


# -- turning a scripted answer into wire bodies -------------------------------------------------

_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+|[^\w\s]")


def _count(text: str) -> int:
    return len(_TOKEN.findall(text))


def _resolve(answer: ChatAnswer, call: ChatCall) -> ChatReply:
    for _ in range(10):  # a function may return another function, within reason
        if isinstance(answer, ChatReply):
            return answer
        if isinstance(answer, str | Message):
            return ChatReply(answer)
        if isinstance(answer, dict | list):
            return ChatReply(json.dumps(answer, ensure_ascii=False))
        if callable(answer):
            answer = answer(call)
            continue
        break
    raise TypeError(f"cannot answer with a {type(answer).__name__}; script a str, dict, list, "
                    "Message, ChatReply or a function of the ChatCall")


def _message_of(reply: ChatReply) -> Message:
    message = reply.message
    return Message.assistant(message) if isinstance(message, str) else message


def _prompt_tokens(body: Mapping[str, Any]) -> int:
    return _count(json.dumps(body.get("messages", []), ensure_ascii=False)) + _count(
        json.dumps(body.get("system", ""), ensure_ascii=False))


# -- what every OpenAI route checks first (the embeddings route too) ---------------------------


def check_bearer(server: LoopbackServer, request: RecordedRequest) -> tuple[int, Any] | None:
    """OpenAI's 401 answers when ``server.api_key`` is set and not sent as a Bearer token."""
    if server.api_key is None:
        return None
    auth = request.headers.get("authorization", "")
    if not auth.startswith("Bearer "):
        return openai_error(401, "You didn't provide an API key. You need to provide your API "
                                 "key in an Authorization header using Bearer auth (i.e. "
                                 "Authorization: Bearer YOUR_KEY).")
    key = auth.removeprefix("Bearer ")
    if key != server.api_key:
        masked = f"{key[:3]}***{key[-4:]}" if len(key) > 10 else "***"
        return openai_error(401, f"Incorrect API key provided: {masked}. You can find your API "
                                 f"key at https://platform.openai.com/account/api-keys.",
                            code="invalid_api_key")
    return None


def check_openai_request(server: LoopbackServer,
                         request: RecordedRequest) -> tuple[int, Any] | None:
    """What every OpenAI route checks first, answered as OpenAI does: the bearer key, a JSON
    object body, and a model the server serves. ``None`` when the request passes."""
    if (refused := check_bearer(server, request)) is not None:
        return refused
    body = request.body
    if not isinstance(body, dict):
        return openai_error(400, "We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return openai_error(400, "you must provide a model parameter", param="model")
    if server.models is not None and model not in server.models:
        return openai_error(404, f"The model `{model}` does not exist or you do not have access "
                                 f"to it.", code="model_not_found")
    return None


# -- OpenAI chat completions --------------------------------------------------------------------


def chat_completions_route(server: LoopbackServer, request: RecordedRequest) -> tuple[int, Any]:
    """``POST /v1/chat/completions``: validates the basics like OpenAI, answers from the queue."""
    if (refused := check_openai_request(server, request)) is not None:
        return refused
    body = request.body
    model = body["model"]
    if body.get("stream"):
        return openai_error(400, "LoopbackServer does not stream; send stream=false",
                            param="stream")
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind is not None and kind in server.chat.rejected_formats:
        return openai_error(400, f"response_format type {kind!r} is not supported by this "
                                 "server", param="response_format")
    try:
        messages = tuple(from_openai(body.get("messages") or [], extra="ignore"))
    except ValueError as exc:
        return openai_error(400, str(exc), param="messages")
    if not messages:
        return openai_error(400, "'messages' must contain at least one message",
                            param="messages")
    answer = server.chat._next()
    if answer is None:
        return openai_error(400, "LoopbackServer has no chat answer scripted for this request; "
                                 "queue one with server.chat.add(...)", code="no_scripted_answer")
    reply = _resolve(answer, ChatCall("openai", body, messages))
    message = _message_of(reply)
    wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        wire["tool_calls"] = [openai_tool_call(c) for c in message.tool_calls]
    elif wire["content"] is None:
        wire["content"] = ""
    finish = reply.finish_reason or ("tool_calls" if message.tool_calls else "stop")
    prompt, completion = reply.usage or (_prompt_tokens(body),
                                         _count(json.dumps(wire, ensure_ascii=False)))
    out: dict[str, Any] = {
        "id": new_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": wire, "finish_reason": finish, "logprobs": None}],
    }
    if not reply.omit_usage:
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                        "total_tokens": prompt + completion}
    return 200, out


# -- Anthropic messages -------------------------------------------------------------------------

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                   "content_filter": "refusal"}


def anthropic_messages_route(server: LoopbackServer, request: RecordedRequest
                             ) -> tuple[int, Any]:
    """``POST /v1/messages``: validates like Anthropic (key, version header, max_tokens),
    answers from the queue; a forced tool choice gets the answer as that tool's input."""
    if server.api_key is not None and request.headers.get("x-api-key") != server.api_key:
        return anthropic_error(401, "invalid x-api-key")
    if not request.headers.get("anthropic-version"):
        return anthropic_error(400, "anthropic-version: header is required")
    body = request.body
    if not isinstance(body, dict):
        return anthropic_error(400, "There was an issue with the request body: not JSON")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return anthropic_error(400, "model: Field required")
    if server.models is not None and model not in server.models:
        return anthropic_error(404, f"model: {model}")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return anthropic_error(400, "max_tokens: Field required (a positive integer)")
    if body.get("stream"):
        return anthropic_error(400, "LoopbackServer does not stream; send stream=false")
    try:
        messages = tuple(from_anthropic(body.get("messages") or [], system=body.get("system")))
    except ValueError as exc:
        return anthropic_error(400, f"messages: {exc}")
    if not any(m.role != "system" for m in messages):
        return anthropic_error(400, "messages: at least one message is required")
    answer = server.chat._next()
    if answer is None:
        return anthropic_error(400, "LoopbackServer has no chat answer scripted for this "
                                    "request; queue one with server.chat.add(...)")
    reply = _resolve(answer, ChatCall("anthropic", body, messages))
    message = _message_of(reply)
    content = anthropic_blocks(message.content)
    content += [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls]
    forced = _forced_tool(body)
    stop = reply.finish_reason
    if forced is not None and not message.tool_calls:
        value = _json_object(message.text)
        if value is not None:  # the model "calls" the forced tool with the scripted JSON
            content = [{"type": "tool_use", "id": new_id("toolu"), "name": forced,
                        "input": value}]
            stop = stop or "tool_calls"
    stop = stop or ("tool_calls" if message.tool_calls else "stop")
    output = _count(json.dumps(content, ensure_ascii=False))
    prompt, completion = reply.usage or (_prompt_tokens(body), output)
    out: dict[str, Any] = {
        "id": new_id("msg"), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": _ANTHROPIC_STOP.get(stop, stop),
        "stop_sequence": None,
    }
    if not reply.omit_usage:
        out["usage"] = {"input_tokens": prompt, "output_tokens": completion}
    return 200, out


def _forced_tool(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool" and isinstance(
            choice.get("name"), str):
        return str(choice["name"])
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


CHAT_ROUTES: Mapping[tuple[str, str], Any] = {
    ("POST", "/v1/chat/completions"): chat_completions_route,
    ("POST", "/v1/messages"): anthropic_messages_route,
}
"""The chat routes every :class:`~remem.testing.LoopbackServer` serves."""
