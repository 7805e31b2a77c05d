"""Trimming a conversation to a budget without breaking it, and the checks that prove it.

:func:`trim_messages` keeps the most recent messages that fit a token and/or message budget.
It never drops the leading system message(s), and it only ever cuts in front of a ``user``
message, so a kept sequence never starts with a tool result whose call was cut away, never
separates an assistant's tool call from its results, and never opens with an assistant turn
(which Anthropic rejects).

:func:`check_openai_sequence` and :func:`check_anthropic_sequence` state what a provider
accepts as functions that raise :class:`~remem.errors.MessageFormatError` naming the position
and the rule; the property tests run every trimmed sequence through both, and callers can use
them before sending a request.

>>> from remem.messages import Message
>>> history = [Message.system("Be brief."), Message.user("hi"), Message.assistant("hello"),
...            Message.user("what is 2+2?"), Message.assistant("4")]
>>> [m.text for m in trim_messages(history, max_messages=3)]
['Be brief.', 'what is 2+2?', '4']
"""

from __future__ import annotations

from collections.abc import Sequence

from remem.errors import InvalidInputError, MessageFormatError
from remem.messages.types import Message
from remem.tokens import DEFAULT_COUNTER, TokenCounter, count_messages

__all__ = [
    "check_anthropic_sequence",
    "check_openai_sequence",
    "leading_system",
    "safe_cut",
    "trim_messages",
]


def leading_system(messages: Sequence[Message]) -> int:
    """How many messages at the start are ``system`` messages (the system prompt)."""
    count = 0
    for message in messages:
        if message.role != "system":
            break
        count += 1
    return count


def _is_boundary(messages: Sequence[Message], index: int, *, user_only: bool) -> bool:
    if index <= 0 or index >= len(messages):
        return True
    role = messages[index].role
    return role == "user" if user_only else role != "tool"


def safe_cut(messages: Sequence[Message], index: int, *, user_only: bool = False) -> int:
    """The nearest valid cut point at or before ``index`` (``0 <= result <= index``).

    Cutting at ``i`` means ``messages[:i]`` goes one way (dropped, summarised) and
    ``messages[i:]`` the other. A cut is valid when ``messages[i]`` is not a ``tool`` message:
    tool results always directly follow the call that asked for them, so such a cut keeps every
    tool call together with its results. With ``user_only=True`` the cut must also land on a
    ``user`` message, so the second part opens with a user turn (what Anthropic requires after
    the system prompt). ``0`` and ``len(messages)`` are always valid.
    """
    if not 0 <= index <= len(messages):
        raise InvalidInputError(
            f"safe_cut index must be between 0 and len(messages)={len(messages)}, got {index}")
    while not _is_boundary(messages, index, user_only=user_only):
        index -= 1
    return index


def trim_messages(messages: Sequence[Message], *, max_tokens: int | None = None,
                  max_messages: int | None = None, counter: TokenCounter = DEFAULT_COUNTER,
                  keep_system: bool = True) -> list[Message]:
    """The longest recent part of ``messages`` that fits the budget, still a valid conversation.

    Both budgets cover the whole result, system messages included: ``max_tokens`` as counted by
    :func:`~remem.tokens.count_messages` with ``counter``, ``max_messages`` as a message count.
    With ``keep_system`` the leading system message(s) are always kept, even when they alone
    exceed the budget (then nothing else is). The rest is cut only in front of a ``user``
    message, so the kept history starts with a user turn and keeps every tool call with its
    results; when not even the last user turn fits, only the system messages remain. A valid
    input (see :func:`check_openai_sequence` / :func:`check_anthropic_sequence`) stays valid.
    Messages are returned as they are (same objects), in order.
    """
    if max_tokens is not None and max_tokens < 0:
        raise InvalidInputError(
            f"trim_messages max_tokens must be >= 0 (or None), got {max_tokens}")
    if max_messages is not None and max_messages < 0:
        raise InvalidInputError(
            f"trim_messages max_messages must be >= 0 (or None), got {max_messages}")
    head = leading_system(messages) if keep_system else 0
    system, history = list(messages[:head]), list(messages[head:])
    token_room = None if max_tokens is None else max_tokens - count_messages(system, counter)
    message_room = None if max_messages is None else max_messages - len(system)
    # walk back from the end, remembering the earliest user boundary whose suffix still fits
    start, used = len(history), 0
    for index in range(len(history) - 1, -1, -1):
        used += count_messages((history[index],), counter)
        if token_room is not None and used > token_room:
            break
        if message_room is not None and len(history) - index > message_room:
            break
        if _is_boundary(history, index, user_only=True):
            start = index
    return system + history[start:]


