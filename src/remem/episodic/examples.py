"""Few-shot examples from episodes, in pure code: near-duplicates, the token budget, rendering.

:func:`fit_examples` walks episodes in rank order and keeps each one that is not a
near-duplicate of one already kept and still fits the token budget, until it has ``k``.
Near-duplicates are judged on the words of the situation and action (Jaccard similarity of
their keyword terms, Chinese and English), so the check holds whatever embedder, if any, the
store has; the store's MMR does the finer, meaning-level diversification before this.
:func:`render_examples` turns episodes into few-shot messages (a user turn with the situation,
an assistant turn with thought, action and result).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from remem.episodic.schema import Episode
from remem.messages.types import Message
from remem.retrieval import DefaultTokenizer
from remem.tokens import DEFAULT_COUNTER, TokenCounter, count_messages

__all__ = ["Selection", "example_messages", "fit_examples", "render_examples", "similarity"]

_TOKENIZER = DefaultTokenizer()


def _terms(episode: Episode) -> frozenset[str]:
    return frozenset(_TOKENIZER.tokenize(f"{episode.situation}\n{episode.action}"))


def similarity(a: Episode, b: Episode) -> float:
    """Jaccard similarity of the keyword terms of two episodes' situation and action."""
    left, right = _terms(a), _terms(b)
    if not left and not right:
        return 1.0 if (a.situation, a.action) == (b.situation, b.action) else 0.0
    return len(left & right) / len(left | right)


def example_messages(episode: Episode) -> tuple[Message, Message]:
    """One episode as a few-shot pair: the situation, then what was thought, done and seen."""
    lines = []
    if episode.thought:
        lines.append(f"Thought: {episode.thought}")
    lines.append(f"Action: {episode.action}")
    if episode.result:
        lines.append(f"Result: {episode.result}")
    return (Message.user(episode.situation, name="example"),
            Message.assistant("\n".join(lines), name="example"))


def render_examples(episodes: Sequence[Episode]) -> list[Message]:
    """The episodes as few-shot messages, in order (two messages per episode)."""
    return [message for episode in episodes for message in example_messages(episode)]


@dataclass(frozen=True, slots=True)
class Selection:
    """Chosen examples, the tokens their messages take, and what was passed over."""

    examples: tuple[Episode, ...]
    tokens: int
    #: episodes left out as near-duplicates of a chosen one
    duplicates: int = 0
    #: episodes left out because they did not fit the budget
    over_budget: int = 0

    def messages(self) -> list[Message]:
        """The examples as few-shot messages (:func:`render_examples`)."""
        return render_examples(self.examples)


def fit_examples(ranked: Sequence[Episode], k: int, budget_tokens: int | None = None, *,
                 max_similarity: float = 0.8,
                 counter: TokenCounter = DEFAULT_COUNTER) -> Selection:
    """Up to ``k`` of ``ranked`` (best first), skipping near-duplicates (similarity above
    ``max_similarity``) and any episode whose messages would pass ``budget_tokens``."""
    chosen: list[Episode] = []
    kept_terms: list[frozenset[str]] = []
    tokens = duplicates = over = 0
    for episode in ranked:
        if len(chosen) >= k:
            break
        terms = _terms(episode)
        if any(_jaccard(terms, other) > max_similarity for other in kept_terms):
            duplicates += 1
            continue
        cost = count_messages(example_messages(episode), counter)
        if budget_tokens is not None and tokens + cost > budget_tokens:
            over += 1
            continue
        chosen.append(episode)
        kept_terms.append(terms)
        tokens += cost
    return Selection(tuple(chosen), tokens, duplicates, over)


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)
