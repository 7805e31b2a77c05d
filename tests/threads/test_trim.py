"""Trimming keeps conversations valid for OpenAI and Anthropic, for every input (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import InvalidInputError, MessageFormatError
from remem.messages import ImagePart, Message, ToolCall
from remem.threads.trim import (
    check_anthropic_sequence,
    check_openai_sequence,
    safe_cut,
    trim_messages,
)
from remem.tokens import EstimateCounter, count_messages

TEXT = st.text(alphabet=st.sampled_from(list("abc xyz 记忆系统。!")), min_size=1, max_size=40)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Valid conversations: optional system prompt, then user turns each answered by assistant
    steps, some of which call tools (results follow in any order), the last turn maybe open."""
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 2))):
        messages.append(Message.system(draw(TEXT)))
    call_number = 0
    for _ in range(draw(st.integers(0, 6))):
        for _ in range(draw(st.integers(1, 2))):
            messages.append(Message.user(draw(TEXT)))
        for _ in range(draw(st.integers(0, 3))):
            calls = draw(st.integers(0, 3))
            if calls == 0:
                messages.append(Message.assistant(draw(TEXT)))
                continue
            ids = [f"call_{call_number + n}" for n in range(calls)]
            call_number += calls
            messages.append(Message.assistant(
                draw(st.sampled_from(["", "let me check"])),
                tool_calls=[ToolCall(id=i, name="lookup", arguments={"q": draw(TEXT)})
                            for i in ids]))
            for call_id in draw(st.permutations(ids)):
                messages.append(Message.tool(call_id, draw(TEXT)))
    return messages


COUNTER = EstimateCounter()


@settings(max_examples=300, deadline=None)
@given(conversations(), st.none() | st.integers(0, 400), st.none() | st.integers(0, 30),
       st.booleans())
def test_trimmed_sequences_are_valid_and_within_budget(
        messages: list[Message], max_tokens: int | None, max_messages: int | None,
        keep_system: bool) -> None:
    check_openai_sequence(messages)
    check_anthropic_sequence(messages)
    out = trim_messages(messages, max_tokens=max_tokens, max_messages=max_messages,
                        counter=COUNTER, keep_system=keep_system)
    # with keep_system the system prompt is kept whole; the rest is a suffix of the history
    # (without it, system messages are history like any other)
    kept_system = [m for m in messages if m.role == "system"] if keep_system else []
    assert out[:len(kept_system)] == kept_system
    history = messages[len(kept_system):]
    rest = out[len(kept_system):]
    assert rest == history[len(history) - len(rest):]
    assert rest in ([], history) or rest[0].role == "user"
    check_openai_sequence(out)
    check_anthropic_sequence(out)
    # within budget unless the system prompt alone is over it
    if max_tokens is not None and rest:
        assert count_messages(out, COUNTER) <= max_tokens
    if max_messages is not None and rest:
        assert len(out) <= max_messages
    # maximal: the next earlier user turn would not have fitted
    earlier = [i for i, m in enumerate(history[:len(history) - len(rest)]) if m.role == "user"]
    if earlier:
        bigger = kept_system + history[earlier[-1]:]
        too_many = max_tokens is not None and count_messages(bigger, COUNTER) > max_tokens
        too_long = max_messages is not None and len(bigger) > max_messages
        assert too_many or too_long


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(0, 300))
def test_openai_only_inputs_stay_valid(messages: list[Message], max_tokens: int) -> None:
    # OpenAI accepts a history that opens with an assistant turn; drop the first user turn(s)
    head = sum(1 for m in messages if m.role == "system")
    first_assistant = next((i for i in range(head, len(messages))
                            if messages[i].role == "assistant"), None)
    if first_assistant is not None:
        messages = messages[:head] + messages[first_assistant:]
    check_openai_sequence(messages)
    out = trim_messages(messages, max_tokens=max_tokens, counter=COUNTER)
    check_openai_sequence(out)
    if len(out) < len(messages):  # something was cut: the rest opens with a user turn
        check_anthropic_sequence(out)


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_safe_cut_never_orphans_a_tool_result(messages: list[Message], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(messages)))
    for user_only in (False, True):
        cut = safe_cut(messages, index, user_only=user_only)
        assert 0 <= cut <= index
        tail = messages[cut:]
        assert not tail or tail[0].role != "tool"
        if user_only and tail and cut > 0:
            assert tail[0].role == "user"
        # the cut moved back only over messages that could not start the tail
        for between in range(cut + 1, index + 1):
            if between < len(messages):
                assert messages[between].role == "tool" or (
                    user_only and messages[between].role != "user")
        # both halves keep every call with its results
        head = [m for m in messages[:cut] if m.role != "system"]
        check_openai_sequence(head)
        check_openai_sequence(tail)


