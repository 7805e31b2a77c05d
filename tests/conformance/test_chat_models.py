"""The chat model conformance suite: every ChatModel passes every test here.

A model joins by adding one entry to ``HARNESSES``: a factory returning a context manager that
yields a :class:`Harness` (the model, a way to script its answers and failures, and the messages
it last received). The scripted model is checked with the same tests as the real HTTP clients
running against the loopback server, so tests written with ScriptedModel mean the same thing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from remem.errors import LLMError, LLMStatusError, RateLimitError, StructuredOutputError
from remem.llm import (
    AnthropicChatModel,
    ChatModel,
    ChatRequest,
    OpenAIChatModel,
    ScriptedModel,
    ToolSpec,
    agenerate,
    generate,
    tool_call,
)
from remem.messages import Message, from_anthropic, from_openai
from remem.testing import LoopbackServer


@dataclass
class Harness:
    """A model under test plus the controls the suite needs."""

    model: ChatModel
    #: queue answers: str, dict (JSON), or an assistant Message with tool calls
    script: Callable[..., None]
    #: make the next call fail: ``"rate_limit"`` or ``"server"``
    fail: Callable[[str], None]
    #: the messages of the last request the model sent
    last_messages: Callable[[], list[Message]]


@contextmanager
def _scripted() -> Iterator[Harness]:
    model = ScriptedModel()

    def fail(kind: str) -> None:
        model.add(RateLimitError("429", retry_after=1.0) if kind == "rate_limit"
                  else LLMStatusError("503", status=503))

    yield Harness(model, model.add, fail, lambda: list(model.requests[-1].messages))


def _loopback(provider: str) -> Callable[[], AbstractContextManager[Harness]]:
    @contextmanager
    def harness() -> Iterator[Harness]:
        with LoopbackServer(api_key="sk-conf") as server:
            options: dict[str, Any] = {"base_url": server.url, "api_key": "sk-conf",
                                       "max_retries": 0, "retry_backoff": 0.0}
            model = (OpenAIChatModel("gpt-conf", **options) if provider == "openai"
                     else AnthropicChatModel("claude-conf", **options))

            def fail(kind: str) -> None:
                server.enqueue(429 if kind == "rate_limit" else 503,
                               headers={"Retry-After": "1"})

            def last_messages() -> list[Message]:
                body = server.requests[-1].body
                if provider == "openai":
                    return from_openai(body["messages"])
                return from_anthropic(body["messages"], system=body.get("system"))

            with model:
                yield Harness(model, server.chat.add, fail, last_messages)
    return harness


HARNESSES: dict[str, Callable[[], AbstractContextManager[Harness]]] = {
    "scripted": _scripted,
    "openai-loopback": _loopback("openai"),
    "anthropic-loopback": _loopback("anthropic"),
}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with HARNESSES[request.param]() as made:
        yield made


WEATHER = ToolSpec("get_weather", "Weather in a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}})


class Answer(BaseModel):
    city: str
    days: int


def test_text_answer(harness: Harness) -> None:
    harness.script("Hello, Ada.")
    response = harness.model.complete(ChatRequest((Message.user("Hi, I am Ada"),)))
    assert response.text == "Hello, Ada."
    assert response.message.role == "assistant"
    assert response.finish_reason == "stop"
    assert not response.message.tool_calls
    assert harness.last_messages()[-1].text == "Hi, I am Ada"


def test_tool_call_round_trip(harness: Harness) -> None:
    harness.script(tool_call("get_weather", {"city": "Oslo"}, call_id="call_9"), "Cold.")
    first = harness.model.complete(ChatRequest((Message.user("Oslo?"),), tools=(WEATHER,)))
    assert first.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.message.tool_calls] == [
        ("call_9", "get_weather", {"city": "Oslo"})]
    result = Message.tool("call_9", {"temp_c": -3})
    final = harness.model.complete(ChatRequest(
        (Message.user("Oslo?"), first.message, result), tools=(WEATHER,)))
    assert final.text == "Cold."
    seen = harness.last_messages()
    assert [m.role for m in seen] == ["user", "assistant", "tool"]
    assert seen[1].tool_calls[0].id == "call_9"
    assert (seen[2].tool_call_id, seen[2].text) == ("call_9", '{"temp_c": -3}')


def test_structured_output_with_retry(harness: Harness) -> None:
    harness.script({"city": "Rome", "days": "three"}, {"city": "Rome", "days": 3})
    result = generate(harness.model, "Plan a trip", Answer, operation="plan")
    assert result.value == Answer(city="Rome", days=3)
    assert result.attempts == 2
    feedback = harness.last_messages()[-1]
    assert feedback.role == "user" and "days" in feedback.text


def test_structured_output_gives_up_with_the_raw_answer(harness: Harness) -> None:
    harness.script("no idea", "still no idea")
    with pytest.raises(StructuredOutputError) as info:
        generate(harness.model, "Plan a trip", Answer)
    assert info.value.raw == "still no idea"


def test_usage_is_counted_per_operation(harness: Harness) -> None:
    harness.script("one", "two", "three")
    for operation in ("chat", "chat", "summarize"):
        harness.model.complete(ChatRequest((Message.user("some words here"),),
                                           operation=operation))
    totals = harness.model.usage.by_operation()
    assert totals["chat"].calls == 2 and totals["summarize"].calls == 1
    assert all(u.input_tokens > 0 and u.output_tokens > 0 for u in totals.values())
    assert harness.model.usage.snapshot().calls == 3


@pytest.mark.parametrize(("kind", "error", "status"), [
    ("rate_limit", RateLimitError, 429), ("server", LLMStatusError, 503)])
def test_errors_are_typed(harness: Harness, kind: str, error: type[LLMStatusError],
                          status: int) -> None:
    harness.fail(kind)
    with pytest.raises(error) as info:
        harness.model.complete(ChatRequest((Message.user("hi"),)))
    assert isinstance(info.value, LLMError)
    assert info.value.status == status
    if kind == "rate_limit":
        assert isinstance(info.value, RateLimitError) and info.value.retry_after == 1.0


def test_async_matches_sync(harness: Harness) -> None:
    harness.script("same", {"city": "Nice", "days": 2}, "same", {"city": "Nice", "days": 2})
    request = ChatRequest((Message.user("hi"),))

    def run_sync() -> tuple[str, Answer]:
        return (harness.model.complete(request).text,
                generate(harness.model, "x", Answer).value)

    async def run_async() -> tuple[str, Answer]:
        return ((await harness.model.acomplete(request)).text,
                (await agenerate(harness.model, "x", Answer)).value)

    assert run_sync() == asyncio.run(run_async())
