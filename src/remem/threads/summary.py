"""Running summaries: fold the oldest part of a long conversation into a summary.

When a history (plus its current summary) passes :attr:`SummaryPolicy.trigger_tokens`,
:func:`compact` keeps the most recent messages verbatim (about ``keep_tokens`` of them, cut in
front of a user message so a tool call never loses its result) and asks the model to fold
everything older into the running summary. :func:`with_summary` then builds the prompt view:
system prompt, summary, kept messages.

Small windows are the point: when what must be summarised does not fit the model's
``context_window`` next to the prompt and the answer, it is split into chunks that do, and
the summary is built up chunk by chunk, each call folding the running summary in. Every
request is checked with the policy's counter to fit ``window - max_summary_tokens``, so a
2,000-token local model can summarise a 100,000-token history.

The work is written once, as a generator that yields requests and receives responses
(:func:`_compaction`); :func:`compact` and :func:`acompact` are thin sync and async drivers.

Every request is grounded like memory extraction (:mod:`remem.messages.grounding`): it starts
with the reference time (the latest message's time), the transcript shows when messages were
sent, and the instructions ask for absolute dates and the conversation's own language.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Literal

from remem.errors import ContextWindowError, InvalidInputError, LLMError
from remem.llm.base import ChatModel, ChatRequest, ChatResponse, Usage
from remem.messages.grounding import SAME_MOMENT, format_moment, reference_line
from remem.messages.types import ImagePart, Message
from remem.threads.trim import leading_system
from remem.tokens import DEFAULT_COUNTER, TokenCounter, count_messages

__all__ = [
    "SUMMARY_METADATA_KEY",
    "Compaction",
    "SummaryPolicy",
    "acompact",
    "compact",
    "needs_compaction",
    "with_summary",
]

#: ``metadata[SUMMARY_METADATA_KEY] is True`` marks the summary message made by :func:`with_summary`
SUMMARY_METADATA_KEY = "remem_summary"
#: below this many tokens of room for conversation text, a chunk is not worth a call
MIN_CHUNK_TOKENS = 64
#: transcript lines longer than this are cut into pieces first (a huge tool result)
LINE_CHARS = 2000

_SYSTEM_PROMPT = """\
You keep the running summary of a conversation between a user and an AI assistant, so the \
assistant can continue the conversation without its full history.
Keep what will still matter: facts about the user and the world, the user's goals, \
preferences and decisions, promises and open tasks, questions still unanswered, results of \
tool calls that were used, and exact names, numbers and dates. Drop greetings, small talk and \
repetition. Fold the new part of the conversation into the summary so far: keep what is still \
true, update what changed, and do not repeat the conversation line by line.
Write the summary in the language of the conversation (in Chinese if the conversation is in \
Chinese). 如果对话使用中文\uff0c请用中文撰写摘要。
Write relative times ("next Friday") as dates, from the [time] a message was sent.
Answer with the summary text only, no preamble. It must fit in {max_tokens} tokens \
(about {words} English words or {max_tokens} Chinese characters)."""


@dataclass(frozen=True)
class SummaryPolicy:
    """When to compact a history and how big the pieces are.

    ``trigger_tokens``: compact when the history plus its summary passes this (counted by
    :func:`~remem.tokens.count_messages` with ``counter``, images included).
    ``keep_tokens``: recent messages kept verbatim, system prompt not included; at least the
    last user turn is kept even when it alone is bigger.
    ``max_summary_tokens``: the answer cap of every summarisation call.
    ``instructions``: extra guidance for the summariser (what to keep for your use case).
    ``context_window``: the window to plan chunks for when the model does not report one (or
    a smaller one to stay under); the smaller of this and the model's window is used.
    """

    trigger_tokens: int = 8000
    keep_tokens: int = 2000
    max_summary_tokens: int = 600
    counter: TokenCounter = DEFAULT_COUNTER
    instructions: str | None = None
    context_window: int | None = None

    def __post_init__(self) -> None:
        if self.max_summary_tokens < 1:
            raise InvalidInputError(
                f"SummaryPolicy.max_summary_tokens must be >= 1, got {self.max_summary_tokens}")
        if self.keep_tokens < 0:
            raise InvalidInputError(
                f"SummaryPolicy.keep_tokens must be >= 0, got {self.keep_tokens}")
        if self.trigger_tokens <= self.keep_tokens:
            raise InvalidInputError(
                f"SummaryPolicy.trigger_tokens ({self.trigger_tokens}) must be larger than "
                f"keep_tokens ({self.keep_tokens}), or compaction would keep everything; raise "
                "trigger_tokens or lower keep_tokens")
        if self.context_window is not None and self.context_window < 1:
            raise InvalidInputError(
                f"SummaryPolicy.context_window must be >= 1 (or None), got {self.context_window}")


@dataclass(frozen=True)
class Compaction:
    """The outcome of :func:`compact`.

    ``kept`` holds the leading system message(s) and the recent messages kept verbatim, so
    ``with_summary(c.summary, c.kept)`` is the next prompt. When nothing needed compacting,
    ``summarized`` is empty, ``calls`` is 0 and ``summary`` is the previous one (or ``""``).
    """

    summary: str
    summarized: tuple[Message, ...]
    kept: tuple[Message, ...]
    usage: Usage
    calls: int

    @property
    def compacted(self) -> bool:
        """Whether any message was folded into the summary."""
        return bool(self.summarized)


def with_summary(summary: str | None, messages: Sequence[Message], *,
                 role: Literal["system", "user"] = "system") -> list[Message]:
    """The prompt view: leading system message(s), the summary, then the other messages.

    The summary travels as a ``system`` message right after the system prompt (valid for
    OpenAI and, as part of the system text, for Anthropic); pass ``role="user"`` for models
    that ignore later system messages. Without a summary the messages are returned as they are.
    """
    if role not in ("system", "user"):
        raise InvalidInputError(f"with_summary role must be 'system' or 'user', got {role!r}")
    if not summary:
        return list(messages)
    head = leading_system(messages)
    text = f"Summary of the earlier conversation:\n{summary}"
    marker = {SUMMARY_METADATA_KEY: True}
    note = (Message.system(text, metadata=marker) if role == "system"
            else Message.user(text, metadata=marker))
    return [*messages[:head], note, *messages[head:]]


def needs_compaction(messages: Sequence[Message], summary: str | None,
                     policy: SummaryPolicy) -> bool:
    """Whether the prompt view (messages plus summary) has passed ``policy.trigger_tokens``."""
    return count_messages(with_summary(summary, messages), policy.counter) > policy.trigger_tokens


def _keep_from(history: Sequence[Message], policy: SummaryPolicy) -> int:
    """Where the kept part of ``history`` starts: the earliest user message whose suffix fits
    ``keep_tokens``, else the last user message; ``len(history)`` when there is none."""
    last_user, fitting, used = len(history), None, 0
    for index in range(len(history) - 1, -1, -1):
        used += count_messages((history[index],), policy.counter)
        if history[index].role != "user":
            continue
        if last_user == len(history):
            last_user = index
        if used <= policy.keep_tokens:
            fitting = index
    return last_user if fitting is None else min(fitting, last_user)


def _render(messages: Sequence[Message]) -> list[str]:
    """One transcript line per message: who said it and what (tool calls and images named),
    led by the time it was sent when that differs from the previous message's."""
    names: dict[str, str] = {}
    lines = []
    last: float | None = None
    for message in messages:
        sent = ""
        if last is None or abs(message.created_at - last) > SAME_MOMENT:
            sent = f"[{format_moment(message.created_at)}] "
        last = message.created_at
        parts = [part.text if not isinstance(part, ImagePart) else "[image]"
                 for part in message.content]
        for call in message.tool_calls:
            names[call.id] = call.name
            parts.append(f"[calls tool {call.name} with "
                         f"{json.dumps(call.arguments, ensure_ascii=False)}]")
        if message.role == "tool":
            tool = names.get(message.tool_call_id or "", "a tool")
            label = f"Result of {tool}" + (" (error)" if message.is_error else "")
        else:
            label = message.role.capitalize() + (f" ({message.name})" if message.name else "")
        lines.append(f"{sent}{label}: " + "\n".join(parts))
    return lines