def test_trim_by_messages_keeps_system_and_starts_on_user() -> None:
    system = Message.system("You are helpful.")
    call = Message.assistant(
        tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Oslo"})])
    history = [system, Message.user("weather in Oslo?"), call, Message.tool("c1", "rain"),
               Message.assistant("It rains."), Message.user("and tomorrow?"),
               Message.assistant("Sun.")]
    # 4 messages would start on the tool result: the trimmer moves forward to the user turn
    assert trim_messages(history, max_messages=4) == [system, history[5], history[6]]
    assert trim_messages(history, max_messages=6) == [system, history[5], history[6]]
    assert trim_messages(history, max_messages=7) == history
    assert trim_messages(history, max_messages=100) == history
    assert trim_messages(history, max_messages=1) == [system]
    assert trim_messages(history, max_messages=2, keep_system=False) == history[5:]


def test_trim_by_tokens_counts_the_system_prompt() -> None:
    counter = EstimateCounter()
    system = Message.system("s" * 400)  # 100 tokens + overhead
    turns = [Message.user("u" * 40), Message.assistant("a" * 40)] * 3
    messages = [system, *turns]
    per_turn = count_messages(turns[:2], counter)
    budget = count_messages([system], counter) + 2 * per_turn
    assert trim_messages(messages, max_tokens=budget, counter=counter) == [system, *turns[2:]]
    assert trim_messages(messages, max_tokens=budget - 1, counter=counter) == [system, *turns[4:]]
    # the system prompt alone is over budget: it is still kept, nothing else
    assert trim_messages(messages, max_tokens=10, counter=counter) == [system]


def test_trim_counts_images() -> None:
    image = Message(role="user", content=(ImagePart(url="https://example.com/cat.png"),))
    messages = [image, Message.assistant("a cat"), Message.user("thanks")]
    small = count_messages(messages[2:])
    assert trim_messages(messages, max_tokens=small + 50) == messages[2:]
    assert trim_messages(messages, max_tokens=count_messages(messages)) == messages


def test_trim_rejects_negative_budgets() -> None:
    with pytest.raises(InvalidInputError, match="max_tokens must be >= 0"):
        trim_messages([Message.user("x")], max_tokens=-1)
    with pytest.raises(InvalidInputError, match="max_messages must be >= 0"):
        trim_messages([Message.user("x")], max_messages=-5)
    with pytest.raises(InvalidInputError, match="safe_cut index"):
        safe_cut([Message.user("x")], 2)


def _call(*ids: str) -> Message:
    return Message.assistant(tool_calls=[ToolCall(id=i, name="t") for i in ids])


@pytest.mark.parametrize(("messages", "position", "rule"), [
    ([Message.tool("c1", "x")], 0, "orphan tool result"),
    ([Message.user("q"), _call("c1"), Message.user("?"), Message.tool("c1", "x")], 2,
     "before the results of tool call"),
    ([Message.user("q"), _call("c1"), Message.tool("c2", "x")], 2, "did not make"),
    ([Message.user("q"), _call("c1"), Message.tool("c1", "x"), Message.tool("c1", "y")], 3,
     "answered twice"),
    ([Message.user("q"), _call("c1", "c2"), Message.tool("c1", "x")], 3, "ends before the results"),
    ([Message.user("q"), _call("c1", "c1")], 1, "repeats a tool call id"),
    ([Message.user("q"), _call("c1"), Message.tool("c1", "x"), Message.assistant("ok"),
      Message.tool("c1", "again")], 4, "orphan tool result"),
])
def test_openai_check_names_position_and_rule(messages: list[Message], position: int,
                                              rule: str) -> None:
    with pytest.raises(MessageFormatError, match=rf"messages\[{position}\]: .*{rule}"):
        check_openai_sequence(messages)
    with pytest.raises(MessageFormatError, match=rf"messages\[{position}\]"):
        check_anthropic_sequence(messages)


@pytest.mark.parametrize(("messages", "position", "rule"), [
    ([Message.system("s"), Message.assistant("hi"), Message.user("q")], 1,
     "must start with a user turn"),
    ([Message.user("q"), Message.system("late"), Message.assistant("a")], 1,
     "system message after the conversation started"),
    ([Message.user(""), Message.assistant("a")], 0, "empty user turn"),
    ([Message.user("q"), Message.assistant(""), Message.user("again")], 1, "empty assistant turn"),
])
def test_anthropic_only_rules(messages: list[Message], position: int, rule: str) -> None:
    check_openai_sequence(messages)  # fine for OpenAI
    with pytest.raises(MessageFormatError, match=rf"messages\[{position}\]: .*{rule}"):
        check_anthropic_sequence(messages)


def test_anthropic_accepts_merged_turns_and_final_empty_assistant() -> None:
    messages = [Message.system("s"), Message.user("a"), Message.user(""), _call("c1"),
                Message.tool("c1", "r"), Message.user("more"), Message.assistant("")]
    check_anthropic_sequence(messages)
