"""Packing: the pure core of context assembly (no I/O; the same for sync and async callers).

:func:`pack` takes what each section offered, in priority order, and keeps whole items while
the context fits the budget. It walks the items from the highest priority down and keeps each
one that still fits (a large item left out does not stop smaller ones after it, except in a
``contiguous`` section, where a gap would mislead: once a recent message is left out, so are
the older ones). Sums of per-item counts guide that walk; the rendered result is then counted
as a whole and, while it is over budget (a tokenizer need not be additive), the lowest
priority item kept is dropped. So the budget holds for any counter, and the same inputs give
the same context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from remem.context.types import (
    Block,
    ContextItem,
    ContextResult,
    DroppedItem,
    SectionReport,
    block_text,
    item_text,
    render_messages,
    render_text,
)
from remem.errors import InvalidInputError
from remem.tokens import MESSAGE_OVERHEAD, TokenCounter, count_messages

__all__ = ["SectionOffer", "context_tokens", "pack"]


@dataclass(frozen=True, slots=True)
class SectionOffer:
    """What one section offered: its identity and its items, best first."""

    name: str
    title: str
    order: int
    contiguous: bool
    items: tuple[ContextItem, ...]


@dataclass(slots=True)
class _Cost:
    text: int  # in the string rendering (with the line break before it)
    message: int  # in the message rendering


def context_tokens(blocks: Sequence[Block], counter: TokenCounter) -> int:
    """What ``blocks`` cost: the larger of the string and the message renderings."""
    return max(counter.count(render_text(blocks)),
               count_messages(render_messages(blocks), counter))


def _blocks(offers: Sequence[SectionOffer], kept: Sequence[list[ContextItem]]) -> list[Block]:
    ranked = sorted(range(len(offers)), key=lambda index: (offers[index].order, index))
    return [Block(offers[index].name, offers[index].title, tuple(kept[index]),
                  any(item.messages for item in offers[index].items))
            for index in ranked if kept[index]]


def pack(offers: Sequence[SectionOffer], budget: int | None,
         counter: TokenCounter) -> ContextResult:
    """Keep whole items of ``offers`` (highest priority first) within ``budget`` tokens
    (``None``: keep everything) counted by ``counter``."""
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 0):
        raise InvalidInputError(f"budget_tokens must be a whole number >= 0 or None, got "
                                f"{budget!r}")
    limit = budget
    names = [offer.name for offer in offers]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"context sections must have distinct names, got {names}")
    if budget is not None and context_tokens(
            _blocks(offers, [list(offer.items) for offer in offers]), counter) <= budget:
        budget = None  # everything fits as a whole (sums of parts may say otherwise)
    kept: list[list[ContextItem]] = [[] for _ in offers]
    positions: list[list[int]] = [[] for _ in offers]  # where each kept item was offered
    dropped: list[tuple[int, int, DroppedItem]] = []
    alone: dict[tuple[int, int], int] = {}
    text_total = message_total = 0
    texts_kept = 0  # sections in the system message (their separators and its overhead)
    for s, offer in enumerate(offers):
        conversation = any(item.messages for item in offer.items)
        heading = counter.count(f"## {offer.title}") + 2  # the blank line before it
        cut = False
        for i, item in enumerate(offer.items):
            cost = _Cost(counter.count(item_text(item)) + 1, 0)
            if conversation:
                cost.message = count_messages(item.messages, counter)
            else:
                cost.message = cost.text
            alone[s, i] = max(cost.text, cost.message)
            if cut:
                dropped.append((s, i, DroppedItem(offer.name, item.key, alone[s, i],
                                                  "after_dropped")))
                continue
            first = not kept[s]
            text_next = text_total + cost.text + (heading if first else 0)
            message_next = message_total + cost.message + (
                (heading if first else 0) if not conversation else 0) + (
                MESSAGE_OVERHEAD if not conversation and texts_kept == 0 and first else 0)
            fits = budget is None or max(text_next, message_next) <= budget
            if not fits and budget is not None and max(text_next, message_next) <= \
                    budget + budget // 4 + 8:
                # near the edge the sum of parts may overestimate: count the whole
                kept[s].append(item)
                blocks = _blocks(offers, kept)
                exact_text = counter.count(render_text(blocks))
                exact_messages = count_messages(render_messages(blocks), counter)
                kept[s].pop()
                if max(exact_text, exact_messages) <= budget:
                    fits, text_next, message_next = True, exact_text, exact_messages
            if fits:
                kept[s].append(item)
                positions[s].append(i)
                text_total, message_total = text_next, message_next
                texts_kept += int(first and not conversation)
            else:
                dropped.append((s, i, DroppedItem(offer.name, item.key, alone[s, i],
                                                  "over_budget")))
                cut = offer.contiguous
    tokens = context_tokens(_blocks(offers, kept), counter)
    while budget is not None and tokens > budget:
        # the counter is not additive here: drop the lowest priority item kept and recount
        s = max(index for index, items in enumerate(kept) if items)
        item, i = kept[s].pop(), positions[s].pop()
        dropped.append((s, i, DroppedItem(offers[s].name, item.key, alone[s, i],
                                          "over_budget")))
        tokens = context_tokens(_blocks(offers, kept), counter)
    blocks = _blocks(offers, kept)
    reports = tuple(
        SectionReport(offer.name,
                      counter.count(block_text(offer.title, kept[s])) if kept[s] else 0,
                      len(kept[s]), len(offer.items) - len(kept[s]))
        for s, offer in enumerate(offers))
    dropped.sort(key=lambda entry: (entry[0], entry[1]))
    return ContextResult(tuple(blocks), tokens, limit, counter.name, reports,
                         tuple(entry[2] for entry in dropped))
