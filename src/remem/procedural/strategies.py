"""The three optimization strategies as flows: pure prompt building plus structured LLM calls.

* ``metaprompt``: one call reflects on the trajectories and decides whether the prompt should
  change; a second rewrites it (<= 2 calls; 1 when no change is needed).
* ``gradient``: each step criticises the prompt (the "gradient") and, if it should change,
  applies the critique (<= 2 calls per step, ``max_steps`` steps; stops early at a step whose
  critique asks for no change).
* ``prompt_memory``: one call folds the lessons of the trajectories into the prompt (1 call).

Every rewritten prompt must use exactly the declared template variables: a rewrite that drops
or invents one goes back to the model once with the error (one more call, counted), then the
run fails with :class:`~remem.errors.PromptRewriteError`. Answers that are not valid JSON for
the schema are retried once by :mod:`remem.llm.structured` (also counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from remem.errors import PromptRewriteError
from remem.llm.base import Usage
from remem.llm.structured import Structured
from remem.memory.flow import Flow, StructuredCall
from remem.messages.types import Message
from remem.procedural.templates import variable_problem
from remem.procedural.trajectories import Trajectory, format_trajectories

__all__ = ["STRATEGIES", "Strategy", "StrategyRun", "run_strategy"]

Strategy = Literal["metaprompt", "gradient", "prompt_memory"]
STRATEGIES: tuple[Strategy, ...] = ("metaprompt", "gradient", "prompt_memory")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Reflection(_Answer):
    """The metaprompt's first call: what the trajectories teach, and whether to change."""

    analysis: str = Field(description="What went well and badly, and why, citing trajectories "
                          "by number.")
    should_update: bool = Field(description="Whether the prompt should change.")


class Critique(_Answer):
    """A gradient step's first call: what in the prompt caused the problems."""

    critique: str = Field(description="Which parts of the prompt caused the problems seen.")
    recommendations: list[str] = Field(default_factory=list, description="Concrete changes "
                                       "to the prompt, one per entry.")
    should_update: bool = Field(description="Whether the prompt should change.")


class Rewrite(_Answer):
    """A rewritten prompt and why."""

    reasoning: str = Field(description="Why these changes, in one or two sentences.")
    prompt: str = Field(description="The complete new prompt text.")


_ROLE = ("You improve the system prompt of an AI agent from trajectories: conversations the "
         "agent had under the prompt, with feedback on how well it did.")

_TEMPLATE_RULE = ("The prompt is a template. Keep every template variable written as "
                  "{{name}} exactly as it is (same names, each at least once), add no new "
                  "ones, and write a literal brace as {{{{ or }}}}. Its variables: {names}.")

_KEEP = ("Keep what works; change only what the feedback shows to be wrong or missing. Return "
         "the complete prompt, not a diff.")


def _template_rule(names: Sequence[str]) -> str:
    shown = ", ".join("{" + name + "}" for name in names) or "none"
    return _TEMPLATE_RULE.format(names=shown)


@dataclass(frozen=True, slots=True)
class StrategyRun:
    """What a strategy produced: the new text, its reasoning, calls, and usage."""

    text: str
    reasoning: str
    usage: Usage
    steps: int


def _context(text: str, trajectories: Sequence[Trajectory], when_to_update: str | None,
             update_instructions: str | None) -> str:
    parts = [f"<current_prompt>\n{text}\n</current_prompt>",
             f"<trajectories>\n{format_trajectories(trajectories)}\n</trajectories>"]
    if when_to_update:
        parts.append(f"When to update the prompt: {when_to_update}")
    if update_instructions:
        parts.append(f"How to update the prompt: {update_instructions}")
    return "\n\n".join(parts)


