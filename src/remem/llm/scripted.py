"""A scripted chat model: queued answers, recorded requests. Shipped for tests (ours and yours).

>>> from remem.llm import ChatRequest, ScriptedModel
>>> from remem.messages import Message
>>> model = ScriptedModel(["Hello!"])
>>> model.complete(ChatRequest((Message.user("hi"),))).text
'Hello!'
>>> model.requests[0].messages[0].text
'hi'
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from remem.errors import UsageError
from remem.llm.base import ChatRequest, ChatResponse, FinishReason, Usage, UsageLedger
from remem.messages.types import Message, ToolCall
from remem.tokens import DEFAULT_COUNTER, TokenCounter, count_messages

__all__ = ["Script", "ScriptedModel", "tool_call"]

#: what a script entry may be: an answer's text, an assistant message, a full response, an
#: exception to raise, a dict or list (answered as JSON text), or a function of the request
#: returning one of those
Script = (str | Message | ChatResponse | BaseException | dict[str, Any] | list[Any]
          | Callable[[ChatRequest], Any])


def tool_call(name: str, arguments: dict[str, Any] | None = None, *,
              call_id: str | None = None, text: str = "") -> Message:
    """An assistant message that calls tool ``name`` (for scripting tool-using answers)."""
    call = ToolCall(id=call_id or f"call_{name}", name=name, arguments=arguments or {})
    return Message.assistant(text, tool_calls=(call,))


class ScriptedModel:
    """A :class:`~remem.llm.ChatModel` that answers from a queue and records every request.

    Each call pops the next script entry; a callable entry is called with the request (and
    may return any other kind of entry). ``default`` answers when the queue is empty; without
    it an empty queue raises :class:`~remem.errors.UsageError`, so a test never passes on an
    answer it did not script. Usage is estimated with ``counter`` (no tokenizer needed).
    """

    def __init__(self, script: Iterable[Script] = (), *, model: str = "scripted",
                 context_window: int | None = None, default: Script | None = None,
                 counter: TokenCounter = DEFAULT_COUNTER) -> None:
        self._model = model
        self._context_window = context_window
        self._queue: deque[Script] = deque(script)
        self._default = default
        self._counter = counter
        self._lock = threading.Lock()
        self._usage = UsageLedger()
        #: every request received, in order
        self.requests: list[ChatRequest] = []

    @property
    def model(self) -> str:
        """The name given at construction (``"scripted"``)."""
        return self._model

    @property
    def context_window(self) -> int | None:
        """The window given at construction (``None``: unknown)."""
        return self._context_window

    @property
    def usage(self) -> UsageLedger:
        """Estimated usage of every call so far."""
        return self._usage

    @property
    def pending(self) -> int:
        """Script entries not yet used."""
        with self._lock:
            return len(self._queue)

    def add(self, *entries: Script) -> None:
        """Queue more answers."""
        with self._lock:
            self._queue.extend(entries)

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer with the next script entry."""
        with self._lock:
            self.requests.append(request)
            if self._queue:
                entry = self._queue.popleft()
            elif self._default is not None:
                entry = self._default
            else:
                raise UsageError(
                    f"ScriptedModel has no answer left for request {len(self.requests)} "
                    f"(operation {request.operation!r}); queue one with model.add(...) or pass "
                    "default= when building it"
                )
        response = self._respond(request, entry)
        self._usage.record(request.operation, response.usage)
        return response

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async :meth:`complete` (answers at once)."""
        return self.complete(request)

    def _respond(self, request: ChatRequest, entry: Script) -> ChatResponse:
        if isinstance(entry, BaseException):
            raise entry
        if callable(entry) and not isinstance(entry, Message | ChatResponse):
            return self._respond(request, entry(request))
        if isinstance(entry, ChatResponse):
            return entry
        if isinstance(entry, str):
            message = Message.assistant(entry)
        elif isinstance(entry, Message):
            message = entry
        elif isinstance(entry, dict | list):  # a structured answer, sent as JSON text
            message = Message.assistant(json.dumps(entry, ensure_ascii=False))
        else:
            raise UsageError(
                f"ScriptedModel cannot answer with a {type(entry).__name__}; script a str, "
                "Message, ChatResponse, exception, or a function of the request"
            )
        if message.role != "assistant":
            raise UsageError(f"a scripted answer must be an assistant message, not "
                             f"{message.role!r}")
        finish: FinishReason = "tool_calls" if message.tool_calls else "stop"
        usage = Usage(1, count_messages(request.messages, self._counter),
                      count_messages([message], self._counter))
        return ChatResponse(message=message, usage=usage, model=self._model,
                            finish_reason=finish)