def _split_to_fit(text: str, budget: int, counter: TokenCounter) -> tuple[str, str]:
    """The longest head of ``text`` counting at most ``budget`` tokens (ending at a space or
    line break when one is near), and the rest."""
    if budget < 1 or counter.count(text[:1]) > budget:
        raise ContextWindowError(f"cannot fit any text in {budget} tokens")
    # grow the prefix until it overflows (so counts stay near the answer's size, not the
    # text's), then bisect: ``low`` always fits, ``high`` is the first length known not to
    low, high = 1, min(len(text), max(16, 4 * budget))
    while counter.count(text[:high]) <= budget:
        low = high
        if high == len(text):
            break
        high = min(len(text), 2 * high)
    while high - low > 1:
        middle = (low + high) // 2
        if counter.count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle
    cut = low
    if cut < len(text):
        for separator in ("\n", "。", ". ", "\uff0c", ", ", " "):
            found = text.rfind(separator, cut - cut // 5, cut)
            if found > 0:
                cut = found + len(separator)
                break
    return text[:cut], text[cut:]


def _pieces(line: str, size: int = LINE_CHARS) -> list[str]:
    """``line`` cut into pieces of at most ``size`` characters, at a line break or space when
    one is near, so no single count or split ever runs over a huge tool result."""
    pieces = []
    while len(line) > size:
        cut = max(line.rfind("\n", size - size // 5, size), line.rfind(" ", size - size // 5, size))
        cut = cut + 1 if cut > 0 else size
        pieces.append(line[:cut])
        line = "(continued) " + line[cut:]
    return [*pieces, line]


def _next_chunk(queue: deque[str], frame: Callable[[str], ChatRequest], limit: int | None,
                counter: TokenCounter, base: int) -> ChatRequest:
    """The next request: as many transcript lines from ``queue`` as fit ``limit`` tokens of
    prompt, ``base`` of which the prompt takes without any (a line too big for the room is
    split); consumed lines leave the queue."""
    if limit is None:
        everything = "\n".join(queue)
        queue.clear()
        return frame(everything)
    room = limit - base
    if room < MIN_CHUNK_TOKENS:
        raise ContextWindowError(
            f"the summary prompt takes {base} tokens with the running summary, leaving {room} "
            f"of the window for conversation text (at least {MIN_CHUNK_TOKENS} needed); use a "
            "model with a larger context_window, lower SummaryPolicy.max_summary_tokens or "
            "shorten SummaryPolicy.instructions")
    taken: list[str] = []
    used = 0
    while queue:
        cost = counter.count(queue[0]) + 1  # + the line break
        if used + cost <= room:
            taken.append(queue.popleft())
            used += cost
            continue
        if not taken:  # one line bigger than a whole chunk: send the part that fits
            head, rest = _split_to_fit(queue.popleft(), room - 1, counter)
            if rest:
                queue.appendleft("(continued) " + rest)
            taken.append(head)
        break
    # tokenizers are not exactly additive: verify the real request and give lines back if over
    while True:
        request = frame("\n".join(taken))
        over = count_messages(request.messages, counter) - limit
        if over <= 0:
            return request
        if len(taken) > 1:
            queue.appendleft(taken.pop())
            continue
        head, rest = _split_to_fit(taken[0], counter.count(taken[0]) - over - 1, counter)
        if rest:
            queue.appendleft("(continued) " + rest)
        taken = [head]


def _window(model: ChatModel, policy: SummaryPolicy) -> int | None:
    windows = [w for w in (model.context_window, policy.context_window) if w is not None]
    return min(windows) if windows else None


_Steps = Generator[ChatRequest, ChatResponse, Compaction]


def _compaction(messages: Sequence[Message], summary: str | None, policy: SummaryPolicy,
                window: int | None, force: bool) -> _Steps:
    """The whole compaction as a generator: yields each summarisation request, is sent the
    model's response, returns the :class:`Compaction`. I/O-free; the shells drive it."""
    for position, message in enumerate(messages):
        if message.metadata.get(SUMMARY_METADATA_KEY):
            raise InvalidInputError(
                f"messages[{position}] is a summary message made by with_summary; pass the "
                "thread's own messages and the summary text as summary= instead")
    previous = summary or ""
    head = leading_system(messages)
    history = messages[head:]
    cut = _keep_from(history, policy)
    if (not force and not needs_compaction(messages, summary, policy)) or cut == 0:
        return Compaction(previous, (), tuple(messages), Usage(), 0)
    limit = None if window is None else window - policy.max_summary_tokens
    if limit is not None and limit < 1:
        raise ContextWindowError(
            f"the model's context window ({window} tokens) is not larger than "
            f"SummaryPolicy.max_summary_tokens ({policy.max_summary_tokens}); lower "
            "max_summary_tokens")
    system = _SYSTEM_PROMPT.format(max_tokens=policy.max_summary_tokens,
                                   words=policy.max_summary_tokens * 3 // 4)
    if policy.instructions:
        system += "\n" + policy.instructions
    queue = deque(piece for line in _render(history[:cut]) for piece in _pieces(line))
    running, usage, calls = previous, Usage(), 0
    reference = reference_line(messages, 0.0)

    def frame(transcript: str) -> ChatRequest:
        prompt = (f"{reference}\n\n"
                  f"Summary so far:\n<summary>\n{running or '(none yet)'}\n</summary>\n\n"
                  f"Next part of the conversation:\n<conversation>\n{transcript}\n"
                  "</conversation>\n\nWrite the updated summary.")
        return ChatRequest((Message.system(system), Message.user(prompt)),
                           operation="summarize", max_tokens=policy.max_summary_tokens)

    # a summary too big to sit next to a chunk (a previous one written for a larger window, or
    # answers longer than asked) is folded in as conversation text instead; the call bound
    # stops a model whose every answer overflows the window from looping for ever
    max_calls = 0 if limit is None else (
        16 + 2 * sum(policy.counter.count(line) + 1 for line in queue) // MIN_CHUNK_TOKENS)
    folded = False
    while queue:
        base = count_messages(frame("").messages, policy.counter)
        if limit is not None and running and limit - base < MIN_CHUNK_TOKENS:
            if folded or calls >= max_calls:
                raise ContextWindowError(
                    f"the summaries the model writes ({policy.counter.count(running)} tokens) "
                    f"leave no room in the {window}-token window; lower "
                    "SummaryPolicy.max_summary_tokens or use a model with a larger window")
            queue.extendleft(reversed(_pieces(
                f"Summary of the conversation before this part: {running}")))
            running, folded = "", True
            base = count_messages(frame("").messages, policy.counter)
        else:
            folded = False
        response = yield _next_chunk(queue, frame, limit, policy.counter, base)
        usage, calls = usage + response.usage, calls + 1
        running = response.text.strip()
        if not running:
            raise LLMError(f"the summariser ({response.model}) answered with no text "
                           f"(finish_reason={response.finish_reason!r}) on call {calls}")
    return Compaction(running, tuple(history[:cut]), (*messages[:head], *history[cut:]),
                      usage, calls)


def compact(model: ChatModel, messages: Sequence[Message], *, summary: str | None = None,
            policy: SummaryPolicy = SummaryPolicy(), force: bool = False) -> Compaction:
    """Fold the older part of ``messages`` into the running ``summary`` when it is due.

    Does nothing (no call) unless the history passes ``policy.trigger_tokens`` or ``force``
    is set (manual compaction; pass a policy with a smaller ``keep_tokens`` to compact
    harder). Splits the work into as many calls as the model's window requires. Raises
    :class:`~remem.errors.ContextWindowError` when the window cannot hold the prompt and
    answer, and :class:`~remem.errors.LLMError` when the model fails or answers nothing.
    """
    steps = _compaction(messages, summary, policy, _window(model, policy), force)
    try:
        request = next(steps)
        while True:
            request = steps.send(model.complete(request))
    except StopIteration as done:
        result: Compaction = done.value
        return result


async def acompact(model: ChatModel, messages: Sequence[Message], *,
                   summary: str | None = None, policy: SummaryPolicy = SummaryPolicy(),
                   force: bool = False) -> Compaction:
    """Async :func:`compact` (same steps, awaiting ``model.acomplete``)."""
    steps = _compaction(messages, summary, policy, _window(model, policy), force)
    try:
        request = next(steps)
        while True:
            request = steps.send(await model.acomplete(request))
    except StopIteration as done:
        result: Compaction = done.value
        return result
