"""ScriptedModel: answers in order, every kind of script entry, recorded requests, usage, and a
loud failure when the script runs out."""

from __future__ import annotations

import asyncio
import json

import pytest

from remem.errors import LLMConnectionError, UsageError
from remem.llm import ChatModel, ChatRequest, ChatResponse, ScriptedModel, Usage, tool_call
from remem.messages import Message


def ask(text: str = "hi", operation: str = "chat") -> ChatRequest:
    return ChatRequest((Message.user(text),), operation=operation)


def test_is_a_chat_model_and_answers_in_order() -> None:
    model = ScriptedModel(["one", "two"], model="fake-1", context_window=4096)
    assert isinstance(model, ChatModel)
    assert (model.model, model.context_window, model.pending) == ("fake-1", 4096, 2)
    assert [model.complete(ask(str(i))).text for i in range(2)] == ["one", "two"]
    assert [r.messages[0].text for r in model.requests] == ["0", "1"]
    assert model.pending == 0


def test_every_kind_of_entry() -> None:
    fixed = ChatResponse(Message.assistant("fixed"), Usage(1, 5, 6), "other", "length")
    model = ScriptedModel([
        {"a": 1}, [1, 2], Message.assistant("as message"), fixed,
        tool_call("lookup", {"q": "x"}, call_id="c1", text="let me check"),
        lambda request: f"echo {request.messages[-1].text}",
        lambda request: {"n": len(request.messages)},
    ])
    assert json.loads(model.complete(ask()).text) == {"a": 1}
    assert json.loads(model.complete(ask()).text) == [1, 2]
    assert model.complete(ask()).text == "as message"
    assert model.complete(ask()) is fixed
    called = model.complete(ask())
    assert called.finish_reason == "tool_calls"
    assert called.text == "let me check"
    assert called.message.tool_calls[0].arguments == {"q": "x"}
    assert model.complete(ask("ping")).text == "echo ping"
    assert json.loads(model.complete(ask()).text) == {"n": 1}


def test_exceptions_are_raised_and_the_queue_moves_on() -> None:
    model = ScriptedModel([LLMConnectionError("down"), "up"])
    with pytest.raises(LLMConnectionError, match="down"):
        model.complete(ask())
    assert model.complete(ask()).text == "up"
    assert len(model.requests) == 2


def test_empty_queue_fails_loudly_unless_a_default_is_given() -> None:
    model = ScriptedModel()
    with pytest.raises(UsageError, match=r"model\.add"):
        model.complete(ask(operation="extract"))
    model.add("late")
    assert model.complete(ask()).text == "late"
    fallback = ScriptedModel(["first"], default="again")
    assert [fallback.complete(ask()).text for _ in range(3)] == ["first", "again", "again"]


@pytest.mark.parametrize("entry", [42, Message.user("not an answer")])
def test_bad_entries_are_usage_errors(entry: object) -> None:
    with pytest.raises(UsageError):
        ScriptedModel([entry]).complete(ask())  # type: ignore[list-item]


def test_usage_is_estimated_per_operation() -> None:
    model = ScriptedModel(["a short answer", "another answer here"])
    first = model.complete(ask("a question with several words", operation="extract"))
    model.complete(ask("x", operation="summarize"))
    assert first.usage.calls == 1
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    totals = model.usage.by_operation()
    assert set(totals) == {"extract", "summarize"}
    assert totals["extract"] == first.usage
    assert model.usage.snapshot().calls == 2
    model.usage.reset()
    assert model.usage.snapshot() == Usage()


def test_async_answers_from_the_same_queue() -> None:
    model = ScriptedModel(["sync", "async"])
    assert model.complete(ask()).text == "sync"
    assert asyncio.run(model.acomplete(ask())).text == "async"
    assert len(model.requests) == 2
