"""PromptOptimizer: rewrite prompts from trajectories; nothing is stored until committed.

:meth:`PromptOptimizer.optimize` runs one strategy (:mod:`remem.procedural.strategies`) on a
prompt of a :class:`~remem.procedural.PromptRegistry` (or on bare text with
:meth:`~PromptOptimizer.optimize_text`) and returns an :class:`Optimization`: the new text, a
unified diff, the model's reasoning, and the calls and tokens it cost.
:meth:`~PromptOptimizer.commit` stores it as a new version (``auto_commit=True`` does that at
once), refusing with :class:`~remem.errors.ConflictError` if the prompt changed since the
optimization read it.

:meth:`~PromptOptimizer.optimize_many` first asks the model, in one call, which prompts each
trajectory's feedback concerns; only those prompts are optimized, on their trajectories; the
others come back unchanged, byte for byte, and are never written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from remem.errors import InvalidInputError, StructuredOutputError, UsageError
from remem.llm.base import ChatModel, Usage
from remem.llm.structured import Structured
from remem.memory.flow import Flow, StructuredCall, run_async, run_sync
from remem.messages.types import Message
from remem.procedural.prompts import PromptRegistry, PromptVersion, diff_texts
from remem.procedural.strategies import STRATEGIES, Strategy, run_strategy
from remem.procedural.templates import check_variables, variables
from remem.procedural.trajectories import Trajectory, as_trajectories, format_trajectories

__all__ = ["MultiOptimization", "Optimization", "PromptOptimizer"]


@dataclass(frozen=True, slots=True)
class Optimization:
    """One optimization run's outcome (not stored until committed).

    ``skipped`` says why no model was called (too little feedback), else ``None``.
    ``usage.calls`` is the number of LLM calls, retries included.
    """

    name: str | None
    strategy: Strategy
    base_version: int | None
    old_text: str
    new_text: str
    variables: tuple[str, ...]
    reasoning: str
    usage: Usage
    trajectories: tuple[Trajectory, ...] = ()
    steps: int = 0
    skipped: str | None = None
    #: the stored version, once committed
    committed: PromptVersion | None = None

    @property
    def changed(self) -> bool:
        """Whether the text differs from the one optimized."""
        return self.new_text != self.old_text

    @property
    def diff(self) -> str:
        """Unified diff from the old text to the new (``""``: unchanged)."""
        label = self.name or "prompt"
        base = f"@v{self.base_version}" if self.base_version else ""
        return diff_texts(self.old_text, self.new_text, old_label=f"{label}{base}",
                          new_label=f"{label} (optimized)")

    @property
    def calls(self) -> int:
        """LLM calls made."""
        return self.usage.calls

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for the CLI and logs)."""
        return {"name": self.name, "strategy": self.strategy, "base_version": self.base_version,
                "changed": self.changed, "text": self.new_text, "diff": self.diff,
                "reasoning": self.reasoning, "calls": self.usage.calls,
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens, "steps": self.steps,
                "skipped": self.skipped,
                "committed_version": self.committed.version if self.committed else None}


@dataclass(frozen=True, slots=True)
class MultiOptimization:
    """A multi-prompt run: each prompt's :class:`Optimization` (unconcerned prompts are
    unchanged, with no calls), which trajectories (1-based) were attributed to which prompt,
    and the total usage (attribution call included)."""

    results: Mapping[str, Optimization]
    attribution: Mapping[str, tuple[int, ...]]
    reasoning: str
    usage: Usage = field(default_factory=Usage)

    @property
    def changed(self) -> tuple[str, ...]:
        """Names of the prompts whose text changed."""
        return tuple(name for name, result in self.results.items() if result.changed)