def _rewrite_flow(messages: tuple[Message, ...], instructions: str, names: Sequence[str],
                  operation: str, max_retries: int) -> Flow[tuple[Rewrite, Usage]]:
    """Ask for a :class:`Rewrite`; a prompt that breaks the variables goes back once."""
    usage = Usage()
    for attempt in range(2):
        answer: Structured[Rewrite] = yield StructuredCall(messages, Rewrite, instructions,
                                                           operation, max_retries)
        usage = usage + answer.usage
        problem = variable_problem(answer.value.prompt, names)
        if problem is None and answer.value.prompt.strip():
            return answer.value, usage
        problem = problem or "the prompt is empty; return the complete prompt text"
        if attempt == 1:
            raise PromptRewriteError(
                f"the model's rewritten prompt is still invalid after a retry: {problem}; "
                "nothing was stored (try another model or strategy)",
                raw=answer.raw, errors=problem)
        messages = (*messages, Message.assistant(answer.raw), Message.user(
            f"Your rewritten prompt cannot be used: {problem}. Answer again with the "
            "corrected JSON."))
    raise AssertionError("unreachable")


def run_strategy(strategy: Strategy, text: str, names: Sequence[str],
                 trajectories: Sequence[Trajectory], *, max_steps: int,
                 when_to_update: str | None, update_instructions: str | None,
                 max_retries: int = 1) -> Flow[StrategyRun]:
    """The flow of ``strategy`` on prompt ``text`` (template variables ``names``)."""
    rule = _template_rule(names)
    if strategy == "prompt_memory":
        body = _context(text, trajectories, when_to_update, update_instructions)
        instructions = (f"{_ROLE} Read the trajectories, find the lessons the feedback "
                        "teaches (rules the agent broke, preferences it missed), and fold "
                        f"them into the prompt in one pass. {_KEEP} If there is nothing to "
                        f"learn, return the prompt unchanged.\n\n{rule}")
        rewrite, usage = yield from _rewrite_flow((Message.user(body),), instructions, names,
                                                  "optimize.prompt_memory", max_retries)
        return StrategyRun(rewrite.prompt, rewrite.reasoning, usage, 1)
    if strategy == "metaprompt":
        body = _context(text, trajectories, when_to_update, update_instructions)
        reflect: Structured[Reflection] = yield StructuredCall(
            (Message.user(body),), Reflection,
            f"{_ROLE} First reflect: what went well, what went badly and why, and whether the "
            "prompt should change. Do not write the new prompt yet.", "optimize.reflect",
            max_retries)
        usage = reflect.usage
        if not reflect.value.should_update:
            return StrategyRun(text, reflect.value.analysis, usage, 1)
        follow = (f"{body}\n\n<reflection>\n{reflect.value.analysis}\n</reflection>\n\n"
                  "Now write the improved prompt.")
        rewrite, more = yield from _rewrite_flow(
            (Message.user(follow),), f"{_ROLE} {_KEEP}\n\n{rule}", names,
            "optimize.rewrite", max_retries)
        return StrategyRun(rewrite.prompt, f"{reflect.value.analysis}\n{rewrite.reasoning}",
                           usage + more, 1)
    # gradient
    usage = Usage()
    current = text
    reasons: list[str] = []
    steps = 0
    for _ in range(max_steps):
        steps += 1
        body = _context(current, trajectories, when_to_update, update_instructions)
        critique: Structured[Critique] = yield StructuredCall(
            (Message.user(body),), Critique,
            f"{_ROLE} Criticise the current prompt: which of its parts (or gaps) caused the "
            "problems the feedback shows, and what exactly should change. Answer "
            "should_update false if the prompt already handles every case well.",
            "optimize.critique", max_retries)
        usage = usage + critique.usage
        if not critique.value.should_update:
            reasons.append(f"step {steps}: no change needed ({critique.value.critique})")
            break
        advice = "\n".join(f"- {r}" for r in critique.value.recommendations)
        follow = (f"{body}\n\n<critique>\n{critique.value.critique}\n{advice}\n</critique>\n\n"
                  "Apply the critique: write the improved prompt.")
        rewrite, more = yield from _rewrite_flow(
            (Message.user(follow),), f"{_ROLE} {_KEEP}\n\n{rule}", names,
            "optimize.apply", max_retries)
        usage = usage + more
        reasons.append(f"step {steps}: {critique.value.critique} -> {rewrite.reasoning}")
        if rewrite.prompt == current:
            break
        current = rewrite.prompt
    return StrategyRun(current, "\n".join(reasons), usage, steps)
