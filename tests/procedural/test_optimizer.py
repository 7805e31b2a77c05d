"""Prompt optimizers on the scripted model: calls per strategy within budget, template variables
always preserved, nothing stored before commit, multi-prompt attribution."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.errors import (
    ConflictError,
    InvalidInputError,
    PromptRewriteError,
    StructuredOutputError,
    UsageError,
)
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.procedural import (
    Optimization,
    PromptOptimizer,
    PromptRegistry,
    Trajectory,
    variables,
)
from remem.store import InMemoryStore, SQLiteStore

PROMPT = "You answer questions for {user}.\nUse {language}."
BETTER = "You answer questions for {user}.\nUse {language}.\nAlways cite a source."


def _trajectories() -> list[Any]:
    return [
        ([Message.user("What is the boiling point of water?"),
          Message.assistant("100 C.")], {"score": 0.2, "comment": "no source cited"}),
        Trajectory((Message.user("Capital of France?"), Message.assistant("Paris.")),
                   id="thread-2"),
        {"messages": [{"role": "user", "content": "Who wrote Hamlet?"},
                      {"role": "assistant", "content": "Shakespeare."}],
         "feedback": "cite where this comes from", "id": "thread-3"},
    ]


def _registry() -> PromptRegistry:
    prompts = PromptRegistry(SQLiteStore(":memory:"))
    prompts.create("qa", PROMPT)
    return prompts


REFLECT_YES = {"analysis": "Answers never cite sources (trajectories 1 and 3).",
               "should_update": True}
REWRITE = {"reasoning": "Feedback asks for sources.", "prompt": BETTER}


def test_metaprompt_reflects_then_rewrites_in_two_calls_and_stores_nothing() -> None:
    prompts = _registry()
    model = ScriptedModel([REFLECT_YES, REWRITE])
    optimizer = PromptOptimizer(model, registry=prompts, strategy="metaprompt")
    result = optimizer.optimize("qa", _trajectories())
    assert result.calls == 2 and model.pending == 0
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert [r.operation for r in model.requests] == ["optimize.reflect", "optimize.rewrite"]
    assert result.new_text == BETTER and result.changed and result.base_version == 1
    assert "+Always cite a source." in result.diff
    assert "never cite sources" in result.reasoning and "asks for sources" in result.reasoning
    sent = model.requests[0].messages[-1].text
    assert "no source cited" in sent and "Who wrote Hamlet?" in sent and PROMPT in sent
    assert prompts.get("qa").version == 1  # nothing stored yet
    stored = optimizer.commit(result).committed
    assert stored is not None and stored.version == 2 and stored.text == BETTER
    assert stored.author == "optimizer:metaprompt" and "sources" in stored.reason
    assert [t["id"] for t in stored.trajectories] == [None, "thread-2", "thread-3"]
    assert stored.trajectories[0]["feedback"] == {"score": 0.2, "comment": "no source cited"}


def test_metaprompt_without_a_needed_change_costs_one_call() -> None:
    model = ScriptedModel([{"analysis": "All good.", "should_update": False}])
    result = PromptOptimizer(model).optimize_text(PROMPT, _trajectories())
    assert (result.calls, result.changed, result.diff) == (1, False, "")


def test_gradient_stops_when_the_critique_asks_for_no_change() -> None:
    step2 = BETTER + "\nSay when you are unsure."
    model = ScriptedModel([
        {"critique": "No rule about sources.", "recommendations": ["require a source"],
         "should_update": True},
        {"reasoning": "added the rule", "prompt": BETTER},
        {"critique": "Unsure answers look certain.", "should_update": True},
        {"reasoning": "added hedging", "prompt": step2},
        {"critique": "Fine now.", "should_update": False},
    ])
    result = PromptOptimizer(model, strategy="gradient", max_steps=3).optimize_text(
        PROMPT, _trajectories())
    assert result.calls == 5 <= 2 * 3 and result.steps == 3
    assert result.new_text == step2
    assert [r.operation for r in model.requests] == [
        "optimize.critique", "optimize.apply"] * 2 + ["optimize.critique"]
    # the second critique sees the first step's prompt, not the original
    assert "Always cite a source." in model.requests[2].messages[-1].text
    assert "require a source" in model.requests[1].messages[-1].text


def test_gradient_never_passes_two_calls_per_step() -> None:
    answers: list[Any] = []
    for n in range(4):
        answers += [{"critique": f"issue {n}", "should_update": True},
                    {"reasoning": "r", "prompt": PROMPT + f"\nRule {n}."}]
    model = ScriptedModel(answers)
    result = PromptOptimizer(model, strategy="gradient", max_steps=2).optimize_text(
        PROMPT, _trajectories())
    assert result.calls == 4 and result.steps == 2 and model.pending == 4
    assert result.new_text == PROMPT + "\nRule 1."


def test_prompt_memory_is_one_call() -> None:
    model = ScriptedModel([REWRITE])
    result = PromptOptimizer(model, strategy="prompt_memory").optimize_text(
        PROMPT, _trajectories(), strategy="prompt_memory")
    assert (result.calls, result.new_text) == (1, BETTER)
    assert model.requests[0].operation == "optimize.prompt_memory"


def test_parameters_reach_the_model_and_min_feedback_skips_for_free() -> None:
    model = ScriptedModel([REWRITE])
    optimizer = PromptOptimizer(model, strategy="prompt_memory", min_feedback=2,
                                when_to_update="only for factual mistakes",
                                update_instructions="add rules as bullet points")
    result = optimizer.optimize_text(PROMPT, _trajectories())
    assert result.calls == 1
    sent = model.requests[0].messages[-1].text
    assert "only for factual mistakes" in sent and "bullet points" in sent
    strict = PromptOptimizer(model, min_feedback=3)
    skipped = strict.optimize_text(PROMPT, _trajectories())
    assert skipped.calls == 0 and not skipped.changed
    assert skipped.skipped is not None and "min_feedback=3" in skipped.skipped
    assert len(model.requests) == 1


@pytest.mark.parametrize("strategy,first", [
    ("prompt_memory", []),
    ("metaprompt", [REFLECT_YES]),
    ("gradient", [{"critique": "c", "should_update": True}]),
])
def test_a_rewrite_that_breaks_variables_is_retried_once(strategy: str,
                                                         first: list[Any]) -> None:
    dropped = {"reasoning": "shorter", "prompt": "You answer questions.\nUse {language}."}
    model = ScriptedModel([*first, dropped, REWRITE])
    result = PromptOptimizer(model, strategy=strategy, max_steps=1).optimize_text(  # type: ignore[arg-type]
        PROMPT, _trajectories())
    assert result.new_text == BETTER and result.calls == len(first) + 2
    retry = model.requests[-1].messages[-1].text
    assert "drops {user}" in retry


def test_a_second_broken_rewrite_is_a_typed_error_and_stores_nothing() -> None:
    prompts = _registry()
    invented = {"reasoning": "r", "prompt": PROMPT + " Mood: {mood}."}
    model = ScriptedModel([invented, invented])
    optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")
    with pytest.raises(PromptRewriteError, match=r"adds undeclared \{mood\}") as caught:
        optimizer.optimize("qa", _trajectories(), auto_commit=True)
    assert "{mood}" in caught.value.raw
    assert isinstance(caught.value, StructuredOutputError)
    assert [v.version for v in prompts.history("qa")] == [1]


def test_auto_commit_and_commit_conflicts() -> None:
    prompts = _registry()
    model = ScriptedModel([REWRITE, {"reasoning": "r", "prompt": BETTER + "\nBe exact."}])
    optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")
    done = optimizer.optimize("qa", _trajectories(), auto_commit=True)
    assert done.committed is not None and prompts.get("qa").text == BETTER
    late = optimizer.optimize("qa", _trajectories())  # based on v2
    prompts.update("qa", PROMPT + "\nBe brief.")  # someone else writes v3
    with pytest.raises(ConflictError, match="at version 3, not 2"):
        optimizer.commit(late)
    unchanged = optimizer.commit(Optimization("qa", "metaprompt", 3, "x", "x", (), "",
                                              done.usage))
    assert unchanged.committed is None and prompts.get("qa").version == 3


def test_a_trajectory_built_directly_reads_any_feedback_shape() -> None:
    built = Trajectory([Message.user("hi")], {"score": 1, "comment": "ok", "tag": "x"})
    assert built.has_feedback and built.feedback is not None
    assert (built.feedback.score, built.feedback.comment, dict(built.feedback.details)) == (
        1.0, "ok", {"tag": "x"})
    assert isinstance(built.messages, tuple)
    assert Trajectory((Message.user("hi"),), "  ").feedback is None
    with pytest.raises(InvalidInputError, match=r"Trajectory\.feedback is a bool"):
        Trajectory((Message.user("hi"),), True)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"score'\] must be a finite number"):
        Trajectory((Message.user("hi"),), {"score": float("nan")})  # type: ignore[arg-type]


def test_long_conversations_reach_the_model_with_their_middle_left_out() -> None:
    from remem.procedural.trajectories import MAX_CONVERSATION_CHARS

    long = "start " + "x" * (3 * MAX_CONVERSATION_CHARS) + " end"
    model = ScriptedModel([REWRITE])
    PromptOptimizer(model, strategy="prompt_memory").optimize_text(
        PROMPT, [([Message.user(long)], "too long")])
    sent = model.requests[0].messages[-1].text
    assert "user: start" in sent and "x end" in sent and "characters left out" in sent
    assert len(sent) < 2 * MAX_CONVERSATION_CHARS


def test_bad_arguments_are_typed_errors() -> None:
    model = ScriptedModel()
    with pytest.raises(InvalidInputError, match="strategy must be one of"):
        PromptOptimizer(model, strategy="sgd")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_steps must be an int >= 1"):
        PromptOptimizer(model, max_steps=0)
    with pytest.raises(InvalidInputError, match=r"trajectories\[0\]\[1\] is a bool"):
        PromptOptimizer(model).optimize_text(PROMPT, [("hi", True)])
    with pytest.raises(InvalidInputError, match=r"unknown keys \['feedbak'\]"):
        PromptOptimizer(model).optimize_text(PROMPT, [{"messages": "hi", "feedbak": 1}])
    with pytest.raises(UsageError, match="no registry"):
        PromptOptimizer(model).optimize("qa", _trajectories())
    with pytest.raises(InvalidInputError, match="must be a remem ChatModel"):
        PromptOptimizer(object())  # type: ignore[arg-type]
    assert model.requests == []


def test_multi_prompt_updates_only_the_prompts_the_feedback_concerns() -> None:
    prompts = PromptRegistry(InMemoryStore())
    texts = {"router": "Route {query} to a tool.", "qa": PROMPT,
             "tone": "Speak kindly.\nJSON like {\"a\": 1} stays literal {{not_a_var}}."}
    for name, text in texts.items():
        prompts.create(name, text)
    model = ScriptedModel([
        {"reasoning": "only answers lack sources",
         "responsible": [{"prompt": "qa", "trajectories": [1, 3]}]},
        REWRITE,
    ])
    optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")
    multi = optimizer.optimize_many(list(texts), _trajectories(), auto_commit=True)
    assert multi.changed == ("qa",) and multi.attribution == {"qa": (1, 3)}
    assert multi.usage.calls == 2
    assert model.requests[0].operation == "optimize.attribute"
    assert "thread-2" not in model.requests[1].messages[-1].text
    assert "Capital of France" not in model.requests[1].messages[-1].text
    for name in ("router", "tone"):
        assert multi.results[name].new_text == texts[name]  # byte-identical
        assert multi.results[name].calls == 0
        assert [v.version for v in prompts.history(name)] == [1]
        assert prompts.get(name).text == texts[name]
    assert prompts.get("qa").text == BETTER


def test_multi_prompt_attribution_with_unknown_names_is_retried_then_fails() -> None:
    prompts = PromptRegistry(InMemoryStore())
    prompts.create("a", "A")
    prompts.create("b", "B")
    wrong = {"responsible": [{"prompt": "c", "trajectories": [1]}]}
    model = ScriptedModel([wrong, {"responsible": [{"prompt": "b", "trajectories": [9]}]}])
    optimizer = PromptOptimizer(model, registry=prompts)
    with pytest.raises(StructuredOutputError, match=r"trajectories are numbered 1-3"):
        optimizer.optimize_many(["a", "b"], _trajectories())
    assert "'c' is not one of a, b" in model.requests[1].messages[-1].text
    model.add(wrong, {"responsible": []})
    nothing = optimizer.optimize_many(["a", "b"], _trajectories())
    assert nothing.changed == () and nothing.usage.calls == 2


def test_async_optimization_matches_sync() -> None:
    def run(use_async: bool) -> tuple[str, int, str]:
        prompts = _registry()
        optimizer = PromptOptimizer(ScriptedModel([REFLECT_YES, REWRITE]), registry=prompts)
        if use_async:
            result = asyncio.run(optimizer.aoptimize("qa", _trajectories(), auto_commit=True))
        else:
            result = optimizer.optimize("qa", _trajectories(), auto_commit=True)
        return result.new_text, result.calls, prompts.get("qa").text

    assert run(True) == run(False) == (BETTER, 2, BETTER)


def test_async_multi_prompt_and_commit_match_sync() -> None:
    def run(use_async: bool) -> tuple[tuple[str, ...], list[int], int | None]:
        prompts = PromptRegistry(SQLiteStore(":memory:"))
        prompts.create("a", "A {x}")
        prompts.create("b", "B")
        model = ScriptedModel([{"responsible": [{"prompt": "a", "trajectories": [1]}]},
                               {"reasoning": "r", "prompt": "A2 {x}"}])
        optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")

        async def both() -> tuple[Any, Any]:
            multi = await optimizer.aoptimize_many(["a", "b"], _trajectories())
            return multi, await optimizer.acommit(multi.results["a"])

        if use_async:
            multi, done = asyncio.run(both())
        else:
            multi = optimizer.optimize_many(["a", "b"], _trajectories())
            done = optimizer.commit(multi.results["a"])
        return (multi.changed, [prompts.get(n).version for n in ("a", "b")],
                done.committed.version if done.committed else None)

    assert run(True) == run(False) == (("a",), [2, 1], 2)


# -- template variables are always preserved (property) -----------------------------------------

_name = st.from_regex(r"[a-z][a-z_0-9]{0,5}", fullmatch=True)
_chunk = st.text(alphabet="abc xyz.,:\n\"[]", max_size=8)


@st.composite
def _template(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    names = draw(st.lists(_name, max_size=4, unique=True))
    parts: list[str] = []
    for name in names:
        parts += [draw(_chunk), "{" + name + "}"]
    if draw(st.booleans()):
        parts.append("{{literal}}")
    parts.append(draw(_chunk))
    text = "".join(parts)
    if not text.strip():
        text += "Prompt."
    return text, tuple(sorted(names))


def _mutate(draw: st.DrawFn, text: str, names: tuple[str, ...]) -> str:
    kind = draw(st.sampled_from(["keep", "drop", "add", "both", "unescape"]))
    out = text + " Added rule."
    if kind in ("drop", "both") and names:
        out = out.replace("{" + draw(st.sampled_from(names)) + "}", "someone")
    if kind in ("add", "both"):
        out += " {" + draw(_name) + "_new}"
    if kind == "unescape":
        out = out.replace("{{literal}}", "{literal}")
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_optimizers_never_return_a_prompt_with_broken_variables(data: st.DataObject) -> None:
    text, names = data.draw(_template())
    strategy = data.draw(st.sampled_from(["metaprompt", "gradient", "prompt_memory"]))
    answers = [_mutate(data.draw, text, names) for _ in range(2)]
    script: list[Any] = []
    if strategy == "metaprompt":
        script.append(REFLECT_YES)
    if strategy == "gradient":
        script.append({"critique": "c", "should_update": True})
    script += [{"reasoning": "r", "prompt": a} for a in answers]
    model = ScriptedModel(script, default={"critique": "ok", "should_update": False})
    optimizer = PromptOptimizer(model, strategy=strategy, max_steps=1)
    valid = [set(variables(a)) == set(names) for a in answers]
    try:
        result = optimizer.optimize_text(text, _trajectories())
    except PromptRewriteError:
        assert valid == [False, False]
        return
    assert variables(result.new_text) == names
    assert result.new_text == answers[0 if valid[0] else 1]
    budget = {"metaprompt": 2, "gradient": 2, "prompt_memory": 1}[strategy]
    assert result.calls == budget + (0 if valid[0] else 1)
