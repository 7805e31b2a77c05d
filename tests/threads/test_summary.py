"""Running summaries with the scripted model: thresholds, valid cuts, chunking for small windows."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import ContextWindowError, InvalidInputError, LLMError
from remem.llm import ChatRequest, ScriptedModel, Usage
from remem.messages import ImagePart, Message, ToolCall
from remem.threads.summary import (
    SUMMARY_METADATA_KEY,
    Compaction,
    SummaryPolicy,
    acompact,
    compact,
    needs_compaction,
    with_summary,
)
from remem.threads.trim import check_anthropic_sequence, check_openai_sequence
from remem.tokens import IMAGE_TOKENS, EstimateCounter, count_messages
from tests.threads.test_trim import conversations

COUNTER = EstimateCounter()


def chat(turns: int, words: int = 30, *, system: str | None = "You are a travel agent.",
         chinese: bool = False) -> list[Message]:
    """A conversation of ``turns`` user/assistant pairs, every message tagged ``#n``."""
    messages = [Message.system(system)] if system else []
    for n in range(turns):
        if chinese:
            body = "我想去北京看看长城，顺便吃烤鸭。" * (words // 10 + 1)
        else:
            body = " ".join(["plan", "the", "trip", "to", "Lisbon"] * (words // 5 + 1))
        messages.append(Message.user(f"#{2 * n} {body}"))
        messages.append(Message.assistant(f"#{2 * n + 1} {body}"))
    return messages


def fits(model: ScriptedModel, window: int) -> None:
    """No request sent to ``model`` exceeds ``window`` with its answer cap."""
    for request in model.requests:
        assert request.max_tokens is not None
        assert count_messages(request.messages, COUNTER) + request.max_tokens <= window


def numbered_summary(request: ChatRequest) -> str:
    return f"summary after call with {len(request.messages[1].text)} chars"


def test_below_the_trigger_nothing_happens() -> None:
    messages = chat(3)
    policy = SummaryPolicy(trigger_tokens=10_000, keep_tokens=100)
    assert not needs_compaction(messages, None, policy)
    model = ScriptedModel()
    result = compact(model, messages, summary="old", policy=policy)
    assert result == Compaction("old", (), tuple(messages), Usage(), 0)
    assert not result.compacted and model.requests == []


def test_the_summary_counts_towards_the_trigger() -> None:
    messages = chat(3)
    tokens = count_messages(messages, COUNTER)
    policy = SummaryPolicy(trigger_tokens=tokens + 20, keep_tokens=10)
    assert not needs_compaction(messages, None, policy)
    assert not needs_compaction(messages, "short", policy)
    assert needs_compaction(messages, "a long summary " * 20, policy)


def test_compaction_keeps_recent_turns_and_folds_the_previous_summary() -> None:
    messages = chat(10)
    policy = SummaryPolicy(trigger_tokens=500, keep_tokens=150, max_summary_tokens=100)
    model = ScriptedModel(["The user plans a Lisbon trip."], context_window=100_000)
    result = compact(model, messages, summary="User is called Ana.", policy=policy)
    assert result.calls == 1 and result.summary == "The user plans a Lisbon trip."
    # summarised + kept is the whole conversation, in order, the system prompt kept
    assert result.kept[0] == messages[0]
    assert (messages[0], *result.summarized, *result.kept[1:]) == tuple(messages)
    kept_history = result.kept[1:]
    assert kept_history[0].role == "user"
    assert count_messages(kept_history, COUNTER) <= 150
    # one more user turn would not have fitted
    assert count_messages(messages[len(result.summarized) - 1:], COUNTER) > 150
    # the request: summarize, capped, previous summary folded in, every old message shown
    (request,) = model.requests
    assert request.operation == "summarize" and request.max_tokens == 100
    prompt = request.messages[1].text
    assert "User is called Ana." in prompt
    for message in result.summarized:
        assert message.text.split()[0] in prompt
    assert kept_history[0].text.split()[0] not in prompt
    assert result.usage == model.usage.snapshot() == model.usage.by_operation()["summarize"]
    # the next prompt view is valid for both providers
    view = with_summary(result.summary, result.kept)
    check_anthropic_sequence(view)
    assert view[1].metadata == {SUMMARY_METADATA_KEY: True}
    assert "The user plans a Lisbon trip." in view[1].text


def test_the_last_user_turn_is_kept_even_when_it_is_bigger_than_keep_tokens() -> None:
    messages = chat(4, words=200)
    policy = SummaryPolicy(trigger_tokens=100, keep_tokens=10)
    result = compact(ScriptedModel(["s"]), messages, policy=policy)
    assert result.kept == (messages[0], *messages[-2:])


def test_tool_calls_stay_with_their_results() -> None:
    call = Message.assistant(
        tool_calls=[ToolCall(id="c1", name="flights", arguments={"to": "LIS"})])
    messages = [*chat(3), Message.user("#6 find flights"), call,
                Message.tool("c1", "TAP 08:00 " * 100), Message.assistant("#9 TAP at 8.")]
    policy = SummaryPolicy(trigger_tokens=100, keep_tokens=30)
    model = ScriptedModel(["s"])
    result = compact(model, messages, policy=policy)
    # the tool result alone passes keep_tokens: the whole last user turn is kept, call and result
    assert result.kept[1:] == tuple(messages[-4:])
    assert "Result of flights" not in model.requests[0].messages[1].text


@settings(max_examples=50, deadline=None)
@given(conversations(), st.integers(0, 300))
def test_every_compaction_leaves_a_valid_conversation(messages: list[Message],
                                                      keep: int) -> None:
    policy = SummaryPolicy(trigger_tokens=keep + 1, keep_tokens=keep, max_summary_tokens=50)
    model = ScriptedModel(default="summary", context_window=400)
    result = compact(model, messages, policy=policy, force=True)
    system = [m for m in messages if m.role == "system"]
    assert (*result.kept[:len(system)],) == tuple(system)
    assert (*system, *result.summarized, *result.kept[len(system):]) == tuple(messages)
    view = with_summary(result.summary, result.kept)
    check_openai_sequence(view)
    check_anthropic_sequence(view)
    check_openai_sequence(result.summarized)
    fits(model, 400)
    assert result.calls == len(model.requests)
    assert (result.calls == 0) == (not result.summarized)


@pytest.mark.parametrize("chinese", [False, True])
def test_a_small_window_summarises_a_long_history_in_chunks(chinese: bool) -> None:
    messages = chat(200, words=250, chinese=chinese)  # roughly 100k estimated tokens
    history_tokens = count_messages(messages, COUNTER)
    assert history_tokens > 50_000
    policy = SummaryPolicy(trigger_tokens=8000, keep_tokens=500, max_summary_tokens=300)
    answers: list[str] = []

    def summarise(request: ChatRequest) -> str:
        answers.append(f"running summary {len(answers)}: " + "要点 " * 100 + "key points" * 40)
        return answers[-1]

    model = ScriptedModel(default=summarise, context_window=2000)
    result = compact(model, messages, summary="previous summary", policy=policy)
    fits(model, 2000)
    assert result.calls == len(model.requests) > history_tokens // 2000
    assert result.summary == answers[-1]
    prompts = [request.messages[1].text for request in model.requests]
    # each call folds in the summary the call before it returned
    assert "previous summary" in prompts[0]
    for before, prompt in zip(answers, prompts[1:], strict=False):
        assert before in prompt
    # every summarised message reached the model, in order
    seen = "".join(prompts)
    positions = [seen.find(f"#{n} ") for n in range(len(result.summarized))]
    assert -1 not in positions and positions == sorted(positions)
    assert result.usage == model.usage.snapshot()
    assert result.usage.calls == result.calls


def test_one_message_bigger_than_the_window_is_split() -> None:
    huge = "word " * 20_000  # ~25k tokens in one tool result
    call = Message.assistant(tool_calls=[ToolCall(id="c1", name="fetch")])
    messages = [Message.user("read this"), call, Message.tool("c1", huge),
                Message.assistant("done"), Message.user("summarise it")]
    model = ScriptedModel(default="s", context_window=1500)
    result = compact(model, messages, policy=SummaryPolicy(trigger_tokens=100, keep_tokens=20,
                                                           max_summary_tokens=200))
    fits(model, 1500)
    assert result.kept == (messages[-1],) and len(result.summarized) == 4
    assert result.calls >= 20
    sent = sum(request.messages[1].text.count("word") for request in model.requests)
    assert sent == 20_000


def test_a_window_too_small_for_the_prompt_is_a_clear_error() -> None:
    messages = chat(20)
    policy = SummaryPolicy(trigger_tokens=100, keep_tokens=10, max_summary_tokens=600)
    with pytest.raises(ContextWindowError, match="max_summary_tokens"):
        compact(ScriptedModel(default="s", context_window=500), messages, policy=policy)
    with pytest.raises(ContextWindowError, match=r"leaving .* for conversation text"):
        compact(ScriptedModel(default="s", context_window=800), messages, policy=policy)
    # the policy's window caps an unknown one
    small = dataclasses.replace(policy, context_window=800)
    with pytest.raises(ContextWindowError):
        compact(ScriptedModel(default="s"), messages, policy=small)


def test_force_compacts_below_the_trigger() -> None:
    messages = chat(6)
    policy = SummaryPolicy(trigger_tokens=100_000, keep_tokens=60)
    assert compact(ScriptedModel(), messages, policy=policy).calls == 0
    result = compact(ScriptedModel(["s"]), messages, policy=policy, force=True)
    assert result.calls == 1 and result.kept == (messages[0], *messages[-2:])
    # nothing older than the kept part: nothing to do even when forced
    assert compact(ScriptedModel(), messages[:3], policy=policy, force=True).calls == 0


def test_async_compaction_matches_sync() -> None:
    messages = chat(40)
    policy = SummaryPolicy(trigger_tokens=500, keep_tokens=100, max_summary_tokens=100)
    sync_model = ScriptedModel(default=numbered_summary, context_window=700)
    async_model = ScriptedModel(default=numbered_summary, context_window=700)
    expected = compact(sync_model, messages, summary="x", policy=policy)
    got = asyncio.run(acompact(async_model, messages, summary="x", policy=policy))
    assert got == expected and got.calls > 1
    def texts(model: ScriptedModel) -> list[list[str]]:
        return [[m.text for m in r.messages] for r in model.requests]

    assert texts(async_model) == texts(sync_model)


def test_an_empty_answer_or_a_failing_model_raises() -> None:
    policy = SummaryPolicy(trigger_tokens=100, keep_tokens=10)
    with pytest.raises(LLMError, match="answered with no text"):
        compact(ScriptedModel(["  "]), chat(10), policy=policy)
    with pytest.raises(LLMError, match="provider down"):
        compact(ScriptedModel([LLMError("provider down")]), chat(10), policy=policy)


def test_prompt_asks_for_the_conversation_language_and_takes_instructions() -> None:
    model = ScriptedModel(["用户计划去北京。"])
    policy = SummaryPolicy(trigger_tokens=100, keep_tokens=10, instructions="Keep all dates.")
    result = compact(model, chat(5, chinese=True), policy=policy)
    system = model.requests[0].messages[0].text
    assert "language of the conversation" in system and "请用中文撰写摘要" in system
    assert system.endswith("Keep all dates.")
    assert result.summary == "用户计划去北京。"


def test_images_are_counted_and_named() -> None:
    image = Message(role="user", content=(ImagePart(url="https://example.com/map.png"),))
    messages = [image, Message.assistant("a map"), Message.user("thanks")]
    policy = SummaryPolicy(trigger_tokens=IMAGE_TOKENS, keep_tokens=10)
    assert needs_compaction(messages, None, policy)
    model = ScriptedModel(["s"])
    compact(model, messages, policy=policy)
    assert "User: [image]" in model.requests[0].messages[1].text


def test_with_summary_places_the_summary_after_the_system_prompt() -> None:
    messages = chat(1)
    assert with_summary(None, messages) == messages
    assert with_summary("", messages) == messages
    view = with_summary("S", messages, role="user")
    assert [m.role for m in view] == ["system", "user", "user", "assistant"]
    check_anthropic_sequence(view)
    assert with_summary("S", messages[1:])[0].role == "system"
    with pytest.raises(InvalidInputError, match="role"):
        with_summary("S", messages, role="assistant")  # type: ignore[arg-type]


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidInputError, match=r"trigger_tokens .* must be larger than"):
        SummaryPolicy(trigger_tokens=100, keep_tokens=100)
    with pytest.raises(InvalidInputError, match="max_summary_tokens must be >= 1"):
        SummaryPolicy(max_summary_tokens=0)
    with pytest.raises(InvalidInputError, match="keep_tokens must be >= 0"):
        SummaryPolicy(keep_tokens=-1)
    with pytest.raises(InvalidInputError, match="context_window"):
        SummaryPolicy(context_window=0)
    view = with_summary("S", chat(2))
    with pytest.raises(InvalidInputError, match=r"messages\[1\] is a summary message"):
        compact(ScriptedModel(), view, summary="S", force=True)


def test_a_summary_too_big_for_the_window_is_folded_in_as_text() -> None:
    # a summary written for a large model, now compacted with a 2,000-token one
    big_summary = "The user plans trips; " * 300  # ~1,500 tokens
    model = ScriptedModel(default=numbered_summary, context_window=2000)
    policy = SummaryPolicy(trigger_tokens=500, keep_tokens=100, max_summary_tokens=300)
    result = compact(model, chat(20), summary=big_summary, policy=policy)
    fits(model, 2000)
    prompts = [request.messages[1].text for request in model.requests]
    # the old summary travels as conversation text, split across the first requests
    assert "(none yet)" in prompts[0]
    assert "Summary of the conversation before this part: The user plans trips;" in prompts[0]
    assert sum(p.count("trips;") for p in prompts) == 300  # split at spaces, nothing lost
    assert result.summary.startswith("summary after call")


def test_a_model_whose_answers_never_fit_stops_with_a_clear_error() -> None:
    model = ScriptedModel(default="far too long " * 600, context_window=2000)  # ignores the cap
    policy = SummaryPolicy(trigger_tokens=500, keep_tokens=100, max_summary_tokens=300)
    with pytest.raises(ContextWindowError, match="summaries the model writes"):
        compact(model, chat(40), policy=policy)
    assert len(model.requests) <= 3
    fits(model, 2000)
