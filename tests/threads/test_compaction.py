"""Summaries and prompt views of stored threads, and the async twins."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.errors import InvalidInputError, LLMError
from remem.llm import ChatRequest, ScriptedModel, Usage
from remem.messages import Message
from remem.threads import SummaryPolicy, Thread, ThreadStore, trim_messages, with_summary
from remem.threads.summary import SUMMARY_METADATA_KEY
from remem.threads.types import summary_usage
from remem.tokens import EstimateCounter, count_messages
from tests.threads.test_trim import conversations

COUNTER = EstimateCounter()


def turn(n: int, words: int = 40) -> list[Message]:
    body = " ".join(["plan", "the", "trip", "to", "Lisbon"] * (words // 5))
    return [Message.user(f"#{2 * n} {body}"), Message.assistant(f"#{2 * n + 1} {body}")]


def summarise(request: ChatRequest) -> str:
    return f"summary #{request.messages[1].text.count('#')}"


def test_compact_stores_the_summary_and_its_cost() -> None:
    model = ScriptedModel(default=summarise)
    policy = SummaryPolicy(trigger_tokens=300, keep_tokens=120)
    with ThreadStore() as threads:
        chat = threads.create(messages=[Message.system("You are a travel agent.")])
        for n in range(6):
            chat.append(turn(n))
        before = chat.messages()
        head = chat.compact(model, policy)
        assert head.metadata["source"] == "compact"
        assert head.summary is not None and head.summary.startswith("summary")
        assert 1 < head.summary_through < head.position == 13
        assert head.metadata["summarized"] == head.summary_through - 1
        cost = summary_usage(head.state)
        assert cost.calls == len(model.requests) >= 1
        assert cost == model.usage.snapshot()
        # messages are untouched: time travel and search still see them all
        assert chat.messages() == before
        view = chat.context()
        assert view[0].text == "You are a travel agent."
        assert view[1].metadata.get(SUMMARY_METADATA_KEY) is True
        assert view[2:] == before[head.summary_through:]
        # a second compaction folds in the previous summary and adds its cost
        for n in range(6, 9):
            chat.append(turn(n))
        again = chat.compact(model, policy)
        assert again.summary_through > head.summary_through
        assert summary_usage(again.state).calls == len(model.requests) > cost.calls
        assert "summary" in model.requests[-1].messages[1].text


def test_auto_compaction_on_append_keeps_the_prompt_bounded() -> None:
    model = ScriptedModel(default=summarise)
    policy = SummaryPolicy(trigger_tokens=400, keep_tokens=150)
    with ThreadStore(summarizer=model, policy=policy) as threads:
        chat = threads.create(messages=[Message.system("Be brief.")])
        sources = []
        for n in range(20):
            sources.append(chat.append(turn(n)).metadata["source"])
            assert count_messages(chat.context(), COUNTER) <= 400 + 200
        assert "compact" in sources and sources[0] == "append"
        assert chat.info().length == 41
        assert summary_usage(chat.checkpoint().state).calls == len(model.requests)


def test_compact_needs_a_model() -> None:
    with ThreadStore() as threads:
        chat = threads.create()
        with pytest.raises(InvalidInputError, match="compact needs a chat model"):
            chat.compact()
    with pytest.raises(InvalidInputError, match="summarizer"):
        ThreadStore(policy=SummaryPolicy())


def test_context_budgets_and_checkpoints() -> None:
    with ThreadStore() as threads:
        chat = threads.create(messages=[Message.system("sys")])
        marks = [chat.append(turn(n, words=5)).id for n in range(200)]
        view = chat.context(max_messages=5)
        assert [m.role for m in view] == ["system", "user", "assistant", "user", "assistant"]
        assert view[-1].text.startswith("#399")
        old = chat.context(max_messages=3, checkpoint_id=marks[9])
        assert old[-1].text.startswith("#19")
        assert count_messages(chat.context(max_tokens=100), COUNTER) <= 100
        with pytest.raises(InvalidInputError, match="max_tokens: Input should be greater than or"):
            chat.context(max_tokens=-1)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.none() | st.integers(0, 300), st.none() | st.integers(0, 12),
       # a summary is stored text: no NUL and no lone surrogate (each refused on every
       # backend with a typed error, tests/adversarial)
       st.none() | st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                           min_size=1, max_size=40), st.integers(0, 8))
def test_context_equals_trimming_the_whole_history(
        messages: list[Message], max_tokens: int | None, max_messages: int | None,
        summary: str | None, through: int) -> None:
    """Reading only the tail gives exactly what trimming the full prompt view gives."""
    with ThreadStore() as threads:
        chat = threads.create()
        if messages:
            chat.append(messages)
        system = 0
        while system < len(messages) and messages[system].role == "system":
            system += 1
        covered = min(len(messages), max(system, through))
        if summary is not None:
            chat.update_state({"summary": summary, "summary_through": covered})
        else:
            covered = system
        full = with_summary(summary, [*messages[:system], *messages[covered:]])
        expected = (full if max_tokens is None and max_messages is None else
                    trim_messages(full, max_tokens=max_tokens, max_messages=max_messages,
                                  counter=COUNTER))
        got = chat.context(max_tokens=max_tokens, max_messages=max_messages)
        assert [(m.role, m.text) for m in got] == [(m.role, m.text) for m in expected]


# -- async parity ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ThreadStore, Thread])
def test_every_public_method_has_an_async_twin(cls: type) -> None:
    # ThreadStore inherits its operations from ThreadAPI: look at every public member
    members = {n for n in dir(cls) if callable(getattr(cls, n)) and not n.startswith("_")}
    twins = {n for n in members if n.startswith("a") and n[1:] in members}
    names = sorted(members - twins - {"open", "close"})
    assert {"append", "messages", "fork", "compact", "context"} <= set(names)
    for name in names:
        twin = getattr(cls, "a" + name, None)
        assert twin is not None, f"{cls.__name__}.{name} has no async twin a{name}"
        assert inspect.iscoroutinefunction(twin)
        assert inspect.signature(twin) == inspect.signature(getattr(cls, name)), name


def test_async_twins_give_the_same_results(tmp_path: Path) -> None:
    async def scenario(threads: ThreadStore) -> list[object]:
        chat = await threads.acreate("t", metadata={"user_id": "u"})
        first = await chat.aappend(turn(0))
        await chat.aappend(turn(1))
        fork = await chat.afork(first.id, new_thread_id="f")
        await fork.aappend(Message.user("fork"))
        listed = await threads.alist_threads({"user_id": "u"})
        return [texts(await chat.amessages()), texts(await fork.amessages(last=2)),
                sorted(t.thread_id for t in listed), (await chat.acheckpoint()).position,
                len(await chat.acheckpoints()), await threads.aexists("f"),
                await fork.adelete()]

    def sync(threads: ThreadStore) -> list[object]:
        chat = threads.create("t", metadata={"user_id": "u"})
        first = chat.append(turn(0))
        chat.append(turn(1))
        fork = chat.fork(first.id, new_thread_id="f")
        fork.append(Message.user("fork"))
        listed = threads.list_threads({"user_id": "u"})
        return [texts(chat.messages()), texts(fork.messages(last=2)),
                sorted(t.thread_id for t in listed), chat.checkpoint().position,
                len(chat.checkpoints()), threads.exists("f"), fork.delete()]

    async def run() -> list[object]:
        async with ThreadStore(tmp_path / "a.db") as threads:
            return await scenario(threads)

    with ThreadStore(tmp_path / "s.db") as threads:
        expected = sync(threads)
    assert asyncio.run(run()) == expected


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def test_usage_of_summaries_is_counted_per_operation() -> None:
    model = ScriptedModel(default=summarise)
    with ThreadStore() as threads:
        chat = threads.create()
        for n in range(5):
            chat.append(turn(n))
        chat.compact(model, SummaryPolicy(trigger_tokens=200, keep_tokens=50))
    assert set(model.usage.by_operation()) == {"summarize"}
    assert model.usage.snapshot() != Usage()


def test_a_failed_auto_compaction_keeps_the_append(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([LLMError("provider down")], default=summarise)
    policy = SummaryPolicy(trigger_tokens=150, keep_tokens=60)
    with ThreadStore(summarizer=model, policy=policy) as threads:
        chat = threads.create()
        with caplog.at_level("WARNING", logger="remem.threads"):
            for n in range(4):
                chat.append(turn(n))
        assert "automatic compaction failed (provider down)" in caplog.text
        assert chat.info().length == 8  # every append was kept
        head = chat.checkpoint()
        assert head.summary is not None  # a later append compacted
        assert head.metadata["source"] == "compact"
