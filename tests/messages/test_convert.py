"""Message converters: OpenAI, Anthropic and LangChain dicts, there and back (hypothesis), and
typed errors naming the bad field."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import MessageFormatError
from remem.messages import (
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    from_anthropic,
    from_langchain,
    from_openai,
    to_anthropic,
    to_langchain,
    to_openai,
)

# -- strategies -------------------------------------------------------------------------------

texts = st.text(min_size=1, max_size=30)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
images = st.one_of(
    st.binary(min_size=1, max_size=12).map(lambda b: ImagePart(
        url="data:image/png;base64," + base64.b64encode(b).decode(), media_type="image/png")),
    st.from_regex(r"https://img\.example/[a-z]{1,8}\.jpg", fullmatch=True).map(
        lambda url: ImagePart(url=url)),
)
text_parts = texts.map(lambda t: TextPart(text=t))
parts = st.lists(st.one_of(text_parts, text_parts, images), max_size=3).map(tuple)
ids = st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True)
names = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)
tool_calls = st.lists(st.builds(ToolCall, id=ids, name=names,
                                arguments=st.dictionaries(st.text(max_size=6), json_values,
                                                          max_size=3)),
                      max_size=2, unique_by=lambda c: c.id).map(tuple)


def messages(*, with_names: bool, with_errors: bool, system_first_only: bool
             ) -> st.SearchStrategy[list[Message]]:
    name = st.one_of(st.none(), names) if with_names else st.none()
    user = st.builds(Message, role=st.just("user"), content=parts, name=name)
    assistant = st.builds(Message, role=st.just("assistant"), content=parts,
                          tool_calls=tool_calls, name=name)
    tool = st.builds(Message, role=st.just("tool"), content=parts, tool_call_id=ids,
                     is_error=st.booleans() if with_errors else st.just(False))
    system_text = texts.map(lambda t: Message.system(t))
    body = st.lists(st.one_of(user, assistant, tool) if system_first_only
                    else st.one_of(user, assistant, tool,
                                   st.builds(Message, role=st.just("system"), content=parts,
                                             name=name)), max_size=6)
    if not system_first_only:
        return body
    return st.tuples(st.lists(system_text, max_size=1), body).map(lambda p: p[0] + p[1])


def meaningful(message: Message, *, name: bool = True, is_error: bool = True,
               identity: bool = False) -> tuple[Any, ...]:
    return (message.role, message.content, message.tool_calls, message.tool_call_id,
            message.is_error if is_error else None, message.name if name else None,
            message.id if identity else None)


# -- round trips --------------------------------------------------------------------------------

@settings(max_examples=150)
@given(messages(with_names=True, with_errors=False, system_first_only=False))
def test_openai_round_trip(sequence: list[Message]) -> None:
    wire = json.loads(json.dumps(to_openai(sequence)))  # through real JSON, as on the wire
    back = from_openai(wire)
    assert [meaningful(m) for m in back] == [meaningful(m) for m in sequence]


@settings(max_examples=150)
@given(messages(with_names=False, with_errors=True, system_first_only=True))
def test_anthropic_round_trip(sequence: list[Message]) -> None:
    system, wire = to_anthropic(sequence)
    wire = json.loads(json.dumps(wire))
    assert all(m["role"] in ("user", "assistant") for m in wire)
    back = from_anthropic(wire, system=system)
    assert [meaningful(m) for m in back] == [meaningful(m) for m in sequence]


@settings(max_examples=150)
@given(messages(with_names=True, with_errors=True, system_first_only=False))
def test_langchain_round_trip_keeps_ids(sequence: list[Message]) -> None:
    wire = json.loads(json.dumps(to_langchain(sequence)))
    back = from_langchain(wire)
    assert [meaningful(m, identity=True) for m in back] == [
        meaningful(m, identity=True) for m in sequence]


# -- exact shapes ---------------------------------------------------------------------------------

CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
CONVERSATION = [
    Message.system("Be brief."),
    Message.user("Weather in Paris and Rome?"),
    Message.assistant("Checking.", tool_calls=(
        CALL, ToolCall(id="call_2", name="get_weather", arguments={"city": "Rome"}))),
    Message.tool("call_1", {"temp": 21}),
    Message.tool("call_2", "city not found", is_error=True),
    Message.assistant("Paris: 21°C."),
]


def test_to_openai_shapes() -> None:
    wire = to_openai(CONVERSATION)
    assert wire[2] == {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_2", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]}
    assert wire[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'}
    assert to_openai([Message.assistant(tool_calls=(CALL,))])[0]["content"] is None
    image = Message(role="user", content=(TextPart(text="see"), ImagePart(url="https://x/y.png")))
    assert to_openai([image])[0]["content"] == [
        {"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]


def test_to_anthropic_merges_parallel_tool_results() -> None:
    system, wire = to_anthropic(CONVERSATION)
    assert system == "Be brief."
    assert [m["role"] for m in wire] == ["user", "assistant", "user", "assistant"]
    assert wire[1]["content"][1] == {"type": "tool_use", "id": "call_1", "name": "get_weather",
                                     "input": {"city": "Paris"}}
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 21}'},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "city not found",
         "is_error": True}]
    png = Message(role="user", content=(ImagePart(url="data:image/png;base64,AAAA"),))
    assert to_anthropic([png])[1][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]


def test_from_anthropic_splits_tool_results_and_text_in_order() -> None:
    back = from_anthropic([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]},
        {"type": "text", "text": "and now?"}]}],
        system=[{"type": "text", "text": "sys A"}, {"type": "text", "text": "sys B"}])
    assert [(m.role, m.text) for m in back] == [
        ("system", "sys A\n\nsys B"), ("tool", "ok"), ("user", "and now?")]
    assert back[1].tool_call_id == "t1"


def test_from_anthropic_skips_thinking_blocks() -> None:
    [message] = from_anthropic([{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "x"},
        {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]}])
    assert message.text == "Hi"
    assert message.tool_calls == (ToolCall(id="toolu_1", name="f", arguments={"a": 1}),)


def test_from_openai_accepts_developer_legacy_and_parts() -> None:
    back = from_openai([
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "a"},
                                     {"type": "image_url",
                                      "image_url": {"url": "data:image/jpeg;base64,AA"}}]},
        {"role": "assistant", "content": None,
         "function_call": {"name": "lookup", "arguments": '{"q": 1}'}},
        {"role": "function", "name": "lookup", "content": "found"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
    ])
    assert back[0].role == "system"
    assert back[1].content[1] == ImagePart(url="data:image/jpeg;base64,AA", media_type="image/jpeg")
    assert back[2].tool_calls[0].arguments == {"q": 1}
    assert (back[3].role, back[3].tool_call_id) == ("tool", "lookup")
    assert back[4].tool_calls[0].arguments == {}


def test_langchain_variants() -> None:
    back = from_langchain([
        {"type": "human", "data": {"content": "hi", "id": "h1"}},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 2}'}}]},
        {"type": "ai", "content": "", "tool_calls": [{"name": "g", "args": {"y": 3}, "id": "c2"}]},
        {"type": "tool", "content": "boom", "tool_call_id": "c2", "status": "error"},
        {"role": "user", "content": ["plain", {"type": "image", "url": "https://x/y.png"}]},
    ])
    assert back[0].id == "h1" and back[0].role == "user"
    assert back[1].tool_calls[0].arguments == {"x": 2}
    assert back[2].tool_calls[0] == ToolCall(id="c2", name="g", arguments={"y": 3})
    assert back[3].is_error
    assert back[4].content == (TextPart(text="plain"), ImagePart(url="https://x/y.png"))
    assert to_langchain([Message.tool("c2", "boom", is_error=True, id="t9")]) == [
        {"type": "tool", "content": "boom", "tool_call_id": "c2", "status": "error", "id": "t9"}]


# -- errors name the field ------------------------------------------------------------------------

@pytest.mark.parametrize(("convert", "data", "where"), [
    (from_openai, [{"role": "robot", "content": "x"}], "messages[0].role"),
    (from_openai, [{"role": "user", "content": 5}], "messages[0].content"),
    (from_openai, [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}],
     "messages[1].tool_call_id"),
    (from_openai, [{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "{bad"}}]}],
     "messages[0].tool_calls[0].function.arguments"),
    (from_openai, [{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "[1]"}}]}],
     "messages[0].tool_calls[0].function.arguments"),
    (from_openai, [{"role": "user", "content": [{"type": "audio"}]}],
     "messages[0].content[0].type"),
    (from_openai, ["hello"], "messages[0]"),
    (from_anthropic, [{"role": "system", "content": "x"}], "messages[0].role"),
    (from_anthropic, [{"role": "user", "content": [{"type": "tool_result"}]}],
     "messages[0].content[0].tool_use_id"),
    (from_anthropic, [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": "nope"}]}],
     "messages[0].content[0].input"),
    (from_anthropic, [{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "f"}}]}],
     "messages[0].content[0].source.type"),
    (from_langchain, [{"type": "alien", "content": "x"}], "messages[0].type"),
    (from_langchain, [{"type": "tool", "content": "x"}], "messages[0].tool_call_id"),
    (from_langchain, [{"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {}}]}],
     "messages[0].tool_calls[0].id"),
    (from_langchain, [{"type": "tool", "content": "x", "tool_call_id": "c", "status": "meh"}],
     "messages[0].status"),
])
def test_bad_dicts_raise_naming_the_field(convert: Any, data: Any, where: str) -> None:
    with pytest.raises(MessageFormatError) as info:
        convert(data)
    assert where in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("convert", [from_openai, from_anthropic, from_langchain])
def test_a_single_dict_is_refused_with_the_fix(convert: Any) -> None:
    with pytest.raises(MessageFormatError, match=r"wrap a single dict as \[message\]"):
        convert({"role": "user", "content": "x"})
