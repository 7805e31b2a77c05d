"""Structured output over the scripted model: tolerant parsing, validation retry, typed failure."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from remem.errors import InvalidInputError, LLMConnectionError, StructuredOutputError
from remem.llm import (
    ChatResponse,
    ScriptedModel,
    Usage,
    agenerate,
    generate,
    parse_json_answer,
    tool_call,
)
from remem.messages import Message


class Fact(BaseModel):
    subject: str
    score: int


# -- parse_json_answer ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('  [1, 2]  ', [1, 2]),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('Here it is:\n```JSON\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
    ('<think>Let me think {not json}</think>\n{"a": 1}', {"a": 1}),
    ('<thinking>\nplan: {"a": 0}\n</thinking>{"a": 2}', {"a": 2}),
    ('the user wants {"a": 0}... </think>\n{"a": 3}', {"a": 3}),  # opening tag stripped by server
    ('Sure! The answer is {"a": {"b": "}"}} as requested.', {"a": {"b": "}"}}),
    ('Prose with a {brace} first, then {"a": 4}', {"a": 4}),
    ('Items: [1, 2] and object {"a": 5}', {"a": 5}),  # objects are preferred over arrays
    ('{"name": "北京"}', {"name": "北京"}),
    ('{"a": [1, 2,],}', {"a": [1, 2]}),  # trailing commas
    ("Here: {'a': True, 'b': None} done", {"a": True, "b": None}),  # a Python-style dict
])
def test_parse_json_answer_tolerates_wrapping(text: str, expected: object) -> None:
    assert parse_json_answer(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "<think>{\"a\": 1}</think>", "{broken",
                                  "{'a': __import__('os')}"])
def test_parse_json_answer_raises_with_raw(text: str) -> None:
    with pytest.raises(StructuredOutputError) as info:
        parse_json_answer(text)
    assert info.value.raw == text
    assert "no JSON" in info.value.errors


def test_an_empty_answer_says_so() -> None:
    with pytest.raises(StructuredOutputError, match="empty once its reasoning block"):
        parse_json_answer("<think>long thoughts</think>")
    with pytest.raises(StructuredOutputError, match="max_tokens"):
        parse_json_answer("   ")


@given(value=st.dictionaries(st.text(max_size=8), st.one_of(
    st.integers(), st.text(max_size=12), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=3)), max_size=5),
    before=st.sampled_from(["", "Answer: ", "<think>{x}</think>", "ok\n```json\n"]),
    after=st.sampled_from(["", " Done.", "\n```", "\n\nLet me know!"]))
def test_parse_json_answer_finds_any_object_in_wrapping(
        value: dict[str, object], before: str, after: str) -> None:
    text = before + json.dumps(value, ensure_ascii=False) + after
    assert parse_json_answer(text) == value


# -- generate ---------------------------------------------------------------------------------

def test_generate_first_try_sends_schema_and_format() -> None:
    model = ScriptedModel([{"subject": "tea", "score": 3}])
    result = generate(model, "rate tea", Fact, instructions="Be terse.", operation="rate")
    assert result.value == Fact(subject="tea", score=3)
    assert result.attempts == 1
    assert json.loads(result.raw) == {"subject": "tea", "score": 3}
    request = model.requests[0]
    assert request.operation == "rate"
    assert request.response_format is not None
    assert request.response_format.name == "Fact"
    assert request.response_format.schema == Fact.model_json_schema()
    system = request.messages[0]
    assert system.role == "system"
    assert system.text.startswith("Be terse.")
    assert '"score"' in system.text  # the schema is described for models that cannot enforce it
    assert result.usage == model.usage.by_operation()["rate"]
    assert result.usage.calls == 1


def test_generate_merges_into_an_existing_system_message() -> None:
    model = ScriptedModel([{"subject": "x", "score": 1}])
    generate(model, [Message.system("You are kind."), Message.user("hi")], Fact)
    messages = model.requests[0].messages
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].text.startswith("You are kind.\n\n")
    assert "JSON schema" in messages[0].text


def test_generate_retries_once_with_validation_errors() -> None:
    model = ScriptedModel(['{"subject": "tea", "score": "high"}', {"subject": "tea", "score": 9}])
    result = generate(model, "rate tea", Fact)
    assert result.value.score == 9
    assert result.attempts == 2
    assert result.usage.calls == 2
    retry = model.requests[1].messages
    assert retry[-2].role == "assistant"
    assert retry[-2].text == '{"subject": "tea", "score": "high"}'
    assert retry[-1].role == "user"
    assert "score" in retry[-1].text and "integer" in retry[-1].text


def test_generate_raises_typed_error_with_raw_after_retries() -> None:
    model = ScriptedModel(["I cannot do that.", "Still no."])
    with pytest.raises(StructuredOutputError) as info:
        generate(model, "rate tea", Fact)
    assert info.value.raw == "Still no."
    assert "no JSON" in info.value.errors
    assert len(model.requests) == 2
    assert model.usage.snapshot().calls == 2


def test_generate_missing_field_error_names_field() -> None:
    model = ScriptedModel([{"subject": "tea"}])
    with pytest.raises(StructuredOutputError) as info:
        generate(model, "rate", Fact, max_retries=0)
    assert "score" in info.value.errors
    assert "Field required" in info.value.errors
    assert len(model.requests) == 1


class Entities(BaseModel):
    entities: list[str]


@pytest.mark.parametrize(("answer", "schema", "expected"), [
    ({"Fact": {"subject": "tea", "score": 1}}, Fact, Fact(subject="tea", score=1)),
    ({"properties": {"subject": "tea", "score": 2}, "required": ["subject"]}, Fact,
     Fact(subject="tea", score=2)),
    (["Ada", "Berlin"], Entities, Entities(entities=["Ada", "Berlin"])),
])
def test_common_wrappings_are_unwrapped_before_retrying(
        answer: object, schema: type[BaseModel], expected: BaseModel) -> None:
    model = ScriptedModel([answer])
    result = generate(model, "x", schema)
    assert result.value == expected
    assert result.attempts == 1


def test_schema_echo_is_named_in_the_retry() -> None:
    echo = {"type": "object", "title": "Fact", "properties": {
        "subject": {"type": "string"}, "score": {"type": "integer"}}}
    model = ScriptedModel([echo, {"subject": "tea", "score": 5}])
    assert generate(model, "x", Fact).attempts == 2
    assert "repeats the JSON schema" in model.requests[1].messages[-1].text


def test_generate_uses_tool_call_arguments_when_text_is_empty() -> None:
    model = ScriptedModel([tool_call("Fact", {"subject": "a", "score": 1})])
    assert generate(model, "x", Fact).value == Fact(subject="a", score=1)


def test_generate_mentions_truncation() -> None:
    cut = ChatResponse(message=Message.assistant('{"subject": "te'), usage=Usage(1, 5, 5),
                       model="m", finish_reason="length")
    model = ScriptedModel([cut])
    with pytest.raises(StructuredOutputError) as info:
        generate(model, "x", Fact, max_retries=0, max_tokens=5)
    assert "max_tokens" in info.value.errors
    assert model.requests[0].max_tokens == 5


def test_generate_passes_call_errors_through() -> None:
    model = ScriptedModel([LLMConnectionError("down")])
    with pytest.raises(LLMConnectionError):
        generate(model, "x", Fact)


def test_generate_rejects_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="max_retries"):
        generate(ScriptedModel(), "x", Fact, max_retries=-1)
    with pytest.raises(InvalidInputError, match="pydantic BaseModel"):
        generate(ScriptedModel(), "x", dict)  # type: ignore[type-var]


def test_agenerate_matches_generate() -> None:
    script = ['```json\n{"subject": "a", "score": "x"}\n```', {"subject": "a", "score": 2}]
    sync_model, async_model = ScriptedModel(script), ScriptedModel(script)
    sync_result = generate(sync_model, "q", Fact)
    async_result = asyncio.run(agenerate(async_model, "q", Fact))
    assert (async_result.value, async_result.attempts, async_result.raw) == (
        sync_result.value, sync_result.attempts, sync_result.raw)
    assert [[m.text for m in r.messages] for r in async_model.requests] == [
        [m.text for m in r.messages] for r in sync_model.requests]


@settings(max_examples=60)
@given(subject=st.text(max_size=20), score=st.integers(-10**9, 10**9),
       before=st.sampled_from(["", "Sure!\n", "<think>{draft}</think>", "```json\n"]),
       after=st.sampled_from(["", "\nDone.", "\n```"]))
def test_generate_returns_any_valid_value_however_wrapped(subject: str, score: int, before: str,
                                                          after: str) -> None:
    text = before + json.dumps({"subject": subject, "score": score}, ensure_ascii=False) + after
    result = generate(ScriptedModel([text]), "x", Fact)
    assert result.value == Fact(subject=subject, score=score)
    assert result.attempts == 1


@settings(max_examples=40)
@given(answers=st.lists(st.text(alphabet=st.characters(blacklist_characters="{["), max_size=40),
                        min_size=3, max_size=3),
       retries=st.integers(0, 2))
def test_generate_without_json_always_fails_typed(answers: list[str], retries: int) -> None:
    model = ScriptedModel(answers)
    with pytest.raises(StructuredOutputError) as info:
        generate(model, "x", Fact, max_retries=retries)
    assert len(model.requests) == retries + 1
    assert info.value.raw == answers[retries]
