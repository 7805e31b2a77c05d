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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from remem.context.types import (
    ContextItem,
    ContextResult,
    DroppedItem,
    PackedSection,
    SectionReport,
    block_text,
    item_text,
    render_messages,
    render_text,
)
from remem.errors import InvalidInputError
from remem.messages.types import Message
from remem.tokens import MESSAGE_OVERHEAD, TokenCounter, count_message, count_messages

__all__ = ["SectionOffer", "context_tokens", "pack"]


#: how many times one packing may count the whole context to settle an item near the edge
_EXACT_CHECKS = 6


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


def context_tokens(blocks: Sequence[PackedSection], counter: TokenCounter,
                   message_costs: Mapping[int, int] | None = None) -> int:
    """What ``blocks`` cost: the larger of the string and the message renderings.
    ``message_costs``: known :func:`~remem.tokens.count_messages` of conversation items, by
    ``id()`` of the item (a message list costs the sum of its messages, so parts add up)."""
    text = counter.count(render_text(blocks))
    if message_costs is None:
        return max(text, count_messages(render_messages(blocks), counter))
    system = render_text([block for block in blocks if not block.conversation])
    messages = count_message(Message.system(system), counter) if system else 0
    for block in blocks:
        if block.conversation:
            messages += sum(message_costs[id(item)] for item in block.items)
    return max(text, messages)


def _blocks(offers: Sequence[SectionOffer],
            kept: Sequence[list[ContextItem]]) -> list[PackedSection]:
    ranked = sorted(range(len(offers)), key=lambda index: (offers[index].order, index))
    return [PackedSection(offers[index].name, offers[index].title, tuple(kept[index]),
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
    costs = {id(item): count_messages(item.messages, counter)
             for offer in offers for item in offer.items if item.messages}
    everything = [list(offer.items) for offer in offers]
    whole = context_tokens(_blocks(offers, everything), counter, costs)
    if budget is None or whole <= budget:
        # everything fits as a whole (sums of parts may say otherwise)
        return _result(offers, everything, whole, limit, counter, [])
    kept: list[list[ContextItem]] = [[] for _ in offers]
    positions: list[list[int]] = [[] for _ in offers]  # where each kept item was offered
    dropped: list[tuple[int, int, DroppedItem]] = []
    alone: dict[tuple[int, int], int] = {}
    text_total = message_total = 0
    checks_left = _EXACT_CHECKS
    texts_kept = 0  # sections in the system message (their separators and its overhead)
    for s, offer in enumerate(offers):
        conversation = any(item.messages for item in offer.items)
        heading = counter.count(f"## {offer.title}") + 2  # the blank line before it
        cut = False
        for i, item in enumerate(offer.items):
            cost = _Cost(counter.count(item_text(item)) + 1, 0)
            if conversation:
                cost.message = costs.get(id(item), 0)
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
            if not fits and checks_left and max(text_next, message_next) <= \
                    budget + budget // 4 + 8:
                # near the edge the sum of parts may overestimate: count the whole (a few
                # times at most: each count reads the whole context)
                checks_left -= 1
                kept[s].append(item)
                exact = context_tokens(_blocks(offers, kept), counter, costs)
                kept[s].pop()
                if exact <= budget:
                    fits, text_next, message_next = True, exact, exact
            if fits:
                kept[s].append(item)
                positions[s].append(i)
                text_total, message_total = text_next, message_next
                texts_kept += int(first and not conversation)
            else:
                dropped.append((s, i, DroppedItem(offer.name, item.key, alone[s, i],
                                                  "over_budget")))
                cut = offer.contiguous
    tokens = context_tokens(_blocks(offers, kept), counter, costs)
    while budget is not None and tokens > budget:
        # the counter is not additive here: drop the lowest priority item kept and recount
        s = max(index for index, items in enumerate(kept) if items)
        item, i = kept[s].pop(), positions[s].pop()
        dropped.append((s, i, DroppedItem(offers[s].name, item.key, alone[s, i],
                                          "over_budget")))
        tokens = context_tokens(_blocks(offers, kept), counter, costs)
    return _result(offers, kept, tokens, limit, counter, dropped)


def _result(offers: Sequence[SectionOffer], kept: Sequence[list[ContextItem]], tokens: int,
            budget: int | None, counter: TokenCounter,
            dropped: list[tuple[int, int, DroppedItem]]) -> ContextResult:
    reports = tuple(
        SectionReport(offer.name,
                      counter.count(block_text(offer.title, kept[s])) if kept[s] else 0,
                      len(kept[s]), len(offer.items) - len(kept[s]))
        for s, offer in enumerate(offers))
    dropped.sort(key=lambda entry: (entry[0], entry[1]))
    return ContextResult(tuple(_blocks(offers, kept)), tokens, budget, counter.name, reports,
                         tuple(entry[2] for entry in dropped))
