"""Versioned prompts (remem.procedural.PromptRegistry) on real stores, and template variables."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    TemplateVariableError,
)
from remem.memory.flow import StoreBatch
from remem.procedural import PromptRegistry, check_variables, diff_texts, render, variables
from remem.store import BaseStore, InMemoryStore, SQLiteStore

_schemas = itertools.count()


@pytest.fixture(params=["memory", "sqlite-memory", "sqlite-file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore()
    elif request.param == "sqlite-memory":
        made = SQLiteStore(":memory:")
    elif request.param == "sqlite-file":
        made = SQLiteStore(tmp_path / "prompts.db")
    else:
        from remem.store.postgres import PostgresStore

        made = PostgresStore(request.getfixturevalue("pg_database"),
                             schema=f"procedural{next(_schemas)}")
    made.setup()
    yield made
    made.close()


def test_versions_history_diff_and_rollback(store: BaseStore) -> None:
    prompts = PromptRegistry(store)
    first = prompts.create("support", "You help {user}.\nBe brief.", author="ada")
    second = prompts.update("support", "You help {user}.\nBe brief and kind.", author="bob",
                            reason="users found it curt",
                            trajectories=[{"id": "t1", "feedback": {"score": 0.2}}])
    assert (first.version, second.version) == (1, 2)
    assert prompts.get("support").text == "You help {user}.\nBe brief and kind."
    assert prompts.get("support", 1).text == "You help {user}.\nBe brief."
    history = prompts.history("support")
    assert [(v.version, v.author, v.kind) for v in history] == [
        (1, "ada", "create"), (2, "bob", "update")]
    assert history[1].reason == "users found it curt"
    assert history[1].trajectories == ({"id": "t1", "feedback": {"score": 0.2}},)
    assert prompts.diff("support") == (
        "--- support@v1\n+++ support@v2\n@@ -1,2 +1,2 @@\n You help {user}.\n-Be brief.\n"
        "+Be brief and kind.\n")
    restored = prompts.rollback("support", 1)
    assert (restored.version, restored.kind, restored.rolled_back_to) == (3, "rollback", 1)
    assert prompts.get("support").text == first.text
    assert [v.version for v in prompts.history("support")] == [1, 2, 3]
    assert prompts.diff("support", 1, 3) == ""
    assert [v.name for v in prompts.list()] == ["support"]


def test_history_survives_a_reopen(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "p.db") as store:
        prompts = PromptRegistry(store, prefix=("agents", "a1"))
        prompts.create("sys", "Answer {question}.")
        for n in range(2, 6):
            prompts.update("sys", f"Answer {{question}} (v{n}).")
    with SQLiteStore(tmp_path / "p.db") as store:
        prompts = PromptRegistry(store, prefix=("agents", "a1"))
        assert [v.text for v in prompts.history("sys")] == [
            "Answer {question}."] + [f"Answer {{question}} (v{n})." for n in range(2, 6)]
        assert PromptRegistry(store).list() == []  # another prefix sees nothing


def test_updates_that_break_variables_are_refused_and_store_nothing() -> None:
    prompts = PromptRegistry(InMemoryStore())
    prompts.create("p", "Hi {user}, about {topic}.")
    with pytest.raises(TemplateVariableError, match=r"drops \{topic\}"):
        prompts.update("p", "Hi {user}.")
    with pytest.raises(TemplateVariableError, match=r"adds undeclared \{mood\}"):
        prompts.update("p", "Hi {user}, about {topic}, {mood}.")
    assert prompts.get("p").version == 1
    # declaring a new set on purpose is allowed, and recorded
    changed = prompts.update("p", "Hi {user}.", variables=["user"], reason="topic moved out")
    assert changed.variables == ("user",)
    with pytest.raises(TemplateVariableError, match="declared template variables"):
        prompts.create("q", "Hello", variables=["user"])


def test_conflicts_and_missing_prompts_name_the_fix() -> None:
    prompts = PromptRegistry(InMemoryStore())
    prompts.create("p", "v1")
    with pytest.raises(ConflictError, match="already exists"):
        prompts.create("p", "again")
    prompts.update("p", "v2")
    with pytest.raises(ConflictError, match="at version 2, not 1"):
        prompts.update("p", "v3", expected_version=1)
    with pytest.raises(NotFoundError, match="no prompt named 'nope'"):
        prompts.get("nope")
    with pytest.raises(NotFoundError, match="has no version 7; it has versions 1-2"):
        prompts.get("p", 7)
    with pytest.raises(NotFoundError, match="no version 9"):
        prompts.rollback("p", 9)
    for bad in ("", "a/b", " x", "é" * 3, 5):
        with pytest.raises(InvalidInputError, match="prompt name"):
            prompts.get(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="non-empty text"):
        prompts.update("p", "  ")
    with pytest.raises(InvalidInputError, match=r"variables\[1\] = '1st' is not a template"):
        prompts.update("p", "v3 {a}", variables=["a", "1st"])
    with pytest.raises(InvalidInputError, match="variables must be a list of names"):
        prompts.update("p", "v3 {a}", variables="a")
    with pytest.raises(InvalidInputError, match="author must be non-empty text"):
        prompts.update("p", "v3", author="")
    with pytest.raises(InvalidInputError, match="expected_version must be an int >= 1"):
        prompts.update("p", "v3", expected_version=0)
    assert prompts.get("p").version == 2


def test_a_lost_race_is_retried_on_fresh_data_and_loses_nothing(store: BaseStore) -> None:
    prompts = PromptRegistry(store)
    prompts.create("p", "v1")
    rival = PromptRegistry(store)
    original = prompts._write_flow

    def drive(name: str, change: object):  # type: ignore[no-untyped-def]
        # drives the write flow by hand, so the rival's write lands between read and write
        flow = original(name, change)  # type: ignore[arg-type]
        effect = next(flow)
        read = store.batch(effect.ops)
        rival.update("p", "rival's v2")
        effect = flow.send(read)
        while True:
            assert isinstance(effect, StoreBatch)
            try:
                effect = flow.send(store.batch(effect.ops))
            except StopIteration as done:
                return done.value

    change = prompts._update_change("p", "mine", author="me", reason="", trajectories=(),
                                    expected_version=None, declared=None)
    mine = drive("p", change)
    assert mine.version == 3  # retried after the rival's v2, not written over it
    assert [v.text for v in prompts.history("p")] == ["v1", "rival's v2", "mine"]
    strict = prompts._update_change("p", "strict", author="me", reason="", trajectories=(),
                                    expected_version=3, declared=None)
    with pytest.raises(ConflictError):
        drive("p", strict)
    assert [v.text for v in prompts.history("p")] == ["v1", "rival's v2", "mine",
                                                      "rival's v2"]


def test_async_twins_match() -> None:
    prompts = PromptRegistry(SQLiteStore(":memory:"))

    async def scenario() -> list[str]:
        await prompts.acreate("p", "A {x}")
        await prompts.aupdate("p", "B {x}")
        await prompts.arollback("p", 1)
        assert (await prompts.aget("p")).text == "A {x}"
        assert "+B {x}" in await prompts.adiff("p", 1, 2)
        assert [v.name for v in await prompts.alist()] == ["p"]
        return [v.text for v in await prompts.ahistory("p")]

    assert asyncio.run(scenario()) == ["A {x}", "B {x}", "A {x}"]


def test_diff_marks_a_trailing_newline_only_when_it_changes() -> None:
    assert diff_texts("a\nb", "a\nb") == ""
    assert diff_texts("a", "a\n").endswith("\\ No newline at end of file\n+a\n")
    assert diff_texts("a\n", "b\n", old_label="x", new_label="y") == (
        "--- x\n+++ y\n@@ -1 +1 @@\n-a\n+b\n")


def test_template_variables_and_escapes() -> None:
    assert variables("{a} {{b}} {c.d} {0} {x_1} {a}") == ("a", "x_1")
    assert variables('Return JSON like {"k": 1}') == ()
    assert render("{a}{{a}}}}", {"a": 1}) == "1{a}}"
    with pytest.raises(TemplateVariableError, match=r"no value for \{b\}"):
        render("{a} {b}", {"a": 1})
    check_variables("{{user}}", [])
    with pytest.raises(TemplateVariableError, match=r"drops \{user\}"):
        check_variables("{{user}}", ["user"])


_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_words = st.text(alphabet="ab z.,:\n\"[]0_日本é", max_size=12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_words, _names.map(lambda n: "{" + n + "}"),
                          _names.map(lambda n: "{{" + n + "}}")), max_size=12),
       st.dictionaries(_names, st.integers()))
def test_render_fills_exactly_the_variables_found(parts: list[str],
                                                  extra: dict[str, int]) -> None:
    text = " ".join(parts)
    names = variables(text)
    values = {**extra, **{name: f"<{name}>" for name in names}}
    rendered = render(text, values)
    for name in names:
        assert f"<{name}>" in rendered
    assert check_variables(text, names) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("update"), st.text(alphabet="abc {}x\n", min_size=1, max_size=20)),
    st.tuples(st.just("rollback"), st.integers(min_value=1, max_value=12))), max_size=10))
def test_history_is_every_write_in_order(steps: list[tuple[str, object]]) -> None:
    prompts = PromptRegistry(InMemoryStore())
    prompts.create("p", "start {x}")
    texts = ["start {x}"]
    for kind, arg in steps:
        try:
            if kind == "update":
                prompts.update("p", str(arg))
                texts.append(str(arg))
            else:
                assert isinstance(arg, int)
                prompts.rollback("p", arg)
                texts.append(texts[arg - 1])
        except (TemplateVariableError, NotFoundError, InvalidInputError):
            # refused writes store nothing: a text without exactly {x}, a version not yet
            # written, or blank text
            pass
    history = prompts.history("p")
    assert [v.version for v in history] == list(range(1, len(texts) + 1))
    assert [v.text for v in history] == texts
    assert all(variables(v.text) == ("x",) for v in history)
    assert prompts.get("p").text == texts[-1]


def test_public_surface() -> None:
    import remem.episodic
    import remem.procedural

    assert sorted(remem.procedural.__all__) == [
        "Feedback", "MultiOptimization", "Optimization", "PromptOptimizer", "PromptRegistry",
        "PromptVersion", "STRATEGIES", "Strategy", "Trajectory", "check_variables",
        "diff_texts", "render", "variable_problem", "variables"]
    assert sorted(remem.episodic.__all__) == [
        "Episode", "EpisodeDraft", "EpisodeStore", "Extracted", "Selection",
        "example_messages", "fit_examples", "render_examples", "similarity"]
    for module in (remem.procedural, remem.episodic):
        for name in module.__all__:
            assert getattr(module, name).__doc__ or name in ("STRATEGIES", "Strategy"), name