class _Blame(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt: str = Field(description="The name of a prompt, exactly as listed.")
    trajectories: list[int] = Field(description="Numbers of the trajectories whose feedback "
                                    "this prompt is responsible for.")


class Attribution(BaseModel):
    """The multi-prompt attribution call's answer."""

    model_config = ConfigDict(extra="ignore")
    reasoning: str = Field(default="", description="Why, briefly.")
    responsible: list[_Blame] = Field(default_factory=list, description="Only the prompts "
                                      "that need to change; leave the others out.")


def _check_strategy(strategy: Any) -> Strategy:
    if strategy not in STRATEGIES:
        raise InvalidInputError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    return strategy  # type: ignore[no-any-return]


class PromptOptimizer:
    """Improve prompts from trajectories with ``model``.

    ``strategy``: ``"metaprompt"`` (default), ``"gradient"`` or ``"prompt_memory"``.
    ``max_steps``: gradient steps (each <= 2 calls). ``when_to_update`` and
    ``update_instructions`` are told to the model (when a change is warranted; how to write
    it). ``min_feedback``: trajectories with feedback needed before any call is made (fewer:
    the run is skipped, at no cost). ``registry`` is where named prompts live.
    """

    def __init__(self, model: ChatModel, *, registry: PromptRegistry | None = None,
                 strategy: Strategy = "metaprompt", max_steps: int = 3,
                 when_to_update: str | None = None, update_instructions: str | None = None,
                 min_feedback: int = 1) -> None:
        if not isinstance(model, ChatModel):
            raise InvalidInputError(
                f"model must be a remem ChatModel, got {type(model).__name__}; see "
                "remem.llm.model_from_env or remem.testing.ScriptedModel")
        self.strategy = _check_strategy(strategy)
        for label, value, low in (("max_steps", max_steps, 1), ("min_feedback", min_feedback, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidInputError(f"{label} must be an int >= {low}, got {value!r}")
        self.model = model
        self.registry = registry
        self.max_steps = max_steps
        self.when_to_update = when_to_update
        self.update_instructions = update_instructions
        self.min_feedback = min_feedback

    def _need_registry(self) -> PromptRegistry:
        if self.registry is None:
            raise UsageError("this optimizer has no registry; build it with "
                             "PromptOptimizer(model, registry=PromptRegistry(store)), or use "
                             "optimize_text for a prompt that is not stored")
        return self.registry

    # -- flows ----------------------------------------------------------------------------------

    def _text_flow(self, text: str, names: tuple[str, ...], trajectories: tuple[Trajectory, ...],
                   strategy: Strategy, name: str | None,
                   base_version: int | None) -> Flow[Optimization]:
        with_feedback = sum(1 for t in trajectories if t.has_feedback)
        if with_feedback < self.min_feedback or not trajectories:
            return Optimization(
                name, strategy, base_version, text, text, names, "", Usage(), trajectories,
                skipped=(f"{with_feedback} trajectory(ies) with feedback, fewer than "
                         f"min_feedback={self.min_feedback}") if trajectories
                else "no trajectories")
        run = yield from run_strategy(
            strategy, text, names, trajectories, max_steps=self.max_steps,
            when_to_update=self.when_to_update, update_instructions=self.update_instructions)
        return Optimization(name, strategy, base_version, text, run.text, names, run.reasoning,
                            run.usage, trajectories, run.steps)

    def _named_flow(self, name: str, trajectories: tuple[Trajectory, ...], strategy: Strategy,
                    auto_commit: bool, change_id: str | None = None) -> Flow[Optimization]:
        registry = self._need_registry()
        current = yield from registry.get_flow(name)
        result = yield from self._text_flow(current.text, current.variables, trajectories,
                                            strategy, name, current.version)
        if auto_commit:
            result = yield from self._commit_flow(result, change_id)
        return result

    def optimize_flow(self, name: str, trajectories: Sequence[Any], *,
                      strategy: Strategy | None = None, auto_commit: bool = False,
                      change_id: str | None = None) -> Flow[Optimization]:
        """:meth:`optimize` as a flow (:mod:`remem.memory.flow`; it needs the registry's
        store and the model); ``change_id`` is recorded on the committed version."""
        return self._named_flow(name, as_trajectories(trajectories),
                                _check_strategy(strategy or self.strategy), auto_commit,
                                change_id)

    def _commit_flow(self, result: Optimization,
                     change_id: str | None = None) -> Flow[Optimization]:
        if result.name is None:
            raise UsageError("this optimization is of bare text (optimize_text); store it "
                             "with PromptRegistry.create or update")
        if not result.changed:
            return result
        registry = self._need_registry()
        stored = yield from registry.update_flow(
            result.name, result.new_text, author=f"optimizer:{result.strategy}",
            reason=result.reasoning or f"{result.strategy} optimization",
            trajectories=[t.reference() for t in result.trajectories],
            expected_version=result.base_version, variables=result.variables,
            change_id=change_id)
        return _with(result, committed=stored)

    def _many_flow(self, names: Sequence[str], trajectories: tuple[Trajectory, ...],
                   strategy: Strategy, auto_commit: bool) -> Flow[MultiOptimization]:
        registry = self._need_registry()
        if isinstance(names, str) or not names or len(set(names)) != len(names):
            raise InvalidInputError(f"prompts must be a list of distinct prompt names, got "
                                    f"{names!r}")
        current = {}
        for name in names:
            current[name] = yield from registry.get_flow(name)
        usage = Usage()
        reasoning = ""
        if len(names) == 1:
            blame = {names[0]: tuple(range(1, len(trajectories) + 1))}
        elif sum(1 for t in trajectories if t.has_feedback) < max(self.min_feedback, 1):
            blame = {}
            reasoning = "too little feedback; no prompt concerned"
        else:
            blame, reasoning, usage = yield from self._attribute_flow(current, trajectories)
        results: dict[str, Optimization] = {}
        for name in names:
            version = current[name]
            if name not in blame:
                results[name] = Optimization(name, strategy, version.version, version.text,
                                             version.text, version.variables,
                                             "not concerned by the feedback", Usage(),
                                             skipped="not concerned by the feedback")
                continue
            subset = tuple(trajectories[n - 1] for n in blame[name])
            result = yield from self._text_flow(version.text, version.variables, subset,
                                                strategy, name, version.version)
            if auto_commit:
                result = yield from self._commit_flow(result)
            usage = usage + result.usage
            results[name] = result
        return MultiOptimization(results, blame, reasoning, usage)

    def _attribute_flow(self, current: Mapping[str, PromptVersion],
                        trajectories: tuple[Trajectory, ...],
                        ) -> Flow[tuple[dict[str, tuple[int, ...]], str, Usage]]:
        shown = "\n\n".join(f'<prompt name="{name}">\n{v.text}\n</prompt>'
                            for name, v in current.items())
        body = (f"<prompts>\n{shown}\n</prompts>\n\n<trajectories>\n"
                f"{format_trajectories(trajectories)}\n</trajectories>")
        instructions = ("An AI system runs on the prompts below. For each trajectory with "
                        "feedback, decide which prompts are responsible for what the feedback "
                        "criticises. List only prompts that need to change, each with the "
                        "numbers of its trajectories; leave out prompts the feedback does not "
                        "concern.")
        messages: tuple[Message, ...] = (Message.user(body),)
        usage = Usage()
        for attempt in range(2):
            answer: Structured[Attribution] = yield StructuredCall(
                messages, Attribution, instructions, "optimize.attribute", 1)
            usage = usage + answer.usage
            blame: dict[str, set[int]] = {}
            errors = []
            for position, entry in enumerate(answer.value.responsible):
                if entry.prompt not in current:
                    errors.append(f"responsible[{position}].prompt = {entry.prompt!r} is not "
                                  f"one of {', '.join(current)}")
                    continue
                bad = [n for n in entry.trajectories if not 1 <= n <= len(trajectories)]
                if bad:
                    errors.append(f"responsible[{position}].trajectories has {bad}; trajectories "
                                  f"are numbered 1-{len(trajectories)}")
                    continue
                if entry.trajectories:
                    blame.setdefault(entry.prompt, set()).update(entry.trajectories)
            if not errors:
                return ({name: tuple(sorted(blame[name])) for name in current if name in blame},
                        answer.value.reasoning, usage)
            if attempt == 1:
                raise StructuredOutputError(
                    "the model's attribution is invalid after a retry: " + "; ".join(errors),
                    raw=answer.raw, errors="; ".join(errors))
            messages = (*messages, Message.assistant(answer.raw), Message.user(
                "Your answer cannot be used: " + "; ".join(errors)
                + ". Answer again with the corrected JSON."))
        raise AssertionError("unreachable")

    def _prepare_text(self, text: str, names: Sequence[str] | None) -> tuple[str, tuple[str, ...]]:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"text must be non-empty text, got {text!r}")
        declared = variables(text) if names is None else tuple(sorted(set(names)))
        check_variables(text, declared, what="text")
        return text, declared

    # -- blocking API ---------------------------------------------------------------------------

    def optimize(self, name: str, trajectories: Sequence[Any], *,
                 strategy: Strategy | None = None, auto_commit: bool = False) -> Optimization:
        """Optimize the registry's prompt ``name`` from ``trajectories`` (each a
        :class:`~remem.procedural.Trajectory`, a ``(messages, feedback)`` pair, or a dict).
        Nothing is stored unless ``auto_commit``; see :meth:`commit`."""
        flow = self._named_flow(name, as_trajectories(trajectories),
                                _check_strategy(strategy or self.strategy), auto_commit)
        return run_sync(flow, self._need_registry().store, self.model)

    def optimize_text(self, text: str, trajectories: Sequence[Any], *,
                      variables: Sequence[str] | None = None,
                      strategy: Strategy | None = None) -> Optimization:
        """Optimize a prompt given as text (not stored); ``variables`` declares its template
        variables (default: those it uses)."""
        text, names = self._prepare_text(text, variables)
        flow = self._text_flow(text, names, as_trajectories(trajectories),
                               _check_strategy(strategy or self.strategy), None, None)
        return run_sync(flow, None, self.model)

    def optimize_many(self, names: Sequence[str], trajectories: Sequence[Any], *,
                      strategy: Strategy | None = None,
                      auto_commit: bool = False) -> MultiOptimization:
        """Optimize the registry's prompts ``names`` together: one call attributes the
        feedback; only the prompts it concerns are optimized (and committed, with
        ``auto_commit``)."""
        flow = self._many_flow(list(names), as_trajectories(trajectories),
                               _check_strategy(strategy or self.strategy), auto_commit)
        return run_sync(flow, self._need_registry().store, self.model)

    def commit(self, result: Optimization) -> Optimization:
        """Store ``result``'s text as a new version (author ``optimizer:<strategy>``, its
        reasoning as the reason, its trajectories as sources). An unchanged result stores
        nothing. Raises :class:`~remem.errors.ConflictError` if the prompt moved past
        ``result.base_version`` meanwhile."""
        return run_sync(self._commit_flow(result), self._need_registry().store, self.model)

    # -- async API ------------------------------------------------------------------------------

    async def aoptimize(self, name: str, trajectories: Sequence[Any], *,
                        strategy: Strategy | None = None,
                        auto_commit: bool = False) -> Optimization:
        """Async :meth:`optimize`."""
        flow = self._named_flow(name, as_trajectories(trajectories),
                                _check_strategy(strategy or self.strategy), auto_commit)
        return await run_async(flow, self._need_registry().store, self.model)

    async def aoptimize_text(self, text: str, trajectories: Sequence[Any], *,
                             variables: Sequence[str] | None = None,
                             strategy: Strategy | None = None) -> Optimization:
        """Async :meth:`optimize_text`."""
        text, names = self._prepare_text(text, variables)
        flow = self._text_flow(text, names, as_trajectories(trajectories),
                               _check_strategy(strategy or self.strategy), None, None)
        return await run_async(flow, None, self.model)

    async def aoptimize_many(self, names: Sequence[str], trajectories: Sequence[Any], *,
                             strategy: Strategy | None = None,
                             auto_commit: bool = False) -> MultiOptimization:
        """Async :meth:`optimize_many`."""
        flow = self._many_flow(list(names), as_trajectories(trajectories),
                               _check_strategy(strategy or self.strategy), auto_commit)
        return await run_async(flow, self._need_registry().store, self.model)

    async def acommit(self, result: Optimization) -> Optimization:
        """Async :meth:`commit`."""
        return await run_async(self._commit_flow(result), self._need_registry().store,
                               self.model)


def _with(result: Optimization, **changes: Any) -> Optimization:
    return replace(result, **changes)