# -- provider validity checks ----------------------------------------------------------------


def _fail(position: int, rule: str) -> MessageFormatError:
    return MessageFormatError(f"messages[{position}]: {rule}")


def check_openai_sequence(messages: Sequence[Message]) -> None:
    """Raise :class:`~remem.errors.MessageFormatError` unless OpenAI's chat API accepts the order.

    Rules: every ``tool`` message answers a call made by the assistant message right before
    the run of tool messages it belongs to, each call answered once; and every tool call of an
    assistant message is answered by the tool messages that directly follow it, before any
    other message. The error names the position and the rule.
    """
    pending: dict[str, int] = {}  # call id -> position of the assistant message that made it
    answered: set[str] = set()
    caller: int | None = None  # position of the assistant whose results may follow now
    for position, message in enumerate(messages):
        if message.role == "tool":
            call_id = message.tool_call_id or ""
            if caller is None:
                raise _fail(position, f"tool result for call {call_id!r} does not follow an "
                            "assistant message with tool calls (orphan tool result)")
            if call_id in answered:
                raise _fail(position, f"tool call {call_id!r} of the assistant message at "
                            f"{caller} is answered twice")
            if call_id not in pending:
                raise _fail(position, f"tool result answers call {call_id!r}, which the "
                            f"assistant message at {caller} did not make")
            del pending[call_id]
            answered.add(call_id)
            continue
        if pending:
            raise _fail(position, f"a {message.role} message comes before the results of tool "
                        f"call(s) {sorted(pending)} made at {caller}; tool results must directly "
                        "follow the assistant message that called them")
        caller = None
        if message.role == "assistant" and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):
                raise _fail(position, f"assistant message repeats a tool call id: {ids}")
            caller, pending, answered = position, dict.fromkeys(ids, position), set()
    if pending:
        raise _fail(len(messages), f"the conversation ends before the results of tool call(s) "
                    f"{sorted(pending)} made at {caller}")


def check_anthropic_sequence(messages: Sequence[Message]) -> None:
    """Raise :class:`~remem.errors.MessageFormatError` unless Anthropic's Messages API accepts it.

    On top of :func:`check_openai_sequence`: system messages only at the start (they become
    the ``system`` parameter); the first message after them is a user turn, not an assistant
    one; and after merging consecutive same-role messages (tool results travel as user
    content) the turns alternate user/assistant and none is empty, except that a final
    assistant turn may be empty.
    """
    check_openai_sequence(messages)
    head = leading_system(messages)
    turns: list[tuple[str, int, bool]] = []  # (role, first position, has content)
    for position in range(head, len(messages)):
        message = messages[position]
        if message.role == "system":
            raise _fail(position, "system message after the conversation started; Anthropic "
                        "takes system text only before the first turn (move it to the start "
                        "or send it as a user message)")
        role = "assistant" if message.role == "assistant" else "user"
        has_content = bool(message.content or message.tool_calls or message.role == "tool")
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1], turns[-1][2] or has_content)
        else:
            turns.append((role, position, has_content))
    if turns and turns[0][0] != "user":
        raise _fail(turns[0][1], "the first message after the system prompt is an assistant "
                    "message; Anthropic conversations must start with a user turn")
    # merging made the turns alternate; what is left to check is that none is empty
    for number, (role, position, has_content) in enumerate(turns):
        if not has_content and not (role == "assistant" and number == len(turns) - 1):
            raise _fail(position, f"empty {role} turn (no text, image, tool call or tool "
                        "result); Anthropic rejects empty turns except a final assistant one")
