"""Running summaries and prompt views of stored threads.

Built on :mod:`remem.threads.summary` and :mod:`remem.threads.trim`: a compaction folds the
older messages into a summary kept in the checkpoint state (``summary``, ``summary_through``:
the position it covers up to, ``summary_usage``: what summarising has cost so far); the
messages themselves stay in the thread, so time travel and search still see them. The prompt
view is system prompt + summary + the messages after ``summary_through``, trimmed to a budget.
Only the tail a budget needs is read, so a 10,000-message thread costs a few pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.errors import ConflictError, InvalidInputError
from remem.llm.base import ChatModel
from remem.messages.types import Message
from remem.threads.summary import SummaryPolicy, compact, needs_compaction, with_summary
from remem.threads.trim import trim_messages
from remem.threads.types import Checkpoint, summary_state
from remem.tokens import DEFAULT_COUNTER, TokenCounter, count_message

if TYPE_CHECKING:
    from remem.threads.store import ThreadStore

__all__ = ["compact_thread", "over", "prompt_view"]

_PAGE = 64


def _leading_system(store: ThreadStore, thread_id: str, checkpoint: Checkpoint) -> list[Message]:
    """The system message(s) the thread opens with (its system prompt)."""
    size = 8
    while True:
        head = store.messages(thread_id, checkpoint_id=checkpoint.id, stop=size)
        count = 0
        while count < len(head) and head[count].role == "system":
            count += 1
        if count < len(head) or len(head) < size:
            return head[:count]
        size *= 4


def over(messages: int, tokens: int, max_messages: int | None, max_tokens: int | None) -> bool:
    """Whether a tail of this size is past one of the budgets."""
    return ((max_messages is not None and messages > max_messages)
            or (max_tokens is not None and tokens > max_tokens))


class _Memo:
    """A token counter that remembers the counts of the texts it has seen."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.seen: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.counter.name

    def count(self, text: str) -> int:
        found = self.seen.get(text)
        if found is None:
            found = self.seen[text] = self.counter.count(text)
        return found


def compact_thread(store: ThreadStore, thread_id: str, model: ChatModel,
                   policy: SummaryPolicy, *, force: bool) -> Checkpoint | None:
    """Compact the thread's head if due (or ``force``); the new head, or ``None`` when nothing
    was folded. A thread that moved on meanwhile is left for the next call (unless ``force``,
    which raises :class:`~remem.errors.ConflictError`)."""
    head = store.checkpoint(thread_id)
    system = _leading_system(store, thread_id, head)
    start = max(len(system), head.summary_through)
    recent = store.messages(thread_id, checkpoint_id=head.id, start=start)
    view = [*system, *recent]
    if not force and not needs_compaction(view, head.summary, policy):
        return None
    result = compact(model, view, summary=head.summary, policy=policy, force=force)
    if not result.compacted:
        return None
    state = summary_state(result.summary, start + len(result.summarized), result.usage,
                          head.state)
    metadata = {"source": "compact", "summarized": len(result.summarized),
                "calls": result.calls, "input_tokens": result.usage.input_tokens,
                "output_tokens": result.usage.output_tokens}
    try:
        return store.update_state(thread_id, state, merge=False, expected_head=head.id,
                                  metadata=metadata)
    except ConflictError:
        if force:
            raise
        return None


def prompt_view(store: ThreadStore, thread_id: str, *, max_tokens: int | None = None,
                max_messages: int | None = None, checkpoint_id: str | None = None,
                counter: TokenCounter | None = None) -> list[Message]:
    """System prompt, summary and the uncovered messages, trimmed to the budgets.

    Equal to ``trim_messages(with_summary(summary, system + uncovered), ...)`` over the whole
    history, but reads the tail page by page, newest first, and stops at the first message
    past a budget (whatever fits a budget is a suffix of what was read by then).
    """
    for name, value in (("max_tokens", max_tokens), ("max_messages", max_messages)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise InvalidInputError(f"{name} must be a non-negative integer or None, got {value!r}")
    checkpoint = store.checkpoint(thread_id, checkpoint_id)
    system = _leading_system(store, thread_id, checkpoint)
    start = max(len(system), checkpoint.summary_through)
    if max_tokens is None and max_messages is None:
        rest = store.messages(thread_id, checkpoint_id=checkpoint.id, start=start)
        return with_summary(checkpoint.summary, [*system, *rest])
    memo = _Memo(counter or DEFAULT_COUNTER)  # trimming counts the same texts again
    recent: list[Message] = []
    stop, tokens, page = checkpoint.position, 0, _PAGE
    while stop > start and not over(len(recent), tokens, max_messages, max_tokens):
        begin = max(start, stop - page)
        chunk = store.messages(thread_id, checkpoint_id=checkpoint.id, start=begin, stop=stop)
        taken = 0
        # newest first, stopping at the first message past a budget: counting is the cost
        for message in reversed(chunk):
            tokens += count_message(message, memo)
            taken += 1
            if over(len(recent) + taken, tokens, max_messages, max_tokens):
                break
        recent[:0] = chunk[len(chunk) - taken:]
        stop, page = begin, page * 2
    view = with_summary(checkpoint.summary, [*system, *recent])
    return trim_messages(view, max_tokens=max_tokens, max_messages=max_messages,
                         counter=memo, keep_system=True)
